"""The layer order is a contract (import-linter, configured in pyproject.toml): a package
imports only packages below it. A new upward import fails this test, and so CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed "
                                "(it is in the dev extra: make setup)")


def _lint(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--config", str(config), "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_the_layers_are_kept() -> None:
    proc = _lint(REPO / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 kept, 0 broken" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The same contract without one of its recorded exceptions: the upward import it
    names (scorers -> train) is reported, with the line."""
    text = (REPO / "pyproject.toml").read_text()
    line = '    "ieqa.scorers.vlm.heads -> ieqa.train.losses",\n'
    assert line in text
    config = tmp_path / "pyproject.toml"
    config.write_text(text.replace(line, ""))
    proc = _lint(config)
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "ieqa.scorers is not allowed to import ieqa.train" in proc.stdout
    assert "ieqa.scorers.vlm.heads -> ieqa.train.losses" in proc.stdout
