"""The results of a benchmark run: :class:`MetricRow` (one number), :class:`Coverage` (how
many benchmark items had a prediction) and :class:`BenchResult` (what
:func:`ieqa.bench.run.evaluate_predictions` and :func:`ieqa.bench.judge.evaluate_judge_results`
return), plus the unit of each metric kind whose values are not accuracies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ieqa.bench.protocols import MetricSpec

__all__ = ["BenchResult", "Coverage", "MetricRow"]

_UNITS = {"srcc": "correlation", "krcc": "correlation", "plcc": "correlation",
          "rmse": "score", "grouped_srcc": "correlation", "ntire": "score",
          "judge_differ": "count"}


@dataclass
class MetricRow:
    """One number of a benchmark run.

    ``dimension`` is a canonical dimension (``"all"`` for numbers across dimensions),
    ``subset`` ``"all"`` or a part of the data (``"K=3"``, a task type, a human vote,
    ``"in"``...); ``value`` is NaN when the metric could not be computed (``note`` says
    why); ``ci_low``/``ci_high`` are set when bootstrapping; ``n`` counts the items,
    pairs or groups behind the value; ``unit`` is ``"correlation"``, ``"accuracy"``
    (a fraction in [0, 1]), ``"score"`` (the human scale) or ``"count"``.
    """

    dimension: str
    metric: str
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    note: str = ""
    subset: str = "all"
    unit: str = "accuracy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Coverage:
    """How many benchmark items had a prediction: ``n_items`` in the benchmark (samples;
    judged items for judge results), ``n_predicted`` of them with one, ``missing_ids``
    (the first 1000 of the others), ``n_missing`` and ``n_unused`` (predictions that
    match no item)."""

    n_items: int
    n_predicted: int
    missing_ids: list[str] = field(default_factory=list)
    n_missing: int = 0
    n_unused: int = 0
    n_failed: int = 0

    @property
    def fraction(self) -> float:
        return self.n_predicted / self.n_items if self.n_items else float("nan")

    def describe(self) -> str:
        """e.g. ``"160 of 200 items have predictions; 40 failed to score"``."""
        text = f"{self.n_predicted} of {self.n_items} items have predictions"
        if self.n_failed:
            text += f"; {self.n_failed} failed to score (error or NaN in the scores file)"
        other = self.n_missing - self.n_failed
        if other > 0:
            text += f"; {other} missing"
        if self.n_unused:
            text += f"; {self.n_unused} predictions unused"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": self.fraction}


@dataclass
class BenchResult:
    """What :func:`~ieqa.bench.run.evaluate_predictions` returns.

    Attributes:
        benchmark: benchmark name; protocol: ``pointwise``, ``pairwise``, ``multiway`` or
            ``judge``.
        rows: the metric values (:class:`MetricRow`).
        pairs: pointwise only: dimension -> ``(pred, human)`` arrays of the scored items
            (for predicted-vs-human plots).
        coverage: how many benchmark items had predictions.
        specs: the protocol's metric specifications used.
        notes: what was skipped, dropped or assumed.
        meta: settings (eps, bootstrap, seed, sources...).
    """

    benchmark: str
    protocol: str
    rows: list[MetricRow]
    coverage: Coverage
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    specs: tuple[MetricSpec, ...] = ()
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def row(self, metric: str, dimension: str | None = None, subset: str = "all") -> MetricRow:
        """The row of ``metric`` (on ``dimension``, default: the only or first one, and
        ``subset``); ``KeyError`` names the available ones when there is none."""
        hits = [r for r in self.rows if r.metric == metric and r.subset == subset
                and (dimension is None or r.dimension == dimension)]
        if not hits:
            have = sorted({(r.metric, r.dimension, r.subset) for r in self.rows})
            raise KeyError(f"no row {metric!r} (dimension={dimension!r}, subset={subset!r}); "
                           f"available: {have}")
        return hits[0]

    def value(self, metric: str, dimension: str | None = None, subset: str = "all") -> float:
        """The value of :meth:`row`."""
        return self.row(metric, dimension, subset).value

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "protocol": self.protocol,
            "rows": [r.to_dict() for r in self.rows], "coverage": self.coverage.to_dict(),
            "protocol_table": [{"metric": s.name, "label": s.label, "per": s.per, "ties": s.ties,
                                "plcc": s.plcc, "needs": s.needs, "source": s.source,
                                "published_beside": s.published_beside}
                               for s in self.specs],
            "notes": list(self.notes), "meta": dict(self.meta),
        }
