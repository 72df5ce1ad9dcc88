from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from ieqa.errors import IeqaError
from ieqa.metrics import (
    MetricInputError,
    fisher_z_mean,
    fit_logistic,
    krcc,
    logistic4,
    logistic5,
    plcc,
    rmse,
    srcc,
)


def _tied_data(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    target = np.round(rng.uniform(0, 5, n) * 2) / 2  # many ties
    pred = np.round(target + rng.normal(0, 1.5, n), 1)  # some ties
    return pred, target


@pytest.mark.parametrize("seed", range(5))
def test_against_scipy_with_ties(seed):
    pred, target = _tied_data(seed)
    assert srcc(pred, target) == pytest.approx(stats.spearmanr(pred, target).statistic, abs=1e-12)
    assert krcc(pred, target) == pytest.approx(
        stats.kendalltau(pred, target, variant="b").statistic, abs=1e-12
    )
    assert plcc(pred, target) == pytest.approx(stats.pearsonr(pred, target).statistic, abs=1e-12)


def test_hand_worked_values():
    x, y = [1, 2, 3, 4], [1, 3, 2, 4]
    assert srcc(x, y) == pytest.approx(0.8)  # 1 - 6*2 / (4*15)
    assert krcc(x, y) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant
    assert plcc(x, y) == pytest.approx(0.8)  # 4 / 5
    # tie in pred: ranks [1, 2.5, 2.5, 4] -> r = 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10)
    assert srcc([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))
    assert rmse([1, 2, 3], [1, 2, 5]) == pytest.approx(math.sqrt(4 / 3))


def test_lower_is_better_flips_sign():
    pred, target = _tied_data(7)
    dist = -pred  # a distance: lower is better
    assert srcc(dist, target) == pytest.approx(-srcc(pred, target))
    assert srcc(dist, target, higher_better=False) == pytest.approx(srcc(pred, target))
    assert krcc(dist, target, higher_better=False) == pytest.approx(krcc(pred, target))
    assert plcc(dist, target, higher_better=False) == pytest.approx(plcc(pred, target))
    assert plcc(dist, target, higher_better=False, fit="logistic4") == pytest.approx(
        plcc(pred, target, fit="logistic4"), abs=1e-6
    )


def test_nan_raises_with_count_and_omit_drops_pairs():
    pred, target = _tied_data(1, 50)
    pred[[3, 10]] = np.nan
    target[20] = np.nan
    with pytest.raises(MetricInputError, match="pred has 2 NaN values"):
        srcc(pred, target)
    keep = ~np.isnan(pred) & ~np.isnan(target)
    assert srcc(pred, target, nan_policy="omit") == pytest.approx(
        stats.spearmanr(pred[keep], target[keep]).statistic
    )
    assert plcc(pred, target, nan_policy="omit") == pytest.approx(
        stats.pearsonr(pred[keep], target[keep]).statistic
    )
    with pytest.raises(MetricInputError, match="nan_policy"):
        srcc(pred, target, nan_policy="ignore")


@pytest.mark.parametrize("fn", [srcc, krcc, plcc])
def test_constant_input_raises(fn):
    with pytest.raises(MetricInputError, match="pred is constant"):
        fn([2, 2, 2], [1, 2, 3])
    with pytest.raises(MetricInputError, match="target is constant"):
        fn([1, 2, 3], [5, 5, 5])


@pytest.mark.parametrize("fn", [srcc, krcc, plcc, rmse])
def test_shape_errors(fn):
    with pytest.raises(MetricInputError, match="length mismatch: pred=3, target=2"):
        fn([1, 2, 3], [1, 2])
    with pytest.raises(MetricInputError, match="at least 2"):
        fn([1], [1])
    with pytest.raises(MetricInputError, match="pred must be 1-D"):
        fn([[1, 2], [3, 4]], [1, 2])
    with pytest.raises(MetricInputError, match="target must be numeric"):
        fn([1, 2], ["a", "b"])
    with pytest.raises(MetricInputError, match="infinite"):
        fn([1, np.inf, 3], [1, 2, 3])


def test_error_type_is_ieqa_and_value_error():
    with pytest.raises(IeqaError):
        srcc([1, 1], [1, 2])
    with pytest.raises(ValueError):
        srcc([1, 1], [1, 2])


def test_logistic4_values_by_hand():
    """(b1 - b2) / (1 + exp(-(x - b3) / |b4|)) + b2, worked out by hand; |b4| = 0 is the
    step at b3 (NaN at b3 itself, as the division gives), with no warning."""
    import math
    import warnings

    x = np.array([0.0, 4.0, 6.0])
    expected = [1.0 + 4.0 / (1.0 + math.exp(-(v - 4.0) / 2.0)) for v in x]
    np.testing.assert_allclose(logistic4(x, 5.0, 1.0, 4.0, -2.0), expected, rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = logistic4(x, 5.0, 1.0, 4.0, 0.0)
    assert step[0] == 1.0 and np.isnan(step[1]) and step[2] == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        steep = logistic4(np.array([0.0, 1e10]), 5.0, 1.0, 4.0, 1e-300)  # overflows to inf
    assert steep.tolist() == [1.0, 5.0]


def _count_fits(monkeypatch) -> tuple[list[int], Callable[..., tuple]]:
    """(a list that grows by one at each fit :func:`fit_logistic` computes, the real fit)."""
    from ieqa.metrics import correlation

    calls: list[int] = []
    real = correlation._fit_logistic
    monkeypatch.setattr(correlation, "_fit_logistic",
                        lambda *a: calls.append(1) or real(*a))
    return calls, real


def test_a_repeated_fit_returns_the_same_result_without_refitting(monkeypatch):
    """PLCC and RMSE of one bootstrap resample fit the same data once; each call gets its
    own arrays; an error is raised again for the same data."""
    calls, real = _count_fits(monkeypatch)
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 10, 50)
    y = logistic4(x, 5.0, 1.0, 4.0, 1.2) + rng.normal(0, 0.05, x.size)
    first = fit_logistic(x, y)
    first[0][:] = 0.0  # a caller changing its copy changes nothing cached
    again = fit_logistic(x.copy(), y.copy())
    assert len(calls) == 1 and np.all(again[0] != 0.0)
    np.testing.assert_array_equal(again[1], real(x, y, 4, 10_000)[1])
    assert fit_logistic(x, y, params=5) is not None and len(calls) == 2
    for _ in range(2):
        with pytest.raises(MetricInputError, match="constant"):
            fit_logistic(np.ones(5), np.arange(5.0))
    assert len(calls) == 3


def test_a_bootstraps_fits_are_kept_for_its_next_metric(monkeypatch):
    """A benchmark's PLCC row bootstraps its resamples, then its RMSE row the same ones
    (the same seed): the second row fits nothing again. What a kept fit returns is what
    fitting gave, bit for bit: the betas, and the fitted values computed from them (on
    well-conditioned data, where MINPACK gives the same bits from one call to the next)."""
    from ieqa.metrics.bootstrap import bootstrap_ci

    calls, real = _count_fits(monkeypatch)
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 10, 40)
    y = logistic4(x, 5.0, 1.0, 4.0, 1.2) + rng.normal(0, 0.3, x.size)
    n_boot = 300  # more resamples than the cache held before (64)
    lo_hi = bootstrap_ci(lambda p, t: plcc(p, t, fit="logistic4"), x, y, n_boot=n_boot, seed=3)
    assert len(calls) == n_boot + 1
    bootstrap_ci(lambda p, t: rmse(p, t, fit="logistic4"), x, y, n_boot=n_boot, seed=3)
    assert len(calls) == n_boot + 1  # every fit of the RMSE row was kept from the PLCC row
    assert bootstrap_ci(lambda p, t: plcc(p, t, fit="logistic4"), x, y, n_boot=n_boot,
                        seed=3) == lo_hi
    idx = np.random.default_rng(4).integers(0, x.size, x.size)
    fresh = real(x[idx], y[idx], 4, 10_000)
    for _ in range(2):  # fitted, then kept
        fitted, betas = fit_logistic(x[idx], y[idx])
        np.testing.assert_array_equal(betas, fresh[1])
        np.testing.assert_array_equal(fitted, fresh[0])
    fresh5 = real(x, y, 5, 10_000)
    for _ in range(2):
        fitted5, betas5 = fit_logistic(x, y, params=5)
        np.testing.assert_array_equal(betas5, fresh5[1])
        np.testing.assert_array_equal(fitted5, fresh5[0])


