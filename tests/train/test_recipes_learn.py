"""Every built-in recipe learns: a tiny Qwen2-VL trained on ShapesEdit on CPU for a few
hundred steps beats its untrained self on held-out data (SRCC on the trained dimension,
pair accuracy for ranking recipes). The recipes are the built-in YAML files with
tiny-scale overrides (tests/train/conftest.py); the paper hyper-parameters are for 7B
models on GPUs."""

from __future__ import annotations

import time

import pytest
from tests.train.conftest import (
    SHORT_BOX,
    SHORT_CRITIQUE,
    SHORT_CROP,
    SHORT_DIGITS,
    SHORT_HEAD,
    SHORT_LEVELS,
    tiny_overrides,
)

from ieqa import load_evaluator
from ieqa.train import load_recipe, train
from ieqa.train.data import load_training_data


def _run(name, tiny_train_vlm, tmp_path, **overrides):
    recipe = load_recipe(name, {**tiny_overrides(tiny_train_vlm), **overrides})
    t0 = time.perf_counter()
    result = train(recipe, output_dir=tmp_path / name, progress=False)
    print(f"{name}: {time.perf_counter() - t0:.1f} s", result.metrics)
    return recipe, result


def _gain(result, stage, metric, dim=None):
    key = f"{metric}/{dim}" if dim else metric
    return result.metrics[stage]["before"][key], result.metrics[stage]["after"][key]


@pytest.mark.slow
def test_edithf_levels_then_mse_then_bt(tiny_train_vlm, tmp_path):
    _, result = _run("edithf", tiny_train_vlm, tmp_path, **{
        "head.hidden_features": 64, "head.lr": 3e-3,
        "stages.0.template": SHORT_LEVELS, "stages.0.max_steps": 60,
        "stages.1.template": SHORT_HEAD, "stages.1.max_steps": 250,
        "stages.2.template": SHORT_HEAD, "stages.2.max_steps": 60})
    before, after = _gain(result, "pointwise", "srcc", "overall")
    assert after >= 0.5 and after > before + 0.3
    before, after = _gain(result, "pairwise", "pair_accuracy")
    assert after >= 0.7
    assert result.evaluator_dir is not None


def _smoke(name, tiny_train_vlm, tmp_path, steps=3, **overrides):
    """A few steps of every stage: the recipe runs end to end and exports an evaluator
    that loads and scores (learning is shown by the slow tests)."""
    small = {"data": {**tiny_overrides(tiny_train_vlm)["data"], "max_eval_samples": 8,
                      "train": {"shapesedit": {"n": 48, "k": 4, "seed": 1, "size": 112,
                                               "preset": "artifacts", "photo_fraction": 0.0}}}}
    recipe = load_recipe(name, {**tiny_overrides(tiny_train_vlm), **small, **overrides,
                                **{f"stages.{i}.max_steps": steps for i in range(8)
                                   if f"stages.{i}.template" in overrides}})
    result = train(recipe, output_dir=tmp_path / name, progress=False)
    for run in result.children.values() or [result]:
        assert all(loss == loss for _, loss in run.losses)  # finite, not NaN
        assert len(run.losses) == steps * len(recipe.stages)
    return recipe, result


def test_editreward_gaussian_uncertainty_runs_and_exports(tiny_train_vlm, tmp_path):
    recipe, result = _smoke("editreward", tiny_train_vlm, tmp_path, **{
        "head.hidden_features": 32, "stages.0.template": SHORT_HEAD})
    scorer = load_evaluator(result.evaluator_dir)
    held_out = load_training_data(recipe.data, 0).eval[:4]
    scores = scorer.score(held_out)
    assert all(r.ok and r.sigma for r in scores)
    assert set(scores[0].scores) == {"instruction_alignment", "visual_quality", "overall"}


def test_ds_ieqa_per_dimension_tdrl_runs_and_exports(tiny_train_vlm, tmp_path):
    recipe, result = _smoke("ds-ieqa", tiny_train_vlm, tmp_path, **{
        "stages.0.template": SHORT_DIGITS,
        "stages.0.dimensions": ["visual_quality", "overall"]})
    assert set(result.children) == {"visual_quality", "overall"}
    scorer = load_evaluator(result.children["overall"].evaluator_dir)
    assert scorer.score_dimensions == ("overall",)
    assert scorer.score(load_training_data(recipe.data, 0).eval[:2])[0].ok


def test_reasonedit_dual_phases_run_and_export(tiny_train_vlm, tmp_path):
    _, result = _smoke("reasonedit-sft", tiny_train_vlm, tmp_path, **{
        "model": {"name": tiny_train_vlm, "device": "cpu"}, "head.hidden_features": 32,
        **{f"stages.{i}.template": SHORT_CRITIQUE for i in range(3)}})
    assert list(result.metrics) == ["warmup", "mixed", "refresh"]
    assert load_evaluator(result.evaluator_dir).name == "vlm-dual"


def test_epaiqa_grounding_then_levels_on_the_crop(tiny_train_vlm, tmp_path):
    _, result = _smoke("epaiqa", tiny_train_vlm, tmp_path, **{
        "stages.0.template": SHORT_BOX, "stages.1.template": SHORT_LEVELS,
        "stages.1.labels": {"harmony": "visual_quality"},
        "stages.2.template": SHORT_CROP,
        "stages.2.labels": {"local_naturalness": "visual_quality"}})
    assert 0.0 <= result.metrics["grounding"]["after"]["iou"] <= 1.0
    assert load_evaluator(result.evaluator_dir).name == "vlm-levels"


def test_re_reward_queue_loss_with_stratified_epochs(tiny_train_vlm, tmp_path):
    _, result = _smoke("re-reward", tiny_train_vlm, tmp_path, **{
        "head.hidden_features": 32, "stages.0.template": SHORT_HEAD,
        "stages.0.dimensions": ["visual_quality", "overall"],
        "stages.0.sampler_args": {"max_pairs_per_source": 2, "max_texts_per_pair": 1}})
    assert load_evaluator(result.evaluator_dir).name == "vlm-head"
