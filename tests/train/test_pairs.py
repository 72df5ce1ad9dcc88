"""Preference pairs from pointwise-scored groups (EditHF pairs, EditReward tie splitting)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from ieqa.data.schema import EditSample
from ieqa.data.shapesedit.generator import ShapesEditConfig, iter_groups
from ieqa.errors import TrainDataError
from ieqa.train.pairs import TrainPair, build_pairs


@pytest.fixture(scope="module")
def samples() -> list[EditSample]:
    cfg = ShapesEditConfig(n=24, k=4, seed=5, size=64, photo_fraction=0.0)
    return [s for g in iter_groups(cfg) for s in g.samples]


def _s(sid: str, group: str | None, **scores: float) -> EditSample:
    return EditSample(id=sid, edited=np.zeros((2, 2, 3), np.uint8), group_id=group,
                      scores=scores)


@pytest.fixture
def tied() -> list[EditSample]:
    """One group where A, B, C tie overall; D is better overall than all three."""
    return [
        _s("A", "g", overall=3, instruction_alignment=4, visual_quality=2),
        _s("B", "g", overall=3, instruction_alignment=2, visual_quality=4),
        _s("C", "g", overall=3, instruction_alignment=4, visual_quality=2.5),
        _s("D", "g", overall=4.5, instruction_alignment=5, visual_quality=5),
        _s("E", "solo", overall=1, instruction_alignment=1, visual_quality=1),
    ]


def _rows(pairs: list[TrainPair]) -> list[tuple]:
    return [(p.a, p.b, p.label, p.gap, p.weight, p.split_tie) for p in pairs]


def test_shapesedit_pairs_cover_every_within_group_pair(samples):
    pairs = build_pairs(samples, "overall")
    assert len(pairs) == 6 * 6  # six groups of four: 4*3/2 pairs each
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)
    for p in pairs:
        sa, sb = samples[p.a], samples[p.b]
        assert p.a < p.b and sa.group_id == sb.group_id
        diff = sa.scores["overall"] - sb.scores["overall"]
        assert p.gap == pytest.approx(abs(diff))
        assert p.label == ("a>b" if diff > 0 else "b>a" if diff < 0 else "tie")
        assert p.winner == (p.a if diff > 0 else p.b if diff < 0 else None)
        if p.winner is not None:
            assert samples[p.winner].scores["overall"] > samples[p.loser].scores["overall"]
        assert p.weight == 1.0 and not p.split_tie
    # pairs come ordered by group, then a, then b
    keys = [(samples[p.a].group_id, p.a, p.b) for p in pairs]
    assert keys == sorted(keys)


def test_dimension_aliases_rank_on_that_dimension(samples):
    pairs = build_pairs(samples, "SC")
    for p in pairs:
        diff = (samples[p.a].scores["instruction_alignment"]
                - samples[p.b].scores["instruction_alignment"])
        assert p.label == ("a>b" if diff > 0 else "b>a" if diff < 0 else "tie")


def test_ties_kept_whole_without_disentanglement(tied):
    assert _rows(build_pairs(tied)) == [
        (0, 1, "tie", 0.0, 1.0, False),
        (0, 2, "tie", 0.0, 1.0, False),
        (0, 3, "b>a", 1.5, 1.0, False),
        (1, 2, "tie", 0.0, 1.0, False),
        (1, 3, "b>a", 1.5, 1.0, False),
        (2, 3, "b>a", 1.5, 1.0, False),
    ]
    labels = Counter(p.label for p in build_pairs(tied, keep_ties=False))
    assert labels == {"b>a": 3}


def test_disentangled_ties_become_two_opposite_pairs(tied):
    pairs = build_pairs(tied, disentangle_dimensions=["instruction_alignment", "VQ"])
    # A-B and B-C disagree across dimensions -> split; A-C only one side ahead -> tie
    assert _rows(pairs) == [
        (0, 1, "a>b", 0.0, 1.0, True),
        (0, 1, "b>a", 0.0, 1.0, True),
        (0, 2, "tie", 0.0, 1.0, False),
        (0, 3, "b>a", 1.5, 1.0, False),
        (1, 2, "a>b", 0.0, 1.0, True),
        (1, 2, "b>a", 0.0, 1.0, True),
        (1, 3, "b>a", 1.5, 1.0, False),
        (2, 3, "b>a", 1.5, 1.0, False),
    ]
    half = build_pairs(tied, disentangle_dimensions=["instruction_alignment", "visual_quality"],
                       tie_weight=0.5, keep_ties=False)
    assert [(p.a, p.b, p.label, p.weight) for p in half] == [
        (0, 1, "a>b", 0.5), (0, 1, "b>a", 0.5),
        (0, 3, "b>a", 1.0),
        (1, 2, "a>b", 0.5), (1, 2, "b>a", 0.5),
        (1, 3, "b>a", 1.0), (2, 3, "b>a", 1.0),
    ]
    # the split keeps the pair's total weight at 1 with tie_weight=0.5
    assert sum(p.weight for p in half if (p.a, p.b) == (0, 1)) == 1.0


def test_tie_eps_applies_to_ranking_and_listed_dimensions():
    group = [_s("a", "g", overall=3.0, instruction_alignment=3.0, visual_quality=3.04),
             _s("b", "g", overall=3.05, instruction_alignment=3.2, visual_quality=3.0)]
    assert [p.label for p in build_pairs(group)] == ["b>a"]
    assert [p.label for p in build_pairs(group, tie_eps=0.1)] == ["tie"]
    # within eps the visual-quality lead of `a` does not count: no disagreement, one tie
    out = build_pairs(group, tie_eps=0.1,
                      disentangle_dimensions=["instruction_alignment", "visual_quality"])
    assert [(p.label, p.split_tie) for p in out] == [("tie", False)]
    out = build_pairs(group, tie_eps=0.01,
                      disentangle_dimensions=["instruction_alignment", "visual_quality"])
    assert [p.label for p in out] == ["b>a"]  # not a tie at this eps


def test_empty_and_singleton_groups():
    assert build_pairs([]) == []
    assert build_pairs([_s("a", "g1", overall=1), _s("b", "g2", overall=2)]) == []


def test_errors_name_the_bad_samples(tied):
    with pytest.raises(TrainDataError, match=r"no group_id, e\.g\. \['x'\]"):
        build_pairs([*tied, _s("x", None, overall=2)])
    with pytest.raises(TrainDataError, match=r"no 'overall' score, e\.g\. \['y'\]"):
        build_pairs([*tied, _s("y", "g", visual_quality=2)])
    with pytest.raises(TrainDataError, match=r"needs 'content_preservation' scores.*\['A'"):
        build_pairs(tied, disentangle_dimensions=["content_preservation"])
    with pytest.raises(TrainDataError, match="not one string"):
        build_pairs(tied, disentangle_dimensions="visual_quality")
    with pytest.raises(TrainDataError, match="empty"):
        build_pairs(tied, disentangle_dimensions=[])
    for eps in (-0.1, float("nan"), True):
        with pytest.raises(TrainDataError, match="tie_eps"):
            build_pairs(tied, tie_eps=eps)
    for w in (0, -1.0, float("inf")):
        with pytest.raises(TrainDataError, match="tie_weight"):
            build_pairs(tied, tie_weight=w)


def test_train_pair_validation_and_immutability():
    p = TrainPair(3, 7, "b>a", 0.25)
    assert (p.winner, p.loser, p.weight, p.split_tie) == (7, 3, 1.0, False)
    assert TrainPair(1, 2, "tie", 0.0).winner is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.label = "a>b"  # type: ignore[misc]
    for kwargs, match in (({"label": "both-bad"}, "label"), ({"b": 3}, "different"),
                          ({"gap": -1.0}, "gap"), ({"weight": 0.0}, "weight")):
        with pytest.raises(TrainDataError, match=match):
            TrainPair(**{"a": 3, "b": 7, "label": "a>b", "gap": 0.5, **kwargs})
