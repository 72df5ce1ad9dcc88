"""Every built-in recipe learns: a tiny Qwen2-VL trained on ShapesEdit on CPU, with the
recipe scaled down by :func:`ieqa.train.tiny.tiny_recipe`, beats its untrained self on
held-out groups (SRCC on the trained dimension, pair accuracy for ranking recipes), and
exports an evaluator that loads and scores.

Head recipes (EditReward, ReasonEdit SFT, RE-Reward) start from the random tiny VLM. Text
readouts (DS-IEQA digits, EPAIQA and EditHF levels and boxes) start from ``seeing_vlm``,
the same model after a short perception training (see its docstring): a random backbone
sees too little for a readout to learn in seconds. Their readouts still start at chance.
The numbers each test reaches are printed (``pytest -s``) and listed in the issue notes.
"""

from __future__ import annotations

import time

import pytest

from ieqa import load_evaluator
from ieqa.train import train
from ieqa.train.data import load_training_data
from ieqa.train.tiny import tiny_recipe

pytestmark = [pytest.mark.slow, pytest.mark.claim]


def _run(name, model, tmp_path, steps, **kwargs):
    recipe = tiny_recipe(name, model, steps=steps, **kwargs)
    t0 = time.perf_counter()
    result = train(recipe, output_dir=tmp_path / name, progress=False)
    runs = result.children or {"": result}
    for dim, run in runs.items():
        print(f"{name} {dim}: {time.perf_counter() - t0:.1f} s", {
            stage: {when: {k: round(v, 3) for k, v in m.items()} for when, m in ms.items()}
            for stage, ms in run.metrics.items()})
    return recipe, result


def _gain(result, stage, metric):
    return result.metrics[stage]["before"][metric], result.metrics[stage]["after"][metric]


def _scores(recipe, evaluator_dir, n=4):
    scorer = load_evaluator(evaluator_dir)
    results = scorer.score(load_training_data(recipe.data, 0).eval[:n])
    assert all(r.ok for r in results)
    return scorer, results


def test_editreward_gaussian_uncertainty_ranking_learns(tiny_train_vlm, tmp_path):
    recipe, result = _run("editreward", tiny_train_vlm, tmp_path, steps=250)
    before, after = _gain(result, "ranking", "pair_accuracy")
    assert before < 0.65 and after >= 0.8
    before, after = _gain(result, "ranking", "srcc/visual_quality")
    assert abs(before) < 0.2 and after >= 0.45
    scorer, scores = _scores(recipe, result.evaluator_dir)
    assert scorer.name == "vlm-gaussian" and all(r.sigma for r in scores)
    assert set(scores[0].scores) == {"instruction_alignment", "visual_quality", "overall"}


def test_reasonedit_dual_phases_learn(tiny_train_vlm, tmp_path):
    # at this scale the CE of the critique (~150 byte tokens) swamps the Huber term of the
    # head; the paper's weights were lost from its tables, so the test sets 0.1
    weights = {f"stages.{i}.text_weight": 0.1 for i in range(3)}
    recipe, result = _run("reasonedit-sft", tiny_train_vlm, tmp_path, steps=[100, 100, 100],
                          overrides=weights)
    assert list(result.metrics) == ["warmup", "mixed", "refresh"]
    # (instruction alignment and content preservation are constant in this world)
    before = result.metrics["warmup"]["before"]["srcc/visual_quality"]
    after = result.metrics["refresh"]["after"]["srcc/visual_quality"]
    assert abs(before) < 0.2 and after >= 0.45
    scorer, _ = _scores(recipe, result.evaluator_dir, n=2)
    assert scorer.name == "vlm-dual"


def test_re_reward_queue_loss_with_stratified_epochs_learns(tiny_train_vlm, tmp_path):
    recipe, result = _run("re-reward", tiny_train_vlm, tmp_path, steps=250)
    before, after = _gain(result, "reward", "srcc")
    assert abs(before) < 0.3 and after >= 0.45
    scorer, scores = _scores(recipe, result.evaluator_dir)
    assert scorer.name == "vlm-head"
    assert set(scores[0].scores) >= {"logicality", "accuracy", "usefulness"}


