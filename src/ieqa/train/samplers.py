"""Per-epoch orders of training items: plain shuffle, EditHF curriculum, ReasonEdit strata.

Every function returns a list of item indices for one epoch and is a pure function of its
inputs and ``(seed, epoch)``: the same pair gives the same order on any machine, another
epoch gives another order. The random generator is ``numpy.random.default_rng([seed,
epoch])`` (``seed`` and ``epoch`` are integers >= 0), so resuming a run at epoch ``e``
replays exactly the order it would have had. A framework sampler (e.g. a
``torch.utils.data.Sampler`` whose ``set_epoch`` stores the epoch) only has to call one of
these and iterate over the result.

* :func:`shuffled_order` — a permutation of all items (the default).
* :func:`curriculum_order` — EditHF (002) §4.2: pairs with larger rank/score gaps first.
* :func:`stratified_order` — ReasonEdit (004) appendix C.3: caps on how often one source
  image and one source-edited pair appear per epoch.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from ieqa.errors import TrainDataError
from ieqa.metrics.checks import as_float_array

__all__ = ["curriculum_order", "gap_stages", "shuffled_order", "stratified_order"]


def _count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise TrainDataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([_count(seed, "seed", 0), _count(epoch, "epoch", 0)])


def shuffled_order(n: int, *, epoch: int, seed: int) -> list[int]:
    """A permutation of ``range(n)`` for ``epoch`` (``n`` >= 0 items), seeded by
    ``(seed, epoch)``: the default sampler."""
    n = _count(n, "n", 0)
    return _rng(seed, epoch).permutation(n).tolist()


def gap_stages(gaps: Sequence[float], stages: int = 3) -> list[int]:
    """Curriculum stage of each item: 0 holds the largest gaps, ``stages - 1`` the smallest.

    Each gap's quantile is its mid-point ECDF ``P = (#smaller + 0.5 * #equal) / n`` in
    (0, 1); the stage counted from the smallest gaps is ``floor(P * stages)``. Buckets are
    thus equal quantile ranges: with distinct gaps they hold about ``n / stages`` items each,
    equal gaps always share a stage, and a stage may be empty when many gaps are equal
    (all-equal gaps land in one stage). Gaps are in any units (score or rank
    differences), finite.
    """
    stages = _count(stages, "stages", 1)
    g = as_float_array(gaps, "gaps", what="(a sequence of numbers)", error=TrainDataError)
    if not np.isfinite(g).all():
        raise TrainDataError(f"gaps has {int((~np.isfinite(g)).sum())} NaN/infinite values")
    if g.size == 0:
        return []
    ordered = np.sort(g)
    mid = (np.searchsorted(ordered, g, "left") + np.searchsorted(ordered, g, "right")) / 2
    up = np.minimum(np.floor(mid / g.size * stages).astype(np.int64), stages - 1)
    return (stages - 1 - up).tolist()


def curriculum_order(gaps: Sequence[float], *, epoch: int, seed: int,
                     stages: int = 3) -> list[int]:
    """EditHF curriculum (002 §4.2): pairs with larger gaps first, coarse to fine.

    ``gaps[i]`` is the rank or score gap of pair ``i`` (e.g. :attr:`TrainPair.gap
    <ieqa.train.pairs.TrainPair>`; larger = easier to tell apart). The pairs are split
    into ``stages`` buckets by gap quantile (:func:`gap_stages`); the epoch visits the
    bucket of the largest gaps first and the smallest last, each bucket shuffled with the
    generator of ``(seed, epoch)``. The paper states only the large-to-small order; the
    number of buckets and the shuffling inside them are ieqa's choices (``stages=1`` is a
    plain shuffle). Applied every epoch; to run the curriculum only at first, switch to
    :func:`shuffled_order` for later epochs.
    """
    stage = np.asarray(gap_stages(gaps, stages), dtype=np.int64)
    rng = _rng(seed, epoch)
    order: list[int] = []
    for s in range(stages):
        order.extend(rng.permutation(np.flatnonzero(stage == s)).tolist())
    return order


def stratified_order(
    source_ids: Sequence[Hashable],
    pair_ids: Sequence[Hashable],
    *,
    epoch: int,
    seed: int,
    max_pairs_per_source: int = 6,
    max_texts_per_pair: int = 3,
) -> list[int]:
    """ReasonEdit dynamic stratified sampling (004 appendix C.3) for one epoch.

    Item ``i`` is one text (a candidate critique) about the source-edited pair
    ``pair_ids[i]``, whose source image is ``source_ids[i]``. Many critiques share few
    sources, so a plain shuffle would show the same source image over and over. Each epoch
    keeps, for every source, at most ``max_pairs_per_source`` of its distinct pairs (6 in
    the paper) and, for every kept pair, at most ``max_texts_per_pair`` of its items (3),
    choosing which ones uniformly at random with the generator of ``(seed, epoch)``; the
    kept items are then shuffled. Different epochs keep different subsets, so every item
    is seen over enough epochs (the paper reports all 113K seen at least once in 9).
    For a deterministic evaluation order, use a fixed epoch (e.g. 0).

    Raises :class:`~ieqa.errors.TrainDataError` for sequences of different lengths,
    caps below 1, and a pair id listed under two sources.
    """
    if isinstance(source_ids, str) or isinstance(pair_ids, str):
        raise TrainDataError("source_ids and pair_ids must be sequences of ids, not one string")
    if len(source_ids) != len(pair_ids):
        raise TrainDataError(f"source_ids and pair_ids must have the same length, got "
                             f"{len(source_ids)} and {len(pair_ids)}")
    max_pairs = _count(max_pairs_per_source, "max_pairs_per_source", 1)
    max_texts = _count(max_texts_per_pair, "max_texts_per_pair", 1)
    rng = _rng(seed, epoch)
    # source -> pair -> item indices, in order of first appearance (deterministic)
    tree: dict[Hashable, dict[Hashable, list[int]]] = {}
    owner: dict[Hashable, Hashable] = {}
    for i, (src, pair) in enumerate(zip(source_ids, pair_ids, strict=True)):
        if owner.setdefault(pair, src) != src:
            raise TrainDataError(f"pair {pair!r} is listed under two sources ({owner[pair]!r} "
                                 f"and {src!r}); a pair belongs to one source image")
        tree.setdefault(src, {}).setdefault(pair, []).append(i)
    kept: list[int] = []
    for pairs in tree.values():
        groups = list(pairs.values())
        if len(groups) > max_pairs:
            groups = [groups[j] for j in sorted(rng.choice(len(groups), max_pairs, replace=False))]
        for items in groups:
            if len(items) > max_texts:
                items = [items[j] for j in sorted(rng.choice(len(items), max_texts,
                                                             replace=False))]
            kept.extend(items)
    return [kept[j] for j in rng.permutation(len(kept))]
