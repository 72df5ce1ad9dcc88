"""Reference computations the editor-benchmark tests compare against, written out by hand."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def stratified_bootstrap_by_hand(groups: Iterable[Sequence[float]], n_boot: int,
                                 ci: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """The stratified percentile interval written out: per resample, each group's (task
    type's) items drawn with replacement (numpy's generator, groups in the order given),
    the mean of the group means; the (1 - ci) / 2 and 1 - (1 - ci) / 2 quantiles of those."""
    groups = [np.asarray(g, dtype=float) for g in groups]
    rng = np.random.default_rng(seed)
    means = np.zeros(n_boot)
    for g in groups:
        means += g[rng.integers(0, g.size, size=(n_boot, g.size))].mean(axis=1)
    means /= len(groups)
    return np.quantile(means, (1 - ci) / 2), np.quantile(means, 1 - (1 - ci) / 2)
