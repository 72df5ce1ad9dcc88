"""``ieqa studio`` on the command line: create, print links, resume, refuse other
settings, export."""

from __future__ import annotations

import csv

from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.studio import open_study

runner = CliRunner()


def _text(res) -> str:
    """The command's output with rich's box and line wrapping undone."""
    return " ".join(res.output.replace("│", " ").split())


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
    assert res.exit_code != 0 and "it has --protocol rate, you gave --protocol rank" in _text(res)
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


def test_resuming_with_other_options_names_them_as_options(tmp_path, shapes):
    db = tmp_path / "study.sqlite"
    assert runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--raters", "3", "--per-item", "2",
                               "--dimensions", "overall,PQ", "--no-serve"]).exit_code == 0
    # fewer raters than the stored per-item: the difference, not "--per-item must be in 1..1"
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--raters", "1", "--no-serve"])
    assert res.exit_code != 0 and "it has --raters 3, you gave --raters 1" in _text(res)
    assert "per-item" not in _text(res)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--dimensions", "overall",
                              "--scale", "0-10", "--no-serve"])
    text = _text(res)
    assert "it has --dimensions overall,visual_quality, --scale 1-5" in text, text
    assert "you gave --dimensions overall, --scale 0-10" in text and "(" not in text.split("it has")[1]
    # aliases and the same values resume
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--dimensions", "overall,PQ",
                              "--scale", "1-5", "--no-serve"])
    assert res.exit_code == 0, res.output


def test_files_that_are_not_studies_and_missing_manifests(tmp_path, shapes):
    other = tmp_path / "notes.sqlite"
    other.write_text("not a database")
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(other), "--no-serve"])
    assert res.exit_code != 0 and "is not an ieqa studio file" in _text(res)
    assert "create one with" not in _text(res)  # that command would fail the same way
    assert other.read_text() == "not a database"
    res = runner.invoke(app, ["studio", str(tmp_path / "missing.jsonl"), "--db", str(tmp_path / "n.sqlite"),
                              "--no-serve"])
    assert res.exit_code != 0 and "make one with ieqa manifest (or ieqa synth" in _text(res)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "n.sqlite"), "--protocol",
                              "vote", "--no-serve"])
    assert res.exit_code != 0 and "--protocol 'vote' is not one of rate, rank" in _text(res)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "n.sqlite"), "--gold-from",
                              "truth", "--no-serve"])
    assert res.exit_code != 0 and "--gold-from must be one of meta, scores" in _text(res)
    # options another protocol uses are refused, not stored and ignored
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "n.sqlite"), "--protocol", "rank",
                              "--scale", "0-100", "--no-serve"])
    assert res.exit_code != 0 and "--scale applies to rate and critique studies, not rank" in _text(res)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "n.sqlite"), "--tie-margin", "0.5",
                              "--no-serve"])
    assert res.exit_code != 0 and "--tie-margin applies to rank and pairwise studies, not rate" in _text(res)
    assert not (tmp_path / "n.sqlite").exists()


def test_the_links_file_is_private(tmp_path, shapes):
    # a missing folder once gave a FileNotFoundError traceback: it is created
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "s.sqlite"), "--raters", "1",
                              "--links", str(tmp_path / "new" / "links.tsv"), "--no-serve"])
    assert res.exit_code == 0 and (tmp_path / "new" / "links.tsv").is_file(), res.output
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "s.sqlite"), "--export",
                              str(tmp_path / "out" / "ratings.csv"), "--links", str(tmp_path / "again.tsv")])
    assert res.exit_code == 0 and (tmp_path / "out" / "ratings.csv").is_file(), res.output
    # --links with --export: written too (it was once ignored without a word)
    assert (tmp_path / "again.tsv").read_text() == (tmp_path / "new" / "links.tsv").read_text()
    links = tmp_path / "links.tsv"
    links.write_text("old\n")
    links.chmod(0o644)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(tmp_path / "s.sqlite"), "--links", str(links),
                              "--no-serve"])
    assert res.exit_code == 0, res.output
    assert links.stat().st_mode & 0o777 == 0o600  # it holds the tokens, like the study file
    assert links.read_text().startswith("admin\t")


