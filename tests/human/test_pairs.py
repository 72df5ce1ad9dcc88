"""Rankings -> pairs, win counts, EditReward tie disentanglement, Preference building."""

from __future__ import annotations

import numpy as np
import pytest

from ieqa.data.schema import EditSample, PreferenceLabel
from ieqa.human import (
    disentangle_ties,
    label_codes,
    preferences_from_samples,
    ranking_to_pairs,
    win_count_scores,
)
from ieqa.metrics import MetricInputError

# group g: items 0, 2, 4 with ranks 1, 2, 2; group h: items 1, 3 with ranks 2, 1;
# group k: items 5..8 with ranks 4, 3, 2, 1; group solo: item 9 alone.
GROUPS = ["g", "h", "g", "h", "g", "k", "k", "k", "k", "solo"]
RANKS = [1, 2, 2, 1, 2, 4, 3, 2, 1, 1]


def test_ranking_to_pairs_counts_and_labels():
    p = ranking_to_pairs(GROUPS, RANKS)
    assert len(p.a) == 3 + 1 + 6 + 0  # K(K-1)/2 per group
    assert list(zip(p.a.tolist(), p.b.tolist(), p.label.tolist(), strict=True))[:4] == [
        (0, 2, "a>b"), (0, 4, "a>b"), (2, 4, "tie"), (1, 3, "b>a")]
    assert p.group.tolist() == ["g"] * 3 + ["h"] + ["k"] * 6
    assert (p.label[p.group == "k"] == "b>a").all()  # later items rank better in k
    np.testing.assert_array_equal(p.gap[:4], [1, 1, 0, 1])
    assert (p.a < p.b).all()
    assert {lab.value for lab in PreferenceLabel} >= set(p.label.tolist())


def test_ranking_to_pairs_options():
    p = ranking_to_pairs(["x"] * 3, [0.9, 0.5, 0.55], higher_better=True, tie_eps=0.06)
    assert p.label.tolist() == ["a>b", "a>b", "tie"]
    empty = ranking_to_pairs(["a", "b"], [1, 1])
    assert len(empty.a) == 0 and empty.label.dtype.kind == "U"
    with pytest.raises(MetricInputError, match="ranks has 1 NaN"):
        ranking_to_pairs(["a", "a"], [1, np.nan])
    with pytest.raises(MetricInputError, match="length mismatch"):
        ranking_to_pairs(["a", "a"], [1])


def test_win_counts_by_hand():
    p = ranking_to_pairs(GROUPS, RANKS)
    wins = win_count_scores(GROUPS, p.a, p.b, p.label)
    # g: item 0 beats 2 and 4; 2 and 4 tie (0.5 each). h: 3 beats 1. k: 8 > 7 > 6 > 5.
    np.testing.assert_array_equal(wins, [2, 0, 0.5, 1, 0.5, 0, 1, 2, 3, 0])
    rate = win_count_scores(GROUPS, p.a, p.b, p.label, normalize=True)
    np.testing.assert_allclose(rate[:9], [1, 0, 0.25, 1, 0.25, 0, 1 / 3, 2 / 3, 1])
    assert np.isnan(rate[9])  # in no pair
    # numeric labels and a custom tie credit
    assert win_count_scores(["g", "g"], [0], [1], [0], tie_credit=0).tolist() == [0, 0]


def test_win_counts_validation():
    with pytest.raises(MetricInputError, match="different groups"):
        win_count_scores(["g", "h"], [0], [1], ["a>b"])
    with pytest.raises(MetricInputError, match="outside"):
        win_count_scores(["g", "g"], [0], [2], ["a>b"])
    with pytest.raises(MetricInputError, match="unknown labels"):
        win_count_scores(["g", "g"], [0], [1], ["left"])


def test_label_codes():
    codes = label_codes(["a>b", "B>A", "tie", "both_bad", PreferenceLabel.A, "a=b"])
    assert codes.tolist() == [1, -1, 0, 2, 1, 0]
    assert label_codes([0.3, -0.01, 0.0], eps=0.05).tolist() == [1, 0, 0]


def test_disentangle_ties_by_hand():
    dims = [
        [1, -1, 0],   # tied overall, dims disagree -> two samples
        [0, 0, 0],    # tied on every dim -> stays a tie
        [1, 1, -1],   # overall a>b (sum +1) -> unchanged
        [1, 0, 0],    # overall given as tie below, but no dim favours b -> stays a tie
        [-1, 1, 1],   # overall b>a given explicitly -> unchanged despite the sum
    ]
    out = disentangle_ties(dims, overall=["tie", "tie", "a>b", "tie", "b>a"])
    assert out.pair.tolist() == [0, 0, 1, 2, 3, 4]
    assert out.label.tolist() == ["a>b", "b>a", "tie", "a>b", "tie", "b>a"]
    assert out.disentangled.tolist() == [True, True, False, False, False, False]
    assert out.support[0].tolist() == [True, False, False]
    assert out.support[1].tolist() == [False, True, False]
    assert out.weight.tolist() == [1.0] * 6
    half = disentangle_ties(dims, overall=["tie", "tie", "a>b", "tie", "b>a"], tie_weight=0.5)
    assert half.weight.tolist() == [0.5, 0.5, 1, 1, 1, 1]
    # overall derived from the summed dimension votes: pair 4 (sum +1) is now a>b
    derived = disentangle_ties(dims)
    assert derived.label.tolist() == ["a>b", "b>a", "tie", "a>b", "a>b", "a>b"]
    # score margins with eps
    assert disentangle_ties([[0.5, -0.4]], eps=0.1).disentangled.tolist() == [True, True]
    assert disentangle_ties([[0.5, -0.04]], eps=0.1).label.tolist() == ["a>b"]


def test_disentangle_validation():
    with pytest.raises(MetricInputError, match="n_pairs, n_dims"):
        disentangle_ties([1, 0])
    with pytest.raises(MetricInputError, match="overall must have shape"):
        disentangle_ties([[1, -1]], overall=["tie", "tie"])
    with pytest.raises(MetricInputError, match="NaN"):
        disentangle_ties([[np.nan, 1]])


def _s(sid: str, group: str | None, **scores: float) -> EditSample:
    return EditSample(id=sid, edited=f"{sid}.png", group_id=group, scores=scores)


def test_preferences_from_samples():
    samples = [_s("a", "g", overall=3.0), _s("b", "g", overall=1.0), _s("c", "g", overall=3.05),
               _s("d", "h", overall=2.0), _s("e", "h", overall=4.0)]
    prefs = preferences_from_samples(samples, "overall", eps=0.1)
    assert [(p.a.id, p.b.id, p.label.value) for p in prefs] == [
        ("a", "b", "a>b"), ("a", "c", "tie"), ("b", "c", "b>a"), ("d", "e", "b>a")]
    assert prefs[0].dimension == "overall" and prefs[0].meta == {"group_id": "g", "score_gap": 2.0}
    mixed = [*samples, _s("f", "h", visual_quality=1.0)]
    with pytest.raises(MetricInputError, match=r"no 'overall' score, e\.g\. \['f'\]"):
        preferences_from_samples(mixed)
    assert len(preferences_from_samples(mixed, missing="skip")) == 4
    with pytest.raises(MetricInputError, match="no group_id"):
        preferences_from_samples([_s("x", None, overall=1.0)])
    assert preferences_from_samples([_s("x", "g", overall=1.0)], "PQ", missing="skip") == []
