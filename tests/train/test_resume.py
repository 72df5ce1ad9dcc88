"""Resuming from a checkpoint continues with the same losses as an uninterrupted run."""

from __future__ import annotations

import json

import pytest
from tests.train.conftest import SHORT_HEAD, tiny_overrides

from ieqa.train import TrainError, load_recipe, train


def _recipe(model, tmp_path):
    small = {"train": {"shapesedit": {"n": 64, "k": 4, "seed": 2, "size": 112,
                                      "preset": "artifacts", "photo_fraction": 0.0}},
             "max_eval_samples": 8}
    return load_recipe("editreward", {**tiny_overrides(model), "data": small,
                                      "optim.batch_size": 4, "optim.grad_accum": 2,
                                      "optim.scheduler": "cosine", "optim.warmup_ratio": 0.2,
                                      "head.hidden_features": 32, "head.dropout": 0.1,
                                      "stages.0.template": SHORT_HEAD,
                                      "stages.0.max_steps": 6, "eval.batch_size": 8,
                                      "stages.0.loss_args": {"n_samples": 64}})


def test_resume_gives_the_same_losses(tiny_train_vlm, tmp_path):
    recipe = _recipe(tiny_train_vlm, tmp_path)
    full = train(recipe, output_dir=tmp_path / "full", progress=False)
    part = train(recipe, output_dir=tmp_path / "part", stop_after=3, progress=False)
    assert part.interrupted and [s for s, _ in part.losses] == [1, 2, 3]
    rest = train(recipe, output_dir=tmp_path / "part", resume=True, progress=False)
    assert [s for s, _ in rest.losses] == [4, 5, 6]
    expected = dict(full.losses)
    for step, loss in part.losses + rest.losses:
        assert loss == pytest.approx(expected[step], rel=1e-5, abs=1e-6), step
    # the metrics log of the resumed run reads like the uninterrupted one
    steps = [json.loads(line)["global_step"] for line in
             (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["event"] == "step"]
    assert steps == [1, 2, 3, 4, 5, 6]


def test_resume_without_checkpoint_is_an_error(tiny_train_vlm, tmp_path):
    with pytest.raises(TrainError, match="no checkpoint"):
        train(_recipe(tiny_train_vlm, tmp_path), output_dir=tmp_path / "none", resume=True,
              progress=False)


def _queues_state(rank_rows, plcc_rows):
    import torch

    from ieqa.train.objectives import new_loss_state

    stage = load_recipe("re-reward", ["stages.0.loss_args.rank_queue_size=3",
                                      "stages.0.loss_args.plcc_queue_size=2"]).stages[0]
    state = new_loss_state(stage, seed=0)
    assert (state.rank_queue.size, state.plcc_queue.size) == (3, 2)
    for rows, queue in ((rank_rows, state.rank_queue), (plcc_rows, state.plcc_queue)):
        for r in rows:
            queue.push(torch.tensor([[r, r, r]]), torch.tensor([[r, r, r]]))
    return stage, state


def test_loss_state_saves_and_restores_both_queues(tmp_path):
    import torch

    from ieqa.train.objectives import new_loss_state

    stage, state = _queues_state([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0])
    torch.save(state.state_dict(), tmp_path / "state.pt")
    restored = new_loss_state(stage, seed=0)
    restored.load_state_dict(torch.load(tmp_path / "state.pt", weights_only=False))
    assert restored.rank_queue.tensors()[0][:, 0].tolist() == [2.0, 3.0, 4.0]
    assert restored.plcc_queue.tensors()[0][:, 0].tolist() == [6.0, 7.0]


def test_loss_state_from_a_single_queue_checkpoint_fills_both(tmp_path):
    # checkpoints written before the split hold one "queue" that served both terms
    import torch

    from ieqa.train.losses import ScoreQueue
    from ieqa.train.objectives import new_loss_state

    stage, _ = _queues_state([], [])
    old = ScoreQueue(4)
    for r in (1.0, 2.0, 3.0, 4.0):
        old.push(torch.tensor([[r, r, r]]), torch.tensor([[r, r, r]]))
    state = new_loss_state(stage, seed=0)
    state.load_state_dict({"generator": torch.Generator().manual_seed(0).get_state(),
                           "queue": old.state_dict()})
    assert state.rank_queue.tensors()[0][:, 0].tolist() == [2.0, 3.0, 4.0]  # its 3 newest
    assert state.plcc_queue.tensors()[0][:, 0].tolist() == [3.0, 4.0]  # its 2 newest
