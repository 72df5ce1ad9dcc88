"""Shared fixtures for the VLM scorer tests: tiny offline checkpoints and small edit groups."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from ieqa.data.schema import EditSample


def _image(rng: np.random.Generator, h: int, w: int) -> Image.Image:
    return Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8))


@pytest.fixture(scope="session")
def edit_samples(tmp_path_factory: pytest.TempPathFactory) -> list[EditSample]:
    """Seven edits on disk: a group of four candidates of one source (sizes differ), a
    group of two, and one lone edit."""
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("edits")
    samples = []
    layout = [("g1", "make the circle red", (96, 128), [(96, 128), (80, 80), (96, 128), (60, 140)]),
              ("g2", "remove the square", (64, 64), [(64, 64), (64, 96)]),
              ("g3", "blur the background", (100, 70), [(100, 70)])]
    for group, instruction, src_size, edits in layout:
        src = root / f"{group}.png"
        _image(rng, *src_size).save(src)
        for k, size in enumerate(edits):
            edt = root / f"{group}_{k}.png"
            _image(rng, *size).save(edt)
            samples.append(EditSample(id=f"{group}-{k}", source=src, edited=edt,
                                      instruction=instruction, group_id=group,
                                      scores={"visual_quality": 1.0 + 0.5 * k,
                                              "instruction_alignment": 3.25,
                                              "content_preservation": 4.5 - k}))
    # put one group member last so grouping must reorder and restore
    return [*samples[1:], samples[0]]
