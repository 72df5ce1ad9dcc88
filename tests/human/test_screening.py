"""Rater screening for small panels: leave-one-rater-out agreement, BT.500's limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ieqa.human import (
    AllRatersRejectedError,
    agreement_screen,
    max_deviation,
    mean_opinion_score,
    min_flaggable_ratings,
    mos_without_raters,
    zscore_mos,
)
from ieqa.metrics import MetricInputError

# 5 items x 3 raters. Leave-one-out references (mean of the other two):
#   rater 0: (r1 + r2) / 2 = [3.5, 2.5, 3.5, 2.5, 3] -> ranks [4.5, 1.5, 4.5, 1.5, 3];
#            against ranks [1..5]: sum dx*dy = -3, sxx = 10, syy = 9 -> r = -3 / sqrt(90)
#   rater 1: (r0 + r2) / 2 = [3, 3, 3, 3, 3] -> constant: not judged
#   rater 2: (r0 + r1) / 2 = [1.5, 1.5, 3.5, 3.5, 5] -> ranks [1.5, 1.5, 3.5, 3.5, 5];
#            against ranks [5, 4, 3, 2, 1]: sum = -9, sxx = 10, syy = 9 -> r = -9 / sqrt(90)
SMALL = np.array([[1, 2, 5], [2, 1, 4], [3, 4, 3], [4, 3, 2], [5, 5, 1]], dtype=float)


def test_agreement_screen_by_hand():
    s = agreement_screen(SMALL, min_srcc=0.3, min_items=3)
    assert s.srcc[0] == pytest.approx(-3 / math.sqrt(90))
    assert math.isnan(s.srcc[1]) and s.unjudged.tolist() == [1]
    assert s.srcc[2] == pytest.approx(-9 / math.sqrt(90))
    assert s.rejected.tolist() == [True, False, True]
    assert s.n_shared.tolist() == [5, 5, 5]
    assert s.reasons[0].startswith("corr: SRCC -0.316 with the mean of the other raters over 5 shared items < 0.3")
    assert s.reasons[1] is None
    # -0.316 is not below -0.5: only rater 2 goes
    assert agreement_screen(SMALL, min_srcc=-0.5, min_items=3).rejected.tolist() == [False, False, True]
    # the default needs 10 shared items: nobody is judged on 5
    default = agreement_screen(SMALL)
    assert not default.rejected.any() and default.unjudged.tolist() == [0, 1, 2]


def test_agreement_screen_shared_items_and_arguments():
    m = SMALL.copy()
    m[0, 1] = np.nan  # rater 1 skips item 0; the others still share it with each other
    assert agreement_screen(m, min_items=3).n_shared.tolist() == [5, 4, 5]
    for bad in ({"min_srcc": 1.5}, {"min_items": 2}):
        with pytest.raises(MetricInputError):
            agreement_screen(SMALL, **bad)


def _panel(seed: int, n_items: int = 50, noise: float = 1.0) -> np.ndarray:
    """Four honest raters (true quality + Gaussian noise, rounded to 1..5) and, in the
    last column, a rater drawing uniform random integers 1..5."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(1, 5, n_items)
    m = np.clip(np.round(quality[:, None] + rng.normal(0, noise, (n_items, 5))), 1, 5)
    m[:, 4] = rng.integers(1, 6, n_items)
    return m


def test_uniform_spammer_among_five_raters_is_flagged_and_honest_raters_are_not():
    flagged, false_alarms = 0, 0
    for seed in range(20):
        m = _panel(seed)
        # five ratings per item: BT.500's 2-sigma rule cannot flag anyone ...
        assert not zscore_mos(m).rater_rejected.any()
        # ... the agreement rule does
        s = agreement_screen(m)
        flagged += bool(s.rejected[4])
        false_alarms += int(s.rejected[:4].sum())
    assert flagged == 20 and false_alarms == 0


