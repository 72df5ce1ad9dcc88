"""Metrics computed inside groups (edits sharing one source and instruction), vectorised.

* :func:`grouped_srcc` — SRCC inside each group, then averaged (EditHF's group SRCC).
* :func:`grouped_pair_accuracy` — fraction of within-group pairs ordered as humans did.
* :func:`multiway_accuracy` / :func:`full_ranking_accuracy` — a K-candidate group is
  right only if all its K(K-1)/2 relations are right (EditReward-Bench K=2/3/4).
* :func:`strict_ranking_accuracy_released` — EditReward's released strict ranking
  accuracy (its Table 2), position tie-breaks and all, for reproducing published numbers.

Nothing loops over groups in Python. Every sort is one ``np.sort`` of packed int64 keys
(group code, dense value codes and, where an order is needed, the item index, packed into
one integer when they fit; ``np.lexsort``/``np.argsort`` otherwise), which is several
times faster than ``np.argsort``: groups are laid out contiguously by it, average ranks
come from one sort on (group, value), tie counts from run lengths of sorted keys,
per-group sums from ``np.bincount``, and concordant pairs from ``(k, k, g)`` broadcasts
batched by group size (groups larger than ``_BROADCAST_MAX_SIZE`` use an O(k log k)
Kendall count instead). 1M edits in 44K groups (29M pairs) take 0.15-0.2 s each
on 2 cores (benchmarks/metrics_scale.py).

Grouped functions return a :class:`GroupedResult`: ``value`` (also ``float(result)``),
how many groups contributed and how many were skipped, and the per-group values.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats

from ieqa.metrics.checks import (
    MetricInputError,
    as_1d,
    as_1d_float,
    check_choice,
    check_same_length,
    finite_mask,
)
from ieqa.metrics.correlation import fisher_z_mean, tanh_of_mean

_BROADCAST_MAX_SIZE = 2048  # larger groups: O(k log k) Kendall counting, one at a time
_MAX_CELLS = 1 << 22  # k*k cells per broadcast chunk (~16 MB of float32 per array)


class GroupedResult(NamedTuple):
    """A grouped metric: ``value`` averaged over the ``n_groups`` groups that could be
    scored; ``n_skipped`` groups could not (too small, constant, no untied pair);
    ``per_group[i]`` belongs to ``group_ids[i]`` (sorted distinct ids), NaN when skipped."""

    value: float
    n_groups: int
    n_skipped: int
    per_group: np.ndarray
    group_ids: np.ndarray

    def __float__(self) -> float:
        return self.value


class _Layout(NamedTuple):
    codes: np.ndarray  # group code of each item (0..G-1, in sorted id order)
    order: np.ndarray  # item indices sorted by group
    starts: np.ndarray  # first position of each group in ``order``
    sizes: np.ndarray  # items per group
    ids: np.ndarray  # distinct group ids, sorted


class _GroupCodes(NamedTuple):
    """Order-preserving int64 codes of group ids: ``codes`` in [0, ``span``); a code
    decodes to ``offset + code`` (integer ids) or ``distinct[code]`` (any other ids)."""

    codes: np.ndarray
    span: int
    offset: object
    distinct: np.ndarray | None
    dtype: np.dtype

    def decode(self, codes: np.ndarray) -> np.ndarray:
        if self.distinct is not None:
            return self.distinct[codes]
        return (self.offset + codes.astype(np.asarray(self.offset).dtype)).astype(self.dtype)


def _group_codes(group_ids: np.ndarray) -> _GroupCodes:
    """Integer ids whose range is at most about twice their count are their own codes
    (shifted to start at 0; unused codes are fine); other ids are numbered by
    ``np.unique`` (one sort)."""
    g, dtype = group_ids, group_ids.dtype
    if g.dtype.kind in "iu" and len(g):
        if g.dtype.itemsize < 8:
            g = g.astype(np.int64)
        lo, hi = g.min(), g.max()
        span = int(hi) - int(lo) + 1
        if span <= 2 * len(g) + 1024:
            return _GroupCodes((g - lo).astype(np.int64), span, lo, None, dtype)
    distinct, codes = np.unique(g, return_inverse=True)
    return _GroupCodes(codes.reshape(-1).astype(np.int64), len(distinct), None, distinct,
                       dtype)


def _argsort_bounded(key: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, key[order])`` for non-negative integer keys below ``bound``: a stable
    argsort. When ``bound * len(key)`` fits in int64 the item index is packed under the
    key and one ``np.sort`` does it (several times faster than ``np.argsort``)."""
    n = len(key)
    if float(bound) * n < 2.0**63:
        packed = key.astype(np.int64) * n + np.arange(n, dtype=np.int64)
        packed.sort()
        return packed % n, packed // n
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _run_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """True where any of the equally long ``sorted_keys`` differs from the item before
    (and at the first item)."""
    new = np.ones(len(sorted_keys[0]), dtype=bool)
    if len(new) > 1:
        new[1:] = sorted_keys[0][1:] != sorted_keys[0][:-1]
        for k in sorted_keys[1:]:
            new[1:] |= k[1:] != k[:-1]
    return new


