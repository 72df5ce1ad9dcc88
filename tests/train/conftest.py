"""Fixtures for training tests: a tiny Qwen2-VL, the same model after a short perception
training, and the tiny-scale settings of :mod:`ieqa.train.tiny`."""

from __future__ import annotations

import os
import time

import pytest

from ieqa.testing import build_tiny_vlm
from ieqa.train.tiny import SHORT_TEMPLATES, artifacts_world, perception_backbone

SHORT_HEAD = SHORT_TEMPLATES["head"]
SHORT_LEVELS = SHORT_TEMPLATES["levels"]
SHORT_CROP = SHORT_TEMPLATES["crop"]
SHORT_DIGITS = SHORT_TEMPLATES["digits"]
SHORT_BOX = SHORT_TEMPLATES["box"]
SHORT_CRITIQUE = SHORT_TEMPLATES["critique"]

#: The learnable ShapesEdit world at 112 px (16 image tokens per image), 400 edits.
ARTIFACT_DATA = {"train": artifacts_world(400), "max_eval_samples": 80}

#: Perception training of :func:`seeing_vlm`: steps, and the seed of its ShapesEdit set
#: (the recipe tests use seed 1, so none of their images is seen here).
PERCEPTION_STEPS, PERCEPTION_SEED = 600, 7
#: torch threads of the perception training (see :func:`seeing_vlm`)
PERCEPTION_THREADS = 1
#: longest wait for another xdist worker's perception training, seconds
PERCEPTION_WAIT_S = 1200


@pytest.fixture(scope="session")
def tiny_train_vlm(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_vlm(tmp_path_factory.mktemp("train-vlm") / "qwen2-vl", "qwen2-vl"))


@pytest.fixture(scope="session")
def seeing_vlm(tiny_train_vlm: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny VLM after perception training, as a backbone for text readouts.

    A real backbone already sees image quality; a random tiny one needs about 1000 steps
    before any readout can use what it sees. This trains every weight for
    ``PERCEPTION_STEPS`` steps to regress visual quality through a throwaway MLP head on
    a disjoint ShapesEdit set, and returns the exported backbone. The LM head never sees
    an answer format, so text readouts trained from here start at chance.

    It always trains on ``PERCEPTION_THREADS`` threads, whatever ``IEQA_NUM_THREADS``
    says: the float sums of another thread count give another backbone (max weight
    difference ~0.06 after 600 steps, the same held-out SRCC), and the readouts trained
    from two such backbones differ far more than their seeds do (EPAIQA harmony 0.80
    from one, 0.03 from another). With one thread count the backbone is the same on
    every run of a machine, so the tests downstream are deterministic too.

    Under pytest-xdist the workers share one training: the first to need it trains into
    the session's common temp folder under a file lock, the others wait for it and read
    the result (the same backbone they would train: one seed, one thread count).
    """
    import json

    import torch
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # common to the workers of this session
    folder, record = shared / "seeing-vlm", shared / "seeing-vlm.json"
    with FileLock(str(shared / "seeing-vlm.lock"), timeout=PERCEPTION_WAIT_S):
        if not record.exists():
            t0 = time.perf_counter()
            before = torch.get_num_threads()
            torch.set_num_threads(PERCEPTION_THREADS)
            try:
                backbone, after = perception_backbone(
                    tiny_train_vlm, folder, steps=PERCEPTION_STEPS, seed=PERCEPTION_SEED)
            finally:
                torch.set_num_threads(before)
            record.write_text(json.dumps({"backbone": str(backbone), "srcc": after}))
            print(f"perception training: {time.perf_counter() - t0:.1f} s, held-out SRCC "
                  f"{after:.3f}")
    done = json.loads(record.read_text())
    after = done["srcc"]
    assert after > 0.6, f"perception training reached SRCC {after:.3f} only"
    return done["backbone"]


def tiny_overrides(model: str, **extra: object) -> dict[str, object]:
    """Overrides for tests that build recipes field by field (resume, CLI): every weight
    trainable, a constant learning rate and the learnable ShapesEdit world."""
    return {"model": {"name": model, "device": "cpu"}, "adapter": {"kind": "full"},
            "data": ARTIFACT_DATA,
            "optim": {"lr": 3e-4, "batch_size": 16, "grad_accum": 1, "scheduler": "constant",
                      "warmup_ratio": 0.0, "seed": 0},
            "eval": {"batch_size": 16}, **extra}
