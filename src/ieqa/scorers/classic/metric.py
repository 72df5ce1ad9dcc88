"""One classical metric as a scorer: ``create_scorer("ssim")``, ``create_scorer("niqe")``, ...

Full-reference metrics compare the edited image with its source and report
``content_preservation`` in the metric's own units (an edited image of another size is
resized to the source's size first, recorded as ``raw["resized"]``); no-reference
metrics look at the edited image alone and report ``visual_quality``. Direction and
range are in each scorer's :class:`~ieqa.scorers.base.ScorerInfo` (``ieqa list scorers``).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from typing import Any

from ieqa.data.schema import EditSample
from ieqa.scorers.base import MAX_SAMPLE_THREADS, Scorer, ScorerError, ScoreResult
from ieqa.scorers.table import SCORER_TABLE
from ieqa.threads import thread_count

__all__ = ["METRIC_FUNCTIONS", "MetricScorer"]

#: metric name -> ("module:function", full_reference), from the scorer table's rows
METRIC_FUNCTIONS: dict[str, tuple[str, bool]] = {
    info.name: (info.function, info.kind == "full-reference")
    for info in SCORER_TABLE if info.function}


def _function(metric: str) -> Callable[..., float]:
    module, _, attr = METRIC_FUNCTIONS[metric][0].partition(":")
    return getattr(importlib.import_module(module), attr)


class MetricScorer(Scorer):
    """Wrap one function of :mod:`ieqa.scorers.classic` as a scorer.

    Args:
        metric: a key of :data:`METRIC_FUNCTIONS`.
        **options: keyword arguments of the metric function (e.g. ``channel="grey"``).
    """

    def __init__(self, metric: str, **options: Any) -> None:
        if metric not in METRIC_FUNCTIONS:
            raise ScorerError(f"unknown metric {metric!r}; known: {', '.join(sorted(METRIC_FUNCTIONS))}")
        self.metric = metric
        self.full_reference = METRIC_FUNCTIONS[metric][1]
        self._fn = _function(metric)
        params = inspect.signature(self._fn).parameters
        accepted = [k for k, p in params.items() if p.kind is p.KEYWORD_ONLY]
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ScorerError(f"metric {metric!r} takes no option(s) {', '.join(unknown)}; it "
                              f"accepts: {', '.join(accepted) or 'none'}")
        self.options = options
        from ieqa.scorers.table import scorer_info

        self.info = scorer_info(metric)
        self.sample_threads = min(MAX_SAMPLE_THREADS, thread_count())

    def config(self) -> dict[str, Any]:
        return {"metric": self.metric, **self.options}

    def score_sample(self, sample: EditSample) -> ScoreResult:
        dim = self.dimensions[0]
        raw: dict[str, Any] = {}
        if self.full_reference:
            src, edt, resized = self.load_pair(sample.source, sample.edited)
            value = float(self._fn(src, edt, **self.options))
            if resized:
                raw["resized"] = True
        else:
            value = float(self._fn(self.load_rgb(sample.edited), **self.options))
        if math.isnan(value):
            raise ScorerError(f"{self.metric} is undefined for sample {sample.id!r} (NaN)")
        return ScoreResult(sample.id, scores={dim: value}, raw=raw)
