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
