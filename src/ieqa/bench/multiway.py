"""Multi-way benchmarks: the human ranking of each group's candidates recovered from its
pair labels (groups whose labels form no consistent ranking are left out) and the group
accuracy of the predicted scores, over all groups and per group size K; also EditReward's
released strict ranking accuracy and pairwise accuracy (its Table 2, "as published").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ieqa.bench._common import _boot, _row, _Settings
from ieqa.bench.pairs import _Pairs
from ieqa.bench.protocols import MetricSpec
from ieqa.bench.results import MetricRow
from ieqa.metrics import (
    GroupedResult,
    MetricInputError,
    multiway_accuracy,
    pairwise_accuracy,
    strict_ranking_accuracy_released,
    tie_calibrated_accuracy_optimistic,
)


def _group_ranks(members: list[str], pr: _Pairs, rows: np.ndarray) -> dict[str, int] | None:
    """Human ranks (1 = best; ties share) of a group's candidates from its pair labels:
    1 + the number of candidates preferred over each; ``None`` when the labels are not
    a consistent ranking (a cycle, or a tie that contradicts the order)."""
    above = dict.fromkeys(members, 0)
    for r in rows:
        if pr.label[r] > 0:
            above[pr.b_ids[r]] += 1
        elif pr.label[r] < 0:
            above[pr.a_ids[r]] += 1
    ranks = {m: 1 + above[m] for m in members}
    for r in rows:
        ra, rb, lab = ranks[pr.a_ids[r]], ranks[pr.b_ids[r]], pr.label[r]
        if (lab > 0 and not ra < rb) or (lab < 0 and not ra > rb) or (lab == 0 and ra != rb):
            return None
    return ranks


def _candidates(pr: _Pairs, st: _Settings,
                quiet: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(scores, group_ids, true_ranks)`` of every candidate of the consistently ranked
    groups, each group's candidates in id order (EditReward-Bench ids end in the candidate's
    letter, so that is A, B, C, D); ``quiet`` leaves the note on left-out groups unsaid."""
    scores: dict[str, float] = {}
    for ids, s in ((pr.a_ids, pr.score_a), (pr.b_ids, pr.score_b)):
        scores.update(zip(ids.tolist(), s.tolist(), strict=True))
    out_s, out_g, out_r = [], [], []
    inconsistent = 0
    for gid in dict.fromkeys(pr.groups.tolist()):
        rows = np.flatnonzero(pr.groups == gid)
        members = sorted({*pr.a_ids[rows].tolist(), *pr.b_ids[rows].tolist()})
        ranks = _group_ranks(members, pr, rows)
        if ranks is None:
            inconsistent += 1
            continue
        for m in members:
            out_s.append(scores[m])
            out_g.append(gid)
            out_r.append(ranks[m])
    if inconsistent and not quiet:
        st.notes.append(f"{inconsistent} groups whose human pair labels form no consistent ranking "
                        "are left out of the group accuracy")
    return np.asarray(out_s, np.float64), np.asarray(out_g), np.asarray(out_r, np.float64)


def _rows_by_k(name: str, dim: str, res: GroupedResult, gids: np.ndarray, st: _Settings,
               note: str) -> list[MetricRow]:
    """A grouped accuracy over all groups and per group size K, bootstrapped by group."""
    valid = ~np.isnan(res.per_group)
    per_group = res.per_group[valid]
    sizes = dict(zip(*np.unique(gids, return_counts=True), strict=True))
    k = np.asarray([sizes[g] for g in res.group_ids[valid]])

    def mean_of(values: np.ndarray) -> Callable[[np.ndarray, Any], float]:
        return lambda idx, _ids=None: float(values[idx].mean())

    lo, hi = _boot(st, mean_of(per_group), len(per_group))
    rows = [MetricRow(dim, name, res.value, lo, hi, n=res.n_groups,
                      note=f"{note}; {res.n_groups} groups")]
    for kk in sorted(set(k.tolist())):
        vals = per_group[k == kk]
        lo, hi = _boot(st, mean_of(vals), len(vals))
        rows.append(MetricRow(dim, name, float(vals.mean()), lo, hi, n=len(vals),
                              subset=f"K={kk}", note=f"{len(vals)} groups of {kk} candidates"))
    return rows


