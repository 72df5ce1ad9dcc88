"""Group rankings to preference pairs, win counts, and EditReward's tie disentanglement.

Pairs are index arrays into the caller's items: ``(a, b, label)`` with ``label`` one of
the :class:`~ieqa.data.schema.PreferenceLabel` values ``"a>b"``, ``"b>a"``, ``"tie"``
(and ``"both-bad"`` where a dataset has it). Functions that take labels accept those
strings (and the aliases :class:`~ieqa.data.schema.Preference` accepts), the enum
members, or numbers: ``+1`` = a>b, ``-1`` = b>a, ``0`` = tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample, Preference, PreferenceLabel
from ieqa.metrics.checks import MetricInputError, as_1d, as_1d_float, check_same_length

__all__ = [
    "DisentangledPairs",
    "RankPairs",
    "disentangle_ties",
    "label_codes",
    "preferences_from_samples",
    "ranking_to_pairs",
    "win_count_scores",
]

A_WINS, B_WINS, TIE, BOTH_BAD = 1, -1, 0, 2
_CODE_TO_LABEL = {A_WINS: "a>b", B_WINS: "b>a", TIE: "tie", BOTH_BAD: "both-bad"}
_ALIASES = {"a": "a>b", "b": "b>a", "=": "tie", "a=b": "tie", "both_bad": "both-bad",
            "bothbad": "both-bad"}
_STR_TO_CODE = {"a>b": A_WINS, "b>a": B_WINS, "tie": TIE, "both-bad": BOTH_BAD}


class RankPairs(NamedTuple):
    """All within-group pairs: ``a < b`` are item indices (input positions), ``label``
    the verdict (``"a>b"``, ``"b>a"``, ``"tie"``), ``gap`` = ``|rank_a - rank_b|``
    (EditHF trains on large gaps first), ``group`` the group id of each pair."""

    a: np.ndarray
    b: np.ndarray
    label: np.ndarray
    gap: np.ndarray
    group: np.ndarray


class DisentangledPairs(NamedTuple):
    """Training pairs after tie disentanglement, one row per output sample.

    ``pair``: index of the input pair; ``label``: ``"a>b"`` / ``"b>a"`` / ``"tie"`` /
    ``"both-bad"``; ``weight``: sample weight; ``disentangled``: the row is one of the two
    samples made from a tie; ``support``: ``(n_out, n_dims)`` the dimensions that back the
    row's label (for a tie left as tie: the tied dimensions).
    """

    pair: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    disentangled: np.ndarray
    support: np.ndarray


def label_codes(label: object, name: str = "label", *, eps: float = 0.0) -> np.ndarray:
    """Preference labels as integer codes: +1 a>b, -1 b>a, 0 tie, 2 both-bad.

    Strings/enum members are parsed (unknown ones raise naming them); numbers are read
    as signed margins ``score_a - score_b`` (or ±1/0): ``|x| <= eps`` is a tie. Any shape.
    """
    arr = np.asarray(label, dtype=object)
    flat = arr.ravel().tolist()
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
           for v in flat):
        x = np.asarray(flat, dtype=np.float64)
        if np.isnan(x).any():
            raise MetricInputError(f"{name} has {int(np.isnan(x).sum())} NaN values")
        codes = np.where(np.abs(x) <= eps, TIE, np.sign(x)).astype(np.int64)
        return codes.reshape(arr.shape)
    out = np.empty(len(flat), dtype=np.int64)
    bad: list[object] = []
    for i, v in enumerate(flat):
        text = v.value if isinstance(v, PreferenceLabel) else str(v).strip().lower()
        code = _STR_TO_CODE.get(_ALIASES.get(text, text))
        if code is None:
            bad.append(v)
            code = 0
        out[i] = code
    if bad:
        raise MetricInputError(
            f"{name} has unknown labels {sorted({str(b) for b in bad})[:5]}; "
            "use 'a>b', 'b>a', 'tie', 'both-bad' or +1/-1/0"
        )
    return out.reshape(arr.shape)


def _group_codes(group_ids: object) -> tuple[np.ndarray, np.ndarray]:
    """``(group ids in order of first appearance, code per item)``."""
    g = as_1d(group_ids, "group_ids")
    if g.dtype == object and any(v is None for v in g.tolist()):
        raise MetricInputError("group_ids has None entries; every item needs a group")
    uniq, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[inverse.ravel()]


def ranking_to_pairs(
    group_ids: object,
    ranks: object,
    *,
    higher_better: bool = False,
    tie_eps: float = 0.0,
) -> RankPairs:
    """Every within-group pair of a group ranking, with its verdict.

    ``group_ids[i]`` and ``ranks[i]`` describe item ``i``. By default a *lower* rank is
    better (rank 1 = best; averaged ranks such as 1.5 are fine); ``higher_better=True``
    reads ``ranks`` as scores. A group of K items gives K(K-1)/2 pairs ``(a, b)`` with
    ``a < b`` (input positions), labelled ``"a>b"`` when ``a`` is better, ``"b>a"`` when
    worse, ``"tie"`` when ``|rank_a - rank_b| <= tie_eps``. Pairs are ordered by group
    (first appearance), then by ``a``, then ``b``; groups of one item give none. NaN
    ranks raise. Vectorised: one batch per distinct group size.
    """
    if not tie_eps >= 0:
        raise MetricInputError(f"tie_eps must be >= 0, got {tie_eps!r}")
    gids, code = _group_codes(group_ids)
    r = as_1d_float(ranks, "ranks")
    check_same_length({"group_ids": code, "ranks": r})
    if not np.isfinite(r).all():
        raise MetricInputError(f"ranks has {int((~np.isfinite(r)).sum())} NaN/infinite values")
    order = np.argsort(code, kind="stable")
    sizes = np.bincount(code, minlength=len(gids))
    starts = np.cumsum(sizes) - sizes
    parts_a, parts_b, parts_g = [], [], []
    for k in np.unique(sizes[sizes >= 2]):
        which = np.flatnonzero(sizes == k)
        i, j = np.triu_indices(int(k), 1)
        parts_a.append(order[starts[which][:, None] + i].ravel())
        parts_b.append(order[starts[which][:, None] + j].ravel())
        parts_g.append(np.repeat(which, len(i)))
    if not parts_a:
        empty = np.zeros(0, dtype=np.int64)
        return RankPairs(empty, empty.copy(), np.zeros(0, dtype="<U8"), np.zeros(0), gids[:0])
    a, b, g = np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_g)
    keep = np.lexsort((b, a, g))
    a, b, g = a[keep], b[keep], g[keep]
    diff = r[a] - r[b]
    margin = diff if higher_better else -diff
    codes = np.where(np.abs(diff) <= tie_eps, TIE, np.sign(margin)).astype(np.int64)
    labels = np.asarray([_CODE_TO_LABEL[c] for c in (A_WINS, B_WINS, TIE)], dtype="<U8")
    return RankPairs(a, b, labels[np.select([codes == A_WINS, codes == B_WINS], [0, 1], 2)],
                     np.abs(diff), gids[g])


def win_count_scores(
    group_ids: object,
    pair_a: object,
    pair_b: object,
    label: object,
    *,
    tie_credit: float = 0.5,
    normalize: bool = False,
) -> np.ndarray:
    """EditHF editor benchmarking: each item's number of pairwise wins in its group.

    ``group_ids`` has one entry per item (its length is the number of items);
    ``pair_a``/``pair_b`` are item indices of the compared pairs, which must lie in the
    same group; ``label`` their verdicts. A win counts 1, a tie (and a "both-bad") gives
    each side ``tie_credit`` (default 0.5, so a full round robin of K items hands out
    K(K-1)/2 points), a loss 0. Items in no pair score 0. ``normalize=True`` divides by
    the number of comparisons each item took part in (a win rate in [0, 1]; NaN for an
    item in no pair), which makes groups of different sizes comparable.
    """
    if not 0 <= tie_credit <= 1:
        raise MetricInputError(f"tie_credit must be in [0, 1], got {tie_credit!r}")
    _, code = _group_codes(group_ids)
    n = len(code)
    a = _indices(pair_a, "pair_a", n)
    b = _indices(pair_b, "pair_b", n)
    lab = label_codes(label)
    if lab.ndim != 1:
        raise MetricInputError(f"label must be 1-D, got shape {lab.shape}")
    check_same_length({"pair_a": a, "pair_b": b, "label": lab})
    cross = np.flatnonzero(code[a] != code[b])
    if cross.size:
        raise MetricInputError(f"{cross.size} pair(s) compare items of different groups, e.g. pair {int(cross[0])}")
    draw = np.isin(lab, (TIE, BOTH_BAD)) * tie_credit
    wins = (np.bincount(a, weights=(lab == A_WINS) + draw, minlength=n)
            + np.bincount(b, weights=(lab == B_WINS) + draw, minlength=n))
    if not normalize:
        return wins
    games = np.bincount(a, minlength=n) + np.bincount(b, minlength=n)
    return np.divide(wins, games, out=np.full(n, np.nan), where=games > 0)


def _indices(x: object, name: str, n: int) -> np.ndarray:
    arr = as_1d(x, name)
    if arr.size and arr.dtype.kind not in "iu":
        raise MetricInputError(f"{name} must hold integer item indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise MetricInputError(f"{name} has indices outside [0, {n - 1}] (there are {n} items)")
    return arr


def disentangle_ties(
    dim_labels: object,
    overall: object | None = None,
    *,
    eps: float = 0.0,
    tie_weight: float = 1.0,
) -> DisentangledPairs:
    """EditReward tie disentanglement: split overall ties whose dimensions disagree.

    ``dim_labels`` is ``(n_pairs, n_dims)``: per-dimension verdicts (labels or signed
    margins ``score_a - score_b``, ``|x| <= eps`` = tie; see :func:`label_codes`).
    ``overall`` gives each pair's overall verdict; when omitted it is the sign of the
    summed per-dimension verdicts (an equal-weight vote; a tie when they cancel).

    * A pair tied overall with at least one dimension favouring ``a`` and one favouring
      ``b`` becomes **two** samples, ``a>b`` then ``b>a``, each of weight ``tie_weight``
      (1.0 as in the paper, which doubles such pairs; 0.5 keeps the pair's total weight).
    * A pair tied overall whose dimensions do not disagree (all tied, or only one side
      ever ahead) stays one ``tie`` sample.
    * Every other pair (a>b, b>a, both-bad) passes through unchanged, weight 1.

    Output rows keep the input order. Returns :class:`DisentangledPairs`.
    """
    if not tie_weight > 0:
        raise MetricInputError(f"tie_weight must be > 0, got {tie_weight!r}")
    dims = label_codes(dim_labels, "dim_labels", eps=eps)
    if dims.ndim != 2 or dims.shape[0] == 0 or dims.shape[1] == 0:
        raise MetricInputError(f"dim_labels must be (n_pairs, n_dims) and non-empty, got shape {dims.shape}")
    dims = np.where(dims == BOTH_BAD, TIE, dims)
    if overall is None:
        ov = np.sign(dims.sum(axis=1)).astype(np.int64)
    else:
        ov = label_codes(overall, "overall", eps=eps)
        if ov.shape != (dims.shape[0],):
            raise MetricInputError(f"overall must have shape ({dims.shape[0]},), got {ov.shape}")
    split = (ov == TIE) & (dims == A_WINS).any(axis=1) & (dims == B_WINS).any(axis=1)
    reps = np.where(split, 2, 1)
    pair = np.repeat(np.arange(len(ov)), reps)
    second = np.zeros(len(pair), dtype=bool)
    second[np.cumsum(reps)[split] - 1] = True  # the b>a copy of each split pair
    out_code = np.where(split[pair], np.where(second, B_WINS, A_WINS), ov[pair])
    support = dims[pair] == np.where(out_code == BOTH_BAD, TIE, out_code)[:, None]
    labels = np.asarray([_CODE_TO_LABEL[c] for c in out_code.tolist()], dtype="<U8")
    weight = np.where(split[pair], float(tie_weight), 1.0)
    return DisentangledPairs(pair, labels, weight, split[pair], support)


def preferences_from_samples(
    samples: Sequence[EditSample],
    dimension: str = "overall",
    *,
    eps: float = 0.0,
    missing: Literal["raise", "skip"] = "raise",
) -> list[Preference]:
    """Within-group :class:`~ieqa.data.schema.Preference` pairs from samples' scores.

    Samples are grouped by ``group_id`` (a sample without one raises); inside each group
    every pair (in input order) gets ``a>b`` / ``b>a`` by ``scores[dimension]`` (higher
    is better), or ``tie`` when the scores differ by at most ``eps``. A sample without a
    score on ``dimension`` raises naming it (``missing="raise"``) or is left out
    (``"skip"``). ``meta`` of each preference holds ``group_id`` and ``score_gap``.
    """
    if missing not in ("raise", "skip"):
        raise MetricInputError(f"missing must be 'raise' or 'skip', got {missing!r}")
    dim = canonical_dimension(dimension)
    samples = list(samples)
    no_group = [s.id for s in samples if s.group_id is None]
    if no_group:
        raise MetricInputError(f"{len(no_group)} sample(s) have no group_id, e.g. {no_group[:5]}")
    unscored = [s.id for s in samples if dim not in s.scores]
    if unscored and missing == "raise":
        raise MetricInputError(
            f"{len(unscored)} sample(s) have no {dim!r} score, e.g. {unscored[:5]}; pass missing='skip'"
        )
    use = [s for s in samples if dim in s.scores]
    if not use:
        return []
    pairs = ranking_to_pairs([s.group_id for s in use], [s.scores[dim] for s in use],
                             higher_better=True, tie_eps=eps)
    return [
        Preference(a=use[a], b=use[b], label=lab, dimension=dim,
                   meta={"group_id": str(g), "score_gap": float(gap)})
        for a, b, lab, gap, g in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.label.tolist(),
                                     pairs.gap.tolist(), pairs.group.tolist(), strict=True)
    ]
