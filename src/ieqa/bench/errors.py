"""Exception types of :mod:`ieqa.bench`."""

from __future__ import annotations

from ieqa.errors import IeqaError


class BenchError(IeqaError, ValueError):
    """Benchmark or leaderboard input that cannot be used (no editors, bad weights...)."""


class PredictionsError(BenchError):
    """A predictions file is malformed: the message names the file and the row."""
