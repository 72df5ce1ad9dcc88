"""Multi-way benchmarks: the human ranking of each group's candidates recovered from its
pair labels (groups whose labels form no consistent ranking are left out) and the group
accuracy of the predicted scores, over all groups and per group size K.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ieqa.bench._common import _boot, _Settings
from ieqa.bench.pairs import _Pairs
from ieqa.bench.protocols import MetricSpec
from ieqa.bench.results import MetricRow
from ieqa.metrics import MetricInputError, multiway_accuracy, multiway_accuracy_by_k


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


def _candidates(pr: _Pairs, st: _Settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(scores, group_ids, true_ranks)`` of every candidate of the consistently ranked
    groups."""
    scores: dict[str, float] = {}
    for ids, s in ((pr.a_ids, pr.score_a), (pr.b_ids, pr.score_b)):
        scores.update(zip(ids.tolist(), s.tolist(), strict=True))
    out_s, out_g, out_r = [], [], []
    inconsistent = 0
    for gid in dict.fromkeys(pr.groups.tolist()):
        rows = np.flatnonzero(pr.groups == gid)
        members = list(dict.fromkeys([*pr.a_ids[rows].tolist(), *pr.b_ids[rows].tolist()]))
        ranks = _group_ranks(members, pr, rows)
        if ranks is None:
            inconsistent += 1
            continue
        for m in members:
            out_s.append(scores[m])
            out_g.append(gid)
            out_r.append(ranks[m])
    if inconsistent:
        st.notes.append(f"{inconsistent} groups whose human pair labels form no consistent ranking "
                        "are left out of the group accuracy")
    return np.asarray(out_s, np.float64), np.asarray(out_g), np.asarray(out_r, np.float64)


def _multiway_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    """Group accuracy over all groups and per K (:func:`multiway_accuracy_by_k`); the
    bootstrap resamples groups."""
    scores, gids, ranks = _candidates(pr, st)
    try:
        res = multiway_accuracy(scores, gids, ranks, eps=st.eps)
        by_k = multiway_accuracy_by_k(scores, gids, ranks, eps=st.eps)
    except MetricInputError as exc:
        return [MetricRow(dim, spec.name, float("nan"), note=f"not computed: {exc}")]
    valid = ~np.isnan(res.per_group)
    per_group = res.per_group[valid]
    sizes = dict(zip(*np.unique(gids, return_counts=True), strict=True))
    k = np.asarray([sizes[g] for g in res.group_ids[valid]])

    def mean_of(values: np.ndarray) -> Callable[[np.ndarray, Any], float]:
        return lambda idx, _ids=None: float(values[idx].mean())

    lo, hi = _boot(st, mean_of(per_group), len(per_group))
    rows = [MetricRow(dim, spec.name, res.value, lo, hi, n=res.n_groups,
                      note=f"eps={st.eps:g}; {res.n_groups} groups")]
    for kk, value in sorted(by_k.items()):
        vals = per_group[k == kk]
        lo, hi = _boot(st, mean_of(vals), len(vals))
        rows.append(MetricRow(dim, spec.name, value, lo, hi, n=len(vals), subset=f"K={kk}",
                              note=f"{len(vals)} groups of {kk} candidates"))
    return rows
