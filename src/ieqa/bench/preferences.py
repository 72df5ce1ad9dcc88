"""Pairwise (and multi-way) benchmarks from numeric predictions: a pair's model verdict is
the sign of ``delta = score(a) - score(b)``, a tie when ``|delta| <= eps``.
:func:`_evaluate_preferences` maps each protocol ``kind`` to its rows: GenAI-Bench accuracy,
pair accuracy without ties, strict (task-macro) accuracy, tie-calibrated accuracy (held-out
and optimistic), and the multi-way group accuracy of :mod:`ieqa.bench.multiway`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ieqa.bench._common import Predictions, _boot, _row, _Settings
from ieqa.bench.errors import BenchError
from ieqa.bench.multiway import _multiway_rows, _published_group_rows, _published_pair_rows
from ieqa.bench.pairs import _Pairs, _pairs, _select_preferences, _with_subsets
from ieqa.bench.protocols import MetricSpec
from ieqa.bench.results import MetricRow
from ieqa.data.loaders.base import BenchmarkData
from ieqa.metrics import (
    accuracy_with_ties_released,
    pairwise_accuracy,
    pairwise_accuracy_genai,
    strict_accuracy,
    tie_aware_accuracy,
    tie_calibrated_accuracy,
    tie_calibrated_accuracy_optimistic,
)


def _evaluate_preferences(bench: BenchmarkData, preds: Predictions, specs: Sequence[MetricSpec],
                          st: _Settings):
    kept, idx, coverage = _select_preferences(bench, preds, st)
    rows: list[MetricRow] = []
    compute = {"genai_accuracy": _genai_rows, "pair_accuracy": _pair_accuracy_rows,
               "strict_accuracy": _strict_rows, "tie_calibrated": _tie_calibrated_rows,
               "tie_calibrated_optimistic": _tie_optimistic_rows, "multiway": _multiway_rows,
               "with_ties_published": _with_ties_published_rows,
               "editreward_groups_published": _published_group_rows,
               "editreward_pairs_published": _published_pair_rows,
               "mmrb2_official": _mmrb2_rows}
    unscorable = bench.meta.get("unscorable") or {}
    if unscorable:
        st.notes.append(f"{len(unscorable)} of {bench.meta.get('pairs', '?')} pairs cannot be "
                        "scored by an edit scorer (one input image and one output image per "
                        "response needed; listed in the benchmark's meta['unscorable']): left "
                        "out, as MMRB2's compute_accuracy.py leaves out a pair without a "
                        "prediction")
    for dim, pairs in _pairs(kept, idx, preds, st).items():
        for spec in specs:
            if spec.kind not in compute:
                raise BenchError(f"metric kind {spec.kind!r} does not apply to "
                                 f"{bench.protocol} data")
            rows.extend(compute[spec.kind](spec, dim, pairs, st))
    return rows, coverage


def _model_sign(d: np.ndarray, eps: float) -> np.ndarray:
    """+1 / -1 / 0 (model tie, ``|d| <= eps``)."""
    return np.where(np.abs(d) <= eps, 0.0, np.sign(d))


def _mmrb2_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    """MMRB2's compute_accuracy.py on judgements from the scores (both orders per pair)."""
    from ieqa.bench.mmrb2 import judgements_from_scores, official_accuracy

    chosen = np.where(pr.label > 0, "A", np.where(pr.label < 0, "B", ""))
    ids = [str(i) for i in range(len(pr))]
    preds = {i: judgements_from_scores(float(a), float(b), eps=st.eps)
             for i, a, b in zip(ids, pr.score_a, pr.score_b, strict=True)}

    def acc(idx: np.ndarray, _ids: Any = None) -> float:
        return official_accuracy(preds, [{"id": ids[k], "chosen": chosen[k]} for k in idx]).accuracy

    ties = int((np.abs(pr.delta) <= st.eps).sum())
    note = ("forward and reverse judgement of each pair (2 per pair)"
            + (f"; {ties} score ties judged 'tie', wrong as released" if ties else ""))
    return _with_subsets(spec.name, dim, pr, st, acc, pr.tasks, note)


def _genai_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    sign = _model_sign(pr.delta, st.eps)
    verdicts = np.where(sign > 0, "A>B", np.where(sign < 0, "B>A", "A=B"))

    def acc(idx: np.ndarray, _ids: Any = None) -> float:
        return pairwise_accuracy_genai(pr.votes[idx].tolist(), verdicts[idx].tolist())

    return _with_subsets(spec.name, dim, pr, st, acc, pr.votes, "|delta| <= eps is [[A=B]]")


