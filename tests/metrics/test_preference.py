from __future__ import annotations

import numpy as np
import pytest

from ieqa.metrics import (
    MetricInputError,
    genai_bench_correct,
    pairwise_accuracy,
    pairwise_accuracy_genai,
    strict_accuracy,
    tie_aware_accuracy,
    tie_calibrated_accuracy,
    tie_calibrated_accuracy_optimistic,
)
from ieqa.prompts.answers import genai_bench_verdict as parse_verdict  # moved: one home


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[A>B]]", "A>B"),
        ("[[A>>B]]", "A>B"),
        ("[[B>A]]", "B>A"),
        ("[[B>>A]]", "B>A"),
        ("[[A=B=Good]]", "A=B=Good"),
        ("[[A=B=Bad]]", "A=B=Bad"),
        ("[[A=B]]", "A=B"),
        ("[[ a = b = good ]]", "A=B=Good"),
        ("Output A is sharper. Final verdict: [[A>B]]", "A>B"),
        ("First I thought [[B>A]] but on reflection [[A=B=Bad]].", "A=B=Bad"),
        ("[[A>B]] ... [[maybe]]", "A>B"),
        ("A is better than B", None),
        ("[A>B]", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_parse_verdict_rejects_non_text():
    with pytest.raises(TypeError, match="text"):
        parse_verdict(3)


def test_genai_accuracy_takes_read_verdicts_and_says_how_to_read_text():
    assert genai_bench_correct("leftvote", "A>B") and not genai_bench_correct("leftvote", None)
    with pytest.raises(MetricInputError, match="genai_bench_verdict"):
        genai_bench_correct("leftvote", "[[A>B]]")


def _genai_fixture():
    """50 items, 37 correct (74.00 %), with every tricky case counted by hand."""
    items = []
    # leftvote: 17 items, 12 correct
    items += [("leftvote", "[[A>B]]")] * 7
    items += [("leftvote", "I first said [[B>A]], final answer: [[A>B]]")]  # last verdict wins
    items += [("leftvote", "[[A>>B]]")] * 4
    items += [("leftvote", "[[B>A]]")] * 3
    items += [("leftvote", "[[A=B]]")] * 2
    # rightvote: 11 items, 8 correct
    items += [("rightvote", "[[B>A]]")] * 6
    items += [("rightvote", "[[B>>A]]")] * 2
    items += [("rightvote", "[[A>B]]")] * 2
    items += [("rightvote", None)]
    # tievote: 11 items, 8 correct ("[[A=B]]" counts for both tie kinds)
    items += [("tievote", "[[A=B=Good]]")] * 5
    items += [("tievote", "[[A=B]]")] * 3
    items += [("tievote", "[[A=B=Bad]]")] * 2
    items += [("tievote", "they look similar")]  # unparsed -> wrong
    # bothbad_vote: 11 items, 9 correct
    items += [("bothbad_vote", "[[A=B=Bad]]")] * 5
    items += [("bothbad_vote", "[[A=B]]")] * 4
    items += [("bothbad_vote", "[[A=B=Good]]")]
    items += [("bothbad_vote", None)]
    return items


def test_genai_bench_accuracy_exact():
    items = _genai_fixture()
    assert len(items) == 50
    human, model = zip(*items, strict=True)
    acc = pairwise_accuracy_genai(human, [parse_verdict(m) for m in model])  # read, then scored
    assert acc == 37 / 50
    assert f"{100 * acc:.2f}" == "74.00"


def test_genai_bench_correct_rules():
    assert genai_bench_correct("tievote", "A=B")
    assert genai_bench_correct("bothbad_vote", "A=B")
    assert not genai_bench_correct("tievote", "A=B=Bad")
    assert not genai_bench_correct("leftvote", None)
    assert genai_bench_correct("rightvote", parse_verdict("verdict: [[B>>A]]"))
    with pytest.raises(MetricInputError, match="human_vote"):
        genai_bench_correct("left", "A>B")
    with pytest.raises(MetricInputError, match="length mismatch"):
        pairwise_accuracy_genai(["leftvote"], [])
    with pytest.raises(MetricInputError, match="empty"):
        pairwise_accuracy_genai([], [])


# a - b deltas: 2, -1, 0, 1, 0, 4 ; labels 1, 1, -1, 0, 0, -1
A = [3, 1, 2, 2, 5, 4]
B = [1, 2, 2, 1, 5, 0]
LABEL = [1, 1, -1, 0, 0, -1]


@pytest.mark.parametrize(
    ("ties", "pred_ties", "expected"),
    [
        ("drop", "wrong", 1 / 4),  # only item 0 right among 4 decisive pairs
        ("drop", "half", 1.5 / 4),  # item 2 is a prediction tie
        ("half", "wrong", 2 / 6),  # + two human ties at 0.5
        ("wrong", "wrong", 1 / 6),
        ("wrong", "half", 1.5 / 6),
    ],
)
def test_pairwise_accuracy_tie_modes(ties, pred_ties, expected):
    assert pairwise_accuracy(A, B, LABEL, ties=ties, pred_ties=pred_ties) == pytest.approx(expected)


def test_pairwise_accuracy_lower_is_better_and_errors():
    assert pairwise_accuracy([1, 5], [2, 3], [1, -1], higher_better=False) == 1.0
    assert pairwise_accuracy([1, 5], [2, 3], [1, -1]) == 0.0
    with pytest.raises(MetricInputError, match="label values"):
        pairwise_accuracy([1], [2], [2])
    with pytest.raises(MetricInputError, match="no pairs"):
        pairwise_accuracy([1], [2], [0])
    with pytest.raises(MetricInputError, match="score_a has 1 NaN"):
        pairwise_accuracy([np.nan, 1], [2, 0], [1, 1])
    assert pairwise_accuracy([np.nan, 1], [2, 0], [1, 1], nan_policy="omit") == 1.0


DELTA_CAL = [0.05, -0.1, 0.3, -0.5, 0.02, 0.2]
LABEL_CAL = [0, 0, 1, -1, 0, -1]


def test_tie_calibrated_accuracy_hand_example():
    # eps = 0 -> 2/6 right; 0.02 -> 3; 0.05 -> 4; 0.1 -> 5; 0.2 -> 5 (smaller eps wins);
    # 0.3 -> 4; 0.5 -> 3.
    acc, eps = tie_calibrated_accuracy_optimistic(DELTA_CAL, LABEL_CAL)
    assert (acc, eps) == (pytest.approx(5 / 6), 0.1)
    delta_test = [0.1, -0.11, 0.0, 0.5, -0.09]
    label_test = [0, -1, 0, 1, 1]  # predictions with eps=0.1: 0, -1, 0, 1, 0
    acc, eps = tie_calibrated_accuracy(DELTA_CAL, LABEL_CAL, delta_test, label_test)
    assert eps == 0.1
    assert acc == pytest.approx(4 / 5)
    assert tie_aware_accuracy(delta_test, label_test, 0.1) == pytest.approx(4 / 5)
    assert tie_aware_accuracy(delta_test, label_test, 0.0) == pytest.approx(3 / 5)


def test_tie_calibration_matches_brute_force():
    rng = np.random.default_rng(0)
    delta = np.round(rng.normal(size=300), 2)
    label = np.where(np.abs(delta + rng.normal(0, 0.5, 300)) < 0.4, 0, np.sign(delta))
    label[rng.random(300) < 0.1] *= -1
    acc, eps = tie_calibrated_accuracy_optimistic(delta, label)
    candidates = np.unique(np.concatenate(([0.0], np.abs(delta))))
    brute = [tie_aware_accuracy(delta, label, e) for e in candidates]
    assert acc == pytest.approx(max(brute))
    assert eps == candidates[int(np.argmax(brute))]


def test_tie_calibration_errors():
    with pytest.raises(MetricInputError, match="delta_test has 1 NaN"):
        tie_calibrated_accuracy([0.1], [1], [np.nan], [1])
    with pytest.raises(MetricInputError, match="length mismatch"):
        tie_calibrated_accuracy_optimistic([0.1, 0.2], [1])
    with pytest.raises(MetricInputError, match="eps"):
        tie_aware_accuracy([0.1], [1], -1.0)


def test_strict_accuracy_ties_are_wrong_and_macro_average():
    s0, s1 = [2, 1, 3, 3], [1, 1, 4, 2]  # right, tie (wrong), wrong, right
    assert strict_accuracy(s0, s1) == 0.5
    assert strict_accuracy(s0, s1, task=["x", "x", "y", "y"]) == 0.5
    # task x: 1/1, task y: 1/3 -> macro (1 + 1/3) / 2; micro would be 2/4
    assert strict_accuracy(s0, s1, task=["x", "y", "y", "y"]) == pytest.approx(2 / 3)
    assert strict_accuracy(s0, s1, higher_better=False) == 0.25


def test_strict_accuracy_nan_policies():
    s0, s1 = [2, np.nan, 3], [1, 1, 4]
    with pytest.raises(MetricInputError, match="score_preferred has 1 NaN"):
        strict_accuracy(s0, s1)
    assert strict_accuracy(s0, s1, nan_policy="wrong") == pytest.approx(1 / 3)
    assert strict_accuracy(s0, s1, nan_policy="omit") == pytest.approx(1 / 2)
    assert strict_accuracy(s0, s1, nan_policy="omit", task=["a", "b", "a"]) == 0.5
    with pytest.raises(MetricInputError, match="length mismatch"):
        strict_accuracy([1, 2], [1, 2], task=["a"])
