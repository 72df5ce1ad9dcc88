"""`ieqa mos --method epaiqa` on the hand-worked ratings of test_epaiqa."""

from __future__ import annotations

import csv
import math

import pytest
import typer
from typer.testing import CliRunner

from ieqa.commands.mos import NAME, command
from ieqa.data.manifest import read_manifest, write_manifest
from ieqa.data.schema import EditSample

from .test_epaiqa import E1, E2, E3, RATERS

app = typer.Typer()
app.command(NAME)(command)


@app.callback()
def _root() -> None:
    """Keeps `mos` a sub-command, as in the real `ieqa` app."""


runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def _read_csv(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def ratings_csv(tmp_path):
    path = tmp_path / "epaiqa.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "rater", "dimension", "value"])
        for item, dims in (("e1", E1), ("e2", E2), ("e3", E3)):
            for dim, values in dims.items():
                w.writerows((item, RATERS[j], dim, v) for j, v in enumerate(values))
    return path


def _run(*args):
    return runner.invoke(app, ["mos", *map(str, args)], env={"COLUMNS": "200"})


def test_epaiqa_table_report_and_removed_file(ratings_csv, tmp_path):
    out, removed = tmp_path / "mos.csv", tmp_path / "removed.csv"
    res = _run(ratings_csv, "-o", out, "--scale", "1,5", "--method", "epaiqa", "--removed", removed)
    assert res.exit_code == 0, res.output
    rows = {(r["item"], r["dimension"]): r for r in _read_csv(out)}
    assert float(rows["e1", "prompt_completion"]["mos"]) == 2.0  # voting on all eight ratings gives 1
    assert rows["e1", "prompt_completion"]["n_ratings"] == "6" and rows["e1", "prompt_completion"]["n_dropped"] == "2"
    assert rows["e1", "prompt_completion"]["std"] == ""
    assert float(rows["e1", "overall"]["mos"]) == 2.0
    assert math.isclose(float(rows["e2", "overall"]["mos"]), 13 / 3)
    assert float(rows["e1", "harmony"]["mos"]) == 3.0 and float(rows["e1", "local_naturalness"]["mos"]) == 4.0
    assert float(rows["e3", "prompt_completion"]["mos"]) == 1.0
    text = _flat(res.output)
    assert "screening none" in text and "ratings removed by EPAIQA's cleaning" in text
    for line in ("overall iqr 2 14", "overall conflict 1 14", "harmony iqr 1 8", "local_naturalness iqr 2 8",
                 "prompt_completion overall_removed 2 14", "prompt_completion conflict 1 14"):
        assert line in text, line
    assert "removed overall: item e1 rater r7 = 1 (iqr)" in text
    assert "removed prompt_completion: item e2 rater r4 = 2 (conflict)" in text
    assert "1 item(s) had a tied vote and got the lower tied level (--vote-tie): e3" in text
    assert "all 9 removed rating(s) written to" in text
    listed = _read_csv(removed)
    assert len(listed) == 9
    assert listed[0] == {"dimension": "overall", "item": "e1", "rater": "r7", "value": "1.0", "reason": "iqr"}


def test_conflicts_keep_and_vote_tie(ratings_csv, tmp_path):
    out = tmp_path / "mos.csv"
    res = _run(ratings_csv, "-o", out, "--scale", "1,5", "--method", "epaiqa", "--conflicts", "keep",
               "--vote-tie", "higher")
    assert res.exit_code == 0, res.output
    rows = {(r["item"], r["dimension"]): r for r in _read_csv(out)}
    assert float(rows["e2", "overall"]["mos"]) == 4.0 and float(rows["e3", "prompt_completion"]["mos"]) == 3.0
    assert "conflict rule off (--conflicts keep)" in _flat(res.output)


def test_epaiqa_into_a_manifest(ratings_csv, tmp_path):
    samples = [EditSample(id=i, source="s.png", edited=f"{i}.png", instruction="add a hat") for i in ("e1", "e2", "e3")]
    manifest = write_manifest(samples, tmp_path / "m.jsonl")
    out = tmp_path / "mos.jsonl"
    res = _run(ratings_csv, "-o", out, "--scale", "1,5", "--method", "epaiqa", "--manifest", manifest)
    assert res.exit_code == 0, res.output
    e1 = read_manifest(out)[0]
    assert e1.scores == {"overall": 2.0, "harmony": 3.0, "local_naturalness": 4.0, "prompt_completion": 2.0}
    assert e1.meta["mos"]["prompt_completion"]["method"] == "epaiqa-vote"
    assert e1.meta["score_scale"] == [1.0, 5.0]


@pytest.mark.parametrize(("extra", "message"), [
    (["--screen", "corr"], "EPAIQA's cleaning screens no rater"),
    (["--vote-tie", "middle"], "lower, higher, median"),
    (["--conflicts", "maybe"], "drop, keep"),
])
def test_epaiqa_usage_errors(ratings_csv, tmp_path, extra, message):
    res = _run(ratings_csv, "-o", tmp_path / "m.csv", "--scale", "1,5", "--method", "epaiqa", *extra)
    assert res.exit_code == 2 and message in _flat(res.output), res.output


def test_removed_needs_epaiqa_and_other_dimensions_are_refused(ratings_csv, tmp_path):
    res = _run(ratings_csv, "-o", tmp_path / "m.csv", "--scale", "1,5", "--removed", tmp_path / "r.csv")
    assert res.exit_code == 2 and "add --method epaiqa" in _flat(res.output)
    with ratings_csv.open("a", newline="") as fh:
        csv.writer(fh).writerow(["e1", "r1", "PQ", 3])
    res = _run(ratings_csv, "-o", tmp_path / "m.csv", "--scale", "1,5", "--method", "epaiqa")
    assert res.exit_code == 2 and "--method iqr" in _flat(res.output)
