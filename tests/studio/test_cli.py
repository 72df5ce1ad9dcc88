"""``ieqa studio`` on the command line: create, print links, resume, refuse other
settings, export."""

from __future__ import annotations

import csv

from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.studio import open_study

runner = CliRunner()


def test_create_resume_and_export(tmp_path, shapes):
    db, links = tmp_path / "study.sqlite", tmp_path / "links.tsv"
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--raters", "2", "--per-item", "1",
                              "--dimensions", "overall,PQ", "--scale", "0-10", "--links", str(links),
                              "--no-serve", "--port", "8765"])
    assert res.exit_code == 0, res.output
    rows = [line.split("\t") for line in links.read_text().splitlines()]
    assert [r[0] for r in rows] == ["admin", "rater-01", "rater-02"]
    assert rows[1][1].startswith("http://127.0.0.1:8765/invite/") and rows[1][1] in res.output
    store = open_study(db)
    cfg = store.meta()["config"]
    assert cfg["dimensions"] == ["overall", "visual_quality"] and cfg["scale"] == [0.0, 10.0]
    # resume: same options or none are fine; others are refused, saying which
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--raters", "2", "--no-serve"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--protocol", "rank", "--no-serve"])
    assert res.exit_code != 0 and "--protocol 'rate'" in res.output
    rater = store.raters()[0][0]
    for a in store.assignments(rater)[:3]:
        store.submit(f"s{a.item}", rater, a.item, [("overall", 7.0, None), ("visual_quality", 2.0, None)])
    out = tmp_path / "ratings.csv"
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--export", str(out)])
    assert res.exit_code == 0 and "wrote 6 ratings" in res.output
    assert len(list(csv.DictReader(out.open()))) == 6
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--export", str(tmp_path / "x.jsonl")])
    assert res.exit_code != 0 and "*.csv" in res.output


def test_errors_say_what_to_do(tmp_path, shapes):
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "a.sqlite"), "--raters", "2",
                              "--per-item", "3", "--no-serve"])
    assert res.exit_code != 0 and "--per-item" in res.output
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "b.sqlite"), "--gold", "2",
                              "--no-serve"])
    assert res.exit_code != 0 and "--gold-from scores" in res.output
    assert not (tmp_path / "b.sqlite").exists()
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "c.sqlite"), "--scale", "high",
                              "--no-serve"])
    assert res.exit_code != 0 and "LO-HI" in res.output