def test_bt500_cannot_flag_below_six_ratings():
    assert max_deviation(5) == pytest.approx(4 / math.sqrt(5))  # 1.789 < 2
    assert max_deviation(6) == pytest.approx(5 / math.sqrt(6))  # 2.041 > 2
    assert max_deviation(5, ddof=0) == pytest.approx(2.0) and max_deviation(1) == 0.0
    assert min_flaggable_ratings(2.0) == 6 and min_flaggable_ratings(2.0, ddof=0) == 6
    assert min_flaggable_ratings(3.0) == 11  # 10/sqrt(11) = 3.015; 9/sqrt(10) = 2.846
    # the extreme case: one rating far off, the rest equal -> flagged only from 6 ratings
    for n, flagged in ((5, 0), (6, 1)):
        col = np.array([[9.0] + [1.0] * (n - 1)])
        m = np.vstack([col, col[:, ::-1], np.arange(1.0, n + 1)[None]])  # raters vary across items
        assert int(zscore_mos(m, max_outlier_fraction=1.0).outlier.sum()) == flagged * 2


def test_mos_without_raters_records_them():
    m = np.array([[1.0, 2.0, 5.0], [3.0, 4.0, 1.0]])
    res = mos_without_raters(m, np.array([False, False, True]), (None, None, "corr: test"), mean_opinion_score)
    assert res.mos.tolist() == [1.5, 3.5] and res.n_dropped == 2
    assert res.rejected_raters.tolist() == [2] and res.rejection_reasons == (None, None, "corr: test")
    with pytest.raises(MetricInputError, match="one entry per rater"):
        mos_without_raters(m, np.array([True]), (None,), mean_opinion_score)


def test_zscore_screen_none_rejects_nobody():
    equal = np.full((3, 2), 4.0)
    with pytest.raises(AllRatersRejectedError, match="rater column 0: zero variance: all 3 kept ratings = 4") as err:
        zscore_mos(equal)
    assert err.value.reasons == ("zero variance: all 3 kept ratings = 4",) * 2
    res = zscore_mos(equal, screen="none")  # constant raters: z = 0 -> 50
    assert res.mos.tolist() == [50.0, 50.0, 50.0] and not res.rater_rejected.any()
    m = np.array([[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]])  # rater 1 constant, rater 0 z = -1, 0, 1
    res = zscore_mos(m, screen="none")
    np.testing.assert_allclose(res.mos, [(100 * 2 / 6 + 50) / 2, 50.0, (100 * 4 / 6 + 50) / 2])
    assert zscore_mos(m, screen="none", on_constant_rater="reject").rater_rejected.tolist() == [False, True]


def test_agreement_screen_keeps_an_srcc_equal_to_the_threshold():
    # two raters, ranks 1 2 3 4 5 and 2 5 3 1 4: sum (x - 3)(y - 3) = 2 - 2 + 0 - 2 + 2 = 0,
    # so each one's SRCC with the other is exactly 0: not below min_srcc = 0
    m = np.array([[1, 2], [2, 5], [3, 3], [4, 1], [5, 4]], dtype=float)
    s = agreement_screen(m, min_srcc=0.0, min_items=3)
    assert s.srcc.tolist() == [0.0, 0.0] and s.rejected.tolist() == [False, False]
    assert agreement_screen(m, min_srcc=0.01, min_items=3).rejected.tolist() == [True, True]


def test_agreement_screen_counts_only_items_someone_else_rated():
    # a sixth item only rater 2 rated: shared by nobody, so not counted for rater 2
    m = np.vstack([SMALL, [np.nan, np.nan, 3.0]])
    s = agreement_screen(m, min_srcc=0.3, min_items=3)
    assert s.n_shared.tolist() == [5, 5, 5]
    assert s.reasons[2] == "corr: SRCC -0.949 with the mean of the other raters over 5 shared items < 0.3"
    # 5 shared items are too few for min_items = 6: nobody is judged
    assert agreement_screen(m, min_items=6).unjudged.tolist() == [0, 1, 2]
