"""Every built-in recipe learns: a tiny Qwen2-VL trained on ShapesEdit on CPU, with the
recipe scaled down by :func:`ieqa.train.tiny.tiny_recipe`, beats its untrained self on
held-out groups (SRCC on the trained dimension, pair accuracy for ranking recipes), and
exports an evaluator that loads and scores.

Head recipes (EditReward, ReasonEdit SFT, RE-Reward) start from the random tiny VLM. Text
readouts (DS-IEQA digits, EPAIQA and EditHF levels and boxes) start from ``seeing_vlm``,
the same model after a short perception training (see its docstring): a random backbone
sees too little for a readout to learn in seconds. Their readouts still start at chance.
The numbers each test reaches are printed (``pytest -s``) and recorded for
``scripts/test_machines.py``.

Every bar was set from the spread of ``benchmarks/recipe_spread.py`` with the test's
settings (160 held-out edits) over the CPU profiles avx512, avx2 and default (a backbone
trained under each), optim seeds 0-2 and, for seed 0, 1 and 2 threads: 9 to 12 runs per
recipe, listed as ``min..max`` beside each assertion (the command is in each test's
comment; ``scripts/test_machines.py --seeds`` runs the tests themselves so). Profiles and
thread counts change these numbers by at most 0.01 on the random backbone (mostly not at
all to three decimals) and up to 0.12 on the trained one; seeds move them most (up to
0.25), and a seed stands in for what the profiles cannot imitate (another vendor's BLAS
paths): a training run turns any float difference into a seed-sized one. So each claim is
a gain over the run's own start or a margin over a baseline computed on the same held-out
edits, with a bar about 2.5 seed standard deviations below the mean of the runs and below
the lowest run by the margin stated.
"""

from __future__ import annotations

import time

import pytest

from ieqa import load_evaluator
from ieqa.train import train
from ieqa.train.data import load_training_data
from ieqa.train.tiny import tiny_recipe

pytestmark = [pytest.mark.slow, pytest.mark.claim]


#: held-out edits each stage is evaluated on before and after (tiny_recipe's default is 80;
#: 160 halves the variance of the SRCC a bar is judged on, for a few seconds of inference)
EVAL_SAMPLES = 160


def _run(name, model, tmp_path, steps, seed, record, overrides=None, **kwargs):
    """Train the scaled-down recipe ``name`` with optim seed ``seed`` (the ``claim_seed``
    fixture: ``IEQA_TEST_SEED``, default 0) and record each stage's headline metrics with
    ``record`` (pytest's ``record_property``)."""
    overrides = {**(overrides or {}), "optim.seed": seed}
    recipe = tiny_recipe(name, model, steps=steps, max_eval_samples=EVAL_SAMPLES,
                         overrides=overrides, **kwargs)
    t0 = time.perf_counter()
    result = train(recipe, output_dir=tmp_path / name, progress=False)
    runs = result.children or {"": result}
    for dim, run in runs.items():
        print(f"{name} {dim}: {time.perf_counter() - t0:.1f} s", {
            stage: {when: {k: round(v, 3) for k, v in m.items()} for when, m in ms.items()}
            for stage, ms in run.metrics.items()})
        if record is not None:  # in --junitxml: scripts/test_machines.py tabulates these
            for stage, ms in run.metrics.items():
                for when, m in ms.items():
                    for key, value in m.items():
                        if key in ("srcc", "pair_accuracy", "iou", "iou/other_groups"):
                            record(f"{stage}.{key}.{when}", round(value, 3))
    return recipe, result


def _gain(result, stage, metric):
    return result.metrics[stage]["before"][metric], result.metrics[stage]["after"][metric]


def _loss_fifths(run_dir, stage, key="loss"):
    """Mean training ``key`` over the first and the last fifth of ``stage``'s steps (from the
    run's metrics.jsonl): the stage's fit to its own training data, a far steadier signal
    than a held-out correlation that starts near its ceiling."""
    import json

    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    values = [r[key] for r in steps if r.get("stage") == stage and r.get("event") == "step"]
    assert len(values) >= 10, f"{stage}: {len(values)} logged steps with {key!r}"
    k = len(values) // 5
    return sum(values[:k]) / k, sum(values[-k:]) / k


def _scores(recipe, evaluator_dir, n=4):
    scorer = load_evaluator(evaluator_dir)
    results = scorer.score(load_training_data(recipe.data, 0).eval[:n])
    assert all(r.ok for r in results)
    return scorer, results


