"""Preferences as arrays for the pairwise, multi-way and judge computations: the selection of
the preferences whose two candidates have a prediction (with coverage; dropping whole
multi-way groups), :class:`_Pairs` (scores, human labels and votes, groups, task types of
one dimension's preferences) and :func:`_with_subsets` (a metric over all pairs and per
subset, bootstrapped by group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ieqa.bench._common import (
    _MAX_MISSING_LISTED,
    Predictions,
    _boot,
    _missing_error,
    _no_match_error,
    _row,
    _Settings,
)
from ieqa.bench.errors import BenchError
from ieqa.bench.results import Coverage, MetricRow
from ieqa.data.loaders.base import BenchmarkData
from ieqa.data.schema import Preference, PreferenceLabel

_LABEL_SIGN = {PreferenceLabel.A: 1, PreferenceLabel.B: -1,
               PreferenceLabel.TIE: 0, PreferenceLabel.BOTH_BAD: 0}
_LABEL_VOTE = {PreferenceLabel.A: "leftvote", PreferenceLabel.B: "rightvote",
               PreferenceLabel.TIE: "tievote", PreferenceLabel.BOTH_BAD: "bothbad_vote"}


@dataclass
class _Pairs:
    """Scored preferences of one dimension, as arrays (row i = one preference)."""

    score_a: np.ndarray
    score_b: np.ndarray
    label: np.ndarray  # +1 a better, -1 b better, 0 tie / both bad
    votes: np.ndarray  # GenAI-Bench human votes
    groups: np.ndarray  # group id of each pair (its own index when none)
    tasks: np.ndarray | None
    a_ids: np.ndarray
    b_ids: np.ndarray

    @property
    def delta(self) -> np.ndarray:
        return self.score_a - self.score_b

    def __len__(self) -> int:
        return len(self.label)

    def subset(self, keep: np.ndarray) -> _Pairs:
        return _Pairs(self.score_a[keep], self.score_b[keep], self.label[keep], self.votes[keep],
                      self.groups[keep], None if self.tasks is None else self.tasks[keep],
                      self.a_ids[keep], self.b_ids[keep])


def _group_of(p: Preference, i: int) -> str:
    gid = p.meta.get("group_id", p.a.group_id)
    return f"<pair>:{i}" if gid is None else str(gid)


def _pred_dim(p: Preference, st: _Settings) -> str:
    return st.dimension or p.dimension


def _select_preferences(bench: BenchmarkData, preds: Predictions, st: _Settings):
    """The preferences whose two candidates have a prediction on the needed dimension,
    with coverage; raises or drops (whole groups for multi-way) per ``st.missing``."""
    prefs = bench.preferences
    if not prefs:
        raise BenchError(f"{bench.name} ({bench.protocol}) has no preferences to score")
    sample_ids = list(dict.fromkeys(s.id for p in prefs for s in (p.a, p.b)))
    lost = [i for i in sample_ids if i not in preds]
    if lost and len(lost) == len(sample_ids):
        raise _no_match_error(bench, preds)
    no_dim = sorted({s.id for p in prefs for s in (p.a, p.b)
                     if s.id in preds and _pred_dim(p, st) not in preds[s.id]})
    if st.missing == "raise" and (lost or no_dim):
        if lost:
            raise _missing_error("candidates", lost, len(sample_ids), bench.name, st.failed)
        need = sorted({_pred_dim(p, st) for p in prefs})
        raise BenchError(f"{len(no_dim)} candidates of {bench.name} have a prediction but not on "
                         f"the preference dimension(s) {need} (first: {no_dim[:5]}); choose the "
                         "predicted dimension with dimension= (--dimension), or pass "
                         "missing='drop'")
    bad = set(lost) | set(no_dim)
    ok = [not ({p.a.id, p.b.id} & bad) for p in prefs]
    if bench.protocol == "multiway":
        gids = [_group_of(p, i) for i, p in enumerate(prefs)]
        broken = {g for g, good in zip(gids, ok, strict=True) if not good}
        ok = [g not in broken for g in gids]
        if broken:
            st.notes.append(f"{len(broken)} groups with a candidate lacking a prediction are left "
                            "out whole (a multi-way group is scored all or nothing)")
    kept = [p for p, good in zip(prefs, ok, strict=True) if good]
    kept_idx = [i for i, good in enumerate(ok) if good]
    if not kept:
        raise BenchError(f"no preference of {bench.name} has predictions for both candidates")
    if len(kept) < len(prefs):
        st.notes.append(f"{len(prefs) - len(kept)} of {len(prefs)} preferences are left out "
                        "(a candidate has no prediction on the needed dimension)")
    unused = len(set(preds) - set(sample_ids))
    if unused:
        st.notes.append(f"{unused} predictions match no candidate of {bench.name} and are ignored")
    coverage = Coverage(len(sample_ids), len(sample_ids) - len(lost), lost[:_MAX_MISSING_LISTED],
                        len(lost), unused, sum(1 for i in lost if i in st.failed))
    return kept, kept_idx, coverage


def _pairs(prefs: list[Preference], idx: list[int], preds: Predictions,
           st: _Settings) -> dict[str, _Pairs]:
    """Preferences grouped by the preference dimension, as :class:`_Pairs`."""
    by_dim: dict[str, list[tuple[int, Preference]]] = {}
    for i, p in zip(idx, prefs, strict=True):
        by_dim.setdefault(p.dimension, []).append((i, p))
    out = {}
    sign = 1.0 if st.higher_better else -1.0
    for dim, items in by_dim.items():
        tasks = [p.meta.get("task_type", p.a.task) for _, p in items]
        votes = [p.meta.get("vote_type") or _LABEL_VOTE[p.label] for _, p in items]
        out[dim] = _Pairs(
            score_a=np.array([sign * preds[p.a.id][_pred_dim(p, st)] for _, p in items]),
            score_b=np.array([sign * preds[p.b.id][_pred_dim(p, st)] for _, p in items]),
            label=np.array([_LABEL_SIGN[p.label] for _, p in items], np.int8),
            votes=np.array([str(v) for v in votes]),
            groups=np.array([_group_of(p, i) for i, p in items]),
            tasks=None if all(t is None for t in tasks) else np.array([str(t) for t in tasks]),
            a_ids=np.array([p.a.id for _, p in items]),
            b_ids=np.array([p.b.id for _, p in items]),
        )
    return out



def _with_subsets(name: str, dim: str, pr: _Pairs, st: _Settings,
                  fn: Callable[[np.ndarray, Any], float], subsets: np.ndarray | None,
                  note: str = "", *, include_all: bool = True) -> list[MetricRow]:
    """A row over all pairs (unless ``include_all`` is False) plus one per value of
    ``subsets``; ``fn(indices)`` computes the metric; bootstrap by group."""
    everything = np.arange(len(pr))
    rows = []
    if include_all:
        rows.append(_row(st, name, dim, lambda: (fn(everything), len(pr), note),
                         lambda: _boot(st, fn, len(pr), pr.groups)))
    if subsets is not None:
        for value in sorted(set(subsets.tolist())):
            sel = np.flatnonzero(subsets == value)

            def sub(idx: np.ndarray, _ids: Any = None, sel: np.ndarray = sel) -> float:
                return fn(sel[idx])

            rows.append(_row(st, name, dim, lambda sel=sel: (fn(sel), len(sel), ""),
                             lambda sel=sel, sub=sub: _boot(st, sub, len(sel), pr.groups[sel]),
                             subset=str(value)))
    return rows
