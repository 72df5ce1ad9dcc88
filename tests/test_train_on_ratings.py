"""Training on your own ratings, exactly as the README shows, on a tiny model:

    ieqa mos ratings.csv --scale 1,5 -o mos.jsonl --manifest items.jsonl
    ieqa train edithf --set model.name=./tiny --set data.train=./mos.jsonl --out run
    cd elsewhere && ieqa score ../work/mos.jsonl --checkpoint ../work/run/evaluator -o scores.parquet

The ratings (1-5, raw, long form ``item,rater,value,dimension``) cover visual quality and
instruction alignment only, as a real study might: no ``overall``. Four raters follow the
ShapesEdit ground truth with noise, a fifth answers at random. The built-in recipe is
only scaled down (short prompts, two steps per stage, batch 4), through ``--set``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ieqa.cli import app, main
from ieqa.data.manifest import read_manifest, write_manifest
from ieqa.data.shapesedit import ShapesEditConfig, generate
from ieqa.testing import build_tiny_vlm
from ieqa.train.tiny import SHORT_TEMPLATES

runner = CliRunner()
DIMS = ("visual_quality", "instruction_alignment")
HONEST, SPAMMER = ("ann", "bob", "cat", "dan"), "eve"


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``tiny/`` (a tiny Qwen2-VL), ``items.jsonl`` (36 unscored edits whose
    images live in ``shapes/``) and ``ratings.csv``."""
    root = tmp_path_factory.mktemp("train-on-ratings")
    work = root / "work"
    build_tiny_vlm(work / "tiny", "qwen2-vl", max_pixels=112 * 112)
    manifest = generate(work / "shapes", ShapesEditConfig(n=36, k=4, seed=2, size=64, photo_fraction=0.0))
    truth = read_manifest(manifest)
    write_manifest([s.model_copy(update={"scores": {}, "meta": {}}) for s in truth], work / "items.jsonl")
    rng = np.random.default_rng(0)
    with (work / "ratings.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "rater", "value", "dimension"])
        for s in truth:
            for dim in DIMS:
                for rater in HONEST:
                    w.writerow([s.id, rater, int(np.clip(np.round(s.scores[dim] + rng.normal(0, 0.7)), 1, 5)), dim])
                w.writerow([s.id, SPAMMER, int(rng.integers(1, 6)), dim])
    return work


def _train_args(recipe: str, data: str) -> list[str]:
    head = json.dumps(SHORT_TEMPLATES["head"])
    levels = json.dumps(SHORT_TEMPLATES["levels"])
    args = ["train", recipe, "--set", "model.name=./tiny", "--set", f"data.train={data}", "--out", "run",
            "--no-progress", "--set", "optim.batch_size=4", "--set", "head.hidden_features=16"]
    if recipe == "edithf":
        args += ["--set", f"stages.0.template={levels}", "--set", f"stages.1.template={head}",
                 "--set", f"stages.2.template={head}"]
        args += [x for i in range(3) for x in ("--set", f"stages.{i}.max_steps=2")]
    return args


def _main(monkeypatch, capsys, args: list[str]) -> tuple[int, str]:
    """Run the real console entry point (its error handler included)."""
    monkeypatch.setattr(sys, "argv", ["ieqa", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, _flat(capsys.readouterr().err)


def test_ratings_to_mos_to_training_to_scores(work, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(work)
    # 1. MOS from the raw ratings: the random rater is screened out although BT.500 cannot
    #    flag anyone with five ratings per item; the MOS manifest states its 0-100 scale
    res = runner.invoke(app, ["mos", "ratings.csv", "--scale", "1,5", "-o", "mos.jsonl", "--manifest", "items.jsonl"])
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "BT.500 screening cannot flag any rating" in text
    for dim in DIMS:
        assert f"{dim}: rater {SPAMMER} rejected by corr" in text
    assert not any(f"rater {h} rejected" in text for h in HONEST)
    scored = read_manifest(work / "mos.jsonl")
    assert all(set(s.scores) == set(DIMS) and s.meta["score_scale"] == [0.0, 100.0] for s in scored)

    # 2. the data has no overall: a raw KeyError once; now a clear error for a recipe that
    #    cannot use the data (printed as written: the brackets of the hint survive rich) ...
    code, err = _main(monkeypatch, capsys, _train_args("re-reward", "./mos.jsonl"))
    assert code == 1 and "Traceback" not in err
    assert "--set stages.0.dimensions=[visual_quality]" in err
    # ... and unscored data points to `ieqa mos`
    code, err = _main(monkeypatch, capsys, _train_args("edithf", "./items.jsonl"))
    assert code == 1 and "ieqa mos RATINGS --scale LO,HI -o scored.jsonl --manifest SAMPLES" in err

    # 3. EditHF trains the dimensions the data has, and says so
    res = runner.invoke(app, _train_args("edithf", "./mos.jsonl"))
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert ("stage 'pointwise' trains overall, which is not scored in the data; it trains the dimensions "
            "the data scores instead: visual_quality, instruction_alignment") in text
    assert "pairs are ranked by the mean of visual_quality, instruction_alignment" in text
    record = json.loads((work / "run" / "evaluator" / "ieqa_evaluator.json").read_text())
    assert record["scorer"] == "vlm-head" and record["args"]["dimensions"] == list(DIMS)
    assert record["base_model"] == str(work / "tiny")  # not "./tiny": loads from anywhere

    # 4. score from another directory, no --scorer: the checkpoint's scorer is used
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = runner.invoke(app, ["score", os.path.relpath(work / "mos.jsonl"),
                              "--checkpoint", os.path.relpath(work / "run" / "evaluator"), "-o", "scores.parquet"])
    assert res.exit_code == 0, res.output
    assert "vlm-head" in res.output
    rows = {r["id"]: r for r in pq.read_table(elsewhere / "scores.parquet").to_pylist()}
    assert len(rows) == len(scored) and all(r["error"] is None for r in rows.values())
    from ieqa import load_evaluator

    direct = load_evaluator(work / "run" / "evaluator").score(scored[:3])
    for want in direct:
        row = rows[want.id]
        for dim in DIMS:
            assert math.isfinite(row[dim]) and row[dim] == pytest.approx(want.scores[dim], rel=1e-5)
