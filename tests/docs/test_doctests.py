"""The ``>>>`` examples of ieqa's docstrings run, and show what they print (doctest).

Every module under ``src/ieqa`` with a ``>>>`` line is a test of its own, found when the
tests are collected, so a new example runs without being registered anywhere. Examples
run in a temporary folder (one that writes ``report.html`` writes it there), and each
module must run at least one example: ``# doctest: +SKIP`` is for the lines that need a
model, a dataset or a server, not for a whole docstring.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
_EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)


def modules_with_examples() -> list[str]:
    names = []
    for path in sorted((SRC / "ieqa").rglob("*.py")):
        if _EXAMPLE.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(SRC).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = modules_with_examples()


def test_modules_with_examples_are_found() -> None:
    assert {"ieqa.optimize", "ieqa.data.dimensions", "ieqa.data.scales"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    assert tests, f"{name} has '>>>' lines but doctest finds no example in its docstrings"
    runner = doctest.DocTestRunner()
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "".join(report)
    assert attempted > 0, f"every example of {name} is skipped (# doctest: +SKIP)"
