"""LocalRewarder and the preference probability, against independent references."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ieqa.rewards import LocalRewarder, RewardRule, compare_group, p_better
from ieqa.rewards.schema import ItemResult
from ieqa.scorers.base import Scorer, ScoreResult


def _expected_sigmoid(delta, sigma):
    """E[sigmoid(z)], z ~ N(delta, sigma²), by scipy's quadrature over z (independent of
    p_better's integration over the standard normal)."""
    f = lambda z: stats.norm.pdf(z, delta, sigma) * 0.5 * (1 + math.tanh(z / 2))  # noqa: E731
    return integrate.quad(f, delta - 30 * sigma, delta + 30 * sigma, points=[0.0], limit=400)[0]


@pytest.mark.parametrize("delta, sigma", [(0.123, math.sqrt(3.48)), (2.0, 0.5), (-1.0, 3.0),
                                          (10.0, 20.0), (0.0, 7.0)])
def test_p_better_with_sigma_is_the_expected_sigmoid(delta, sigma):
    assert p_better(delta, sigma) == pytest.approx(_expected_sigmoid(delta, sigma), abs=1e-9)


def test_p_better_known_values():
    # the uncertainty-loss audit case: E[sigmoid] = exp(-0.655096) for N(0.123, 3.48)
    assert p_better(0.123, math.sqrt(3.48)) == pytest.approx(math.exp(-0.655096), abs=1e-6)
    assert p_better(0.0, 5.0) == pytest.approx(0.5, abs=1e-12)  # symmetry
    assert p_better(3.0) == pytest.approx(1 / (1 + math.exp(-3.0)))  # Bradley-Terry
    assert p_better(2.0, 0.5) + p_better(-2.0, 0.5) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match=">= 0"):
        p_better(1.0, -1.0)


def _item(i, reward):
    return ItemResult(id=str(i), reward=reward, overall=reward)


def test_compare_group_matrix_ranking_and_ties_by_hand():
    items = [_item(0, 1.0), _item(1, 3.0), _item(2, None), _item(3, 1.05)]
    g = compare_group("g", items, [None] * 4, tie_threshold=0.1)
    s = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert g.preference[1][0] == pytest.approx(s(2.0)) and g.preference[0][1] == pytest.approx(s(-2.0))
    assert g.preference[0][0] == 0.5 and g.preference[2] == [None] * 4
    assert all(row[2] is None for row in g.preference)
    assert g.ranking == [1, 3, 0]  # the failed candidate is left out
    assert g.ties == [[0, 3]]
    with_sigma = compare_group("g", items[:2], [1.0, 2.0])
    assert with_sigma.preference[1][0] == pytest.approx(_expected_sigmoid(2.0, math.sqrt(5)), abs=1e-9)


class _Fixed(Scorer):
    """Scores each edit by its mean grey level (1-5), sigma 0.5 per dimension."""

    def __init__(self):
        from ieqa.scorers.base import ScorerInfo
        self.info = ScorerInfo(name="fixed", description="test", kind="no-reference",
                               dimensions=("visual_quality", "instruction_alignment"),
                               higher_better=True, needs_source=False, factory="x:y",
                               score_range=(1, 5))
        self.kwargs = {}

    def score_sample(self, sample):
        grey = float(np.asarray(sample.edited).mean()) / 255
        dims = {"visual_quality": 1 + 4 * grey, "instruction_alignment": 1 + 4 * grey}
        return ScoreResult(id=sample.id, scores=dims, sigma={d: 0.5 for d in dims})


def _grey(level, size=48):
    img = np.full((size, size, 3), level, np.uint8)
    img[::7, :] = 255 - level  # stripes, so no image is blank
    return img


def test_local_rewarder_scores_and_rewards_with_the_rule():
    source = _grey(100)
    rewarder = LocalRewarder(_Fixed(), RewardRule("mean", uncertainty_penalty=1.0))
    resp = rewarder.score([(source, _grey(200), "brighten"), {"source": source, "edited": "/no/such.png"}])
    ok, bad = resp.results
    assert resp.n_ok == 1 and resp.n_failed == 1 and bad.error and bad.reward is None
    mean_vq = ok.scores["visual_quality"]
    # mean of two equal scores; sigma = sqrt(0.25 + 0.25) / 2; reward = mu - 1·sigma
    assert ok.overall == pytest.approx(mean_vq)
    assert ok.reward == pytest.approx(mean_vq - math.sqrt(0.5) / 2)
    assert resp.reward_rule["uncertainty_penalty"] == 1.0 and resp.scorer == "fixed"
    only = rewarder.score([(source, _grey(200), "x")], dimensions=["PQ"])
    assert set(only.results[0].scores) == {"visual_quality"} and only.results[0].reward == ok.reward


def test_local_rewarder_compare_uses_sigma_and_ranks_candidates():
    source = _grey(100)
    rewarder = LocalRewarder(_Fixed(), "mean", tie_threshold=0.01)
    resp = rewarder.compare([{"id": "g1", "source": source, "instruction": "brighten",
                              "candidates": [_grey(50), _grey(200), _grey(120)]}])
    g = resp.results[0]
    assert g.id == "g1" and [c.id for c in g.candidates] == ["g1/0", "g1/1", "g1/2"]
    assert g.ranking == [1, 2, 0] and g.ties == []
    r = [c.reward for c in g.candidates]
    # each reward has sigma sqrt(0.5)/2; the difference has sqrt(2)·that = 0.5
    assert g.preference[1][0] == pytest.approx(_expected_sigmoid(r[1] - r[0], 0.5), abs=1e-9)
    assert g.preference[1][0] + g.preference[0][1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2"):
        rewarder.compare([{"source": source, "candidates": [_grey(1)]}])


def test_local_rewarder_with_classic_floors_a_blank_candidate():
    source = _grey(100)
    edited = source.copy()
    edited[10:20, 10:20] = 30
    rewarder = LocalRewarder("classic", RewardRule("mean", floor=0.0))
    resp = rewarder.compare([{"source": source, "instruction": "darken a patch",
                              "candidates": [edited, np.zeros_like(source)]}])
    g = resp.results[0]
    assert g.candidates[1].flags == ["blank"] and g.candidates[1].floored and g.candidates[1].reward == 0.0
    assert g.ranking == [0, 1]
    assert rewarder.rule.describe()["floor"] == 0.0


def test_exact_reward_ties_rank_by_sigma_then_position_everywhere():
    from ieqa.curate import order_key as curate_key
    from ieqa.rewards.rule import order_key

    items = [_item(0, 2.0), _item(1, 2.0), _item(2, 2.0), _item(3, 1.0)]
    g = compare_group("g", items, [0.5, 0.1, None, 0.0])
    assert g.ranking == [1, 0, 2, 3]  # equal rewards: lower sigma first, unknown sigma last
    assert compare_group("g", items, [None] * 4).ranking == [0, 1, 2, 3]
    assert curate_key is order_key  # curation picks by the same order
