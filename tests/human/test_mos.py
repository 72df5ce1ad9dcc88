"""MOS pipelines, outlier rules, levels and voting, against hand-worked values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ieqa.human import (
    LEVEL_LABELS,
    iqr_mos,
    iqr_outliers,
    level_indices,
    levels_from_scores,
    majority_vote,
    mean_opinion_score,
    zscore_mos,
)
from ieqa.metrics import MetricInputError

# 4 items x 6 raters. Raters 0-4 each rate two items at (their mean + 1) and two at
# (their mean - 1), so every z-score of theirs is +-1/sqrt(4/3) = +-sqrt(3)/2.
# On item 0 raters 0-4 say 3 and rater 5 says 5: mean 10/3, sample SD 2/sqrt(6), so
# rater 5 is 5/6*sqrt(6) = 2.04 SDs away -> an outlier; 1 of 4 ratings = 25% > 5%,
# so rater 5 is rejected. No other rating is beyond 2 SDs of its item mean.
R = np.array([
    [3, 3, 3, 3, 3, 5],
    [1, 5, 3, 5, 1, 2],
    [1, 5, 1, 3, 3, 3],
    [3, 3, 1, 5, 1, 4],
], dtype=float)
SIGNS = np.array([[1, -1, 1, -1, 1], [-1, 1, 1, 1, -1], [-1, 1, -1, -1, 1], [1, -1, -1, 1, -1]])


def test_zscore_mos_hand_worked_with_screened_subject():
    res = zscore_mos(R)
    z = SIGNS * math.sqrt(3) / 2                      # kept raters' z-scores
    expected_values = 100 * (z + 3) / 6               # 50 +- 14.43
    np.testing.assert_allclose(res.values[:, :5], expected_values)
    assert np.isnan(res.values[:, 5]).all()
    # MOS = 50 + 100/6 * (+-1/5) * sqrt(3)/2 = 50 +- 5 sqrt(3) / 3
    np.testing.assert_allclose(res.mos, [50 + 5 * math.sqrt(3) / 3] * 2 + [50 - 5 * math.sqrt(3) / 3] * 2)
    # values a, -a, a, -a, a around 50 with a = 25/sqrt(3): sample SD = a sqrt(1.2) = 5 sqrt(10)
    np.testing.assert_allclose(res.std, 5 * math.sqrt(10))
    np.testing.assert_allclose(res.ci95, stats.t.ppf(0.975, 4) * 5 * math.sqrt(10) / math.sqrt(5))
    assert res.n_ratings.tolist() == [5, 5, 5, 5]
    assert res.rater_rejected.tolist() == [False] * 5 + [True]
    assert res.rejected_raters.tolist() == [5]
    np.testing.assert_allclose(res.rater_outlier_fraction, [0, 0, 0, 0, 0, 0.25])
    assert "25.0%" in res.rejection_reasons[5] and res.rejection_reasons[:5] == (None,) * 5
    assert res.outlier.sum() == 1 and res.outlier[0, 5]
    assert res.n_outliers == 1 and res.n_dropped == 4 and res.n_input_ratings == 24
    assert res.scale.startswith("0-100") and res.n_clipped == 0


def test_zscore_mos_without_screening_keeps_everyone():
    res = zscore_mos(R, screen="none")
    z6 = (R[:, 5] - 3.5) / math.sqrt(5 / 3)           # rater 5: mean 3.5, SD sqrt(5/3)
    mean_z = (SIGNS.sum(axis=1) * math.sqrt(3) / 2 + z6) / 6
    np.testing.assert_allclose(res.mos, 100 * (mean_z + 3) / 6)
    assert not res.rater_rejected.any() and res.n_dropped == 0


# 20 items x 6 raters. Item 0 is R's first row: rater 5's 5 lies 5/6*sqrt(6) = 2.04 sample SDs
# from the item mean, the only rating beyond 2 SDs (rows 1-19 are 1..5 plus one repeat, at
# most 1.47 SDs off). So rater 5 has exactly 1 outlier in 20 ratings: 5.0 %.
BOUNDARY = np.array([[3, 3, 3, 3, 3, 5]] + [[(i + j) % 5 + 1 for j in range(6)] for i in range(1, 20)],
                    dtype=float)


def _rescaled_z_mos(kept_ratings):
    """Reference for the checks below: per-rater z (ddof=1) of the kept ratings (NaN =
    dropped), 100 (z + 3) / 6, item mean -- in plain numpy."""
    z = (kept_ratings - np.nanmean(kept_ratings, axis=0)) / np.nanstd(kept_ratings, axis=0, ddof=1)
    return np.nanmean(100 * (z + 3) / 6, axis=1)


def test_bt500_rater_with_exactly_five_percent_outliers_is_kept():
    # ITU-R BT.500's observer screening rejects observer i when (P_i + Q_i) / (J K R) > 0.05,
    # a strict inequality (the Recommendation also asks |P_i - Q_i| / (P_i + Q_i) < 0.3,
    # which ieqa does not apply; DESIGN.md: "subjects with >5% such outliers"). A rater
    # with exactly 1 outlier in 20 ratings (5 %) sits on the boundary and is NOT rejected.
    dev = np.abs(BOUNDARY - BOUNDARY.mean(axis=1, keepdims=True)) / BOUNDARY.std(axis=1, ddof=1, keepdims=True)
    assert dev[0, 5] == pytest.approx(5 / 6 * math.sqrt(6)) and dev[0, 5] > 2
    assert dev[1:].max() < 2                                    # the premise, checked
    res = zscore_mos(BOUNDARY)
    assert res.rater_outlier_fraction[5] == 0.05                # 1/20, exactly on the boundary
    assert not res.rater_rejected.any() and res.rejection_reasons == (None,) * 6
    # rater 5 is kept, but its outlier rating is still dropped (DESIGN.md: "drop ratings
    # beyond 2 sigma of the image mean"): item 0 averages 5 ratings, the others 6
    expected_outlier = np.zeros(BOUNDARY.shape, dtype=bool)
    expected_outlier[0, 5] = True
    np.testing.assert_array_equal(res.outlier, expected_outlier)
    np.testing.assert_array_equal(res.kept, ~expected_outlier)
    assert res.n_ratings.tolist() == [5] + [6] * 19 and res.n_dropped == 1
    assert np.isnan(res.values[0, 5]) and not np.isnan(res.values[1:, 5]).any()
    kept = np.where(expected_outlier, np.nan, BOUNDARY)  # rater 5 z-scored on its 19 kept ratings
    np.testing.assert_allclose(res.mos, _rescaled_z_mos(kept))
    # one more outlier for rater 5 (2 of 20 = 10 % > 5 %): now the whole rater goes
    two = BOUNDARY.copy()
    two[1] = [3, 3, 3, 3, 3, 5]
    res2 = zscore_mos(two)
    assert res2.rater_outlier_fraction[5] == 0.10 and res2.rater_rejected.tolist() == [False] * 5 + [True]
    assert res2.n_ratings.tolist() == [5] * 20


def test_bt500_kept_rater_loses_only_its_outlier_ratings_hand_worked():
    # R with the rejection threshold at 25 %: rater 5 has 1 outlier in 4 ratings = 25 %, not
    # > 25 %, so it is kept (strict rule, as BT.500's "> 0.05"), and only its outlier (item 0,
    # the 5) is dropped. Its kept ratings 2, 3, 4 (items 1-3) have mean 3 and sample SD 1:
    # z = -1, 0, 1 -> 100 (z + 3) / 6 = 100/3, 50, 200/3.
    res = zscore_mos(R, max_outlier_fraction=0.25)
    assert not res.rater_rejected.any()
    assert res.outlier.sum() == 1 and res.outlier[0, 5] and not res.kept[0, 5]
    assert res.kept[1:].all() and res.n_ratings.tolist() == [5, 6, 6, 6] and res.n_dropped == 1
    np.testing.assert_allclose(res.values[1:, 5], [100 / 3, 50, 200 / 3])
    np.testing.assert_allclose(res.values[:, :5], 100 * (SIGNS * math.sqrt(3) / 2 + 3) / 6)
    # raters 0-4 alone give 50 +- 5 sqrt(3)/3 (first test); rater 5 joins items 1-3
    a = 5 * math.sqrt(3) / 3
    np.testing.assert_allclose(res.mos, [50 + a, (5 * (50 + a) + 100 / 3) / 6,
                                         (5 * (50 - a) + 50) / 6, (5 * (50 - a) + 200 / 3) / 6])


def test_two_sigma_rule_cannot_flag_with_five_raters():
    # with N ratings an item's rating is at most (N-1)/sqrt(N) SDs from the mean: 1.79 for N=5
    m = np.array([[1, 5, 5, 5, 5], [2, 3, 3, 4, 4], [5, 1, 1, 1, 1]], dtype=float)
    assert zscore_mos(m).n_outliers == 0


def test_zscore_screen_on_z_matches_a_loop():
    res = zscore_mos(R, screen_on="z", max_outlier_fraction=1.0)
    z = (R - R.mean(axis=0)) / R.std(axis=0, ddof=1)
    ref = np.abs(z - z.mean(axis=1, keepdims=True)) > 2 * z.std(axis=1, ddof=1, keepdims=True)
    np.testing.assert_array_equal(res.outlier, ref)


def test_zscore_rescale_options_and_clipping():
    m = np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]])
    np.testing.assert_allclose(zscore_mos(m, rescale="none").mos, [-1, 0, 1])
    np.testing.assert_allclose(zscore_mos(m, rescale="minmax").mos, [0, 50, 100])
    # 16 ratings, fifteen 1s and one 5: the 5 is (N-1)/sqrt(N) = 3.75 SDs up -> clipped to 100
    col = np.array([1.0] * 15 + [5.0])
    res = zscore_mos(np.column_stack([col, col[::-1]]), screen="none")
    assert res.n_clipped == 2 and res.values.max() == 100.0 and res.values.min() >= 0


def test_zscore_constant_rater_is_rejected_or_raises():
    m = np.array([[1.0, 3.0, 2.0], [2.0, 3.0, 3.0], [3.0, 3.0, 5.0]])
    res = zscore_mos(m)
    assert res.rater_rejected.tolist() == [False, True, False]
    assert "zero variance" in res.rejection_reasons[1]
    assert res.n_ratings.tolist() == [2, 2, 2]
    with pytest.raises(MetricInputError, match="rater column 1 cannot be z-scored: zero variance"):
        zscore_mos(m, on_constant_rater="raise")
    with pytest.raises(MetricInputError, match="no rating is left"):
        zscore_mos(np.full((3, 2), 4.0))


def test_zscore_missing_ratings_and_empty_items():
    m = np.array([[1, 2], [np.nan, 3], [3, np.nan], [np.nan, np.nan], [2, 1]], dtype=float)
    res = zscore_mos(m)
    assert res.n_ratings.tolist() == [2, 1, 1, 0, 2]
    assert np.isnan(res.mos[3]) and res.items_without_ratings.tolist() == [3]
    assert np.isnan(res.std[1]) and np.isnan(res.ci95[1])  # one rating: spread undefined
    # rater 0 rated 1, 3, 2 (mean 2, SD 1) -> item 2 has z = 1 -> 100 * 4 / 6
    assert res.mos[2] == pytest.approx(100 * 4 / 6)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"screen": "bt709"}, "screen must be one of"),
    ({"rescale": "0-10"}, "rescale must be one of"),
    ({"outlier_sigma": 0}, "outlier_sigma must be > 0"),
    ({"max_outlier_fraction": 1.5}, r"max_outlier_fraction must be in \[0, 1\]"),
    ({"ddof": 2}, "ddof must be one of"),
])
def test_zscore_argument_errors(kwargs, match):
    with pytest.raises(MetricInputError, match=match):
        zscore_mos(R, **kwargs)


def test_mean_opinion_score_plain():
    res = mean_opinion_score([[1, 2, 3], [4, np.nan, 5]])
    np.testing.assert_allclose(res.mos, [2.0, 4.5])
    np.testing.assert_allclose(res.std, [1.0, math.sqrt(0.5)])
    assert res.n_dropped == 0 and res.scale == "raw"
    with pytest.raises(MetricInputError, match="infinite"):
        mean_opinion_score([[1, np.inf]])


def test_iqr_outliers_hand_worked():
    # Q1 = 2, Q3 = 4 (linear interpolation), IQR 2, fences [-1, 7]: 100 goes, 7 stays
    assert iqr_outliers([1, 2, 3, 4, 100]).tolist() == [False] * 4 + [True]
    assert not iqr_outliers([1, 2, 3, 4, 7]).any()
    assert iqr_outliers([1, 2, 3, 4, 7], k=1.0).tolist() == [False] * 4 + [True]  # fence 6
    rows = iqr_outliers([[1, 2, 3, 4, 100], [np.nan] * 5, [5, 5, 5, np.nan, 1]])
    assert rows[0].tolist() == [False] * 4 + [True]
    assert not rows[1].any()  # no value -> nothing flagged
    assert rows[2].tolist() == [False, False, False, False, True]  # IQR 0: anything off 5 goes
    with pytest.raises(MetricInputError, match="k must be >= 0"):
        iqr_outliers([1, 2], k=-1)


def test_iqr_quartiles_interpolate_linearly_and_fences_are_inclusive():
    # 8 sorted values: Hyndman-Fan type 7 (numpy's "linear", the documented method) puts Q1 at
    # 0-based position 0.25 * 7 = 1.75 -> 2 + 0.75 (3 - 2) = 2.75, Q3 at 5.25 -> 6.25; IQR 3.5,
    # 1.5 IQR = 5.25: fences [-2.5, 11.5], and the extremes sit exactly on them.
    x = [-2.5, 2, 3, 4, 5, 6, 7, 11.5]
    assert np.percentile(x, [25, 75]).tolist() == [2.75, 6.25]  # numpy's default = type 7
    # other quartile rules give other fences here, e.g. "nearest" Q1 3, Q3 6 -> [-1.5, 10.5]
    assert np.percentile(x, [25, 75], method="nearest").tolist() == [3.0, 6.0]
    assert not iqr_outliers(x).any()                          # on the fence: kept
    assert iqr_outliers(x, k=1.49).tolist() == [True] + [False] * 6 + [True]
    # just outside the k = 1.5 fences (quartiles unchanged: they do not depend on the extremes)
    assert iqr_outliers([-2.51, 2, 3, 4, 5, 6, 7, 11.51]).tolist() == [True] + [False] * 6 + [True]
    # k = 1: fences 2.75 - 3.5 = -0.75 and 6.25 + 3.5 = 9.75
    assert iqr_outliers([-0.75, 2, 3, 4, 5, 6, 7, 9.75], k=1.0).tolist() == [False] * 8
    assert iqr_outliers([-0.8, 2, 3, 4, 5, 6, 7, 9.8], k=1.0).tolist() == [True] + [False] * 6 + [True]
    # the same per item inside iqr_mos, with NaN (missing) ratings ignored in the quartiles
    m = np.array([x + [np.nan], [11.51, np.nan, 2, 3, 4, 5, 6, 7, -2.51]])
    res = iqr_mos(m)
    assert res.n_ratings.tolist() == [8, 6]
    np.testing.assert_allclose(res.mos, [36 / 8, 27 / 6])


def test_iqr_mos():
    res = iqr_mos(R)
    assert res.mos[0] == 3.0 and res.outlier[0, 5] and res.n_ratings[0] == 5
    np.testing.assert_allclose(res.mos[1:], R[1:].mean(axis=1))
    assert not res.rater_rejected.any() and res.rater_outlier_fraction[5] == 0.25


def test_levels_edges():
    scores = [0, 19.999, 20, 40, 60, 80, 99.9, 100]
    assert levels_from_scores(scores).tolist() == [
        "bad", "bad", "poor", "fair", "good", "excellent", "excellent", "excellent"]
    assert level_indices([2.5, 5.0], lo=0, hi=10).tolist() == [1, 2]  # an inner edge goes up
    assert levels_from_scores([1, 2, 3], n_levels=3, labels=("lo", "mid", "hi")).tolist() == ["lo", "mid", "hi"]
    assert LEVEL_LABELS[0] == "bad" and LEVEL_LABELS[-1] == "excellent"


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    ([[3, 3, 3]], {}, "range .* is empty"),
    ([[1, np.nan]], {}, "NaN"),
    ([[1, 2]], {"n_levels": 4}, "labels has 5 entries"),
    ([[1, 20]], {"lo": 0, "hi": 10}, "outside"),
    ([[]], {}, "non-empty"),
])
def test_levels_errors(args, kwargs, match):
    with pytest.raises(MetricInputError, match=match):
        levels_from_scores(*args, **kwargs)


def test_majority_vote_ties():
    votes = [[1, 1, 2, 2], [3, 3, 1, np.nan], [1, 2, 3, np.nan], [2, 4, 2, 4]]
    assert majority_vote(votes, "lower").tolist() == [1, 3, 1, 2]
    assert majority_vote(votes, "higher").tolist() == [2, 3, 3, 4]
    assert majority_vote(votes, "median").tolist() == [1, 3, 2, 2]  # lower middle of an even tie
    ints = majority_vote(np.array([[1, 2, 2]]))
    assert ints.tolist() == [2] and ints.dtype.kind == "i"


def test_majority_vote_labels_with_order():
    votes = [["good", "bad", None], ["fair", "fair", "good"], ["bad", "excellent", "good"]]
    assert majority_vote(votes, order=LEVEL_LABELS).tolist() == ["bad", "fair", "bad"]
    assert majority_vote(votes, "median", order=LEVEL_LABELS).tolist() == ["bad", "fair", "good"]
    with pytest.raises(MetricInputError, match="order must list"):
        majority_vote(votes)
    with pytest.raises(MetricInputError, match="not in order: \\['great'\\]"):
        majority_vote([["great"]], order=LEVEL_LABELS)
    with pytest.raises(MetricInputError, match="no vote, e.g. rows \\[1\\]"):
        majority_vote([[1, 2], [np.nan, np.nan]])
    with pytest.raises(MetricInputError, match="tie_break must be one of"):
        majority_vote([[1]], "random")
