"""Fixtures of the studio tests."""

from __future__ import annotations

import pytest

from .helpers import CHROMIUM, shapes_manifest


@pytest.fixture(scope="session")
def shapes(tmp_path_factory):
    """A 12-edit ShapesEdit manifest (4 groups of 3)."""
    return shapes_manifest(tmp_path_factory.mktemp("shapes"))


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, for one test module (the modules that use it skip
    without chromium or playwright)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()
