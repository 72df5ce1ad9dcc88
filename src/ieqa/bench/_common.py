"""What the protocol modules of :mod:`ieqa.bench` share: the validated evaluation settings
(:class:`_Settings`: missing-prediction policy, model tie ``eps``, bootstrap, dimension,
direction), the percentile bootstrap of a metric over items or whole groups (:func:`_boot`),
the guarded construction of one :class:`~ieqa.bench.results.MetricRow` (:func:`_row`), the
errors for predictions that are missing or match nothing, and the ``Predictions`` type.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ieqa.bench.errors import BenchError
from ieqa.bench.results import MetricRow
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.loaders.base import BenchmarkData
from ieqa.errors import UnknownDimensionError
from ieqa.metrics import MetricInputError, bootstrap_ci

_MAX_MISSING_LISTED = 1000
Missing = Literal["raise", "drop"]
Predictions = Mapping[str, Mapping[str, float]]


@dataclass
class _Settings:
    missing: Missing
    eps: float
    n_boot: int
    seed: int
    ci: float
    dimension: str | None
    higher_better: bool
    notes: list[str] = field(default_factory=list)
    #: ``{id: reason}`` of rows of the predictions file that failed to score
    failed: dict[str, str] = field(default_factory=dict)


def _settings(missing: str, eps: float, n_boot: int, seed: int, ci: float, dimension: str | None,
              higher_better: bool) -> _Settings:
    if missing not in ("raise", "drop"):
        raise BenchError(f"missing must be 'raise' or 'drop', got {missing!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise BenchError(f"eps must be a finite number >= 0, got {eps!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0 or n_boot == 1:
        raise BenchError(f"n_boot must be 0 (no intervals) or an integer >= 2, got {n_boot!r}")
    if not 0.0 < ci < 1.0:
        raise BenchError(f"ci must lie in (0, 1), got {ci!r}")
    if dimension is not None:
        try:
            dimension = canonical_dimension(dimension)
        except UnknownDimensionError as exc:
            raise BenchError(str(exc)) from None
    return _Settings(missing, float(eps), n_boot, seed, ci, dimension, higher_better)


def _boot(st: _Settings, fn: Callable[[np.ndarray, Any], float], n: int,
          groups: np.ndarray | None = None,
          pass_groups: bool = False) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of ``fn(indices, group_ids)`` over ``n`` items,
    resampling whole ``groups`` when given; ``(None, None)`` when off or impossible."""
    if not st.n_boot or n < 2:
        return None, None
    idx = np.arange(n, dtype=np.float64)

    def metric(p: np.ndarray, _t: np.ndarray, *ids: np.ndarray) -> float:
        return fn(p.astype(np.int64), ids[0] if ids else None)

    try:
        _, lo, hi = bootstrap_ci(metric, idx, idx, n_boot=st.n_boot, ci=st.ci, seed=st.seed,
                                 groups=groups, pass_groups=pass_groups)
    except MetricInputError:
        return None, None
    return lo, hi


def _row(st: _Settings, spec_name: str, dimension: str,
         compute: Callable[[], tuple[float, int, str]],
         ci_fn: Callable[[], tuple[float | None, float | None]] | None = None, *,
         subset: str = "all", unit: str = "accuracy") -> MetricRow:
    """A row from ``compute() -> (value, n, note)``; a :class:`MetricInputError` becomes a
    NaN row whose note is the error message."""
    try:
        value, n, note = compute()
    except MetricInputError as exc:
        return MetricRow(dimension, spec_name, float("nan"), n=0, note=f"not computed: {exc}",
                         subset=subset, unit=unit)
    lo = hi = None
    if ci_fn is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            lo, hi = ci_fn()
        for w in caught:  # resamples on which the metric is undefined (e.g. constant)
            st.notes.append(f"{spec_name} ({dimension}, {subset}): {w.message}")
    return MetricRow(dimension, spec_name, float(value), lo, hi, int(n), note, subset, unit)


def _missing_error(what: str, missing: Sequence[str], total: int, bench: str,
                   failed: Mapping[str, str] | None = None) -> BenchError:
    failed = failed or {}
    n_failed = sum(1 for m in missing if m in failed)
    first = ", ".join(repr(m) for m in missing[:5])
    why = ""
    if n_failed:
        example = next(m for m in missing if m in failed)
        why = (f"; {n_failed} of them failed to score (e.g. {example!r}: {failed[example]}) — "
               "re-run ieqa score to retry them")
    return BenchError(
        f"{len(missing)} of {total} {what} of {bench} have no prediction (first: {first}){why}; "
        "pass missing='drop' (ieqa bench --missing drop) to evaluate the others, or add them")


def _no_match_error(bench: BenchmarkData, preds: Predictions) -> BenchError:
    ids = [s.id for s in bench.samples[:3]]
    return BenchError(f"no prediction id matches a sample id of {bench.name} (benchmark ids look "
                      f"like {ids}, prediction ids like {list(preds)[:3]}); the predictions file "
                      "must use the benchmark's sample ids")