def _multiway_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    """Group accuracy over all groups and per K; the bootstrap resamples groups."""
    scores, gids, ranks = _candidates(pr, st)
    try:
        res = multiway_accuracy(scores, gids, ranks, eps=st.eps)
    except MetricInputError as exc:
        return [MetricRow(dim, spec.name, float("nan"), note=f"not computed: {exc}")]
    return _rows_by_k(spec.name, dim, res, gids, st, f"eps={st.eps:g}")


def _pair_k(pr: _Pairs) -> np.ndarray:
    """The size K of each pair's group (its number of distinct candidates)."""
    members: dict[str, set[str]] = {}
    for g, a, b in zip(pr.groups.tolist(), pr.a_ids.tolist(), pr.b_ids.tolist(), strict=True):
        members.setdefault(g, set()).update((a, b))
    return np.asarray([len(members[g]) for g in pr.groups.tolist()], np.int64)


def _k2_eps(pr: _Pairs, k: np.ndarray) -> tuple[float, str]:
    """The eps EditReward's released code fits on the K=2 test pairs (0 without them)."""
    two = k == 2
    if not two.any():
        return 0.0, "no K=2 pairs: eps=0"
    eps = tie_calibrated_accuracy_optimistic(pr.delta[two], pr.label[two])[1]
    return eps, f"eps={eps:.6g} fitted on the {int(two.sum())} K=2 test pairs (optimistic)"


def _published_group_rows(spec: MetricSpec, dim: str, pr: _Pairs,
                          st: _Settings) -> list[MetricRow]:
    """EditReward's released strict ranking accuracy, over all groups and per K."""
    scores, gids, ranks = _candidates(pr, st, quiet=True)
    try:
        eps, how = _k2_eps(pr, _pair_k(pr))
        res = strict_ranking_accuracy_released(scores, gids, ranks, tie_eps=eps)
    except MetricInputError as exc:
        return [MetricRow(dim, spec.name, float("nan"), note=f"not computed: {exc}")]
    return _rows_by_k(spec.name, dim, res, gids, st, f"as published: {how}")


def _published_pair_rows(spec: MetricSpec, dim: str, pr: _Pairs,
                         st: _Settings) -> list[MetricRow]:
    """EditReward's released pairwise accuracy: over all pairs and for K=2 with eps fitted on
    those pairs, for K >= 3 without ties (a model tie is wrong)."""
    k = _pair_k(pr)

    def fitted(sel: np.ndarray, what: str) -> tuple[float, int, str]:
        acc, eps = tie_calibrated_accuracy_optimistic(pr.delta[sel], pr.label[sel])
        return acc, int(sel.sum()), f"as published: eps={eps:.6g} fitted on {what} (optimistic)"

    def without_ties(sel: np.ndarray) -> tuple[float, int, str]:
        lab = pr.label[sel]
        acc = pairwise_accuracy(pr.score_a[sel], pr.score_b[sel], lab, ties="drop",
                                pred_ties="wrong")
        return acc, int((lab != 0).sum()), "as published: without ties (a model tie is wrong)"

    everything = np.ones(len(pr), dtype=bool)
    rows = [_row(st, spec.name, dim, lambda: fitted(everything, "all these test pairs"))]
    for kk in sorted(set(k.tolist())):
        sel = k == kk
        compute = ((lambda sel=sel: fitted(sel, "these K=2 test pairs")) if kk == 2
                   else (lambda sel=sel: without_ties(sel)))
        rows.append(_row(st, spec.name, dim, compute, subset=f"K={kk}"))
    return rows