def test_logistic4_fit_recovers_parameters():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 400)
    true = (5.0, 1.0, 4.0, 1.2)
    y = logistic4(x, *true) + rng.normal(0, 0.01, x.size)
    fitted, betas = fit_logistic(x, y, params=4)
    np.testing.assert_allclose(betas, true, rtol=0.02, atol=0.02)
    np.testing.assert_allclose(fitted, logistic4(x, *betas))


def test_logistic4_fit_decreasing_relation():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 10, 300)
    y = logistic4(x, 1.0, 5.0, 6.0, 0.8) + rng.normal(0, 0.01, x.size)  # decreasing
    _, betas = fit_logistic(x, y, params=4)
    np.testing.assert_allclose(betas, (1.0, 5.0, 6.0, 0.8), rtol=0.03, atol=0.03)


def test_logistic5_fit_recovers_parameters():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 10, 600)
    true = (4.0, 1.5, 5.0, 0.1, 2.0)
    y = logistic5(x, *true) + rng.normal(0, 0.01, x.size)
    fitted, betas = fit_logistic(x, y, params=5)
    np.testing.assert_allclose(betas, true, rtol=0.03, atol=0.03)
    assert np.sqrt(np.mean((fitted - y) ** 2)) < 0.012


def test_logistic5_matches_sheikh_form():
    x = np.linspace(-3, 3, 7)
    b = (2.0, 1.3, 0.2, 0.4, -1.0)
    direct = b[0] * (0.5 - 1 / (1 + np.exp(b[1] * (x - b[2])))) + b[3] * x + b[4]
    np.testing.assert_allclose(logistic5(x, *b), direct)


