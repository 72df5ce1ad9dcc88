"""docs/reference/cli.md's exit-status table against the commands: every command answers
``--help`` with 0 and an unknown option with 2 (usage), a missing input with 2 or an
unreadable one with 1, and status 3 is listed for exactly the commands that can end
"written, with failures" (those with ``--allow-errors``, and optimize-prompt)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.commands.options import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from ieqa.errors import IeqaError

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"


def _table() -> dict[int, tuple[str, str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("<!-- exit-statuses -->") + 3
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        status, meaning, commands = (c.strip() for c in line.strip("|").split(" | "))
        rows[int(status)] = (meaning, commands)
    return rows


def _commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


def test_the_table_holds_the_statuses_of_the_code():
    import signal

    rows = _table()
    assert sorted(rows) == [EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PARTIAL,
                            128 + signal.SIGINT, 128 + signal.SIGTERM] == [0, 1, 2, 3, 130, 143]
    assert all(rows[s][1] == "every command" for s in (0, 1, 2))
    # a signal's status: ieqa.cli.main (tests/scorers/test_score_command.py stops a run)
    assert all(rows[s][1].startswith("every command") for s in (130, 143))


def test_status_3_is_listed_for_exactly_the_commands_that_can_end_with_failures():
    listed = set(re.findall(r"([a-z][a-z-]+)(?:,| \(|;|$)", _table()[3][1]))
    with_allow = {name for name, cmd in _commands().items()
                  if any("--allow-errors" in p.opts for p in cmd.params)}
    assert with_allow, "no command has --allow-errors?"
    assert listed - {"with", "its"} == with_allow | {"optimize-prompt"}, listed


@pytest.mark.parametrize("name", sorted(_commands()))
def test_help_is_0_and_an_unknown_option_is_a_usage_error(name):
    runner = CliRunner()
    assert runner.invoke(app, [name, "--help"]).exit_code == EXIT_OK
    res = runner.invoke(app, [name, "--no-such-option"])
    assert res.exit_code == EXIT_USAGE, (name, res.output)


#: (command, the options it needs besides its input, the unreadable input's suffix)
_READERS = [("score", ["-o", "{out}.jsonl"], "jsonl"), ("curate", ["-o", "{out}", "--keep", "top-k=1"], "jsonl"),
            ("best-of-n", ["-o", "{out}.jsonl"], "jsonl"),
            ("dpo-pairs", ["-o", "{out}", "--mode", "global"], "jsonl"),
            ("rank-editors", [], "jsonl"), ("mos", ["-o", "{out}.csv"], "csv")]


@pytest.mark.parametrize(("name", "options", "suffix"), _READERS)
def test_a_missing_input_is_2_and_an_unreadable_one_is_1(tmp_path, name, options, suffix):
    """A path that does not exist is a usage error; one whose bytes cannot be read ends in
    the one-line error (1: ieqa's entry point prints the exception and exits 1)."""
    runner = CliRunner()
    opts = [o.format(out=tmp_path / "out") for o in options]
    missing = runner.invoke(app, [name, str(tmp_path / f"nothere.{suffix}"), *opts])
    assert missing.exit_code == EXIT_USAGE, (name, missing.output)
    bad = tmp_path / f"bad.{suffix}"
    bad.write_bytes(b'{"id": "a", "source": "caf\xe9.png", "edited": "e.png"}\n' if suffix == "jsonl"
                    else b"rater,id,overall\nr\xe91,a,3\n")
    res = runner.invoke(app, [name, str(bad), *opts])
    assert isinstance(res.exception, IeqaError), (name, res.exit_code, res.output, res.exception)
    line = 1 if suffix == "jsonl" else 2
    assert f"line {line} is not UTF-8" in str(res.exception), (name, str(res.exception))
