"""Combining dimensions has one implementation (ieqa.data.combine) for scores, training
heads (torch) and preference pairs (numpy): checked against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ieqa.errors import IeqaError
from ieqa.scorers.overall import combine_dimensions, overall_score

ROWS = [[1.0, 4.0, 2.5], [5.0, 3.0, 1.0]]
BY_HAND = {"mean": [2.5, 3.0], "sum": [7.5, 9.0], "min": [1.0, 1.0]}


@pytest.mark.parametrize("rule", ["mean", "sum", "min"])
def test_numpy_and_torch_agree_with_the_hand_values(rule: str) -> None:
    assert combine_dimensions(np.array(ROWS), rule).tolist() == BY_HAND[rule]
    assert combine_dimensions(torch.tensor(ROWS), rule).tolist() == BY_HAND[rule]
    scores = dict(zip(("visual_quality", "instruction_alignment", "content_preservation"),
                      ROWS[0], strict=True))
    assert overall_score(scores, rule) == BY_HAND[rule][0]


def test_one_dimension_passes_through_and_a_gradient_flows() -> None:
    head = torch.tensor([[2.0], [3.0]], requires_grad=True)
    out = combine_dimensions(head, "min")
    assert out.tolist() == [2.0, 3.0]
    out.sum().backward()
    assert head.grad.tolist() == [[1.0], [1.0]]


def test_an_unknown_rule_is_refused_with_the_known_ones() -> None:
    with pytest.raises(IeqaError, match="mean, sum, min"):
        combine_dimensions(np.array(ROWS), "median")


def test_the_weights_and_the_viescore_formula_are_defined_once() -> None:
    """Issue 42: 0.3/0.4/0.3 and sqrt(SC·PQ) each have one home (ieqa.data.combine); the
    places that used their own copies now take them from it."""
    import re
    import tokenize
    from pathlib import Path

    import ieqa
    from ieqa.bench.leaderboard import EDITHF_WEIGHTS
    from ieqa.data.combine import RE_REWARD_WEIGHTS, REASONEDIT_WEIGHTS, viescore, viescore_sigma
    from ieqa.data.shapesedit.truth import OVERALL_WEIGHTS
    from ieqa.scorers.published import re_reward, reasonedit

    assert EDITHF_WEIGHTS is REASONEDIT_WEIGHTS and OVERALL_WEIGHTS is REASONEDIT_WEIGHTS
    assert reasonedit.WEIGHTS == (0.3, 0.4, 0.3) and re_reward.WEIGHTS == (0.3, 0.4, 0.3)
    assert tuple(RE_REWARD_WEIGHTS) == re_reward.DIMENSIONS
    def code(path: Path) -> str:  # the file without its strings and comments
        with path.open("rb") as fh:
            return " ".join(t.string for t in tokenize.tokenize(fh.readline)
                            if t.type not in (tokenize.STRING, tokenize.COMMENT))

    files = {p.name: code(p) for p in Path(ieqa.__file__).parent.rglob("*.py")}
    weights = sorted(n for n, text in files.items()
                     if re.search(r"0\.3\s*,\s*0\.4\s*,\s*0\.3", text))
    sqrt = sorted(n for n, text in files.items()
                  for a, b in re.findall(r"sqrt\s*\(\s*(\w+)\s*\*\s*(\w+)\s*\)", text)
                  if (a, b) != ("rows", "cols"))  # fr.py's FFT normalisation
    assert weights == ["combine.py"] and sqrt == ["combine.py"], (weights, sqrt)
    assert viescore(4.0, 9.0) == 6.0 and math.isnan(viescore(-1.0, 9.0))
    # delta method: d/dSC = PQ / (2 O) = 0.75, d/dPQ = SC / (2 O) = 1/3
    assert viescore_sigma(4.0, 9.0, 1.0, 0.0) == pytest.approx(0.75)
    assert viescore_sigma(4.0, 9.0, 0.0, 1.0) == pytest.approx(1 / 3)
    assert viescore_sigma(0.0, 9.0, 1.0, 1.0) is None


def test_one_syntax_and_one_normalisation_give_one_number_everywhere() -> None:
    """The same weights, written 1/3/1 in either form, give one overall in the reward rule,
    the leaderboard's resolve_weights and the combination module: 0.2/0.6/0.2 of the
    scores (by hand: 0.2*2 + 0.6*4 + 0.2*5 = 3.8); a negative term is used as written."""
    from ieqa.bench.leaderboard import resolve_weights
    from ieqa.data.combine import normalise_weights, parse_weights, weighted_sum
    from ieqa.rewards import RewardRule
    from ieqa.scorers.base import ScoreResult

    scores = {"visual_quality": 2.0, "instruction_alignment": 4.0, "content_preservation": 5.0}
    text = "1*PQ + 3*SC + 1*content_preservation"
    pairs = "visual_quality=1, instruction_alignment=3, content_preservation=1"
    assert parse_weights(text) == parse_weights(pairs) == {
        "visual_quality": 1.0, "instruction_alignment": 3.0, "content_preservation": 1.0}
    weights = normalise_weights(parse_weights(text))
    assert weights == pytest.approx({"visual_quality": 0.2, "instruction_alignment": 0.6,
                                     "content_preservation": 0.2})
    assert resolve_weights(pairs, scores) == pytest.approx(weights)
    assert resolve_weights(text, scores) == pytest.approx(weights)
    reward = RewardRule(text)(ScoreResult(id="e", scores=scores)).reward
    assert reward == pytest.approx(3.8) == pytest.approx(weighted_sum(scores, weights))
    signed = RewardRule("SC - 0.5*content_preservation")
    assert signed.weights == {"instruction_alignment": 1.0, "content_preservation": -0.5}
    assert signed(ScoreResult(id="e", scores=scores)).reward == pytest.approx(1.5)
    with pytest.raises(IeqaError, match="sum to 0"):
        normalise_weights({"visual_quality": 0.0})
