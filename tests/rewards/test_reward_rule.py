"""RewardRule: every combination, the uncertainty penalty and the floor, by hand."""

import math

import pytest

from ieqa.rewards.rule import REWARD_RULES, RewardRule, RewardRuleError
from ieqa.scorers.base import ScoreResult

VQ, IA, CP = "visual_quality", "instruction_alignment", "content_preservation"


def result(scores, sigma=None, flags=(), error=None, id="e1"):
    if error is not None:
        return ScoreResult.failed(id, error)
    return ScoreResult(id=id, scores=scores, sigma=sigma or {}, flags=list(flags))


def test_weighted_expression_value_and_independent_sigma_by_hand():
    rule = RewardRule("0.5*SC + 0.25*visual_quality - 1e-1*content_preservation")
    assert rule.weights == {IA: 0.5, VQ: 0.25, CP: -0.1}
    r = rule(result({IA: 4, VQ: 2, CP: 1}, sigma={IA: 1, VQ: 2, CP: 3}))
    # 0.5*4 + 0.25*2 - 0.1*1 = 2.4; sigma = sqrt(0.5²·1 + 0.25²·4 + 0.1²·9) = sqrt(0.59)
    assert r.overall == pytest.approx(2.4) and r.reward == pytest.approx(2.4)
    assert r.sigma == pytest.approx(math.sqrt(0.59))
    assert rule.formula() == ("0.5*instruction_alignment + 0.25*visual_quality - "
                              "0.1*content_preservation")


def test_named_rules_by_hand():
    s = {VQ: 1.0, IA: 2.0, CP: 3.0, "overall": 7.0}
    assert RewardRule("reasonedit")(result(s)).reward == pytest.approx(0.3 + 0.8 + 0.9)
    assert RewardRule("overall")(result(s)).reward == 7.0
    assert RewardRule("mean")(result(s)).reward == pytest.approx(2.0)  # overall left out
    assert RewardRule("min")(result(s)).reward == 1.0
    assert RewardRule("viescore")(result({IA: 4.0, VQ: 9.0})).reward == pytest.approx(6.0)
    assert RewardRule("editscore")(result(s)).reward == pytest.approx(0.7)  # overall / 10
    assert RewardRule("editreward")(result(s)).reward == 7.0  # the fused mu
    assert RewardRule("editscore")(result(s, {"overall": 2.0})).sigma == pytest.approx(0.2)
    assert RewardRule("editscore")(result({VQ: 1.0})).error.startswith("reward rule: the scorer "
                                                                    "reports no 'overall'")
    assert set(REWARD_RULES) == {"overall", "reasonedit", "viescore", "min", "mean",
                                 "editscore", "editreward"}


def test_sigma_of_each_named_rule_by_hand():
    sig = {VQ: 3.0, IA: 4.0, CP: 12.0}
    s = {VQ: 1.0, IA: 2.0, CP: 3.0}
    # mean: sqrt(9 + 16 + 144) / 3 = 13 / 3
    assert RewardRule("mean")(result(s, sig)).sigma == pytest.approx(13 / 3)
    # min: the sigma of the lowest dimension (visual quality)
    assert RewardRule("min")(result(s, sig)).sigma == 3.0
    # viescore at SC=4, PQ=9 (mu=6): sqrt((9/12·1)² + (4/12·2)²) = sqrt(0.5625 + 0.4444...)
    v = RewardRule("viescore")(result({IA: 4.0, VQ: 9.0}, {IA: 1.0, VQ: 2.0}))
    assert v.sigma == pytest.approx(math.sqrt(0.5625 + 4 / 9))
    # a weighted rule needs sigma for every weighted dimension, else it has none
    assert RewardRule("reasonedit")(result(s, {VQ: 1.0})).sigma is None


def test_uncertainty_penalty_subtracts_lambda_sigma_and_refuses_a_scorer_without_sigma():
    rule = RewardRule("mean", uncertainty_penalty=0.5)
    r = rule(result({VQ: 2.0, IA: 4.0}, {VQ: 3.0, IA: 4.0}))
    # mu = 3, sigma = sqrt(9 + 16) / 2 = 2.5, reward = 3 - 0.5·2.5
    assert r.overall == 3.0 and r.reward == pytest.approx(1.75)
    no_sigma = rule(result({VQ: 2.0, IA: 4.0}))
    assert no_sigma.reward is None and "sigma" in no_sigma.error and no_sigma.overall == 3.0


def test_floor_replaces_the_reward_of_flagged_outputs_only():
    rule = RewardRule("mean", floor=-1.0)
    assert rule(result({VQ: 4.0}, flags=["blank"])).reward == -1.0
    assert rule(result({VQ: 4.0}, flags=["blank"])).floored is True
    assert rule(result({VQ: 4.0})).reward == 4.0
    only_blank = RewardRule("mean", floor=0.0, floor_flags=["blank"])
    r = only_blank(result({VQ: 4.0}, flags=["no_op"]))
    assert r.reward == 4.0 and not r.floored and r.flags == ("no_op",)
    # no floor: the flag is reported, the reward kept
    r = RewardRule("mean")(result({VQ: 4.0}, flags=["tiny"]))
    assert r.reward == 4.0 and r.flags == ("tiny",)


def test_a_failed_item_has_no_reward_and_keeps_its_error():
    r = RewardRule("mean")(result({}, error="ImageDecodeError: not an image"))
    assert r.reward is None and r.overall is None and r.error == "ImageDecodeError: not an image"


def test_missing_dimensions_are_item_errors_that_say_what_to_do():
    r = RewardRule("overall")(result({VQ: 1.0, CP: 2.0}))
    assert r.reward is None and "'mean' or 'reasonedit'" in r.error
    r = RewardRule("reasonedit")(result({VQ: 1.0, CP: 2.0}))
    assert r.reward is None and "instruction_alignment" in r.error
    r = RewardRule("viescore")(result({IA: -1.0, VQ: 2.0}))
    assert r.reward is None and "non-negative" in r.error


@pytest.mark.parametrize("bad, match", [
    ("", "empty reward rule"),
    ("0.3 visual_quality", r"\[weight\*\]dimension"),
    ("2*", "cannot read"),
    ("visual_quality visual_quality", "cannot read"),
    ("sharpness", "unknown dimension 'sharpness'"),
])
def test_bad_rules_are_refused_with_the_accepted_forms(bad, match):
    with pytest.raises(RewardRuleError, match=match):
        RewardRule(bad)


def test_bad_options_are_refused():
    with pytest.raises(RewardRuleError, match=">= 0"):
        RewardRule("mean", uncertainty_penalty=-1)
    with pytest.raises(RewardRuleError, match="finite"):
        RewardRule("mean", floor=float("nan"))
    with pytest.raises(RewardRuleError, match="unknown flag"):
        RewardRule("mean", floor=0, floor_flags=["dark"])


def test_describe_is_what_the_service_reports():
    d = RewardRule("reasonedit", uncertainty_penalty=0.25, floor=0.0, floor_flags=["blank"]).describe()
    assert d == {"rule": "reasonedit", "weights": {VQ: 0.3, IA: 0.4, CP: 0.3},
                 "formula": "(0.3*visual_quality + 0.4*instruction_alignment + 0.3*content_preservation)"
                            " - 0.25*sigma; 0 when flagged blank",
                 "uncertainty_penalty": 0.25, "floor": 0.0, "floor_flags": ["blank"]}
