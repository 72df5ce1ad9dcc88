"""The CLI of curate, best-of-n and dpo-pairs: outputs and exit statuses."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ieqa.cli import app

from .conftest import score_row, write_jsonl

runner = CliRunner()
ROWS = [score_row("g1_a", 4.0, group="g1"), score_row("g1_b", 2.0, group="g1"),
        score_row("g2_a", error="timeout", group="g2", instruction="other"),
        score_row("g2_b", error="timeout", group="g2", instruction="other")]


def test_curate_command_and_exit_codes(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    out = tmp_path / "sub"
    res = runner.invoke(app, ["curate", str(path), "-o", str(out), "--keep", "top-k=1"])
    assert res.exit_code == 3, res.output  # two rows errored: written, exit 3
    assert "kept 1 of 4 edits" in res.output and "2 errors" in res.output
    assert json.loads((out / "report.json").read_text())["counts"]["errors"] == 2
    res = runner.invoke(app, ["curate", str(path), "-o", str(out), "--keep", "top-k=1", "--allow-errors"])
    assert res.exit_code == 0, res.output
    for args in (["--keep", "top=3"], ["--keep", "top-k=1", "--by", "colourfulness"],
                 ["--keep", "top-k=1", "--quota", "2"], ["--keep", "top-k=1", "--copy", "--link"]):
        res = runner.invoke(app, ["curate", str(path), "-o", str(out), *args])
        assert res.exit_code == 2, (args, res.output)
    res = runner.invoke(app, ["curate", str(path), "-o", str(out), "--keep", "top-k=1", "--by", "mean"])
    assert res.exit_code == 1 and "none of its 4 rows can be kept" in str(res.exception)


def test_best_of_n_command_reports_failed_groups(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    res = runner.invoke(app, ["best-of-n", str(path), "-o", str(tmp_path / "best.jsonl")])
    assert res.exit_code == 3 and "picked 1 of 2 groups" in res.output
    assert "no pick" in res.output and "timeout" in res.output
    res = runner.invoke(app, ["best-of-n", str(path), "-o", str(tmp_path / "best.jsonl"),
                              "--group-by", "group_id", "--allow-errors"])
    assert res.exit_code == 0
    res = runner.invoke(app, ["best-of-n", str(path), "-o", str(tmp_path / "best.csv")])
    assert res.exit_code == 2


def test_dpo_pairs_command(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS[:2])
    res = runner.invoke(app, ["dpo-pairs", str(path), "-o", str(tmp_path / "d"), "--mode", "global",
                              "--by", "overall", "--reference", str(path)])
    assert res.exit_code == 0, res.output
    assert "1 global pairs from 1 groups" in res.output
    assert json.loads((tmp_path / "d" / "stats.json").read_text())["reference_agreement"]["overall"]["agree"] == 1
    res = runner.invoke(app, ["dpo-pairs", str(path), "-o", str(tmp_path / "d"), "--mode", "global",
                              "--reference", str(tmp_path / "d" / "dpo.jsonl")])
    assert res.exit_code == 1 and "no edited image column" in str(res.exception)
    assert (tmp_path / "d" / "dpo.jsonl").read_text().count("\n") == 1
    res = runner.invoke(app, ["dpo-pairs", str(path), "-o", str(tmp_path / "d"), "--mode", "both"])
    assert res.exit_code == 2


def test_curation_imports_without_the_serve_extra():
    import subprocess
    import sys

    code = ("import sys; import ieqa.curate, ieqa.commands.dpo_pairs; "
            "assert 'fastapi' not in sys.modules and 'uvicorn' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_report_gallery_and_histogram(tmp_path):
    from PIL import Image

    from ieqa.report import GalleryItem, HtmlReport, histogram_chart, thumbnail

    Image.new("RGB", (400, 200), (200, 10, 10)).save(tmp_path / "a.png")
    thumb = thumbnail(tmp_path / "a.png", size=100)
    assert Image.open(__import__("io").BytesIO(thumb)).size == (100, 50)
    assert thumbnail(tmp_path / "missing.png") is None
    report = HtmlReport("g")
    report.add_gallery([GalleryItem("e<1>", [("edited", thumb), ("source", None)], ["reward 4.000"])])
    fig = histogram_chart({"all": [1.0, 2.0, float("nan")], "kept": [2.0]}, "reward", bins=4)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["all (n=2)", "kept (n=1)"]
    html = report.render()
    assert "data:image/jpeg;base64," in html and "source: not readable" in html and "e&lt;1&gt;" in html


def test_best_of_n_exits_3_when_a_row_failed_even_if_every_group_picked(tmp_path):
    """A NaN score in a group that still has a pick: every group picked, yet the row was
    left out, so the run says so and exits 3 (as curate and dpo-pairs do)."""
    rows = [score_row("g1_a", 4.0, group="g1"), score_row("g1_b", float("nan"), group="g1"),
            score_row("g2_a", 3.0, group="g2", instruction="other"),
            score_row("g2_b", 1.0, group="g2", instruction="other")]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # NaN as JSON writes it
    res = runner.invoke(app, ["best-of-n", str(path), "-o", str(tmp_path / "best.jsonl")])
    text = " ".join(res.output.split())
    assert res.exit_code == 3, text
    assert "picked 2 of 2 groups" in text and "1 of 4 input rows failed to score" in text
    report = json.loads((tmp_path / "best.jsonl.report.json").read_text())
    assert report["error_rows"] == 1 and report["picked"] == 2
    res = runner.invoke(app, ["best-of-n", str(path), "-o", str(tmp_path / "best.jsonl"),
                              "--allow-errors"])
    assert res.exit_code == 0, res.output


def test_a_threshold_that_is_not_a_finite_number_is_refused(tmp_path):
    import pytest

    from ieqa.curate.dpo import dpo_pairs
    from ieqa.curate.source import CurateError

    path = write_jsonl(tmp_path / "s.jsonl", ROWS[:2])
    for value in ("nan", "inf", "-inf"):
        res = runner.invoke(app, ["dpo-pairs", str(path), "-o", str(tmp_path / "d"), "--mode",
                                  "global", "--threshold", value])
        assert res.exit_code == 2 and "finite number" in res.output, (value, res.output)
        res = runner.invoke(app, ["curate", str(path), "-o", str(tmp_path / "c"), "--keep",
                                  f"threshold={value}"])
        assert res.exit_code != 0 and "finite number" in " ".join(
            (res.output + str(res.exception)).split()), (value, res.output)
        with pytest.raises(CurateError, match="finite number"):
            dpo_pairs(path, tmp_path / "d2", threshold=float(value))
    assert not (tmp_path / "d").exists() and not (tmp_path / "d2").exists()
