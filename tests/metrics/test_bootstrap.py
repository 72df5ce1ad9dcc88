from __future__ import annotations

import numpy as np
import pytest

from ieqa.metrics import MetricInputError, bootstrap_ci, grouped_srcc, srcc


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    target = rng.normal(size=n)
    pred = target + rng.normal(0, 1, n)
    return pred, target


def test_ci_contains_point_and_is_deterministic():
    pred, target = _data()
    point, low, high = bootstrap_ci(srcc, pred, target, n_boot=300, seed=3)
    assert point == pytest.approx(srcc(pred, target))
    assert low < point < high
    assert 0.0 < high - low < 0.3
    assert bootstrap_ci(srcc, pred, target, n_boot=300, seed=3) == (point, low, high)
    assert bootstrap_ci(srcc, pred, target, n_boot=300, seed=4) != (point, low, high)


def test_wider_level_gives_wider_interval():
    pred, target = _data(seed=1)
    _, lo90, hi90 = bootstrap_ci(srcc, pred, target, n_boot=400, ci=0.90)
    _, lo99, hi99 = bootstrap_ci(srcc, pred, target, n_boot=400, ci=0.99)
    assert lo99 <= lo90 and hi99 >= hi90


def test_group_resampling_with_grouped_metric():
    pred, target = _data(400, seed=2)
    groups = np.repeat(np.arange(40), 10)
    seen = []

    def metric(p, t, g):
        seen.append(len(np.unique(g)))
        return grouped_srcc(p, t, g).value

    point, low, high = bootstrap_ci(
        metric, pred, target, n_boot=50, groups=groups, pass_groups=True, seed=0
    )
    assert point == pytest.approx(grouped_srcc(pred, target, groups).value)
    assert low <= point <= high
    # every resample keeps 40 distinct groups (duplicates get fresh ids)
    assert set(seen) == {40}


def test_group_resampling_keeps_whole_groups():
    pred = np.arange(12.0)
    target = np.arange(12.0)
    groups = np.repeat([0, 1, 2], 4)
    sizes = []

    def metric(p, t):
        sizes.append(len(p))
        assert set(np.unique(p // 4)) <= {0, 1, 2}
        # each drawn group contributes its 4 consecutive members
        assert all(np.sum(p // 4 == k) % 4 == 0 for k in range(3))
        return float(np.mean(p))

    bootstrap_ci(metric, pred, target, n_boot=20, groups=groups)
    assert set(sizes) == {12}


def test_failed_resamples_warn_and_errors():
    pred = np.array([1.0, 1.0, 1.0, 2.0])
    target = np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.warns(RuntimeWarning, match="dropped"):
        bootstrap_ci(srcc, pred, target, n_boot=200)
    with pytest.raises(MetricInputError, match="n_boot"):
        bootstrap_ci(srcc, pred, target, n_boot=1)
    with pytest.raises(MetricInputError, match="ci"):
        bootstrap_ci(srcc, pred, target, ci=1.5)
    with pytest.raises(MetricInputError, match="pass_groups"):
        bootstrap_ci(srcc, pred, target, pass_groups=True)
    with pytest.raises(MetricInputError, match="length mismatch"):
        bootstrap_ci(srcc, pred, target, groups=[0, 1])
