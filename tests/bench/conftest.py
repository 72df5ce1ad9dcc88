"""Shared fixtures: one small ShapesEdit set whose true editor ranking is known."""

from __future__ import annotations

import pytest

from ieqa.data.shapesedit import DEFAULT_EDITORS, ShapesEditConfig, generate

#: 240 edits in 40 groups of 6 (every editor in every group). With seed 2 the empirical
#: editor means follow the declared order on overall (seed 0 swaps overeager/timid at this
#: size; tests/test_shapesedit.py checks the order on 480 edits).
SHAPES_CONFIG = ShapesEditConfig(n=240, k=6, seed=2, size=96, photo_fraction=0.2)
TRUE_RANKING = [e.name for e in DEFAULT_EDITORS]


@pytest.fixture(scope="session")
def shapes_manifest(tmp_path_factory):
    """Path of the generated manifest (images on disk)."""
    return generate(tmp_path_factory.mktemp("shapesedit"), SHAPES_CONFIG)


@pytest.fixture(scope="session")
def shapes_samples(shapes_manifest):
    from ieqa.data.manifest import read_manifest

    return read_manifest(shapes_manifest)
