"""Per-epoch orders: deterministic from (seed, epoch), caps and curriculum honoured."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ieqa.data.shapesedit.generator import ShapesEditConfig, iter_groups
from ieqa.errors import TrainDataError
from ieqa.train.pairs import build_pairs
from ieqa.train.samplers import curriculum_order, gap_stages, shuffled_order, stratified_order


# ---------------------------------------------------------------------------- shuffle
def test_shuffled_order_is_a_seeded_permutation():
    a = shuffled_order(50, epoch=0, seed=1)
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert shuffled_order(50, epoch=0, seed=1) == a
    assert shuffled_order(50, epoch=1, seed=1) != a
    assert shuffled_order(50, epoch=0, seed=2) != a
    assert shuffled_order(0, epoch=3, seed=1) == []
    assert shuffled_order(1, epoch=3, seed=1) == [0]


@pytest.mark.parametrize("kw, match", [
    ({"n": -1, "epoch": 0, "seed": 0}, "n must be"),
    ({"n": 3, "epoch": -1, "seed": 0}, "epoch must be"),
    ({"n": 3, "epoch": 0, "seed": -5}, "seed must be"),
    ({"n": 3, "epoch": 1.5, "seed": 0}, "epoch must be"),
    ({"n": True, "epoch": 0, "seed": 0}, "n must be"),
])
def test_shuffled_order_errors(kw, match):
    with pytest.raises(TrainDataError, match=match):
        shuffled_order(**kw)


# ------------------------------------------------------------------------- curriculum
def test_gap_stages_cut_at_quantiles():
    assert gap_stages([0, 1, 2, 3, 4, 5], 3) == [2, 2, 1, 1, 0, 0]
    assert gap_stages([5, 0, 3, 1, 4, 2], 2) == [0, 1, 0, 1, 0, 1]
    assert gap_stages([0.7] * 5, 3) == [1] * 5  # equal gaps share one stage
    assert gap_stages([1, 1, 1, 9], 2) == [1, 1, 1, 0]
    assert gap_stages([1, 9, 9, 9], 2) == [1, 0, 0, 0]
    # mid-point ECDF: 0 -> 1/8, 1 -> 7/16, 2 -> 3/4, 3 -> 15/16; stage 1 stays empty
    assert gap_stages([2, 2, 0, 0, 1, 1, 1, 3], 4) == [0, 0, 3, 3, 2, 2, 2, 0]
    assert gap_stages([3, 1], 1) == [0, 0]
    assert gap_stages([], 3) == []


@pytest.mark.parametrize("gaps, stages, match", [
    ([1.0, float("nan")], 3, "NaN"),
    ([[1.0, 2.0]], 3, "1-D"),
    ([1.0], 0, "stages must be"),
    (["big", "small"], 3, "must be numeric"),
])
def test_gap_stages_errors(gaps, stages, match):
    with pytest.raises(TrainDataError, match=match):
        gap_stages(gaps, stages)


@pytest.fixture(scope="module")
def pair_gaps() -> list[float]:
    cfg = ShapesEditConfig(n=40, k=4, seed=2, size=64, photo_fraction=0.0)
    samples = [s for g in iter_groups(cfg) for s in g.samples]
    gaps = [p.gap for p in build_pairs(samples, "overall")]
    assert len(gaps) == 60
    return gaps


def test_curriculum_puts_large_gaps_first(pair_gaps):
    order = curriculum_order(pair_gaps, epoch=0, seed=7, stages=3)
    assert sorted(order) == list(range(len(pair_gaps)))
    stage = gap_stages(pair_gaps, 3)
    visited = [stage[i] for i in order]
    assert visited == sorted(visited)  # stage 0 (largest gaps) first, then 1, then 2
    thirds = np.array_split(np.asarray(pair_gaps)[order], 3)
    assert thirds[0].mean() > thirds[1].mean() > thirds[2].mean()
    assert thirds[0].min() >= thirds[2].max()
    # shuffled inside each stage: not simply sorted by gap
    assert [pair_gaps[i] for i in order] != sorted(pair_gaps, reverse=True)


def test_curriculum_is_deterministic_per_epoch(pair_gaps):
    first = curriculum_order(pair_gaps, epoch=4, seed=3)
    assert curriculum_order(pair_gaps, epoch=4, seed=3) == first
    other = curriculum_order(pair_gaps, epoch=5, seed=3)
    assert other != first
    stage = gap_stages(pair_gaps, 3)
    assert [stage[i] for i in other] == [stage[i] for i in first]  # same stage layout
    assert curriculum_order(pair_gaps, epoch=4, seed=4) != first


def test_curriculum_with_one_stage_is_a_shuffle(pair_gaps):
    order = curriculum_order(pair_gaps, epoch=0, seed=0, stages=1)
    assert sorted(order) == list(range(len(pair_gaps)))
    assert curriculum_order([], epoch=0, seed=0) == []


# ------------------------------------------------------------------------- stratified
def _items() -> tuple[list[str], list[str]]:
    """s0: 10 pairs x 5 texts; s1: 2 pairs x 1 text; s2: 7 pairs x 2 texts (interleaved)."""
    rows = [("s0", f"s0p{p}") for p in range(10) for _ in range(5)]
    rows += [("s1", f"s1p{p}") for p in range(2)]
    rows += [("s2", f"s2p{p}") for p in range(7) for _ in range(2)]
    order = np.random.default_rng(0).permutation(len(rows))
    rows = [rows[i] for i in order]
    return [r[0] for r in rows], [r[1] for r in rows]


def test_stratified_caps_hold_every_epoch():
    sources, pairs = _items()
    for epoch in range(20):
        order = stratified_order(sources, pairs, epoch=epoch, seed=1)
        assert len(order) == len(set(order)) == 6 * 3 + 2 * 1 + 6 * 2
        per_source = Counter()
        per_pair = Counter(pairs[i] for i in order)
        for p in per_pair:
            per_source[p[:2]] += 1
        assert per_source == {"s0": 6, "s1": 2, "s2": 6}
        assert max(per_pair.values()) <= 3
        assert all(per_pair[f"s1p{p}"] == 1 for p in range(2))  # small sources kept whole
        assert all(per_pair[p] == 2 for p in per_pair if p.startswith("s2"))
        assert order != sorted(order)  # shuffled, not in input order


def test_stratified_custom_caps():
    sources, pairs = _items()
    order = stratified_order(sources, pairs, epoch=0, seed=0, max_pairs_per_source=2,
                             max_texts_per_pair=1)
    per_pair = Counter(pairs[i] for i in order)
    assert len(per_pair) == 2 + 2 + 2 and set(per_pair.values()) == {1}
    big = stratified_order(sources, pairs, epoch=0, seed=0, max_pairs_per_source=100,
                           max_texts_per_pair=100)
    assert sorted(big) == list(range(len(sources)))


def test_stratified_is_deterministic_and_varies_across_epochs():
    sources, pairs = _items()
    first = stratified_order(sources, pairs, epoch=2, seed=9)
    assert stratified_order(sources, pairs, epoch=2, seed=9) == first
    assert set(stratified_order(sources, pairs, epoch=3, seed=9)) != set(first)
    assert set(stratified_order(sources, pairs, epoch=2, seed=10)) != set(first)


def test_stratified_covers_every_item_and_samples_uniformly():
    sources, pairs = _items()
    seen = Counter()
    for epoch in range(200):
        seen.update(stratified_order(sources, pairs, epoch=epoch, seed=0))
    assert set(seen) == set(range(len(sources)))
    first50 = set()
    for epoch in range(50):
        first50.update(stratified_order(sources, pairs, epoch=epoch, seed=0))
    assert first50 == set(range(len(sources)))
    # an s0 item is kept with probability 6/10 * 3/5 = 0.36 per epoch
    rate = np.array([seen[i] for i, s in enumerate(sources) if s == "s0"]) / 200
    assert abs(rate.mean() - 0.36) < 1e-9  # exactly 18 of 50 s0 items each epoch
    assert 0.22 < rate.min() and rate.max() < 0.50


def test_stratified_accepts_non_string_ids():
    order = stratified_order([1, 1, 2], [(1, "a"), (1, "b"), (2, "a")], epoch=0, seed=0,
                             max_pairs_per_source=1)
    assert len(order) == 2 and 2 in order


@pytest.mark.parametrize("args, kw, match", [
    ((["s"], ["p", "q"]), {}, "same length"),
    ((["s"], ["p"]), {"max_pairs_per_source": 0}, "max_pairs_per_source must be"),
    ((["s"], ["p"]), {"max_texts_per_pair": 0}, "max_texts_per_pair must be"),
    ((["s"], ["p"]), {"max_texts_per_pair": 2.5}, "max_texts_per_pair must be"),
    ((["s", "t"], ["p", "p"]), {}, "two sources"),
    (("st", ["p", "q"]), {}, "not one string"),
    ((["s"], ["p"]), {"epoch": -1}, "epoch must be"),
])
def test_stratified_errors(args, kw, match):
    with pytest.raises(TrainDataError, match=match):
        stratified_order(*args, **{"epoch": 0, "seed": 0, **kw})


def test_empty_stratified():
    assert stratified_order([], [], epoch=0, seed=0) == []