def _pair_accuracy_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    sign = _model_sign(pr.delta, st.eps)

    def acc(idx: np.ndarray, _ids: Any = None) -> float:
        return pairwise_accuracy(sign[idx], np.zeros(len(idx)), pr.label[idx], ties="drop",
                                 pred_ties="wrong")

    decisive = int((pr.label != 0).sum())
    everything = np.arange(len(pr))
    n_ties = len(pr) - decisive
    note = f"{n_ties} human tie{'s' if n_ties > 1 else ''} left out" if n_ties else ""
    return [_row(st, spec.name, dim, lambda: (acc(everything), decisive, note),
                 lambda: _boot(st, acc, len(pr), pr.groups))]


def _strict_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    decided = pr.label != 0
    if not decided.all():
        st.notes.append(f"strict accuracy ({dim}): {int((~decided).sum())} human ties left out")
        pr = pr.subset(decided)
    # the human-preferred candidate's margin, zeroed inside the tie band
    margin = _model_sign(pr.delta * pr.label, st.eps)
    zeros = np.zeros(len(pr))

    def macro(idx: np.ndarray, _ids: Any = None) -> float:
        return strict_accuracy(margin[idx], zeros[idx],
                               task=None if pr.tasks is None else pr.tasks[idx])

    def plain(idx: np.ndarray, _ids: Any = None) -> float:
        return strict_accuracy(margin[idx], zeros[idx])

    everything = np.arange(len(pr))
    n_tasks = 0 if pr.tasks is None else len(set(pr.tasks.tolist()))
    note = (f"macro-average over {n_tasks} task types" if n_tasks
            else "no task types: mean over pairs")
    rows = [_row(st, spec.name, dim, lambda: (macro(everything), len(pr), note),
                 lambda: _boot(st, macro, len(pr), pr.groups))]
    if pr.tasks is not None:
        rows += _with_subsets(spec.name, dim, pr, st, plain, pr.tasks, include_all=False)
    return rows


def _calibration_split(groups: np.ndarray, seed: int) -> tuple[np.ndarray, int, int]:
    """Boolean mask of the calibration pairs: a seeded 50/50 split of the sorted distinct
    group ids (``floor(G/2)`` calibration groups); also the two group counts."""
    ids = np.unique(groups)
    perm = np.random.default_rng(seed).permutation(len(ids))
    n_cal = len(ids) // 2
    cal_ids = ids[perm[:n_cal]]
    return np.isin(groups, cal_ids), n_cal, len(ids) - n_cal


def _tie_calibrated_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    cal, g_cal, g_test = _calibration_split(pr.groups, st.seed)
    if g_cal == 0 or g_test == 0 or not cal.any() or cal.all():
        return [MetricRow(dim, spec.name, float("nan"),
                          note="not computed: needs at least 2 groups to form a calibration split")]
    d, lab = pr.delta, pr.label
    test = np.flatnonzero(~cal)
    acc_eps: dict[str, float] = {}

    def compute() -> tuple[float, int, str]:
        acc, eps = tie_calibrated_accuracy(d[cal], lab[cal], d[test], lab[test])
        acc_eps["eps"] = eps
        return acc, len(test), (f"eps={eps:.6g} fitted on {int(cal.sum())} pairs of {g_cal} groups "
                                f"(seeded 50/50 split of groups, seed {st.seed}); accuracy on the "
                                f"{len(test)} pairs of the other {g_test} groups")

    def on_test(idx: np.ndarray, _ids: Any = None) -> float:
        return tie_aware_accuracy(d[test][idx], lab[test][idx], acc_eps["eps"])

    row = _row(st, spec.name, dim, compute)
    if "eps" in acc_eps:
        row.ci_low, row.ci_high = _boot(st, on_test, len(test), pr.groups[test])
    return [row]


def _tie_optimistic_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    def compute() -> tuple[float, int, str]:
        acc, eps = tie_calibrated_accuracy_optimistic(pr.delta, pr.label)
        return acc, len(pr), (f"optimistic: eps={eps:.6g} fitted on these same pairs "
                              "(an upper bound, not a held-out accuracy)")

    return [_row(st, spec.name, dim, compute)]


def _with_ties_published_rows(spec: MetricSpec, dim: str, pr: _Pairs,
                              st: _Settings) -> list[MetricRow]:
    """EditReward's released ``calc_accuracy_with_ties``: eps swept on these same pairs."""
    d, lab = pr.delta, pr.label

    def compute() -> tuple[float, int, str]:
        acc, eps = accuracy_with_ties_released(d, lab)
        return acc, len(pr), (f"as published: eps={eps:.6g} swept on these same pairs "
                              "(optimistic; not a held-out accuracy)")

    def acc(idx: np.ndarray, _ids: Any = None) -> float:
        return accuracy_with_ties_released(d[idx], lab[idx])[0]

    return [_row(st, spec.name, dim, compute, lambda: _boot(st, acc, len(pr), pr.groups))]
