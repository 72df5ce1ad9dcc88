"""Typos end in messages, never tracebacks: an unknown scorer lists the known ones in
every command that takes --scorer, and -O values are checked against the scorer's
options (issue 26)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.scorers import ScorerError, create_scorer

runner = CliRunner()


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    return generate(tmp_path_factory.mktemp("shapes"), ShapesEditConfig(n=2, k=2, seed=1, size=64),
                    progress=False)


def _text(res) -> str:  # noqa: ANN001 - typer's Result
    text = " ".join(res.output.split())
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        text += f" [{type(res.exception).__name__}] {res.exception}"
    return text


def _commands(shapes: Path, out: Path, scorer: str, *extra: str) -> dict[str, list[str]]:
    return {
        "score": ["score", str(shapes), "-o", str(out / "s.parquet"), "--scorer", scorer, *extra],
        "explain": ["explain", str(shapes), "-o", str(out / "e.jsonl"), "--scorer", scorer, *extra],
        "bench": ["bench", "-b", str(shapes.parent), "--scorer", scorer, "-o", str(out / "b"),
                  *extra],
        "serve": ["serve", "--scorer", scorer, "--port", "1", *extra],
    }


@pytest.mark.parametrize("command", ["score", "explain", "bench", "serve"])
def test_an_unknown_scorer_lists_the_known_ones(shapes: Path, tmp_path: Path, command: str) -> None:
    res = runner.invoke(app, _commands(shapes, tmp_path, "nosuch")[command])
    text = _text(res)
    assert res.exit_code in (1, 2), text
    assert "unknown scorer 'nosuch'" in text and "classic" in text and "ieqa list scorers" in text, text
    assert "KeyError" not in text and "Traceback" not in text, text


@pytest.mark.parametrize("command", ["score", "serve"])
def test_an_option_of_the_wrong_type_says_which(shapes: Path, tmp_path: Path, command: str) -> None:
    res = runner.invoke(app, _commands(shapes, tmp_path, "classic", "-O", "sigma=abc")[command])
    text = _text(res)
    assert res.exit_code in (1, 2), text
    assert "option sigma takes a number, got 'abc'" in text, text
    assert "TypeError" not in text, text


def test_option_types_in_python() -> None:
    with pytest.raises(ScorerError, match="option niqe takes true or false, got 'yes'"):
        create_scorer("classic", niqe="yes")
    with pytest.raises(ScorerError, match="option sigma takes a number, got True"):
        create_scorer("classic", sigma=True)
    assert create_scorer("classic", sigma=2).sigma == 2.0  # an int is a number
    with pytest.raises(KeyError):  # still a KeyError for code that looks names up
        create_scorer("nosuch")