def _layout(group_ids: np.ndarray) -> _Layout:
    gc = _group_codes(group_ids)
    order, sorted_codes = _argsort_bounded(gc.codes, gc.span)
    new = _run_starts(sorted_codes)
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(order)))
    codes = np.empty(len(order), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return _Layout(codes, order, starts, sizes, gc.decode(sorted_codes[starts]))


def _prepare(
    pred: object,
    target: object,
    group_ids: object,
    *,
    nan_policy: str,
    higher_better: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(pred, target, group_ids)``, NaN rows dropped under ``"omit"``, pred
    negated when lower is better."""
    p = as_1d_float(pred, "pred")
    t = as_1d_float(target, "target")
    g = as_1d(group_ids, "group_ids")
    check_same_length({"pred": p, "target": t, "group_ids": g})
    if len(p) == 0:
        raise MetricInputError("pred is empty")
    keep = finite_mask({"pred": p, "target": t}, nan_policy)
    if keep is not None:
        p, t, g = p[keep], t[keep], g[keep]
        if len(p) == 0:
            raise MetricInputError("no items left after dropping NaN pairs")
    return (p if higher_better else -p), t, g


def _size_batches(sizes: np.ndarray, min_size: int = 2) -> Iterator[tuple[int, np.ndarray]]:
    """``(k, group_codes)`` for every group size k in [min_size, _BROADCAST_MAX_SIZE],
    split so that each batch holds at most ``_MAX_CELLS`` k*k cells."""
    by_size = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[by_size]
    for k in np.unique(sorted_sizes):
        if k < min_size or k > _BROADCAST_MAX_SIZE:
            continue
        lo, hi = np.searchsorted(sorted_sizes, [k, k + 1])
        step = max(1, _MAX_CELLS // int(k * k))
        for s in range(lo, hi, step):
            yield int(k), by_size[s : min(s + step, hi)]


def _block(values_sorted: np.ndarray, starts: np.ndarray, k: int, codes: np.ndarray):
    """``(g, k)`` matrix of the groups ``codes`` (all of size k) from group-sorted values."""
    return values_sorted[starts[codes][:, None] + np.arange(k)]


# ------------------------------------------------------------------------- group SRCC


def _centred_group_ranks(dense: np.ndarray, gc: _GroupCodes, sizes: np.ndarray) -> np.ndarray:
    """Average ranks (ties share their mean) inside each group, minus the group's mean
    rank (k+1)/2 — ready for a per-group Pearson of ranks. ``dense`` holds order-preserving
    integer codes of the values (:func:`_dense_ranks`), so one integer sort on
    (group, value) does it; ``sizes[c]`` is the number of items with group code c."""
    n = len(dense)
    radix = int(dense.max()) + 1
    order, ks = _argsort_bounded(gc.codes * radix + dense, gc.span * radix)
    cs = ks // radix
    new_run = _run_starts(ks)
    run_first = np.flatnonzero(new_run)
    run_last = np.append(run_first[1:], n) - 1
    code_first = np.cumsum(sizes) - sizes  # groups are contiguous in sorted order
    avg_rank = (run_first + run_last) / 2.0 - code_first[cs[run_first]] + 1.0
    rank_sorted = np.repeat(avg_rank, run_last - run_first + 1)
    out = np.empty(n)
    out[order] = rank_sorted - (sizes[cs] + 1) / 2.0
    return out


def grouped_srcc(
    pred: object,
    target: object,
    group_ids: object,
    *,
    min_size: int = 2,
    average: Literal["mean", "fisher_z", "tanh_of_mean"] = "mean",
    higher_better: bool = True,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> GroupedResult:
    """SRCC inside each group (as :func:`scipy.stats.spearmanr`, average ranks for ties),
    averaged over groups: ``"mean"`` (arithmetic, as EditHF reports), ``"fisher_z"``
    (:func:`fisher_z_mean`; note that groups of 2 always give ±1, which Fisher z weighs
    heavily) or ``"tanh_of_mean"`` (:func:`tanh_of_mean`, ``tanh(mean r)`` without the
    arctanh: only to reproduce EditReward's / VIEScore's published numbers). Groups smaller than ``min_size`` (>= 2) or with constant pred or target are
    skipped and counted in ``n_skipped``. ``nan_policy="omit"`` drops items with a NaN
    before grouping. Value in [-1, 1].
    """
    check_choice(average, "average", ("mean", "fisher_z", "tanh_of_mean"))
    if min_size < 2:
        raise MetricInputError(f"min_size must be >= 2, got {min_size}")
    p, t, g = _prepare(
        pred, target, group_ids, nan_policy=nan_policy, higher_better=higher_better
    )
    gc = _group_codes(g)
    code_sizes = np.bincount(gc.codes, minlength=gc.span)
    rp = _centred_group_ranks(_dense_ranks(p), gc, code_sizes)
    rt = _centred_group_ranks(_dense_ranks(t), gc, code_sizes)
    present = np.flatnonzero(code_sizes)  # integer ids may leave codes unused
    sxy = np.bincount(gc.codes, weights=rp * rt, minlength=gc.span)[present]
    sxx = np.bincount(gc.codes, weights=rp * rp, minlength=gc.span)[present]
    syy = np.bincount(gc.codes, weights=rt * rt, minlength=gc.span)[present]
    ok = (code_sizes[present] >= min_size) & (sxx > 0) & (syy > 0)
    per_group = np.full(len(present), np.nan)
    per_group[ok] = np.clip(sxy[ok] / np.sqrt(sxx[ok] * syy[ok]), -1.0, 1.0)
    return _summarise(per_group, ok, gc.decode(present), average, "grouped_srcc")


def _summarise(per_group, ok, ids, average, what) -> GroupedResult:
    n_ok = int(ok.sum())
    if n_ok == 0:
        raise MetricInputError(
            f"{what}: no group could be scored ({len(ok)} groups, all too small or constant)"
        )
    vals = per_group[ok]
    averages = {"fisher_z": fisher_z_mean, "tanh_of_mean": tanh_of_mean}
    value = averages[average](vals) if average in averages else float(vals.mean())
    return GroupedResult(value, n_ok, len(ok) - n_ok, per_group, ids)


# ----------------------------------------------------------------- group pair accuracy


class _Groups(NamedTuple):
    """Groups laid out contiguously: group i holds positions ``starts[i]`` to
    ``starts[i] + sizes[i]``; ``ids`` are the distinct group ids, sorted."""

    starts: np.ndarray
    sizes: np.ndarray
    ids: np.ndarray


def _concordant_broadcast(ps: np.ndarray, ts: np.ndarray, grp: _Groups, conc: np.ndarray) -> None:
    """Fill ``conc[g]`` with the concordant pairs of each group of at most
    ``_BROADCAST_MAX_SIZE`` items: ordered pairs with ``p_i > p_j`` and ``t_i > t_j`` (each
    concordant unordered pair is exactly one such ordered pair). ``ps`` and ``ts`` are dense
    integer codes laid out group by group, compared as int32 when they fit. A batch of g groups
    of size k is compared as a ``(k, k, g)`` block when g >= k (the group axis innermost:
    long contiguous loops) and as ``(g, k, k)`` otherwise."""
    if max(int(ps.max(initial=0)), int(ts.max(initial=0))) < 2**31:
        ps, ts = ps.astype(np.int32), ts.astype(np.int32)

    def batch(k: int, codes: np.ndarray) -> None:
        bp, bt = _block(ps, grp.starts, k, codes), _block(ts, grp.starts, k, codes)
        g = len(codes)
        if g >= k:
            bp, bt = np.ascontiguousarray(bp.T), np.ascontiguousarray(bt.T)
            both = bp[:, None, :] > bp[None, :, :]
            both &= bt[:, None, :] > bt[None, :, :]
            conc[codes] = np.add.reduce(both.reshape(k * k, g), axis=0, dtype=np.int64)
        else:
            both = bp[:, :, None] > bp[:, None, :]
            both &= bt[:, :, None] > bt[:, None, :]
            conc[codes] = both.view(np.uint8).reshape(g, -1).sum(axis=1, dtype=np.int64)

    batches = list(_size_batches(grp.sizes))
    if len(batches) < 8:
        for k, codes in batches:
            batch(k, codes)
        return
    # numpy releases the GIL in these element-wise passes: use the machine's cores
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        list(pool.map(lambda kc: batch(*kc), batches))


def _pairs_in_runs(new_run: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group, the pairs inside runs of equal keys in a group-sorted sequence:
    ``new_run[i]`` is True where a run starts; every group start ``starts[g]`` must start
    a run (runs never cross a group boundary)."""
    first = np.flatnonzero(new_run)
    length = np.diff(np.append(first, len(new_run)))
    return np.add.reduceat(length * (length - 1) // 2, np.searchsorted(first, starts))


def _sort_codes_and(gc: _GroupCodes, *dense: np.ndarray) -> list[np.ndarray]:
    """``[codes, *dense]`` reordered by (group code, dense[0], dense[1], ...). One
    ``np.sort`` of a packed key when they fit in int64, ``np.lexsort`` otherwise."""
    radices = [int(d.max(initial=0)) + 1 for d in dense]
    if gc.span * float(np.prod(radices, dtype=float)) < 2.0**62:
        key = gc.codes.copy()
        for d, r in zip(dense, radices, strict=True):
            key *= r
            key += d
        key.sort()
        out = []
        for r in reversed(radices):
            key, value = np.divmod(key, r)
            out.append(value)
        return [key, *out[::-1]]
    order = np.lexsort((*dense[::-1], gc.codes))
    return [gc.codes[order], *(d[order] for d in dense)]


def _tied_pairs(*arrays: np.ndarray) -> int:
    """Pairs tied in every one of ``arrays`` at once."""
    _, c = np.unique(np.stack(arrays, axis=1), axis=0, return_counts=True)
    return int((c * (c - 1) // 2).sum())


def _pair_counts_kendall(p: np.ndarray, t: np.ndarray) -> tuple[int, int, int]:
    """(concordant, pred-tied, untied-target) pairs of one large group in O(k log k),
    from tau-b: C - D = tau_b * sqrt((N - Xties) (N - Yties))."""
    k = len(p)
    total = k * (k - 1) // 2
    x_ties, y_ties, joint = _tied_pairs(p), _tied_pairs(t), _tied_pairs(p, t)
    valid = total - y_ties
    pred_tied = x_ties - joint
    if valid == 0 or x_ties == total:
        return 0, pred_tied, valid
    tau = stats.kendalltau(p, t, variant="b").statistic
    c_minus_d = round(float(tau) * np.sqrt(float(total - x_ties) * float(valid)))
    c_plus_d = valid - pred_tied
    return (c_plus_d + c_minus_d) // 2, pred_tied, valid


def _pair_counts(p: np.ndarray, t: np.ndarray, group_ids: np.ndarray
                 ) -> tuple[np.ndarray, _Groups]:
    """``(concordant, pred-tied, untied-target)`` pairs per group (rows of a (3, G) array)
    from order-preserving integer codes ``p`` and ``t`` (:func:`_dense_ranks`), and the
    groups they belong to.

    One sort by (group, t, p) lays the groups out and gives the target ties (runs of
    equal t), the joint ties (runs of equal (t, p)) and the group-contiguous values the
    concordance count broadcasts over; a second sort by (group, p) gives the prediction
    ties, only when some predictions tie."""
    gc = _group_codes(group_ids)
    cs, ts, ps = _sort_codes_and(gc, t, p)
    group_start = _run_starts(cs)
    starts = np.flatnonzero(group_start)
    grp = _Groups(starts, np.diff(np.append(starts, len(cs))), gc.decode(cs[starts]))
    total = grp.sizes * (grp.sizes - 1) // 2
    counts = np.zeros((3, len(starts)), dtype=np.int64)
    t_runs = _run_starts(ts) | group_start
    counts[2] = total - _pairs_in_runs(t_runs, starts)
    if len(p) and int(p.max()) - int(p.min()) + 1 < len(p):  # dense ranks: some predictions tie
        cs2, p_only = _sort_codes_and(gc, p)
        joint = _pairs_in_runs(t_runs | _run_starts(ps), starts)
        counts[1] = _pairs_in_runs(_run_starts(cs2, p_only), starts) - joint
    _concordant_broadcast(ps, ts, grp, counts[0])
    for g in np.flatnonzero(grp.sizes > _BROADCAST_MAX_SIZE):
        sl = slice(grp.starts[g], grp.starts[g] + grp.sizes[g])
        counts[:, g] = _pair_counts_kendall(ps[sl], ts[sl])
    return counts, grp


def _dense_ranks(x: np.ndarray) -> np.ndarray:
    """Order-preserving integer codes of ``x`` (exact in float32 up to 2**24 values)."""
    return np.unique(x, return_inverse=True)[1].reshape(-1)


def grouped_pair_accuracy(
    pred: object,
    target: object,
    group_ids: object,
    *,
    pred_ties: Literal["wrong", "half"] = "wrong",
    average: Literal["pairs", "groups"] = "pairs",
    higher_better: bool = True,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> GroupedResult:
    """Fraction in [0, 1] of within-group pairs with ``target_i != target_j`` whose order
    ``pred`` reproduces (``sign(pred_i - pred_j) == sign(target_i - target_j)``, as EditHF
    counts). Pairs tied in ``target`` are left out; a ``pred`` tie on an untied pair counts
    0 (``pred_ties="wrong"``, default) or 0.5 (``"half"``). ``average="pairs"`` pools all
    pairs (big groups weigh more); ``"groups"`` averages per-group accuracies. Groups
    without an untied pair are skipped (``n_skipped``).
    """
    check_choice(pred_ties, "pred_ties", ("wrong", "half"))
    check_choice(average, "average", ("pairs", "groups"))
    p, t, g = _prepare(
        pred, target, group_ids, nan_policy=nan_policy, higher_better=higher_better
    )
    (conc, tied, valid), grp = _pair_counts(_dense_ranks(p), _dense_ranks(t), g)
    credit = conc + (0.5 * tied if pred_ties == "half" else 0.0)
    ok = valid > 0
    per_group = np.full(len(valid), np.nan)
    per_group[ok] = credit[ok] / valid[ok]
    if not ok.any():
        raise MetricInputError("grouped_pair_accuracy: no group has a pair with distinct targets")
    if average == "groups":
        return _summarise(per_group, ok, grp.ids, "mean", "grouped_pair_accuracy")
    value = float(credit[ok].sum() / valid[ok].sum())
    return GroupedResult(value, int(ok.sum()), int((~ok).sum()), per_group, grp.ids)


def grouped_pair_counts(
    pred: object, target: object, group_ids: object, *, higher_better: bool = True
) -> dict[str, int]:
    """Total within-group pair counts: ``pairs`` (all), ``untied`` (distinct targets),
    ``concordant`` and ``pred_tied`` (of the untied ones). NaN raises."""
    p, t, g = _prepare(pred, target, group_ids, nan_policy="raise", higher_better=higher_better)
    (conc, tied, valid), grp = _pair_counts(_dense_ranks(p), _dense_ranks(t), g)
    pairs = int((grp.sizes * (grp.sizes - 1) // 2).sum())
    return {
        "pairs": pairs,
        "untied": int(valid.sum()),
        "concordant": int(conc.sum()),
        "pred_tied": int(tied.sum()),
    }


# ---------------------------------------------------------------- multi-way accuracy


def _all_pairs_right(scores, group_ids, true_ranks, eps, higher_better, nan_policy,
                     rule) -> GroupedResult:
    """The fraction of groups whose every pair relation is right (per group 1.0 or 0.0,
    NaN for K < 2) under ``rule``: ``"multiway_accuracy"`` (a model tie is
    ``|delta| <= eps``), ``"full_ranking_accuracy"`` (human ties free) or
    ``"strict_ranking_accuracy_released"`` (EditReward's released rule); the rule names the
    public function in errors."""
    if not eps >= 0:
        raise MetricInputError(f"eps must be >= 0, got {eps!r}")
    check_choice(nan_policy, "nan_policy", ("raise", "wrong"))
    s = as_1d_float(scores, "scores")
    r = as_1d_float(true_ranks, "true_ranks")
    g = as_1d(group_ids, "group_ids")
    check_same_length({"scores": s, "group_ids": g, "true_ranks": r})
    if len(s) == 0:
        raise MetricInputError("scores is empty")
    finite_mask(
        {"scores": s, "true_ranks": r} if nan_policy == "raise" else {"true_ranks": r}, "raise"
    )
    if np.isinf(s).any():
        raise MetricInputError(f"scores has {int(np.isinf(s).sum())} infinite values")
    if not higher_better:
        s = -s
    lay = _layout(g)
    if (lay.sizes > _BROADCAST_MAX_SIZE).any():
        raise MetricInputError(
            f"multi-way groups of more than {_BROADCAST_MAX_SIZE} candidates are not supported"
        )
    ss, rs = s[lay.order], r[lay.order]
    per_group = np.full(len(lay.sizes), np.nan)
    for k, codes in _size_batches(lay.sizes, min_size=2):
        bs, br = _block(ss, lay.starts, k, codes), _block(rs, lay.starts, k, codes)
        ds = bs[:, :, None] - bs[:, None, :]  # > 0: i scored above j
        dr = br[:, None, :] - br[:, :, None]  # > 0: humans rank i above j (rank 1 = best)
        with np.errstate(invalid="ignore"):
            if rule == "strict_ranking_accuracy_released":  # i listed first: a tie puts j first
                tie_ok = np.abs(ds) <= eps if k == 2 else False
                ok = np.where(dr > 0, ds > 0, np.where(dr < 0, ds <= 0, tie_ok))
                ok |= ~np.triu(np.ones((k, k), dtype=bool), 1)
            else:
                tie_ok = True if rule == "full_ranking_accuracy" else np.abs(ds) <= eps
                ok = np.where(dr > 0, ds > eps, np.where(dr < 0, ds < -eps, tie_ok))
        per_group[codes] = ok.all(axis=(1, 2))
    has_nan = np.bincount(lay.codes, weights=np.isnan(s), minlength=len(lay.sizes)) > 0
    per_group[has_nan & (lay.sizes >= 2)] = 0.0  # nan_policy="wrong"
    return _summarise(per_group, ~np.isnan(per_group), lay.ids, "mean", rule)


def multiway_accuracy(
    scores: object,
    group_ids: object,
    true_ranks: object,
    *,
    eps: float = 0.0,
    higher_better: bool = True,
    nan_policy: Literal["raise", "wrong"] = "raise",
) -> GroupedResult:
    """Fraction in [0, 1] of K-candidate groups (K >= 2) whose every pair relation the
    scores get right — EditReward-Bench's all-or-nothing multi-way accuracy.

    ``true_ranks``: 1 = best; equal ranks are a human tie. A pair with distinct ranks is
    right when the better-ranked candidate scores more than ``eps`` higher; a human tie is
    right only when ``|score difference| <= eps`` (``eps=0``: an exact tie). Groups of one
    candidate are skipped. ``nan_policy="wrong"`` makes a group with a NaN score wrong.
    """
    return _all_pairs_right(scores, group_ids, true_ranks, eps, higher_better, nan_policy,
                            "multiway_accuracy")


def full_ranking_accuracy(
    scores: object,
    group_ids: object,
    true_ranks: object,
    *,
    higher_better: bool = True,
    nan_policy: Literal["raise", "wrong"] = "raise",
) -> GroupedResult:
    """Fraction in [0, 1] of groups whose full human ranking the scores reproduce:
    every pair with distinct ``true_ranks`` strictly ordered right (a score tie there is
    wrong); human ties put no constraint (any order of tied candidates is fine). Equals
    :func:`multiway_accuracy` on groups without human ties."""
    return _all_pairs_right(scores, group_ids, true_ranks, 0.0, higher_better, nan_policy,
                            "full_ranking_accuracy")


def strict_ranking_accuracy_released(
    scores: object,
    group_ids: object,
    true_ranks: object,
    *,
    tie_eps: float = 0.0,
    higher_better: bool = True,
    nan_policy: Literal["raise", "wrong"] = "raise",
) -> GroupedResult:
    """EditReward-Bench's "strict ranking accuracy" as TIGER-AI-Lab/EditReward's released
    ``evaluate/eval_bench.py`` (``evaluate_edit_reward_bench``) computes it, for
    reproducing its Table 2: a fraction in [0, 1] of groups judged right.

    * A group of two that humans tie is right when ``|score difference| <= tie_eps`` (the
      released code passes the epsilon it fitted on the K=2 test pairs themselves, see
      :func:`tie_calibrated_accuracy_optimistic`).
    * Any other group is right when the candidates sorted by score, highest first, are
      exactly the human ranking. An exact score tie is ordered as the released
      ``np.argsort(scores)[::-1]`` orders it with numpy's stable small-array sort: the
      candidate listed later comes first. So a decided pair is right for the candidate
      listed first only when it scores strictly higher; ``tie_eps`` plays no part here.
    * A group of three or more with a human tie is wrong (the released code has no
      ranking to compare it with).

    Candidates are taken in the order they are listed (``group_ids`` need not be
    contiguous; the order within a group is kept), e.g. letters A, B, C, D. This differs
    from :func:`multiway_accuracy`, where a model tie is ``|delta| <= eps`` everywhere and
    is never broken by position.
    """
    return _all_pairs_right(scores, group_ids, true_ranks, tie_eps, higher_better, nan_policy,
                            "strict_ranking_accuracy_released")


def multiway_accuracy_by_k(
    scores: object,
    group_ids: object,
    true_ranks: object,
    *,
    eps: float = 0.0,
    higher_better: bool = True,
    nan_policy: Literal["raise", "wrong"] = "raise",
) -> dict[int, float]:
    """:func:`multiway_accuracy` split by group size: ``{K: accuracy}`` for each K >= 2."""
    res = multiway_accuracy(
        scores, group_ids, true_ranks, eps=eps, higher_better=higher_better, nan_policy=nan_policy
    )
    sizes = np.unique(as_1d(group_ids, "group_ids"), return_counts=True)[1]
    out = {}
    for k in np.unique(sizes[sizes >= 2]):
        out[int(k)] = float(res.per_group[sizes == k].mean())
    return out
