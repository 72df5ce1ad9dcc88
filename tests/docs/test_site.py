"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no
unknown reference, no docstring the API pages cannot render), and its generated pages
say what the code says."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings")


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference",
                                                  REPO / "docs" / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mkdocs_build_strict(tmp_path):
    """``make docs``' build. Not ``--quiet``: that hides the warnings, and ``--strict`` then
    has nothing to fail on; any WARNING or ERROR line in the log fails the test too."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO / "src"),
                                                      os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(REPO / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    warnings = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or log
    assert "Documentation built" in log  # the log is there to be read (not --quiet)
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "ieqa rank-editors" in cli and "--batch-size" in cli
    api = (tmp_path / "site" / "api" / "scorers" / "index.html").read_text()
    assert "score_to_file" in api


def test_cli_reference_lists_every_command_and_option():
    import typer

    from ieqa.cli import app

    text = _hook().cli_markdown()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="ieqa")
    for name in root.list_commands(ctx):
        assert f"## ieqa {name}\n" in text
        cmd = root.get_command(ctx, name)
        sub = cmd.context_class(cmd, info_name=name, parent=ctx)
        for param in cmd.get_params(sub):
            for opt in param.opts:
                if opt.startswith("-"):
                    assert opt in text, f"ieqa {name} {opt} missing from the CLI reference"


def test_cli_reference_page_is_generated():
    page = (REPO / "docs" / "reference" / "cli.md").read_text()
    assert _hook().MARKER in page