def test_editreward_gaussian_uncertainty_ranking_learns(tiny_train_vlm, tmp_path, record_property, claim_seed):
    # recipe_spread.py editreward --steps 150 --perception-steps 0 --override
    #   data.max_eval_samples=160 (2026-11-30: 12 runs, profiles and thread counts give the
    #   same numbers to three decimals on the random backbone; 250 steps, the size until
    #   then, gave after 0.871..0.917 and 0.354..0.506, margins 0.071, 0.113, 0.104, 0.144)
    recipe, result = _run("editreward", tiny_train_vlm, tmp_path, steps=150, seed=claim_seed, record=record_property)
    before, after = _gain(result, "ranking", "pair_accuracy")
    # before 0.533..0.658, after 0.867..0.887, gain +0.229..+0.338 (margins 0.067, 0.129)
    assert after >= 0.8 and after >= before + 0.1, (before, after)
    before, after = _gain(result, "ranking", "srcc/visual_quality")
    # before -0.068..0.096, after 0.386..0.476, gain +0.290..+0.486 (seeds 0, 1, 2: 0.29,
    # 0.41, 0.49; 2.5 standard deviations below their mean: 0.148; margins 0.136, 0.140;
    # the bar of 0.45 this test had failed for seeds 0 and 2 with 160 held-out edits)
    assert abs(before) < 0.2 and after >= 0.25 and after >= before + 0.15, (before, after)
    scorer, scores = _scores(recipe, result.evaluator_dir)
    assert scorer.name == "vlm-gaussian" and all(r.sigma for r in scores)
    assert set(scores[0].scores) == {"instruction_alignment", "visual_quality", "overall"}


def test_reasonedit_dual_phases_learn(tiny_train_vlm, tmp_path, record_property, claim_seed):
    # at this scale the CE of the critique (~150 byte tokens) swamps the Huber term of the
    # head; the paper's weights were lost from its tables, so the test sets 0.1
    weights = {f"stages.{i}.text_weight": 0.1 for i in range(3)}
    # recipe_spread.py reasonedit-sft --steps 100,100,100 --perception-steps 0
    #   --override stages.{0,1,2}.text_weight=0.1
    # Fewer steps do not hold (2026-11-30, the same command): at 80 per stage seed 2 ends
    # at 0.392, at 60 the nine runs end at 0.375..0.474, against the bar of 0.4
    recipe, result = _run("reasonedit-sft", tiny_train_vlm, tmp_path, steps=[100, 100, 100],
                          overrides=weights, seed=claim_seed, record=record_property)
    assert list(result.metrics) == ["warmup", "mixed", "refresh"]
    # (instruction alignment and content preservation are constant in this world)
    before = result.metrics["warmup"]["before"]["srcc/visual_quality"]
    after = result.metrics["refresh"]["after"]["srcc/visual_quality"]
    # before 0.063..0.080, after 0.534..0.709, gain +0.455..+0.630 (margins 0.134, 0.155)
    assert abs(before) < 0.2 and after >= 0.4 and after >= before + 0.3, (before, after)
    scorer, _ = _scores(recipe, result.evaluator_dir, n=2)
    assert scorer.name == "vlm-dual"


def test_re_reward_queue_loss_with_stratified_epochs_learns(tiny_train_vlm, tmp_path, record_property, claim_seed):
    # recipe_spread.py re-reward --steps 250 --perception-steps 0
    recipe, result = _run("re-reward", tiny_train_vlm, tmp_path, steps=250, seed=claim_seed, record=record_property)
    before, after = _gain(result, "reward", "srcc")
    # before 0.021..0.063, after 0.365..0.591, gain +0.344..+0.528 (seed 2 is the low one;
    # margins 0.115, 0.144; the bar of 0.45 this test had failed for seed 2)
    assert abs(before) < 0.3 and after >= 0.25 and after >= before + 0.2, (before, after)
    scorer, scores = _scores(recipe, result.evaluator_dir)
    assert scorer.name == "vlm-head"
    assert set(scores[0].scores) >= {"logicality", "accuracy", "usefulness"}


def test_ds_ieqa_per_dimension_tdrl_learns(seeing_vlm, tmp_path, record_property, claim_seed):
    # one model per dimension; the only one of the recipe's three that varies in this world
    # recipe_spread.py ds-ieqa --steps 150 --dimensions visual_quality
    recipe, result = _run("ds-ieqa", seeing_vlm, tmp_path, steps=150,
                          dimensions=["visual_quality"], seed=claim_seed, record=record_property)
    assert set(result.children) == {"visual_quality"}
    before, after = _gain(result.children["visual_quality"], "tdrl", "srcc")
    # the digit readout starts anti-correlated (before -0.341..-0.241) and TDRL moves it
    # towards the truth: after 0.003..0.258, gain +0.339..+0.502 (seeds 0, 1, 2: 0.50,
    # 0.44, 0.34; margin 0.139). The gain is the claim: the absolute bar of 0.25 this test
    # had failed for seeds 1 (0.150) and 2 (0.003); 150 steps do not reliably get a seed
    # above chance
    assert before < 0.0 and after >= before + 0.2, (before, after)
    scorer, _ = _scores(recipe, result.children["visual_quality"].evaluator_dir, n=2)
    assert scorer.name == "vlm-digits" and scorer.score_dimensions == ("visual_quality",)


