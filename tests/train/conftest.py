"""Fixtures for training tests: a tiny Qwen2-VL and short prompt templates (the built-in
templates are hundreds of byte-level tokens long, which makes CPU training slow)."""

from __future__ import annotations

import pytest

from ieqa.testing import build_tiny_vlm

SHORT_HEAD = {"name": "short-head", "description": "short prompt for tiny-model tests",
              "reference": "tests", "system": None, "output": "text", "scale": None,
              "user": "<image:source><image:edited>{instruction} Rate it.",
              "images": ["source", "edited"]}
SHORT_LEVELS = {**SHORT_HEAD, "name": "short-levels", "output": "levels", "scale": [1, 5],
                "user": "<image:source><image:edited>{instruction} Rate the {dimension}.",
                "answer_prefix": "Level:"}
SHORT_CROP = {**SHORT_LEVELS, "name": "short-crop", "images": ["crop"],
              "user": "<image:crop>Rate the {dimension} of this region."}
SHORT_DIGITS = {**SHORT_HEAD, "name": "short-digits", "output": "digits", "scale": [1, 5],
                "user": "<image:source><image:edited>{instruction} Rate the {dimension}.",
                "answer_prefix": "{Dimension} score: "}
SHORT_BOX = {**SHORT_HEAD, "name": "short-box",
             "user": "<image:source><image:edited>{instruction} Where was it edited?",
             "answer_prefix": "Region:"}
SHORT_CRITIQUE = {**SHORT_HEAD, "name": "short-critique",
                  "user": "<image:source><image:edited>{instruction} Critique the edit."}

#: The learnable ShapesEdit world (global noise of uniform severity: visual quality and
#: overall spread over 1-5) at 112 px (16 image tokens per image).
ARTIFACT_DATA = {"train": {"shapesedit": {"n": 400, "k": 4, "seed": 1, "size": 112,
                                          "preset": "artifacts", "photo_fraction": 0.0}},
                 "max_eval_samples": 80}


@pytest.fixture(scope="session")
def tiny_train_vlm(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_vlm(tmp_path_factory.mktemp("train-vlm") / "qwen2-vl", "qwen2-vl"))


def tiny_overrides(model: str, **extra: object) -> dict[str, object]:
    """Overrides that scale a paper recipe down to the tiny model on CPU: every weight
    trainable (a random tiny backbone learns far faster than through LoRA), a constant
    learning rate for seconds-long runs, and the learnable ShapesEdit world."""
    return {"model": {"name": model, "device": "cpu"}, "adapter": {"kind": "full"},
            "data": ARTIFACT_DATA,
            "optim": {"lr": 3e-4, "batch_size": 16, "grad_accum": 1, "scheduler": "constant",
                      "warmup_ratio": 0.0, "seed": 0},
            "eval": {"batch_size": 16}, **extra}
