from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from ieqa.metrics import MetricInputError, fisher_z_mean, leave_one_out_ceiling


def _naive(r):
    out_s, out_p = [], []
    for j in range(r.shape[1]):
        others = np.delete(r, j, axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
            ref = np.nanmean(others, axis=1)
        use = ~np.isnan(r[:, j]) & ~np.isnan(ref)
        out_s.append(stats.spearmanr(r[use, j], ref[use]).statistic)
        out_p.append(stats.pearsonr(r[use, j], ref[use]).statistic)
    return np.array(out_s), np.array(out_p)


def test_ceiling_matches_loop_with_missing_ratings():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=60)
    r = np.round(truth[:, None] + rng.normal(0, 0.7, (60, 4)), 1)
    r[rng.random(r.shape) < 0.15] = np.nan
    res = leave_one_out_ceiling(r, average="mean")
    s, p = _naive(r)
    np.testing.assert_allclose(res.per_rater_srcc, s, atol=1e-12)
    np.testing.assert_allclose(res.per_rater_plcc, p, atol=1e-12)
    assert res.srcc == pytest.approx(s.mean()) and res.plcc == pytest.approx(p.mean())
    fz = leave_one_out_ceiling(r)
    assert fz.srcc == pytest.approx(fisher_z_mean(s)) and fz.n_raters == 4 and fz.n_skipped == 0


def test_ceiling_hand_example_two_raters():
    r = np.array([[1, 1], [2, 3], [3, 2], [4, 4]], dtype=float)
    res = leave_one_out_ceiling(r)
    assert res.srcc == pytest.approx(0.8) and res.plcc == pytest.approx(0.8)


def test_ceiling_skips_constant_rater_and_errors():
    r = np.array([[1, 1, 3], [2, 3, 3], [3, 2, 3], [4, 4, 3]], dtype=float)
    res = leave_one_out_ceiling(r)
    assert res.n_skipped == 1 and np.isnan(res.per_rater_srcc[2])
    with pytest.raises(MetricInputError, match="n_raters >= 2"):
        leave_one_out_ceiling(np.ones((5, 1)))
    with pytest.raises(MetricInputError, match="no rater"):
        leave_one_out_ceiling(np.ones((5, 3)))
