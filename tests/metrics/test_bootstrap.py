from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

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


def test_interval_level_counts_the_resamples_outside_it():
    # The interval at level ci leaves (1 - ci) / 2 of the bootstrap resamples below it and as
    # many above it. Record every value metric_fn returns (the first call is the full data)
    # and count, in the test, how many resamples fall outside.
    rng = np.random.default_rng(7)
    x = rng.exponential(size=40)
    seen = []

    def metric(p, t):
        seen.append(float(np.mean(p)))
        return seen[-1]

    for ci, n_boot, outside in [(0.95, 2000, 50), (0.90, 2000, 100), (0.80, 2000, 200)]:
        seen.clear()
        point, low, high = bootstrap_ci(metric, x, x, n_boot=n_boot, ci=ci, seed=0)
        assert len(seen) == n_boot + 1 and point == seen[0] == pytest.approx(x.mean())
        resampled = np.array(seen[1:])
        assert len(np.unique(resampled)) == n_boot  # no ties: the counts below are exact
        # (1 - ci) / 2 * n_boot resamples in each tail (the quantile positions (1 -+ ci) / 2 *
        # (n_boot - 1) are not integers, so exactly 50 of 2000 at 95 %, 100 at 90 %)
        assert int((resampled < low).sum()) == outside and int((resampled > high).sum()) == outside
        # and the bounds are numpy's linear quantiles of those resamples
        lo_ref, hi_ref = np.quantile(resampled, [(1 - ci) / 2, (1 + ci) / 2])
        assert (low, high) == (pytest.approx(lo_ref, abs=1e-12), pytest.approx(hi_ref, abs=1e-12))


def test_percentile_interval_of_a_known_resampling_distribution():
    # Nine 0s and one 10: a resample's mean is K, the number of times the 10 is drawn,
    # K ~ Binomial(10, 0.1): P(K = 0) = 0.349, P(K <= 2) = 0.930, P(K <= 3) = 0.987. The 2.5 %
    # and 97.5 % quantiles are therefore 0 and 3, far (in probability) from the atoms' edges,
    # and the percentile interval is [0, 3] around the point 1. A basic ("reverse percentile")
    # interval would be [2*1 - 3, 2*1 - 0] = [-1, 2]: one whole unit off at each end.
    assert stats.binom.cdf(0, 10, 0.1) > 0.3 and stats.binom.cdf(2, 10, 0.1) < 0.95
    assert stats.binom.cdf(3, 10, 0.1) > 0.985
    x = np.array([0.0] * 9 + [10.0])
    for seed in range(3):
        point, low, high = bootstrap_ci(lambda p, t: float(np.mean(p)), x, x, n_boot=2000, seed=seed)
        assert (point, low, high) == (1.0, 0.0, 3.0)
