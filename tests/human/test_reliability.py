"""ICC, Kendall's W and Krippendorff's alpha against published and hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ieqa.human import icc, icc_table, kendall_w, krippendorff_alpha, mean_pairwise_srcc
from ieqa.metrics import MetricInputError

# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array([
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
], dtype=float)
# Their Table 4 (two decimals).
PUBLISHED_ICC = {"ICC(1,1)": 0.17, "ICC(2,1)": 0.29, "ICC(3,1)": 0.71,
                 "ICC(1,k)": 0.44, "ICC(2,k)": 0.62, "ICC(3,k)": 0.91}

nan = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C:
# 4 observers (rows) x 12 units (columns), missing values; transposed to items x raters.
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]).T
PUBLISHED_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def test_icc_matches_shrout_fleiss():
    table = icc_table(SHROUT_FLEISS)
    for form, value in PUBLISHED_ICC.items():
        assert table[form] == pytest.approx(value, abs=0.005), form
        assert icc(SHROUT_FLEISS, form) == table.values[form]
    # the ANOVA mean squares of their Table 3
    assert (table.bms, table.wms, table.jms, table.ems) == pytest.approx(
        (11.24, 6.26, 32.49, 1.02), abs=0.005)
    assert icc(SHROUT_FLEISS, "2,k") == table["ICC(2,k)"]
    assert (table.n_items, table.n_raters, table.n_items_dropped) == (6, 4, 0)


def test_icc_missing_values_drop_items_and_say_so():
    m = np.vstack([SHROUT_FLEISS, [3, nan, 4, 5]])
    table = icc_table(m)
    assert table.n_items_dropped == 1 and table.n_items == 6
    assert table["ICC(2,1)"] == pytest.approx(icc_table(SHROUT_FLEISS)["ICC(2,1)"])
    with pytest.raises(MetricInputError, match="1 item\\(s\\) have missing ratings"):
        icc(m, missing="raise")
    with pytest.raises(MetricInputError, match="at least 2 items rated by every rater, got 1"):
        icc([[1, 2], [3, nan], [nan, 4]])


def test_icc_degenerate_inputs():
    with pytest.raises(MetricInputError, match="all 6 ratings are equal"):
        icc(np.full((3, 2), 4.0))
    # every rater constant, raters differ: ICC(3,1) = 0/0, ICC(2,1) = 0
    m = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    assert icc(m, "ICC(2,1)") == 0.0
    assert np.isnan(icc_table(m)["ICC(3,1)"])
    with pytest.raises(MetricInputError, match="ICC\\(3,1\\) is undefined"):
        icc(m, "ICC(3,1)")
    with pytest.raises(MetricInputError, match="form must be one of"):
        icc(SHROUT_FLEISS, "ICC(4,1)")


@pytest.mark.parametrize("value", [3.2, 0.1, 2.7, 71.3])
def test_icc_equal_ratings_that_do_not_sum_exactly(value):
    # 3.2 has no exact float mean: rounding noise once made ICC 1.0, 0.52 or -0.5 here
    for shape in ((10, 2), (12, 3), (7, 3)):
        with pytest.raises(MetricInputError, match="ratings are equal"):
            icc(np.full(shape, value))
    m = np.array([[value, value + 0.5]] * 5)  # every rater constant, raters differ
    assert icc(m, "ICC(2,1)") == 0.0  # not -0.0 nor noise
    with pytest.raises(MetricInputError, match="ICC\\(3,1\\) is undefined"):
        icc(m, "ICC(3,1)")
    with pytest.raises(MetricInputError, match="at least 2 rater"):
        icc([[1.0], [2.0]])


def test_kendall_w_by_hand():
    # raters rank 4 items: (1,2,3,4), (1,3,2,4), (2,1,3,4): R = 4, 6, 8, 12, S = 35
    m = np.array([[1, 1, 2], [2, 3, 1], [3, 2, 3], [4, 4, 4]], dtype=float)
    res = kendall_w(m)
    assert res.w == pytest.approx(12 * 35 / (9 * 60))  # 0.778
    assert res.chi2 == pytest.approx(3 * 3 * res.w) and res.p_value == pytest.approx(stats.chi2.sf(7.0, 3))


def test_kendall_w_tie_correction_by_hand():
    # rater 1 ties items 0 and 1 (ranks 1.5, 1.5; T = 2^3 - 2 = 6): R = 4.5, 4.5, 10, 11, S = 36.5
    m = np.array([[1, 1, 2], [1, 2, 1], [2, 3, 4], [3, 4, 3]], dtype=float)
    res = kendall_w(m)
    assert res.w == pytest.approx(12 * 36.5 / (9 * 60 - 3 * 6))  # 0.839 (0.811 uncorrected)
    # Friedman's tie-corrected chi-square is m (n - 1) W
    assert res.chi2 == pytest.approx(stats.friedmanchisquare(*m).statistic)


def test_kendall_w_perfect_missing_and_degenerate():
    perfect = np.tile(np.arange(5.0)[:, None], (1, 3))
    assert kendall_w(perfect).w == pytest.approx(1.0)
    res = kendall_w(np.vstack([perfect, [[1, nan, 2]]]))
    assert res.n_items_dropped == 1 and res.w == pytest.approx(1.0)
    with pytest.raises(MetricInputError, match="every rater gives all items the same value"):
        kendall_w(np.ones((4, 3)))


@pytest.mark.parametrize("level", list(PUBLISHED_ALPHA))
def test_krippendorff_alpha_published_example(level):
    assert krippendorff_alpha(KRIPPENDORFF_2011, level) == pytest.approx(PUBLISHED_ALPHA[level], abs=5e-4)


def test_krippendorff_alpha_exact_nominal_value():
    # Krippendorff (2011): nominal alpha = 1 - (n-1) (o_ck off-diagonal) / (sum n_c n_k off-diag)
    # = 1 - 39 * 4 / 608 with n = 40 pairable values
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(1 - 39 * 4 / 608)


def test_krippendorff_alpha_properties_and_errors():
    perfect = np.array([[1, 1, nan], [2, 2, 2], [3, nan, 3]])
    for level in PUBLISHED_ALPHA:
        assert krippendorff_alpha(perfect, level) == pytest.approx(1.0)
    # units with a single rating are not pairable and do not count
    assert krippendorff_alpha(np.vstack([perfect, [9, nan, nan]]), "interval") == pytest.approx(1.0)
    with pytest.raises(MetricInputError, match="no item has at least 2 ratings"):
        krippendorff_alpha([[1, nan], [nan, 2]])
    with pytest.raises(MetricInputError, match="all 4 pairable ratings are equal"):
        krippendorff_alpha([[3, 3], [3, 3], [1, nan]])
    with pytest.raises(MetricInputError, match="non-negative"):
        krippendorff_alpha([[-1, 1], [2, 2]], "ratio")
    with pytest.raises(MetricInputError, match="level must be one of"):
        krippendorff_alpha(perfect, "circular")


def test_krippendorff_alpha_agrees_with_reference_package():
    # test-only reference, in the dev extra (pip install -e '.[dev]')
    krippendorff = pytest.importorskip("krippendorff", reason="the dev extra is not installed")
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(20):
        m = rng.integers(1, 6, size=(int(rng.integers(5, 30)), int(rng.integers(2, 6)))).astype(float)
        m[rng.random(m.shape) < 0.3] = nan
        for level in PUBLISHED_ALPHA:
            try:
                ours = krippendorff_alpha(m, level)
            except MetricInputError:
                continue
            ref = krippendorff.alpha(reliability_data=m.T, level_of_measurement=level)
            assert ours == pytest.approx(ref, abs=1e-9)
            compared += 1
    assert compared >= 60  # of 80 (matrix, level) pairs: the comparison is not vacuous


def test_mean_pairwise_srcc():
    m = np.array([[1, 1, 3], [2, 2, 2], [3, 3, 1], [4, 4, nan]], dtype=float)
    r, used, skipped = mean_pairwise_srcc(m)
    assert (used, skipped) == (3, 0)
    # pairs: (0,1) = 1, (0,2) = (1,2) = -1 on the 3 shared items; Fisher z mean of clipped r
    assert -1 < r < 0
    with pytest.raises(MetricInputError, match="no rater pair"):
        mean_pairwise_srcc([[1, 1], [1, 2], [1, 3]])
