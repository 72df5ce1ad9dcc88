"""The scorer factory's front door: :func:`create_scorer` builds a registered scorer
(:mod:`ieqa.scorers.build`) or rebuilds a trained one from ``checkpoint=DIR``
(:mod:`ieqa.scorers.checkpoint`). The scorers themselves are rows of
:mod:`ieqa.scorers.table`.
"""

from __future__ import annotations

from typing import Any

from ieqa.scorers.base import Scorer
from ieqa.scorers.build import build_scorer, wraps_checkpoint
from ieqa.scorers.table import PUBLISHED_TABLE, SCORER_TABLE, VLM_TABLE, list_scorers, scorer_info

__all__ = ["SCORER_TABLE", "VLM_TABLE", "PUBLISHED_TABLE", "create_scorer", "list_scorers", "scorer_info",
           "wraps_checkpoint"]


def create_scorer(name: str, **overrides: Any) -> Scorer:
    """Build a registered scorer, e.g. ``create_scorer("classic")`` or
    ``create_scorer("ssim", channel="grey")``.

    Keyword arguments override the scorer's defaults; an argument the scorer does not take
    raises :class:`~ieqa.scorers.base.ScorerError` listing the ones it does.
    ``checkpoint=DIR`` rebuilds a trained evaluator saved by
    :func:`ieqa.scorers.checkpoint.save_evaluator` (the other arguments override its
    recorded ones).
    """
    if overrides.get("checkpoint") is not None and not wraps_checkpoint(name):
        from ieqa.scorers.checkpoint import load_evaluator

        folder = overrides.pop("checkpoint")
        return load_evaluator(folder, name=name, **overrides)
    if overrides.get("checkpoint") is None:
        overrides.pop("checkpoint", None)
    return build_scorer(name, **overrides)
