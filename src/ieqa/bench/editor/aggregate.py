"""How editor benchmarks turn per-item judge scores into their published numbers.

* :func:`macro_mean` — GEdit-Bench's G_SC / G_PQ / G_O: the mean of each task type's mean,
  unweighted over the types (the released ``calculate_statistics.py``); a type with no
  scored item makes the average NaN, as there.
* :func:`item_mean` — the mean over items (every scored item weighs the same): ieqa's
  default beside the official number, labelled.
* :func:`imgedit_overall` — ImgEdit-Bench's two "Overall" conventions from its per-type
  scores: the unweighted mean of the type scores and the item-weighted mean, each rounded
  to 2 decimals as published.
* :func:`pooled_accuracy` — RISEBench's overall accuracy from its per-category
  percentages: the solved items pooled over all categories (not the mean of the
  categories).
* :func:`stratified_bootstrap` — a percentile interval for :func:`macro_mean`, resampling
  items within each type (the types' sizes stay fixed).
* :func:`repeat_summary` — mean and sample standard deviation of a number over repeated
  judge runs (judge drift).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ieqa.bench.errors import BenchError

__all__ = ["macro_mean", "item_mean", "per_type_means", "imgedit_overall", "pooled_accuracy",
           "stratified_bootstrap", "repeat_summary"]


def per_type_means(values: Sequence[float], types: Sequence[str],
                   type_order: Sequence[str]) -> dict[str, float]:
    """Each type's mean of ``values`` (NaN for a type with no value), in ``type_order``."""
    if len(values) != len(types):
        raise BenchError(f"{len(values)} values for {len(types)} types")
    out = {}
    for t in type_order:
        chosen = [float(v) for v, vt in zip(values, types, strict=True) if vt == t]
        out[t] = float(np.mean(chosen)) if chosen else math.nan
    return out


def macro_mean(values: Sequence[float], types: Sequence[str],
               type_order: Sequence[str]) -> tuple[float, dict[str, float]]:
    """``(mean of the per-type means, per-type means)``: GEdit-Bench's aggregation. NaN
    when a type of ``type_order`` has no value (the released code's ``np.mean`` does the
    same)."""
    per_type = per_type_means(values, types, type_order)
    return float(np.mean(list(per_type.values()))), per_type


def item_mean(values: Sequence[float]) -> float:
    """The mean over items (NaN when there is none)."""
    return float(np.mean(values)) if len(values) else math.nan


def imgedit_overall(type_scores: Mapping[str, float],
                    type_counts: Mapping[str, int] | None = None) -> dict[str, float]:
    """ImgEdit-Bench's two "Overall" conventions from per-type scores (1-5).

    Returns ``{"mean_of_types": ..., "item_weighted": ...}``, each rounded to 2 decimals as
    published; ``item_weighted`` only with ``type_counts`` (items per type). The released
    scripts compute neither: papers print one or the other.
    """
    if not type_scores:
        raise BenchError("no type scores")
    out = {"mean_of_types": round(float(np.mean(list(type_scores.values()))), 2)}
    if type_counts is not None:
        missing = sorted(set(type_scores) - set(type_counts))
        if missing:
            raise BenchError(f"no item count for type(s) {', '.join(missing)}")
        n = sum(type_counts[t] for t in type_scores)
        out["item_weighted"] = round(sum(type_scores[t] * type_counts[t]
                                         for t in type_scores) / n, 2)
    return out


def pooled_accuracy(per_category: Mapping[str, float],
                    counts: Mapping[str, int]) -> float:
    """The overall percentage of solved items from per-category percentages (0-100) and
    the categories' item counts: each category's solved items are recovered as
    ``round(pct * n / 100)`` and pooled, as RISEBench's overall is computed.

    Raises:
        BenchError: a category without a count.
    """
    missing = sorted(set(per_category) - set(counts))
    if missing:
        raise BenchError(f"no item count for category(ies) {', '.join(missing)}")
    solved = sum(round(per_category[c] * counts[c] / 100) for c in per_category)
    return 100 * solved / sum(counts[c] for c in per_category)


def stratified_bootstrap(values: Sequence[float], types: Sequence[str],
                         type_order: Sequence[str], *, n_boot: int = 1000, ci: float = 0.95,
                         seed: int = 0) -> tuple[float, float]:
    """Percentile interval ``(low, high)`` at level ``ci`` of :func:`macro_mean`, each
    resample drawing every type's items with replacement within the type. ``(nan, nan)``
    when a type has no item."""
    if n_boot < 2 or not 0 < ci < 1:
        raise BenchError(f"need n_boot >= 2 and ci in (0, 1), got {n_boot}, {ci}")
    v = np.asarray(values, dtype=np.float64)
    t = np.asarray(types)
    rng = np.random.default_rng(seed)
    means = np.zeros(n_boot)
    for name in type_order:
        group = v[t == name]
        if group.size == 0:
            return math.nan, math.nan
        draws = rng.integers(0, group.size, size=(n_boot, group.size))
        means += group[draws].mean(axis=1)
    means /= len(type_order)
    tail = (1 - ci) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def repeat_summary(values: Sequence[float]) -> dict[str, float]:
    """``{"mean", "std", "n"}`` over repeats (sample std, ddof 1; NaN for one repeat)."""
    v = [float(x) for x in values]
    return {"mean": float(np.mean(v)) if v else math.nan,
            "std": float(np.std(v, ddof=1)) if len(v) > 1 else math.nan, "n": len(v)}
