from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from ieqa.commands.rank_editors import NAME, command
from ieqa.data.manifest import read_manifest, write_manifest

from .conftest import TRUE_RANKING

pytest.importorskip("matplotlib")

runner = CliRunner()
app = typer.Typer()
app.command(NAME)(command)  # a one-command app: invoked without the command name


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def _noisy_predictions(samples, path, sigma=3.0, seed=5):
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for s in samples:
            row = {"id": s.id, **{d: v + rng.normal(0, sigma) for d, v in s.scores.items() if d != "overall"}}
            fh.write(json.dumps(row) + "\n")
    return path


def test_predictions_against_human_end_to_end(tmp_path, shapes_manifest, shapes_samples):
    preds = _noisy_predictions(shapes_samples, tmp_path / "pred.jsonl")
    out = tmp_path / "out"
    res = _invoke(preds, "--human", shapes_manifest, "--out", out, "--by-task", "--common-groups-only")
    assert res.exit_code == 0, res.output
    assert "predicted vs human editor ranking" in res.output and "SRCC" in res.output
    assert "40 of 40 groups" in res.output and "task: recolor" in res.output
    data = json.loads((out / "leaderboard.json").read_text())
    cmp = data["comparison"]["overall"]
    assert 0.0 < cmp["srcc"] < 1.0 and cmp["n_editors"] == 6
    assert data["human_leaderboard"]["editors"] == TRUE_RANKING
    assert data["leaderboard"]["weights"] == pytest.approx(
        {"visual_quality": 0.3, "instruction_alignment": 0.4, "content_preservation": 0.3})
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    main = [r for r in rows if r["task"] == "all"]
    assert [r["editor"] for r in main] == data["leaderboard"]["editors"]
    assert {r["task"] for r in rows} > {"all", "recolor"}
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert len(re.findall(r"data:image/png;base64,", html)) == 2  # bar chart + scatter
    top = data["leaderboard"]["rows"][0]
    assert f"<td>{top['editor']}</td>" in html and f"{top['overall']:.3f}" in html
    assert "Task: recolor" in html


def test_ground_truth_manifest_against_itself(tmp_path, shapes_manifest):
    out = tmp_path / "gt"
    res = _invoke(shapes_manifest, "--human", shapes_manifest, "-o", out,
                  "--weights", "PQ=0.3,SC=0.4,content_preservation=0.3")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "leaderboard.json").read_text())
    assert data["leaderboard"]["editors"] == TRUE_RANKING
    assert data["comparison"]["overall"]["srcc"] == pytest.approx(1.0)
    assert data["comparison"]["overall"]["krcc"] == pytest.approx(1.0)


def test_manifest_alone_prints_the_board(shapes_manifest):
    res = _invoke(shapes_manifest, "--bootstrap", "50")
    assert res.exit_code == 0, res.output
    assert "oracle" in res.output and "bootstrap" in res.output
    assert "predicted vs human" not in res.output


def test_partial_overlap_is_noted(tmp_path, shapes_samples, shapes_manifest):
    half = write_manifest(shapes_samples[:120], tmp_path / "half.jsonl")
    res = _invoke(half, "--human", shapes_manifest)
    assert res.exit_code == 0, res.output
    assert "compared on the 120 edits both files score" in res.output
    preds = _noisy_predictions(read_manifest(half), tmp_path / "p.jsonl")
    res = _invoke(preds, "--human", shapes_manifest)
    assert res.exit_code == 0, res.output
    assert "120 of 240 human-rated edits have no prediction" in res.output


def test_usage_errors(tmp_path, shapes_samples):
    preds = _noisy_predictions(shapes_samples[:6], tmp_path / "p.jsonl")
    res = _invoke(preds)
    assert res.exit_code == 2 and "--human" in res.output
    res = _invoke(preds, "--human", tmp_path / "missing.jsonl")
    assert res.exit_code == 2
    m = write_manifest(shapes_samples[:6], tmp_path / "m.jsonl")
    res = _invoke(m, "--weights", "visual_quality=lots")
    assert res.exit_code == 2 and "not a number" in res.output
    res = _invoke(m, "--weights", "harmony=1")
    assert res.exit_code != 0 and "no scores for" in str(res.exception)
