from __future__ import annotations

import math

import pytest

from ieqa.metrics import MetricInputError, ntire_score


def test_ntire_score_hand_example():
    pred_in = {"visual_quality": [1, 2, 3, 4], "instruction_alignment": [1, 2, 2, 3]}
    target_in = {"visual_quality": [2, 4, 6, 8], "instruction_alignment": [1, 2, 3, 4]}
    pred_out = {"visual_quality": [1, 2, 3, 4]}
    target_out = {"visual_quality": [1, 3, 2, 4]}
    res = ntire_score(pred_in, target_in, pred_out, target_out)
    # in: VQ perfect (1, 1); IA: SRCC = PLCC = 3/sqrt(10) -> S_in = (1 + 3/sqrt(10)) / 2
    # out: SRCC = PLCC = 0.8 -> S_out = 0.8 ; final = 0.7 S_in + 0.3 S_out
    s_in = (1 + 3 / math.sqrt(10)) / 2
    assert res["s_in"] == pytest.approx(s_in)
    assert res["s_out"] == pytest.approx(0.8)
    assert res["final"] == pytest.approx(0.7 * s_in + 0.24)
    assert res["final"] == pytest.approx(0.9220391, abs=1e-7)
    assert res["in"]["instruction_alignment"]["srcc"] == pytest.approx(3 / math.sqrt(10))
    assert res["out"]["visual_quality"] == pytest.approx({"srcc": 0.8, "plcc": 0.8, "score": 0.8})
    assert res["plcc_fit"] == "none"


def test_ntire_score_dimension_mismatch_and_weight():
    with pytest.raises(MetricInputError, match="same dimensions"):
        ntire_score({"a": [1, 2, 3]}, {"b": [1, 2, 3]}, {"a": [1, 2, 3]}, {"a": [1, 2, 3]})
    with pytest.raises(MetricInputError, match="no dimensions"):
        ntire_score({}, {}, {"a": [1, 2, 3]}, {"a": [1, 2, 3]})
    with pytest.raises(MetricInputError, match="weight_in"):
        ntire_score({"a": [1, 2]}, {"a": [1, 2]}, {"a": [1, 2]}, {"a": [1, 2]}, weight_in=2)


def test_ntire_score_with_fitted_plcc():
    x = [0, 1, 2, 3, 4, 5, 6, 7]
    y = [0.1, 0.2, 0.5, 2.0, 8.0, 9.5, 9.8, 9.9]
    raw = ntire_score({"o": x}, {"o": y}, {"o": x}, {"o": y})
    fitted = ntire_score({"o": x}, {"o": y}, {"o": x}, {"o": y}, plcc_fit="logistic4")
    assert fitted["final"] > raw["final"]
    assert fitted["in"]["o"]["srcc"] == raw["in"]["o"]["srcc"] == 1.0
