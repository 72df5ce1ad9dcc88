"""Fixtures of the studio tests."""

from __future__ import annotations

import pytest

from .helpers import shapes_manifest


@pytest.fixture(scope="session")
def shapes(tmp_path_factory):
    """A 12-edit ShapesEdit manifest (4 groups of 3)."""
    return shapes_manifest(tmp_path_factory.mktemp("shapes"))
