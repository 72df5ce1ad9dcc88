"""The set-up must not install torchvision: it breaks transformers' Qwen-VL imports."""

import importlib.metadata
import importlib.util

import pytest


def test_torchvision_is_not_installed():
    assert importlib.util.find_spec("torchvision") is None
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("torchvision")


def test_qwen_vl_classes_import():
    from transformers import (
        Qwen2_5_VLForConditionalGeneration,  # noqa: F401
        Qwen2VLForConditionalGeneration,  # noqa: F401
    )


def test_the_long_files_the_suite_starts_with_exist():
    """``tests/conftest.py`` starts its LONG_FILES first: a renamed file would drop out of
    that order silently (and the run end with one worker waiting for the other)."""
    from pathlib import Path

    from conftest import LONG_FILES

    root = Path(__file__).resolve().parents[1]
    assert [f for f in LONG_FILES if not (root / f).is_file()] == []