def test_epaiqa_grounding_then_levels_on_the_crop_learn(seeing_vlm, tmp_path, record_property, claim_seed):
    """EPAIQA's three stages, each beating where it started and a baseline computed here.

    LoRA (as the paper trains it, lr 1e-3): with every weight trainable, 150 steps of box
    answers overwrote what the backbone sees, and harmony after them ranged from -0.13 to
    0.47 over seeds. The spread (``recipe_spread.py epaiqa --steps 150,400,150 --override
    adapter.kind=lora --override optim.lr=1e-3``) is beside each assertion.
    """
    # 250 harmony steps instead of 400 (2026-11-30, nine runs on 1 thread): harmony after
    # 0.815..0.903, but naturalness's gain over its start narrows to +0.035..+0.33 (seed 0
    # +0.035..+0.041 under every profile), half its margin at 400: kept at 400
    recipe, result = _run("epaiqa", seeing_vlm, tmp_path, steps=[150, 400, 150], lr=1e-3,
                          overrides={"adapter.kind": "lora"}, seed=claim_seed, record=record_property)
    ground = result.metrics["grounding"]
    assert ground["before"]["iou"] == 0.0  # no box answers before the stage
    after = ground["after"]
    assert after["failed"] <= 0.1 * (after["parsed"] + after["failed"])
    # the boxes follow the edit: a model that does not look where the edit is (a constant
    # box, the whole image or any other) scores about as well against the boxes of other
    # groups' edits as against its own edit's (ratio ~1); this one scores 2.6..4.2x
    # (IoU 0.209..0.254 against 0.053..0.098; margin 1.1x), and beats the mean box
    # (0.087..0.110)
    assert after["iou"] >= 1.5 * after["iou/other_groups"], after
    assert after["iou"] > after["iou/mean_box"], after
    # not claimed: beating a whole-image box, which scores the true box's area (0.23-0.28
    # on these held-out edits) against the tiny model's 0.21-0.25 at 16 tokens an image
    before, after = _gain(result, "harmony", "srcc")
    # before -0.000..0.215, after 0.834..0.921, gain +0.622..+0.904 (margins 0.134, 0.172;
    # the absolute "before < 0.25" this test had kept 0.035)
    assert after >= 0.7 and after >= before + 0.45, (before, after)
    # naturalness starts from the level readout harmony trained, now on the crop. It fits
    # the crops: the stage's training CE (last fifth of its steps against the first) falls
    # to 0.72..0.75 of where it started (margin 0.10); and it ranks held-out crops better
    # than it started: before 0.355..0.540, after 0.558..0.680, gain +0.065..+0.324 (with
    # 80 held-out edits the gain was +0.055 on the machine that set a bar of +0.03, and
    # +0.001 on an AMD CI machine: half the edits, twice the variance)
    first, last = _loss_fifths(tmp_path / "epaiqa", "naturalness")
    assert last <= 0.85 * first, (first, last)
    before, after = _gain(result, "naturalness", "srcc")
    assert after >= 0.45 and after > before, (before, after)
    scorer, _ = _scores(recipe, result.evaluator_dir, n=2)
    assert scorer.name == "vlm-levels"


def test_edithf_levels_then_mse_then_bt_learns(seeing_vlm, tmp_path, record_property, claim_seed):
    # recipe_spread.py edithf --steps 50,100,50
    _, result = _run("edithf", seeing_vlm, tmp_path, steps=[50, 100, 50], seed=claim_seed, record=record_property)
    before, after = _gain(result, "textual", "srcc")
    # before -0.302..-0.173, after 0.479..0.513, gain +0.678..+0.811 (margins 0.079, 0.228)
    assert before < 0.1 and after >= 0.4 and after >= before + 0.45, (before, after)
    before, after = _gain(result, "pointwise", "srcc")
    # before -0.102..0.540, after 0.883..0.904, gain +0.364..+0.985 (margins 0.083, 0.164)
    assert after >= 0.8 and after >= before + 0.2, (before, after)
    # the pairwise stage starts where the pointwise one ended, with pair accuracy already
    # 0.838..0.921, and ends at 0.858..0.921: its held-out gain is +0.062, +0.000 and
    # +0.004..+0.008 for optim seeds 0, 1 and 2, so no gain is claimed (this test claimed
    # +0.02 before). At this scale its Bradley-Terry loss even rises over the stage
    # (0.14-0.16 in the first fifth, 0.44-0.54 in the last) while held-out pair accuracy
    # holds. Claimed: it trains on the pairs (a Bradley-Terry loss that moves the model)
    # and keeps the ranking (margins 0.058 and 0.030).
    before, after = _gain(result, "pairwise", "pair_accuracy")
    assert after >= 0.8 and after >= before - 0.03, f"pair accuracy {before:.3f} -> {after:.3f}"
    first, last = _loss_fifths(tmp_path / "edithf", "pairwise", "bt")
    assert first > 0.0 and last > 0.0, (first, last)
    moved = result.metrics["pairwise"]
    assert moved["after"]["srcc"] != moved["before"]["srcc"], moved
    assert result.evaluator_dir is not None
