"""ReasonEdit ECDF + mid-point smoothing + probit, on a hand-worked example."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ieqa.human import ecdf_percentiles, ecdf_probit, ecdf_probit_mos
from ieqa.metrics import MetricInputError

# rater A rates 1, 2, 2, 3 (N = 4); rater B rates 2, 2, 5 and skips item 3 (N = 3)
M = np.array([[1, 2], [2, 2], [2, 5], [3, np.nan]], dtype=float)


def test_percentiles_by_hand():
    p = ecdf_percentiles(M)
    # A: P(1) = (0 + .5)/4, P(2) = (1 + .5*2)/4, P(3) = (3 + .5)/4
    # B: P(2) = (0 + .5*2)/3, P(5) = (2 + .5)/3
    expected = [[1 / 8, 1 / 3], [1 / 2, 1 / 3], [1 / 2, 5 / 6], [7 / 8, np.nan]]
    np.testing.assert_allclose(p, expected)


def test_probit_of_mean_percentile_by_hand():
    mean_p = np.array([11 / 48, 5 / 12, 2 / 3, 7 / 8])
    np.testing.assert_allclose(ecdf_probit(M), stats.norm.ppf(mean_p))
    np.testing.assert_allclose(ecdf_probit(M), [-0.7416, -0.2104, 0.4307, 1.1503], atol=5e-5)


def test_vectorised_matches_a_loop_on_random_data():
    rng = np.random.default_rng(7)
    m = rng.integers(1, 6, size=(40, 6)).astype(float)
    m[rng.random(m.shape) < 0.3] = np.nan
    p = ecdf_percentiles(m)
    for j in range(m.shape[1]):
        col = m[~np.isnan(m[:, j]), j]
        for i in np.flatnonzero(~np.isnan(m[:, j])):
            s = m[i, j]
            assert p[i, j] == pytest.approx(((col < s).sum() + 0.5 * (col == s).sum()) / len(col))
    assert np.isnan(p[np.isnan(m)]).all()
    assert ((p[~np.isnan(p)] > 0) & (p[~np.isnan(p)] < 1)).all()


def test_edge_cases_documented():
    # a constant rater maps everything to 0.5; an unrated item gets NaN; a rater with one rating 0.5
    p = ecdf_percentiles([[4, 1], [4, np.nan], [4, np.nan]])
    np.testing.assert_allclose(p[:, 0], 0.5)
    assert p[0, 1] == 0.5
    scores = ecdf_probit([[1, np.nan], [np.nan, np.nan], [2, 3]])
    assert np.isnan(scores[1]) and np.isfinite(scores[[0, 2]]).all()
    with pytest.raises(MetricInputError, match="infinite"):
        ecdf_probit([[1, np.inf]])


def test_mos_wrapper():
    res = ecdf_probit_mos(M)
    np.testing.assert_allclose(res.mos, ecdf_probit(M))
    assert res.n_ratings.tolist() == [2, 2, 2, 1] and res.n_dropped == 0
    assert np.isnan(res.std).all() and res.method == "ecdf-probit"
