"""Pointwise benchmarks: predictions joined to ``bench.samples`` by id and compared with the
human scores per dimension — SRCC, KRCC, PLCC (raw and after the four-parameter logistic
fit), RMSE after that fit, group SRCC / group pair accuracy (by ``group_id`` or by editor,
Fisher z) — and the NTIRE final score over the ``"in"`` / ``"out"`` splits
(``sample.meta["split"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from ieqa.bench.protocols import MetricSpec
from ieqa.bench.results import _UNITS, Coverage, MetricRow
from ieqa.data.loaders.base import BenchmarkData
from ieqa.data.schema import EditSample
from ieqa.metrics import (
    MetricInputError,
    grouped_pair_accuracy,
    grouped_srcc,
    krcc,
    ntire_score,
    plcc,
    rmse,
    srcc,
)

#: how a grouped metric's ``average`` parameter combines groups, for the row notes
_AVERAGES = {"mean": "mean", "fisher_z": "Fisher-z mean",
             "tanh_of_mean": "tanh(mean r), no arctanh,", "pairs": "pairs pooled",
             "groups": "mean"}


@dataclass
class _Items:
    """Scored items of one dimension: predictions, human scores, groups, editors, splits."""

    pred: np.ndarray
    human: np.ndarray
    groups: np.ndarray | None
    editors: np.ndarray | None
    splits: np.ndarray | None


def _optional_ids(values: list[str | None], fill_prefix: str) -> np.ndarray | None:
    """Str ids, missing ones made unique (a group of their own), or None if all missing."""
    if all(v is None for v in values):
        return None
    return np.asarray([f"{fill_prefix}{i}" if v is None else str(v) for i, v in enumerate(values)])


def _items(samples: list[EditSample], preds: Predictions, dim: str) -> _Items:
    kept = [s for s in samples if dim in s.scores and dim in preds[s.id]]
    splits = [s.meta.get("split") for s in kept]
    return _Items(
        pred=np.fromiter((preds[s.id][dim] for s in kept), np.float64, len(kept)),
        human=np.fromiter((s.scores[dim] for s in kept), np.float64, len(kept)),
        groups=_optional_ids([s.group_id for s in kept], "<no group>:"),
        editors=_optional_ids([s.editor for s in kept], "<no editor>:"),
        splits=None if all(v is None for v in splits) else np.asarray([str(v) for v in splits]),
    )


def _pointwise_dimensions(bench: BenchmarkData, kept: list[EditSample], preds: Predictions,
                          st: _Settings) -> list[str]:
    human_dims = list(dict.fromkeys([*bench.dimensions, *(d for s in kept for d in s.scores)]))
    pred_dims = {d for s in kept for d in preds[s.id]}
    if not human_dims:
        raise BenchError(f"{bench.name} has no human scores (e.g. AURORA edit triplets): "
                         "there is nothing to correlate the predictions with")
    dims = [d for d in human_dims if d in pred_dims]
    if st.dimension is not None:
        if st.dimension not in dims:
            raise BenchError(f"dimension {st.dimension!r} is not scored by both: human "
                             f"{human_dims}, predictions {sorted(pred_dims)}")
        dims = [st.dimension]
    if not dims:
        raise BenchError(f"the predictions score {sorted(pred_dims)} but {bench.name} has human "
                         f"scores on {human_dims}: no dimension in common (names are "
                         "canonicalised, e.g. 'SC' -> instruction_alignment)")
    skipped = [d for d in human_dims if d not in pred_dims]
    if skipped and st.dimension is None:
        st.notes.append(f"no predictions for human dimension(s) {skipped}")
    return dims


def _evaluate_pointwise(bench: BenchmarkData, preds: Predictions, specs: Sequence[MetricSpec],
                        st: _Settings):
    ids = [s.id for s in bench.samples]
    lost = [i for i in ids if i not in preds]
    if lost and len(lost) == len(ids):
        raise _no_match_error(bench, preds)
    if lost and st.missing == "raise":
        raise _missing_error("samples", lost, len(ids), bench.name, st.failed)
    kept = [s for s in bench.samples if s.id in preds]
    unused = len(set(preds) - set(ids))
    n_failed = sum(1 for i in lost if i in st.failed)
    coverage = Coverage(len(ids), len(kept), lost[:_MAX_MISSING_LISTED], len(lost), unused,
                        n_failed)
    if lost:
        st.notes.append(f"{len(lost)} of {len(ids)} samples have no prediction and are left out"
                        + (f" ({n_failed} failed to score)" if n_failed else ""))
    if unused:
        st.notes.append(f"{unused} predictions match no sample of {bench.name} and are ignored")
    rows: list[MetricRow] = []
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    item_specs = [s for s in specs if s.kind != "ntire"]
    by_dim: dict[str, _Items] = {}
    for dim in _pointwise_dimensions(bench, kept, preds, st):
        it = _items(kept, preds, dim)
        by_dim[dim] = it
        pairs[dim] = (it.pred, it.human)
        for spec in item_specs:
            row = _pointwise_row(spec, dim, it, st)
            if row is not None:
                rows.append(row)
    for spec in specs:
        if spec.kind == "ntire":
            rows.extend(_ntire_rows(spec, by_dim, st))
    return rows, pairs, coverage


def _pointwise_row(spec: MetricSpec, dim: str, it: _Items, st: _Settings) -> MetricRow | None:
    p, t, hb = it.pred, it.human, st.higher_better
    kind, params = spec.kind, spec.params
    unit = _UNITS.get(kind, "accuracy")
    if kind in ("srcc", "krcc", "plcc", "rmse"):
        fns: dict[str, Callable[..., float]] = {"srcc": srcc, "krcc": krcc, "plcc": plcc,
                                                "rmse": rmse}
        fn, kw = fns[kind], {"higher_better": hb, **params}

        def one(idx: np.ndarray, _ids: Any = None) -> float:
            return fn(p[idx], t[idx], **kw)

        everything = np.arange(len(p))
        return _row(st, spec.name, dim, lambda: (one(everything), len(p), ""),
                    lambda: _boot(st, one, len(p), it.groups), unit=unit)
    if kind in ("grouped_srcc", "grouped_pair_accuracy"):
        by = params.get("by", "group_id")
        ids = it.editors if by == "editor" else it.groups
        if ids is None:
            st.notes.append(f"{spec.name} ({dim}) skipped: the samples carry no {by}")
            return None
        kw = {k: v for k, v in params.items() if k != "by"}
        gfn = grouped_srcc if kind == "grouped_srcc" else grouped_pair_accuracy

        def grouped(idx: np.ndarray, g: Any) -> float:
            return gfn(p[idx], t[idx], g, higher_better=hb, **kw).value

        def compute() -> tuple[float, int, str]:
            res = gfn(p, t, ids, higher_better=hb, **kw)
            what = "editors" if by == "editor" else "groups"
            return res.value, res.n_groups, (f"{_AVERAGES[kw['average']]} over {res.n_groups} "
                                             f"{what} ({res.n_skipped} skipped)")

        return _row(st, spec.name, dim, compute,
                    lambda: _boot(st, grouped, len(p), ids, pass_groups=True), unit=unit)
    raise BenchError(f"metric kind {kind!r} does not apply to a pointwise benchmark")


def _ntire_rows(spec: MetricSpec, by_dim: dict[str, _Items], st: _Settings) -> list[MetricRow]:
    """NTIRE final score (and S_in, S_out) over the dimensions scored in both splits."""
    parts: dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {
        "in": ({}, {}), "out": ({}, {})}
    counts = {"in": 0, "out": 0}
    sign = 1.0 if st.higher_better else -1.0
    for dim, it in by_dim.items():
        for split, (pred, human) in parts.items():
            keep = np.zeros(len(it.pred), bool) if it.splits is None else it.splits == split
            if keep.sum() >= 2:
                pred[dim], human[dim] = sign * it.pred[keep], it.human[keep]
                counts[split] = max(counts[split], int(keep.sum()))
    dims = sorted(set(parts["in"][0]) & set(parts["out"][0]))
    if not dims:
        st.notes.append("NTIRE final score skipped: it needs sample.meta['split'] with both 'in' "
                        "and 'out' edits (the split column of the MOS table)")
        return []
    args = [{d: part[d] for d in dims} for split in ("in", "out") for part in parts[split]]
    try:
        res = ntire_score(*args, **spec.params)
    except MetricInputError as exc:
        return [MetricRow("all", spec.name, float("nan"), note=f"not computed: {exc}",
                          unit="score")]
    mean_of = "mean over dimensions of (SRCC+PLCC)/2"
    return [
        MetricRow("all", "ntire_final", res["final"], n=counts["in"] + counts["out"], unit="score",
                  note=f"0.7 S_in + 0.3 S_out; dimensions {dims}; PLCC {res['plcc_fit']}"),
        MetricRow("all", "ntire_s_in", res["s_in"], n=counts["in"], subset="in", unit="score",
                  note=f"{mean_of}, in-distribution edits"),
        MetricRow("all", "ntire_s_out", res["s_out"], n=counts["out"], subset="out", unit="score",
                  note=f"{mean_of}, out-of-distribution edits"),
    ]
