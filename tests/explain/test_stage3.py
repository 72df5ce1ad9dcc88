"""EPAIQA stage 3 end to end on ShapesEdit on CPU: a tiny VLM fine-tuned on stage-3 answers
built from ground truth writes critiques in the stage-3 format, through ``ieqa explain
--checkpoint``.

The recipe is ``epaiqa-cot`` cut to its stage-3 stage and scaled down by
:func:`ieqa.train.tiny.tiny_recipe` (stages 1-2 are the ``epaiqa`` recipe's, tested in
tests/train/test_recipes_learn.py). It starts from the random tiny Qwen2-VL: the format is
text the language model learns without seeing much. The numbers are printed (``-s``).
"""

from __future__ import annotations

import time

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.explain import parse_epaiqa
from ieqa.prompts.answers.epaiqa_cot import completion_of, epaiqa_cot_target
from ieqa.testing import build_tiny_vlm
from ieqa.train import load_recipe, train
from ieqa.train.recipe import Recipe
from ieqa.train.tiny import tiny_recipe

#: 1200 edits (960 trained on, 16 of the 240 held out evaluated): 300 steps of 4 see each
#: training answer about once. On 160 edits (~4 passes over 128) the tiny model memorised
#: each answer by its image and mixed memorised answers on new images: format stability
#: 1.0 or 0.5 or 0.0 by seed. See the spread beside the assertion.
SHAPES = {"n": 1200, "k": 4, "seed": 1, "size": 112, "photo_fraction": 0.0}
#: a ShapesEdit stage-3 answer is ~330 byte-level tokens for the tiny tokenizer
STAGE3 = {"data.train": {"shapesedit": SHAPES}, "optim.lr": 3e-3, "optim.scheduler": "cosine",
          "stages.0.max_new_tokens": 400}


def _sample(**meta) -> EditSample:
    return EditSample(id="s", source="s.png", edited="e.png", instruction="make it red",
                      scores={"overall": 4.0}, meta=meta)


def test_cot_targets_follow_the_format_and_the_early_exit():
    full = epaiqa_cot_target(_sample(mode="perfect", unintended_change=0.0, artifact="blur",
                                     artifact_severity=0.5),
                             {"harmony": " excellent", "local_naturalness": " fair",
                              "overall": " good"})
    assert full.startswith("The prompt completion is fully followed. The requested edit was")
    c = parse_epaiqa(full)
    assert c.ok and c.levels == {"prompt_completion": "fully followed", "overall": "good",
                                 "harmony": "excellent", "local_naturalness": "fair"}
    assert "moderate blur degradation" in c.sections["local_naturalness"]
    early = epaiqa_cot_target(_sample(mode="no_op"), {})
    assert parse_epaiqa(early).early_exit and parse_epaiqa(early).levels["overall"] == "bad"
    assert parse_epaiqa(epaiqa_cot_target(_sample(mode="partial"), {})).levels["overall"] == "poor"
    given = _sample(prompt_completion=3, cot={"completion": "Done.", "harmony": "Fits well",
                                              "naturalness": "Clean"})
    text = epaiqa_cot_target(given, {"harmony": "good", "local_naturalness": "good",
                                     "overall": "excellent"})
    assert text == ("The prompt completion is fully followed. Done. The harmony: Fits well. The "
                    "local naturalness: Clean. Therefore, the overall editing quality level of "
                    "the image is excellent.")
    with pytest.raises(TrainDataError, match="no prompt completion level"):
        completion_of(_sample())
    with pytest.raises(TrainDataError, match="no level for harmony"):
        epaiqa_cot_target(_sample(mode="perfect"), {"overall": "good"})
    with pytest.raises(TrainDataError, match="must be 1, 2 or 3"):
        completion_of(_sample(prompt_completion=4))


def test_full_recipe_validates():
    recipe = load_recipe("epaiqa-cot")
    assert [s.name for s in recipe.stages] == ["grounding", "harmony", "naturalness",
                                               "explanation"]
    assert recipe.stages[-1].target == "epaiqa-cot"
    with pytest.raises(Exception, match="goes with objective: text"):
        load_recipe("epaiqa-cot", ["stages.3.objective=pointwise", "stages.3.loss=mse"])


@pytest.mark.slow
@pytest.mark.claim
def test_stage3_trains_exports_and_explains(tmp_path, claim_seed, record_property):
    # ~35 s on an idle 2-core machine: 300 steps on ~330-token answers, and generation of
    # up to 400 tokens for 16 held-out edits before and after, and 8 more through the CLI
    t0 = time.perf_counter()
    model = build_tiny_vlm(tmp_path / "tiny", "qwen2-vl")
    full = load_recipe("epaiqa-cot").model_dump()
    stage3 = Recipe.model_validate({**full, "stages": full["stages"][-1:]})
    recipe = tiny_recipe(stage3, model, steps=300, max_eval_samples=16, batch_size=4,
                         overrides={**STAGE3, "optim.seed": claim_seed})
    result = train(recipe, output_dir=tmp_path / "run", progress=False)
    m = result.metrics["explanation"]
    print("stage 3", f"{time.perf_counter() - t0:.1f} s", m)
    record_property("format_stability", m["after"]["format_stability"])
    assert m["before"]["format_stability"] == 0.0
    # Spread (scripts/test_machines.py --tests tests/explain/test_stage3.py --runs 1
    # --seeds ...; 2026-11-29): format stability 1.0 and `ieqa explain` parse rate 1.0 for
    # seeds 0-11 (avx2, 1 thread) and seeds 0-2 under avx512 and default, 1 and 2 threads:
    # 24 of 24 runs. The bar keeps 4 of 16 in hand, and stays above what a model that wrote
    # only the short early-exit answers would reach (about half the edits). Before (160 edits, 150 steps, constant
    # lr): 1.0, 0.5, 0.0, 0.0, 1.0 over seeds 0-4, so only seed 0 passed.
    assert m["after"]["format_stability"] >= 0.75
    assert result.evaluator_dir is not None

    from ieqa.data.shapesedit import ShapesEditConfig, generate

    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=8, k=4, seed=5, size=112,
                                                             photo_fraction=0.0),
                        progress=False)
    out = tmp_path / "crit.parquet"
    res = CliRunner().invoke(app, ["explain", str(manifest), "--checkpoint",
                                   str(result.evaluator_dir),  # its format: epaiqa
                                   "-O", "device=cpu", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = pq.read_table(out).to_pylist()
    rate = sum(r["parse_status"] == "ok" for r in rows) / len(rows)
    print("ieqa explain --checkpoint parse rate", rate, f"{time.perf_counter() - t0:.1f} s")
    record_property("cli_parse_rate", rate)
    assert rate >= 0.75
    assert all(r["explanation"].startswith("The prompt completion is") for r in rows)
    assert all(r["format"] == "epaiqa" for r in rows)