def test_ds_ieqa_per_dimension_tdrl_learns(seeing_vlm, tmp_path):
    # one model per dimension; the only one of the recipe's three that varies in this world
    recipe, result = _run("ds-ieqa", seeing_vlm, tmp_path, steps=150,
                          dimensions=["visual_quality"])
    assert set(result.children) == {"visual_quality"}
    before, after = _gain(result.children["visual_quality"], "tdrl", "srcc")
    assert before < 0.1 and after >= 0.25 and after > before + 0.3
    scorer, _ = _scores(recipe, result.children["visual_quality"].evaluator_dir, n=2)
    assert scorer.name == "vlm-digits" and scorer.score_dimensions == ("visual_quality",)


def test_epaiqa_grounding_then_levels_on_the_crop_learn(seeing_vlm, tmp_path):
    """EPAIQA's three stages, each beating where it started and a baseline computed here.

    LoRA (as the paper trains it, lr 1e-3): with every weight trainable, 150 steps of box
    answers overwrote what the backbone sees, and harmony after them ranged from -0.13 to
    0.47 over seeds. The bars come from ``benchmarks/recipe_spread.py epaiqa --steps
    150,400,150 --override adapter.kind=lora --override optim.lr=1e-3`` over optim seeds
    0-3 from this backbone and seeds 0-1 from the one trained on two threads: grounding
    IoU 0.10-0.29 at 1.6-3.2x its IoU against other edits' boxes; harmony 0.80-0.89 (from
    -0.09..0.20); naturalness 0.55-0.68, +0.05..+0.53 over the harmony readout on the crop.
    """
    recipe, result = _run("epaiqa", seeing_vlm, tmp_path, steps=[150, 400, 150], lr=1e-3,
                          overrides={"adapter.kind": "lora"})
    ground = result.metrics["grounding"]
    assert ground["before"]["iou"] == 0.0  # no box answers before the stage
    after = ground["after"]
    assert after["failed"] <= 0.1 * (after["parsed"] + after["failed"])
    # the boxes follow the edit: a model that does not look where the edit is (a constant
    # box, the whole image or any other) scores about as well against the boxes of other
    # groups' edits as against its own edit's (ratio ~1); this one scores >= 1.5x
    assert after["iou"] >= 1.5 * after["iou/other_groups"], after
    assert after["iou"] > after["iou/mean_box"], after
    # not claimed: beating a whole-image box, which scores the true box's area (0.19-0.26
    # on these held-out edits) against the tiny model's 0.10-0.29 at 16 tokens an image
    before, after = _gain(result, "harmony", "srcc")
    assert before < 0.25 and after >= 0.7, (before, after)
    # naturalness starts from the level readout harmony trained, now on the crop
    before, after = _gain(result, "naturalness", "srcc")
    assert after >= 0.5 and after >= before + 0.03, (before, after)
    scorer, _ = _scores(recipe, result.evaluator_dir, n=2)
    assert scorer.name == "vlm-levels"


def test_edithf_levels_then_mse_then_bt_learns(seeing_vlm, tmp_path):
    _, result = _run("edithf", seeing_vlm, tmp_path, steps=[50, 100, 50])
    before, after = _gain(result, "textual", "srcc")
    assert before < 0.1 and after >= 0.4
    before, after = _gain(result, "pointwise", "srcc")
    assert after >= 0.8 and after >= before + 0.15
    # the pairwise stage starts where the pointwise one ended, already above 0.8 (0.83-0.88
    # over optim seeds 0-2, benchmarks/recipe_spread.py edithf --steps 50,100,50), so its
    # claim is its own gain: +0.034 to +0.050 over those seeds, +0.041 here
    before, after = _gain(result, "pairwise", "pair_accuracy")
    assert after >= 0.8 and after >= before + 0.02, f"pair accuracy {before:.3f} -> {after:.3f}"
    assert result.evaluator_dir is not None
