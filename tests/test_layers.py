"""The layer order is a contract (import-linter, configured in pyproject.toml): a package
imports only packages below it, siblings on one layer do not import each other, and no
import circle exists at any depth. A new upward import or circle fails this test, and so CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed "
                                "(it is in the dev extra: make setup)")


def _lint(root: Path, src: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, capture_output=True, text=True, timeout=300, env=env)


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package with ``line`` appended to ``module`` (a path under src/ieqa)."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "src" / "ieqa", tmp_path / "src" / "ieqa",
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "src" / "ieqa" / module
    path.write_text(path.read_text() + f"\n{line}\n")
    return tmp_path


def test_the_layers_are_kept() -> None:
    proc = _lint(REPO, REPO / "src")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 kept, 0 broken" in proc.stdout
    assert "ignore_imports" not in (REPO / "pyproject.toml").read_text().split("\n[tool.importlinter]\n")[1]


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """scorers importing train (what heads.py once did) is reported with the line."""
    root = _copy_with(tmp_path, "scorers/vlm/heads.py", "from ieqa.train import losses  # noqa")
    proc = _lint(root, root / "src")
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "ieqa.scorers is not allowed to import ieqa.train" in proc.stdout
    assert "ieqa.scorers.vlm.heads -> ieqa.train" in proc.stdout


def test_a_sibling_import_breaks_the_contract(tmp_path: Path) -> None:
    """train and explain sit on one layer and must not import each other."""
    root = _copy_with(tmp_path, "train/data.py", "import ieqa.explain.run  # noqa")
    proc = _lint(root, root / "src")
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "ieqa.train is not allowed to import ieqa.explain" in proc.stdout


def test_an_import_circle_breaks_the_contract(tmp_path: Path) -> None:
    """curate.select imports curate.source; the way back makes a circle."""
    root = _copy_with(tmp_path, "curate/source.py", "import ieqa.curate.select  # noqa")
    proc = _lint(root, root / "src")
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "No cycles are allowed in ieqa.curate" in proc.stdout


def _private_imports_across_packages(src: Path) -> list[str]:
    """``importer <- module.name`` for every import of a private module or name (one leading
    underscore) from another top-level package of ieqa."""
    import ast

    found = []
    for path in sorted((src / "ieqa").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        home = parts[1] if len(parts) > 2 else parts[-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("ieqa.")):
                continue
            target = node.module.split(".")
            private_module = any(p.startswith("_") and not p.startswith("__") for p in target)
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if (private or private_module) and target[1] != home:
                    found.append(f"{'.'.join(parts)} <- {node.module}.{alias.name}")
    return found


def test_no_module_imports_a_private_name_from_another_package(tmp_path: Path) -> None:
    assert _private_imports_across_packages(REPO / "src") == []
    root = _copy_with(tmp_path, "human/mos.py", "from ieqa.data.images import _from_16bit  # noqa")
    assert _private_imports_across_packages(root / "src") == [
        "ieqa.human.mos <- ieqa.data.images._from_16bit"]
