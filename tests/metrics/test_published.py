"""Aggregations that reproduce peers' released evaluation code ("as published"), each
checked on a small case worked out by hand, beside ieqa's correct counterpart."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ieqa.metrics import (
    MetricInputError,
    accuracy_with_ties_released,
    fisher_z_mean,
    grouped_srcc,
    multiway_accuracy,
    strict_ranking_accuracy_released,
    tanh_of_mean,
    tie_calibrated_accuracy_optimistic,
)

# Three editors, four images each, human ranks 1..4. Spearman without ties is
# r = 1 - 6 sum(d^2) / (n (n^2 - 1)) = 1 - sum(d^2) / 10 for n = 4:
#   A: predicted ranks 2 1 3 4 -> sum d^2 = 2  -> r = 0.8
#   B: predicted ranks 2 1 4 3 -> sum d^2 = 4  -> r = 0.6
#   C: predicted ranks 2 4 3 1 -> sum d^2 = 14 -> r = -0.4
EDITOR_PRED_RANKS = {"A": [2, 1, 3, 4], "B": [2, 1, 4, 3], "C": [2, 4, 3, 1]}
R = [0.8, 0.6, -0.4]
# tanh(mean r) = tanh(1/3); arctanh(0.8) = ln 3, arctanh(0.6) = ln 2, arctanh(0.4) = ln(7/3) / 2
TANH_OF_MEAN_R = math.tanh(1 / 3)  # 0.32151...
FISHER_Z = math.tanh((math.log(3) + math.log(2) - 0.5 * math.log(7 / 3)) / 3)  # 0.42682...


def test_tanh_of_mean_is_not_the_fisher_z_average():
    assert tanh_of_mean(R) == pytest.approx(TANH_OF_MEAN_R, abs=1e-12)
    assert fisher_z_mean(R) == pytest.approx(FISHER_Z, abs=1e-12)
    assert round(TANH_OF_MEAN_R, 4) == 0.3215 and round(FISHER_Z, 4) == 0.4268
    with pytest.raises(MetricInputError, match="empty"):
        tanh_of_mean([])
    with pytest.raises(MetricInputError, match=r"\[-1, 1\]"):
        tanh_of_mean([0.5, 1.5])
    with pytest.raises(MetricInputError, match="NaN"):
        tanh_of_mean([0.5, float("nan")])


def test_grouped_srcc_by_editor_three_ways():
    pred, human, editor = [], [], []
    for name, ranks in EDITOR_PRED_RANKS.items():
        pred += ranks
        human += [1, 2, 3, 4]
        editor += [name] * 4
    res = grouped_srcc(pred, human, editor, average="tanh_of_mean")
    assert res.per_group.tolist() == pytest.approx(R, abs=1e-12)
    assert res.value == pytest.approx(TANH_OF_MEAN_R, abs=1e-12)
    assert grouped_srcc(pred, human, editor, average="fisher_z").value == pytest.approx(FISHER_Z)
    assert grouped_srcc(pred, human, editor, average="mean").value == pytest.approx(1 / 3)


def test_released_sweep_never_leaves_the_no_tie_state_open():
    # all three pairs ordered right with no model tie: eps = 0 gives 3/3; the released sweep
    # makes the smallest |delta| (1, human +1) a tie first: 2/3 at eps = 1
    delta, label = [1.0, 2.0, -3.0], [1, 1, -1]
    assert tie_calibrated_accuracy_optimistic(delta, label) == (1.0, 0.0)
    assert accuracy_with_ties_released(delta, label) == pytest.approx((2 / 3, 1.0))


def test_released_sweep_switches_equal_deltas_one_at_a_time():
    # two pairs with |delta| = 0.5: a human tie first, then a human "a better".
    # thresholds: eps 0 -> tie wrong, the other right (1/2); eps 0.5 -> tie right, the
    # other wrong (1/2); the smallest wins: (0.5, 0.0). The sweep's state after the first
    # pair has the tie right and the other still decided: 2/2.
    delta, label = [0.5, 0.5], [0, 1]
    assert tie_calibrated_accuracy_optimistic(delta, label) == (0.5, 0.0)
    assert accuracy_with_ties_released(delta, label) == (1.0, 0.5)


def test_released_sweep_hand_example():
    # sorted |delta|: 0 (tie), 0.1 (human b, delta > 0), 0.2 (tie), 0.5 (human a)
    # after 1 step 2/4, after 2 steps 2/4, after 3 steps 3/4 (eps 0.2), after 4 steps 2/4
    assert accuracy_with_ties_released([0.5, -0.2, 0.1, 0.0], [1, 0, -1, 0]) == (0.75, 0.2)
    with pytest.raises(MetricInputError):
        accuracy_with_ties_released([], [])


# groups of the released strict ranking accuracy: (true ranks, scores, right at tie_eps 0.5)
_STRICT_GROUPS = [
    ([1, 1], [1.0, 1.3], True),          # K=2 human tie, |delta| 0.3 <= 0.5
    ([2, 1], [1.0, 1.0], True),          # B above A, exact tie: the later candidate first
    ([1, 2], [1.0, 1.0], False),         # A above B, exact tie: still B first
    ([1, 2, 3], [3.0, 2.9, 1.0], True),  # decided pairs ignore tie_eps: 3 > 2.9 is enough
    ([1, 2, 3], [3.0, 1.0, 1.0], False),  # B-C tie puts C first
    ([1, 1, 3], [2.0, 2.0, 1.0], False),  # a K=3 human tie has no ranking: wrong
]


def _strict_arrays():
    scores, gids, ranks = [], [], []
    for g, (r, s, _) in enumerate(_STRICT_GROUPS):
        scores += s
        ranks += r
        gids += [g] * len(s)
    return np.array(scores), np.array(gids), np.array(ranks, float)


def test_strict_ranking_accuracy_released_hand_groups():
    scores, gids, ranks = _strict_arrays()
    res = strict_ranking_accuracy_released(scores, gids, ranks, tie_eps=0.5)
    assert res.per_group.tolist() == [float(ok) for *_, ok in _STRICT_GROUPS]
    assert res.value == pytest.approx(3 / 6)
    # the K=2 tie needs |delta| <= tie_eps
    low = strict_ranking_accuracy_released(scores, gids, ranks, tie_eps=0.2)
    assert low.per_group[0] == 0.0 and low.value == pytest.approx(2 / 6)
    # ieqa's multi-way accuracy at the same eps: a model tie is |delta| <= eps everywhere,
    # never broken by position. Group 0 right; 1 and 2 wrong (a decided pair needs a lead
    # of more than eps); 3 wrong (2.9 is within eps of 3); 4 wrong; 5 right (the human tie
    # A=B is a model tie, C is more than eps below both)
    ieqa = multiway_accuracy(scores, gids, ranks, eps=0.5)
    assert ieqa.per_group.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_strict_ranking_accuracy_released_keeps_listed_order_in_interleaved_groups():
    # group 0 = (A, B) listed at positions 0 and 2; B above A with an exact score tie: right
    res = strict_ranking_accuracy_released([1.0, 5.0, 1.0, 4.0], [0, 1, 0, 1],
                                           [2, 1, 1, 2])
    assert res.per_group.tolist() == [1.0, 1.0]
