"""Session fixture ``tiny_models``: one tiny random checkpoint per Qwen-VL family."""

from __future__ import annotations

from pathlib import Path

import pytest

FAMILIES = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny random checkpoint per Qwen-VL family (built once per session)."""
    from ieqa.testing import build_tiny_vlm

    root = tmp_path_factory.mktemp("tiny-vlms")
    return {family: build_tiny_vlm(root / family, family) for family in FAMILIES}
