import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ieqa
from ieqa.cli import app

runner = CliRunner()


def test_version_and_list():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and ieqa.__version__ in res.output
    res = runner.invoke(app, ["list"])  # a short overview: a count per kind, no names
    assert res.exit_code == 0 and "ieqa list scorers" in res.output
    assert "shapesedit" not in res.output and "instruction_alignment" not in res.output
    n_scorers = len(ieqa.list_scorers())
    assert re.search(rf"scorers\s*\S\s*{n_scorers}\s", res.output), res.output
    res = runner.invoke(app, ["list", "benchmarks"])
    assert res.exit_code == 0 and "shapesedit" in res.output
    res = runner.invoke(app, ["list", "dimensions"])
    assert res.exit_code == 0 and "instruction_alignment" in res.output
    res = runner.invoke(app, ["list", "gadgets"])
    assert res.exit_code != 0


def test_synth_writes_a_set(tmp_path):
    res = runner.invoke(app, ["synth", "--n", "12", "--k", "3", "--size", "96", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "manifest.jsonl").read_text().count("\n") == 12
    res = runner.invoke(app, ["synth", "--n", "12", "--k", "9", "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "k must be" in res.output


@pytest.mark.slow
def test_demo_runs_and_summarises(tmp_path):
    res = runner.invoke(app, ["demo", "--n", "24", "--out", str(tmp_path), "--train-steps", "2"])
    assert res.exit_code == 0, res.output
    assert "editors by mean overall score" in res.output and "24" in res.output
    assert "shapesedit metrics" in res.output and "visual_quality" in res.output
    assert (tmp_path / "scores.parquet").is_file() and (tmp_path / "bench" / "report.html").is_file()
    # the training part: a tiny VLM trained with the editreward recipe, held-out metrics
    # before and after (learning itself is shown by tests/train/test_recipes_learn.py)
    assert "held-out SRCC" in res.output and "pair_accuracy" in res.output
    assert (tmp_path / "train" / "evaluator" / "ieqa_evaluator.json").is_file()
    # no terminal here: every long step reports in plain lines (at least the final one)
    assert "ShapesEdit: 24/24 edits (100%)" in res.output
    assert "Scoring with classic: 24/24 (100%)" in res.output
    assert re.search(r"train \S+: 2/2 steps \(100%\), [\d.]+ steps/s, \d+ s elapsed, done, "
                     r"loss [-\d.e]+", res.output), res.output
    # the closing summary: each file written, what to read next (pages that exist)
    closing = res.output[res.output.index("what the demo wrote"):]
    evaluator = tmp_path / "train" / "evaluator"
    for path in (tmp_path / "shapesedit" / "manifest.jsonl", tmp_path / "scores.parquet",
                 tmp_path / "bench" / "report.html", evaluator):
        assert str(path) in closing and path.exists(), (path, closing)
    assert f"--checkpoint {evaluator}" in closing
    from ieqa.commands.demo import NEXT_PAGES

    root = Path(__file__).resolve().parents[1]
    assert all(page in closing and (root / page).is_file() for page, _ in NEXT_PAGES)
    assert re.search(r"done in [\d.]+ s \(everything is in ", closing)


@pytest.mark.slow
def test_demo_can_skip_training(tmp_path):
    res = runner.invoke(app, ["demo", "--n", "8", "--out", str(tmp_path), "--train-recipe", "none"])
    assert res.exit_code == 0, res.output
    assert "held-out SRCC" not in res.output and not (tmp_path / "train").exists()


def test_number_pairs_of_price_and_score_scale():
    """``--price`` and ``--score-scale`` read "A,B" through one parser
    (ieqa.commands.options.number_pair); a bad pair says what to write, a reversed scale is
    refused."""
    import typer

    from ieqa.commands.bench_editor import _prices
    from ieqa.commands.optimize_prompt import _scale

    assert _prices(None) is None and _scale(None) is None
    assert _prices("2,8") == (2.0, 8.0) and _scale("0, 100") == (0.0, 100.0)
    with pytest.raises(typer.BadParameter, match="write INPUT,OUTPUT in USD per million"):
        _prices("2")
    with pytest.raises(typer.BadParameter, match="score range as LOW,HIGH"):
        _scale("1,2,3")
    with pytest.raises(typer.BadParameter, match="LOW must be below HIGH"):
        _scale("5,1")
