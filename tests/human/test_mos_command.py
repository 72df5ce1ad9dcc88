"""End-to-end tests of the `ieqa mos` command on a Typer app of its own."""

from __future__ import annotations

import csv
import math

import pytest
import typer
from typer.testing import CliRunner

from ieqa.commands.mos import NAME, command
from ieqa.data.manifest import read_manifest, write_manifest
from ieqa.data.schema import EditSample, Rating

from .test_mos import R

app = typer.Typer()
app.command(NAME)(command)


@app.callback()
def _root() -> None:
    """Keeps `mos` a sub-command, as in the real `ieqa` app."""


runner = CliRunner()
HIGH, LOW = 50 + 5 * math.sqrt(3) / 3, 50 - 5 * math.sqrt(3) / 3


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


@pytest.fixture
def ratings_csv(tmp_path):
    """The hand-worked 4 x 6 matrix of test_mos (rater r6 gets screened out) on PQ, plus
    two SC ratings and one empty cell."""
    path = tmp_path / "ratings.csv"
    rows = [(f"e{i}", f"r{j + 1}", f"{R[i, j]:g}", "PQ") for i in range(4) for j in range(6)]
    rows += [("e0", "r1", "4", "SC"), ("e1", "r1", "", "SC"), ("e0", "r2", "5", "SC"), ("e1", "r2", "2", "SC")]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "rater", "value", "dimension"])
        w.writerows(rows)
    return path


def _read_csv(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_csv_to_table_zscore_reports_screening(ratings_csv, tmp_path):
    out = tmp_path / "mos.csv"
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(out), "--scale", "1,5"])
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "1 empty value cell(s) ignored" in text
    assert "r6" in text and "25.0%" in text and "beyond 2 sigma" in text
    assert "reliability of the raw ratings" in text and "ICC(2,1)" in text
    rows = _read_csv(out)
    pq = {r["item"]: r for r in rows if r["dimension"] == "visual_quality"}
    assert [float(pq[f"e{i}"]["mos"]) for i in range(4)] == pytest.approx([HIGH, HIGH, LOW, LOW])
    assert pq["e0"]["n_ratings"] == "5" and pq["e0"]["n_dropped"] == "1"
    sc = [r for r in rows if r["dimension"] == "instruction_alignment"]
    assert len(sc) == 2 and sc[0]["std"] == ""  # one kept rating: std undefined -> empty cell


@pytest.mark.parametrize(("method", "e0"), [("iqr", 3.0), ("mean", 20 / 6), ("ecdf-probit", None)])
def test_other_methods(ratings_csv, tmp_path, method, e0):
    out = tmp_path / "mos.tsv"
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(out), "--method", method, "--scale", "1,5"])
    assert res.exit_code == 0, res.output
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    first = next(r for r in rows if r["item"] == "e0" and r["dimension"] == "visual_quality")
    if e0 is not None:
        assert float(first["mos"]) == pytest.approx(e0)
    else:
        assert math.isfinite(float(first["mos"]))


def test_custom_columns_and_default_dimension(tmp_path):
    path = tmp_path / "r.tsv"
    path.write_text("edit\tjudge\tscore\n" + "".join(
        f"x{i}\tj{j}\t{(i + j) % 5 + 1}\n" for i in range(5) for j in range(3)))
    out = tmp_path / "o.csv"
    res = runner.invoke(app, ["mos", str(path), "-o", str(out), "--item-col", "edit", "--rater-col", "judge",
                              "--value-col", "score", "--dimension", "SC", "--method", "mean",
                              "--scale", "1,5"])
    assert res.exit_code == 0, res.output
    rows = _read_csv(out)
    assert {r["dimension"] for r in rows} == {"instruction_alignment"} and len(rows) == 5


def test_manifest_in_manifest_out(tmp_path):
    samples = [
        EditSample(id=f"e{i}", edited=f"e{i}.png", group_id="g", scores={"visual_quality": -1.0},
                   ratings=[Rating(rater=f"r{j + 1}", dimension="PQ", value=R[i, j]) for j in range(6)])
        for i in range(4)
    ] + [EditSample(id="unrated", edited="u.png")]
    src = write_manifest(samples, tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["mos", str(src), "-o", str(out), "--scale", "1,5"])
    assert res.exit_code == 0, res.output
    assert "4 of 5 samples scored, 4 existing score(s) replaced" in _flat(res.output)
    got = {s.id: s for s in read_manifest(out)}
    assert got["e0"].scores["visual_quality"] == pytest.approx(HIGH)
    assert got["e0"].meta["mos"]["visual_quality"]["n_ratings"] == 5
    assert got["e0"].meta["mos"]["visual_quality"]["method"] == "zscore"
    assert len(got["e0"].ratings) == 6 and got["unrated"].scores == {}


def test_csv_with_manifest_attaches_scores(ratings_csv, tmp_path):
    samples = [EditSample(id=f"e{i}", edited=f"e{i}.png") for i in range(5)]
    man = write_manifest(samples, tmp_path / "samples.jsonl")
    out = tmp_path / "scored.jsonl"
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(out), "--manifest", str(man), "--scale", "1,5"])
    assert res.exit_code == 0, res.output
    got = {s.id: s for s in read_manifest(out)}
    assert got["e2"].scores["visual_quality"] == pytest.approx(LOW)
    assert set(got["e0"].scores) == {"visual_quality", "instruction_alignment"}
    assert got["e4"].scores == {}
    few = write_manifest(samples[:2], tmp_path / "few.jsonl")
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(out), "--manifest", str(few), "--scale", "1,5"])
    assert res.exit_code != 0 and "match no sample id" in _flat(res.output)


@pytest.mark.parametrize(("extra", "message"), [
    (["--method", "median"], "unknown method 'median'"),
    (["--item-col", "edit"], "column 'edit' not in ratings.csv"),
    (["--dimension-col", "dim"], "column 'dim' not in ratings.csv"),
    (["--screen", "bt709"], "choose auto, none, or rules joined by commas from: bt500, corr"),
    (["--max-outlier-fraction", "2"], "--max-outlier-fraction: must be in [0, 1]"),
    (["--iqr-k", "-1"], "--iqr-k: must be >= 0"),
])
def test_errors_are_usage_errors(ratings_csv, tmp_path, extra, message):
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(tmp_path / "o.csv"), "--scale", "1,5", *extra])
    assert res.exit_code == 2, res.output
    assert message in _flat(res.output)


def test_output_and_input_kinds(ratings_csv, tmp_path):
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2 and "needs --manifest" in _flat(res.output)
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(tmp_path / "o.xlsx")])
    assert res.exit_code == 2 and "unsupported file type" in _flat(res.output)
    res = runner.invoke(app, ["mos", str(tmp_path / "none.csv"), "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 2 and "does not exist" in _flat(res.output)
    res = runner.invoke(app, ["mos", str(ratings_csv), "-o", str(tmp_path / "o.jsonl"),
                              "--manifest", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "does not exist" in _flat(res.output)
