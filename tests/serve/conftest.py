"""Fixtures of the reward-service tests (helpers in ``helpers.py``)."""

from __future__ import annotations

import pytest

import ieqa
from ieqa.scorers.base import Scorer


@pytest.fixture(scope="session")
def classic() -> Scorer:
    return ieqa.create_scorer("classic")