def test_fitted_plcc_at_least_raw_on_monotone_nonlinear():
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, 500)
    y = 100 / (1 + np.exp(-2 * x)) + rng.normal(0, 2, x.size)  # saturating, monotone
    raw = plcc(x, y)
    for fit in ("logistic4", "logistic5"):
        assert plcc(x, y, fit=fit) >= raw
        assert rmse(x, y, fit=fit) < np.std(y)
    assert plcc(x, y, fit="logistic4") > 0.99 > raw
    assert srcc(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)


def test_fit_errors():
    with pytest.raises(MetricInputError, match="at least 4 points"):
        fit_logistic([1, 2, 3], [1, 2, 3], params=4)
    with pytest.raises(MetricInputError, match="at least 5 points"):
        plcc([1, 2, 3, 4], [1, 3, 2, 4], fit="logistic5")
    with pytest.raises(MetricInputError, match="pred is constant"):
        fit_logistic([1, 1, 1, 1, 1], [1, 2, 3, 4, 5])
    with pytest.raises(MetricInputError, match="params must be 4 or 5"):
        fit_logistic([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], params=3)
    with pytest.raises(MetricInputError, match="fit must be one of"):
        plcc([1, 2, 3], [1, 2, 3], fit="cubic")
    with pytest.raises(MetricInputError, match="finite"):
        fit_logistic([1, 2, np.nan, 4, 5], [1, 2, 3, 4, 5])


def test_fit_failure_tells_user_to_use_fit_none():
    x = np.arange(20.0)
    y = np.sin(x)
    with pytest.raises(MetricInputError, match="fit='none'"):
        plcc(x, y, fit="logistic5", maxfev=3)


def test_rmse_raw_refuses_lower_is_better():
    with pytest.raises(MetricInputError, match="higher_better=False"):
        rmse([1, 2, 3], [1, 2, 3], higher_better=False)
    assert rmse([3, 2, 1, 0, -1], [1, 2, 3, 4, 5], higher_better=False, fit="logistic4") < 0.05


def test_fisher_z_mean_hand_value():
    # arctanh(.5) = ln(3)/2, arctanh(.9) = ln(19)/2 -> mean z = ln(57)/4,
    # tanh(ln(57)/4) = (sqrt(57) - 1) / (sqrt(57) + 1) = 0.76608 (the raw mean would be 0.70)
    expected = (math.sqrt(57) - 1) / (math.sqrt(57) + 1)
    assert fisher_z_mean([0.5, 0.9]) == pytest.approx(expected, abs=1e-12)
    assert fisher_z_mean([0.5, 0.9]) == pytest.approx(0.7660773, abs=1e-7)
    assert fisher_z_mean([0.3]) == pytest.approx(0.3)
    assert fisher_z_mean([0.5, -0.5]) == pytest.approx(0.0, abs=1e-15)


def test_fisher_z_mean_weights_and_edges():
    assert fisher_z_mean([0.5, 0.9], weights=[1, 0]) == pytest.approx(0.5)
    w = fisher_z_mean([0.5, 0.9], weights=[1, 3])
    assert w == pytest.approx(np.tanh((np.arctanh(0.5) + 3 * np.arctanh(0.9)) / 4))
    assert 0.99 < fisher_z_mean([1.0, 0.5]) <= 1.0  # clipped, finite
    with pytest.raises(MetricInputError, match=r"\[-1, 1\]"):
        fisher_z_mean([0.5, 1.2])
    with pytest.raises(MetricInputError, match="NaN"):
        fisher_z_mean([0.5, np.nan])
    with pytest.raises(MetricInputError, match="empty"):
        fisher_z_mean([])
    with pytest.raises(MetricInputError, match="weights"):
        fisher_z_mean([0.5, 0.9], weights=[-1, 2])
