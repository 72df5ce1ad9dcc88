"""Combining dimensions has one implementation (ieqa.scorers.overall) for scores, training
heads (torch) and preference pairs (numpy): checked against values worked out by hand."""

from __future__ import annotations

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