def test_one_loopback_check_for_serve_and_studio():
    # ieqa studio had a copy of ieqa serve's is_loopback (to avoid importing the scorers)
    import os
    import subprocess
    import sys

    from ieqa.commands import _net, serve, studio

    from .helpers import REPO

    assert studio.is_loopback is serve.is_loopback is _net.is_loopback
    assert [_net.is_loopback(h) for h in ("localhost", "127.0.0.2", "[::1]", "0.0.0.0", "example.org")] == [
        True, True, True, False, False]
    # the studio still does not load ieqa serve's command (its scorer options: ~450 modules)
    code = "import sys, ieqa.commands.studio; print(sorted({'ieqa.commands.serve', 'ieqa.commands.options'} & set(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_organiser_options_guidelines_and_exports(tmp_path, shapes):
    guide = tmp_path / "guide.md"
    guide.write_text("# Rules\n\nJudge the edit region first.\n")
    db = tmp_path / "org.sqlite"
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--raters", "2", "--dimensions", "overall",
                              "--training", "1", "--untouched", "refuse", "--revise-any", "--min-seconds", "3",
                              "--guidelines", str(guide), "--no-serve"])
    assert res.exit_code == 0, res.output
    store = open_study(db)
    cfg = store.meta()["config"]
    assert (cfg["untouched"], cfg["revise_any"], cfg["min_seconds"]) == ("refuse", True, 3.0)
    assert store.meta()["guidelines"]["text"].startswith("# Rules")
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--untouched", "flag", "--no-serve"])
    assert res.exit_code != 0 and "it has --untouched refuse, you gave --untouched flag" in _text(res)
    guide.write_text("# Rules v2\n")
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--guidelines", str(guide), "--no-serve"])
    assert res.exit_code == 0 and "guidelines of the study replaced" in _text(res)
    assert store.meta()["guidelines"]["text"] == "# Rules v2\n"
    # answers: a training answer, a skip and a study answer of rater-01
    (r1, _), (r2, t2) = store.raters()
    a = store.assignments(r1)
    store.submit("t", r1, a[0].item, [("overall", 4.0, None, False)], shown=1.0, now=3.5)
    store.submit("s", r1, a[1].item, [], skip="instruction")
    store.submit("x", r1, a[2].item, [("overall", 2.0, None, False)], shown=10.0, now=12.25)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--export", str(tmp_path / "r.csv"),
                              "--export-training", str(tmp_path / "t.csv")])
    assert res.exit_code == 0, res.output
    text = _text(res)
    assert "wrote 1 ratings" in text and "1 \"cannot judge\" answer(s) are not ratings" in text
    assert "wrote 1 training ratings" in text
    (row,) = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert (row["value"], row["duration_s"], row["untouched"]) == ("2.0", "2.25", "false")
    assert row["answered_at"] == "1970-01-01T00:00:12.250Z"
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--export", str(tmp_path / "answers.jsonl")])
    assert res.exit_code == 0 and "wrote 3 answers, skips and replaced answers" in _text(res)
    # organiser actions
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--revoke", r2, "--add-raters", "1",
                              "--reissue", r1, "--no-serve"])
    assert res.exit_code == 0, res.output
    text = _text(res)
    assert f"revoked {r2}" in text and "added rater-03" in text and f"re-issued {r1}" in text
    assert store.rater_by_token(t2) is None and "rater-03" in dict(store.raters())
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--revoke", "rater-99", "--no-serve"])
    assert res.exit_code != 0 and "no rater 'rater-99'" in _text(res)
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--close", "--no-serve"])
    assert res.exit_code == 0 and "closed the study" in _text(res) and store.closed() is not None
    res = runner.invoke(app, ["studio", str(shapes), "--db", str(db), "--add-raters", "1", "--no-serve"])
    assert res.exit_code != 0 and "closed" in _text(res)
