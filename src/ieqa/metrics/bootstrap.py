"""Percentile bootstrap confidence intervals for any metric function."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ieqa.metrics.checks import MetricInputError, as_1d, as_1d_float, check_same_length
from ieqa.metrics.grouped import _layout


def _group_layout(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, starts, sizes)``: ``order`` sorts items by group (stable); group g's items
    are ``order[starts[g] : starts[g] + sizes[g]]``."""
    lay = _layout(groups)
    return lay.order, lay.starts, lay.sizes


def _resample_groups(rng, order, starts, sizes) -> tuple[np.ndarray, np.ndarray]:
    """Item indices of a resample of whole groups, and fresh group ids for them (a group
    drawn twice becomes two distinct groups)."""
    n_groups = len(sizes)
    picked = rng.integers(0, n_groups, size=n_groups)
    picked_sizes = sizes[picked]
    total = int(picked_sizes.sum())
    block_start = np.concatenate(([0], np.cumsum(picked_sizes)[:-1]))
    offset = np.arange(total) - np.repeat(block_start, picked_sizes)
    idx = order[np.repeat(starts[picked], picked_sizes) + offset]
    return idx, np.repeat(np.arange(n_groups), picked_sizes)


def bootstrap_ci(
    metric_fn: Callable[..., float],
    pred: object,
    target: object,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
    groups: object | None = None,
    pass_groups: bool = False,
) -> tuple[float, float, float]:
    """``(point, low, high)``: ``metric_fn(pred, target)`` on the full data and the
    percentile bootstrap interval at level ``ci`` (in (0, 1)) over ``n_boot`` resamples.

    Items are resampled with replacement; with ``groups`` whole groups are resampled
    instead (use it when items in a group are correlated, e.g. edits of one source).
    ``pass_groups=True`` calls ``metric_fn(pred, target, groups)`` (for grouped metrics),
    with fresh ids in each resample so a group drawn twice counts twice.
    Deterministic for a given ``seed``. A resample on which ``metric_fn`` raises
    :class:`MetricInputError` (e.g. a constant resample) is dropped with a warning that
    says how many were dropped; fewer than 2 usable resamples raises.
    """
    if not isinstance(n_boot, int) or n_boot < 2:
        raise MetricInputError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    if not 0.0 < ci < 1.0:
        raise MetricInputError(f"ci must lie in (0, 1), got {ci!r}")
    p = as_1d_float(pred, "pred")
    t = as_1d_float(target, "target")
    arrays = {"pred": p, "target": t}
    g = None
    if groups is not None:
        g = as_1d(groups, "groups")
        arrays["groups"] = g
    elif pass_groups:
        raise MetricInputError("pass_groups=True needs groups")
    n = check_same_length(arrays)

    def call(idx: np.ndarray, ids: np.ndarray | None) -> float:
        if pass_groups:
            return float(metric_fn(p[idx], t[idx], ids))
        return float(metric_fn(p[idx], t[idx]))

    everything = np.arange(n)
    point = call(everything, g)
    rng = np.random.default_rng(seed)
    layout = _group_layout(g) if g is not None else None
    values = []
    for _ in range(n_boot):
        if layout is None:
            idx, ids = rng.integers(0, n, size=n), None
        else:
            idx, ids = _resample_groups(rng, *layout)
        try:
            values.append(call(idx, ids))
        except MetricInputError:
            continue
    dropped = n_boot - len(values)
    if len(values) < 2:
        raise MetricInputError(f"metric_fn failed on {dropped} of {n_boot} bootstrap resamples")
    if dropped:
        warnings.warn(
            f"bootstrap_ci dropped {dropped} of {n_boot} resamples on which metric_fn "
            "raised MetricInputError",
            RuntimeWarning,
            stacklevel=2,
        )
    alpha = (1.0 - ci) / 2.0
    low, high = np.quantile(np.asarray(values), [alpha, 1.0 - alpha])
    return point, float(low), float(high)
