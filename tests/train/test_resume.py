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
