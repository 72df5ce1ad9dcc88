"""Evaluate predictions a user already has against a benchmark's own metric set.

>>> from ieqa.data.loaders import load_benchmark, load_judge_results
>>> from ieqa.bench.predictions import read_predictions
>>> bench = load_benchmark("ebench", root="~/data/EBench")                   # doctest: +SKIP
>>> result = evaluate_predictions(bench, read_predictions("preds.jsonl"))    # doctest: +SKIP
>>> result.value("srcc", "visual_quality")                                   # doctest: +SKIP
>>> evaluate_judge_results(load_judge_results("pairwise.jsonl"))             # doctest: +SKIP

What gets computed is the benchmark's entry of :data:`ieqa.bench.protocols.PROTOCOLS`
(see there for tie rules, PLCC variants and sources). The computations reuse
:mod:`ieqa.metrics` only:

* **pointwise** — predictions are joined to ``bench.samples`` by id; per dimension that
  both the predictions and the human scores have: SRCC, KRCC, PLCC raw and after the
  four-parameter logistic fit, RMSE after that fit, group SRCC / group pair accuracy
  (when the samples carry ``group_id``), SRCC per editor (Fisher z) where the protocol
  has it, and the NTIRE final score (``sample.meta["split"]`` in ``"in"`` / ``"out"``).
* **pairwise / multi-way with numeric predictions** — a pair's model verdict comes from
  ``delta = score(a) - score(b)`` (``Preference.a.id`` / ``.b.id``), a model tie when
  ``|delta| <= eps``. The predicted dimension is the preference's own dimension unless
  ``dimension=`` names one.
* **GenAI-Bench judge results** (:class:`~ieqa.data.loaders.JudgeResults`) — the official
  accuracy from ``model_vote`` with the exact rule of GenAI-Bench's ``parse_response``
  (the vote string must be exactly one of ``[[A>B]]``, ``[[A>>B]]``, ``[[B>A]]``,
  ``[[B>>A]]``, ``[[A=B]]``, ``[[A=B=Good]]``, ``[[A=B=Bad]]``; ``[[A=B]]`` is right for
  both tie kinds; ``null`` or any other string is wrong), and the accuracy from
  re-parsing ``response`` with :func:`ieqa.metrics.parse_verdict`, plus how many items'
  verdicts differ.

Accuracies are fractions in [0, 1] (``MetricRow.unit == "accuracy"``; the CLI prints
percentages). Bootstrap confidence intervals (``n_boot`` > 0, percentile, seeded) resample
whole groups when the data has group ids, else items (or pairs).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ieqa.bench.errors import BenchError
from ieqa.bench.protocols import MetricSpec, protocol_for
from ieqa.bench.report import HtmlReport, bar_chart, scatter_plot, write_csv, write_json
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.loaders.base import BenchmarkData
from ieqa.data.loaders.genai_bench import JudgeResults
from ieqa.data.schema import EditSample, Preference, PreferenceLabel
from ieqa.errors import IeqaError, UnknownDimensionError
from ieqa.metrics import (
    MetricInputError,
    bootstrap_ci,
    genai_bench_correct,
    grouped_pair_accuracy,
    grouped_srcc,
    krcc,
    multiway_accuracy,
    multiway_accuracy_by_k,
    ntire_score,
    pairwise_accuracy,
    pairwise_accuracy_genai,
    parse_verdict,
    plcc,
    rmse,
    srcc,
    strict_accuracy,
    tie_aware_accuracy,
    tie_calibrated_accuracy,
    tie_calibrated_accuracy_optimistic,
)

__all__ = [
    "OFFICIAL_GENAI_VOTES", "BenchResult", "Coverage", "MetricRow", "evaluate_judge_results",
    "evaluate_predictions", "format_value", "write_bench_outputs",
]

#: The ``model_vote`` strings GenAI-Bench's ``parse_response`` compares against (exactly).
OFFICIAL_GENAI_VOTES = frozenset(
    ("[[A>B]]", "[[A>>B]]", "[[B>A]]", "[[B>>A]]", "[[A=B]]", "[[A=B=Good]]", "[[A=B=Bad]]"))
_LABEL_SIGN = {PreferenceLabel.A: 1, PreferenceLabel.B: -1,
               PreferenceLabel.TIE: 0, PreferenceLabel.BOTH_BAD: 0}
_LABEL_VOTE = {PreferenceLabel.A: "leftvote", PreferenceLabel.B: "rightvote",
               PreferenceLabel.TIE: "tievote", PreferenceLabel.BOTH_BAD: "bothbad_vote"}
_UNITS = {"srcc": "correlation", "krcc": "correlation", "plcc": "correlation",
          "rmse": "score", "grouped_srcc": "correlation", "ntire": "score",
          "judge_differ": "count"}
_MAX_MISSING_LISTED = 1000
Missing = Literal["raise", "drop"]
Predictions = Mapping[str, Mapping[str, float]]


# --------------------------------------------------------------------------- results


@dataclass
class MetricRow:
    """One number of a benchmark run.

    ``dimension`` is a canonical dimension (``"all"`` for numbers across dimensions),
    ``subset`` ``"all"`` or a part of the data (``"K=3"``, a task type, a human vote,
    ``"in"``...); ``value`` is NaN when the metric could not be computed (``note`` says
    why); ``ci_low``/``ci_high`` are set when bootstrapping; ``n`` counts the items,
    pairs or groups behind the value; ``unit`` is ``"correlation"``, ``"accuracy"``
    (a fraction in [0, 1]), ``"score"`` (the human scale) or ``"count"``.
    """

    dimension: str
    metric: str
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    note: str = ""
    subset: str = "all"
    unit: str = "accuracy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Coverage:
    """How many benchmark items had a prediction: ``n_items`` in the benchmark (samples;
    judged items for judge results), ``n_predicted`` of them with one, ``missing_ids``
    (the first 1000 of the others), ``n_missing`` and ``n_unused`` (predictions that
    match no item)."""

    n_items: int
    n_predicted: int
    missing_ids: list[str] = field(default_factory=list)
    n_missing: int = 0
    n_unused: int = 0

    @property
    def fraction(self) -> float:
        return self.n_predicted / self.n_items if self.n_items else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": self.fraction}


@dataclass
class BenchResult:
    """What :func:`evaluate_predictions` returns.

    Attributes:
        benchmark: benchmark name; protocol: ``pointwise``, ``pairwise``, ``multiway`` or
            ``judge``.
        rows: the metric values (:class:`MetricRow`).
        pairs: pointwise only: dimension -> ``(pred, human)`` arrays of the scored items
            (for predicted-vs-human plots).
        coverage: how many benchmark items had predictions.
        specs: the protocol's metric specifications used.
        notes: what was skipped, dropped or assumed.
        meta: settings (eps, bootstrap, seed, sources...).
    """

    benchmark: str
    protocol: str
    rows: list[MetricRow]
    coverage: Coverage
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    specs: tuple[MetricSpec, ...] = ()
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def row(self, metric: str, dimension: str | None = None, subset: str = "all") -> MetricRow:
        """The row of ``metric`` (on ``dimension``, default: the only or first one, and
        ``subset``); ``KeyError`` names the available ones when there is none."""
        hits = [r for r in self.rows if r.metric == metric and r.subset == subset
                and (dimension is None or r.dimension == dimension)]
        if not hits:
            have = sorted({(r.metric, r.dimension, r.subset) for r in self.rows})
            raise KeyError(f"no row {metric!r} (dimension={dimension!r}, subset={subset!r}); "
                           f"available: {have}")
        return hits[0]

    def value(self, metric: str, dimension: str | None = None, subset: str = "all") -> float:
        """The value of :meth:`row`."""
        return self.row(metric, dimension, subset).value

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "protocol": self.protocol,
            "rows": [r.to_dict() for r in self.rows], "coverage": self.coverage.to_dict(),
            "protocol_table": [{"metric": s.name, "label": s.label, "per": s.per, "ties": s.ties,
                                "plcc": s.plcc, "needs": s.needs, "source": s.source}
                               for s in self.specs],
            "notes": list(self.notes), "meta": dict(self.meta),
        }


# --------------------------------------------------------------------------- settings


@dataclass
class _Settings:
    missing: Missing
    eps: float
    n_boot: int
    seed: int
    ci: float
    dimension: str | None
    higher_better: bool
    notes: list[str] = field(default_factory=list)


def _settings(missing: str, eps: float, n_boot: int, seed: int, ci: float, dimension: str | None,
              higher_better: bool) -> _Settings:
    if missing not in ("raise", "drop"):
        raise BenchError(f"missing must be 'raise' or 'drop', got {missing!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise BenchError(f"eps must be a finite number >= 0, got {eps!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0 or n_boot == 1:
        raise BenchError(f"n_boot must be 0 (no intervals) or an integer >= 2, got {n_boot!r}")
    if not 0.0 < ci < 1.0:
        raise BenchError(f"ci must lie in (0, 1), got {ci!r}")
    if dimension is not None:
        try:
            dimension = canonical_dimension(dimension)
        except UnknownDimensionError as exc:
            raise BenchError(str(exc)) from None
    return _Settings(missing, float(eps), n_boot, seed, ci, dimension, higher_better)


def _boot(st: _Settings, fn: Callable[[np.ndarray, Any], float], n: int,
          groups: np.ndarray | None = None,
          pass_groups: bool = False) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of ``fn(indices, group_ids)`` over ``n`` items,
    resampling whole ``groups`` when given; ``(None, None)`` when off or impossible."""
    if not st.n_boot or n < 2:
        return None, None
    idx = np.arange(n, dtype=np.float64)

    def metric(p: np.ndarray, _t: np.ndarray, *ids: np.ndarray) -> float:
        return fn(p.astype(np.int64), ids[0] if ids else None)

    try:
        _, lo, hi = bootstrap_ci(metric, idx, idx, n_boot=st.n_boot, ci=st.ci, seed=st.seed,
                                 groups=groups, pass_groups=pass_groups)
    except MetricInputError:
        return None, None
    return lo, hi


def _row(st: _Settings, spec_name: str, dimension: str,
         compute: Callable[[], tuple[float, int, str]],
         ci_fn: Callable[[], tuple[float | None, float | None]] | None = None, *,
         subset: str = "all", unit: str = "accuracy") -> MetricRow:
    """A row from ``compute() -> (value, n, note)``; a :class:`MetricInputError` becomes a
    NaN row whose note is the error message."""
    try:
        value, n, note = compute()
    except MetricInputError as exc:
        return MetricRow(dimension, spec_name, float("nan"), n=0, note=f"not computed: {exc}",
                         subset=subset, unit=unit)
    lo = hi = None
    if ci_fn is not None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            lo, hi = ci_fn()
        for w in caught:  # resamples on which the metric is undefined (e.g. constant)
            st.notes.append(f"{spec_name} ({dimension}, {subset}): {w.message}")
    return MetricRow(dimension, spec_name, float(value), lo, hi, int(n), note, subset, unit)


def _missing_error(what: str, missing: Sequence[str], total: int, bench: str) -> BenchError:
    first = ", ".join(repr(m) for m in missing[:5])
    return BenchError(
        f"{len(missing)} of {total} {what} of {bench} have no prediction (first: {first}); "
        "pass missing='drop' (ieqa bench --missing drop) to evaluate the others, or add them")


def _no_match_error(bench: BenchmarkData, preds: Predictions) -> BenchError:
    ids = [s.id for s in bench.samples[:3]]
    return BenchError(f"no prediction id matches a sample id of {bench.name} (benchmark ids look "
                      f"like {ids}, prediction ids like {list(preds)[:3]}); the predictions file "
                      "must use the benchmark's sample ids")


# --------------------------------------------------------------------------- entry points


def evaluate_predictions(
    bench: BenchmarkData | None,
    predictions: Predictions | JudgeResults,
    *,
    missing: Missing = "raise",
    eps: float = 0.0,
    n_boot: int = 0,
    seed: int = 0,
    ci: float = 0.95,
    dimension: str | None = None,
    higher_better: bool = True,
) -> BenchResult:
    """Compute ``bench``'s own metric set (:mod:`ieqa.bench.protocols`) from predictions.

    Args:
        bench: the loaded benchmark (:func:`ieqa.data.loaders.load_benchmark`); may be
            ``None`` for GenAI-Bench judge results.
        predictions: ``{sample id: {dimension: score}}`` (e.g.
            :func:`ieqa.bench.predictions.read_predictions`), or
            :class:`~ieqa.data.loaders.JudgeResults` (see :func:`evaluate_judge_results`).
        missing: a benchmark item without a prediction raises :class:`BenchError` naming
            it (``"raise"``) or is left out and reported in ``coverage`` (``"drop"``; a
            multi-way group with a missing candidate is left out whole).
        eps: model tie threshold for pairwise / multi-way verdicts (``|delta| <= eps``).
        n_boot: bootstrap resamples for confidence intervals (0: none).
        seed: seed of the bootstrap and of the calibration split.
        ci: confidence level of the intervals.
        dimension: evaluate only this dimension (pointwise), or read this predicted
            dimension for every preference (pairwise / multi-way).
        higher_better: ``False`` when the predictions are lower-is-better (distances).
    """
    st = _settings(missing, eps, n_boot, seed, ci, dimension, higher_better)
    if isinstance(predictions, JudgeResults):
        return evaluate_judge_results(predictions, bench, n_boot=n_boot, seed=seed, ci=ci)
    if not isinstance(bench, BenchmarkData):
        raise BenchError("evaluate_predictions needs a BenchmarkData (load_benchmark(...)) unless "
                         "the predictions are GenAI-Bench judge results")
    if not isinstance(predictions, Mapping):
        raise BenchError(f"predictions must map sample ids to {{dimension: score}}, got "
                         f"{type(predictions).__name__}")
    predictions = _canonical_predictions(predictions)
    specs, generic = protocol_for(bench.name, bench.protocol)
    if generic:
        st.notes.append(f"{bench.name!r} has no metric set of its own for protocol "
                        f"{bench.protocol!r}: the generic {bench.protocol} set is used")
    if bench.protocol == "pointwise":
        rows, pairs, coverage = _evaluate_pointwise(bench, predictions, specs, st)
    else:
        rows, coverage = _evaluate_preferences(bench, predictions, specs, st)
        pairs = {}
    meta = {"eps": st.eps, "n_boot": st.n_boot, "seed": st.seed, "ci": st.ci,
            "higher_better": st.higher_better, "source": bench.meta.get("source"),
            "bootstrap": "percentile; resamples whole groups when the data has group ids"
                         if st.n_boot else "off"}
    return BenchResult(bench.name, bench.protocol, rows, coverage, pairs, specs, st.notes, meta)


def _canonical_predictions(predictions: Predictions) -> dict[str, dict[str, float]]:
    """``{str id: {canonical dimension: float}}`` (aliases such as ``"SC"`` resolved)."""
    out: dict[str, dict[str, float]] = {}
    names: dict[str, str] = {}
    for ident, scores in predictions.items():
        if not isinstance(scores, Mapping):
            raise BenchError(f"prediction {ident!r} must map dimensions to scores, got "
                             f"{type(scores).__name__}")
        row: dict[str, float] = {}
        for key, value in scores.items():
            if value is None:
                continue
            if key not in names:
                try:
                    names[key] = canonical_dimension(key)
                except UnknownDimensionError as exc:
                    raise BenchError(f"prediction {ident!r}: {exc}") from None
            try:
                score = float(value)
            except (TypeError, ValueError):
                raise BenchError(f"prediction {ident!r}: {key}={value!r} is not a number") from None
            if not math.isfinite(score):
                raise BenchError(f"prediction {ident!r}: {key}={value!r} is not finite (leave the "
                                 "score out instead)")
            row[names[key]] = score
        out[str(ident)] = row
    return out


# --------------------------------------------------------------------------- pointwise


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
        raise _missing_error("samples", lost, len(ids), bench.name)
    kept = [s for s in bench.samples if s.id in preds]
    unused = len(set(preds) - set(ids))
    coverage = Coverage(len(ids), len(kept), lost[:_MAX_MISSING_LISTED], len(lost), unused)
    if lost:
        st.notes.append(f"{len(lost)} of {len(ids)} samples have no prediction and are left out")
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
            return res.value, res.n_groups, f"{res.n_groups} {what} ({res.n_skipped} skipped)"

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


# --------------------------------------------------------------------------- preferences


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
            raise _missing_error("candidates", lost, len(sample_ids), bench.name)
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
                        len(lost), unused)
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


def _evaluate_preferences(bench: BenchmarkData, preds: Predictions, specs: Sequence[MetricSpec],
                          st: _Settings):
    kept, idx, coverage = _select_preferences(bench, preds, st)
    rows: list[MetricRow] = []
    compute = {"genai_accuracy": _genai_rows, "pair_accuracy": _pair_accuracy_rows,
               "strict_accuracy": _strict_rows, "tie_calibrated": _tie_calibrated_rows,
               "tie_calibrated_optimistic": _tie_optimistic_rows, "multiway": _multiway_rows}
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


def _genai_rows(spec: MetricSpec, dim: str, pr: _Pairs, st: _Settings) -> list[MetricRow]:
    sign = _model_sign(pr.delta, st.eps)
    verdicts = np.where(sign > 0, "A>B", np.where(sign < 0, "B>A", "A=B"))

    def acc(idx: np.ndarray, _ids: Any = None) -> float:
        return pairwise_accuracy_genai(pr.votes[idx].tolist(), verdicts[idx].tolist())

    return _with_subsets(spec.name, dim, pr, st, acc, pr.votes, "|delta| <= eps is [[A=B]]")


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


# --------------------------------------------------------------------------- multi-way


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


# --------------------------------------------------------------------------- judge results


def _official_verdict(model_vote: str | None) -> str | None:
    """The normalised verdict of ``model_vote`` under GenAI-Bench's exact-string rule
    (``None`` unless the vote is one of :data:`OFFICIAL_GENAI_VOTES`)."""
    return parse_verdict(model_vote) if model_vote in OFFICIAL_GENAI_VOTES else None


def evaluate_judge_results(results: JudgeResults, bench: BenchmarkData | None = None, *,
                           n_boot: int = 0, seed: int = 0, ci: float = 0.95) -> BenchResult:
    """GenAI-Bench leaderboard accuracy of a judge's result file, two ways.

    ``accuracy_official``: from ``model_vote`` with the exact rule of GenAI-Bench's
    ``parse_response`` (see the module docstring) — what the official leaderboard
    prints. ``accuracy_reparsed``: from each ``response`` re-parsed with
    :func:`ieqa.metrics.parse_verdict` (last bracketed verdict; spaces and case ignored).
    ``verdicts_differ``: items whose two normalised verdicts differ. Both accuracies are
    also given per human vote (``subset``). With ``bench`` (the GenAI-Bench items),
    coverage and the human votes are checked against it.
    """
    st = _settings("raise", 0.0, n_boot, seed, ci, None, True)
    specs, _ = protocol_for("genai-bench", "judge")
    votes = np.asarray(results.human_votes)
    official = np.asarray([_official_verdict(r.model_vote) for r in results], dtype=object)
    reparsed = np.asarray(results.verdicts(from_response=True), dtype=object)
    groups = np.asarray([str(r.idx) for r in results])
    pr = _Pairs(np.zeros(len(votes)), np.zeros(len(votes)), np.zeros(len(votes), np.int8), votes,
                groups, None, groups, groups)

    def acc_of(verdicts: np.ndarray) -> Callable[[np.ndarray, Any], float]:
        def acc(idx: np.ndarray, _ids: Any = None) -> float:
            return pairwise_accuracy_genai(votes[idx].tolist(), verdicts[idx].tolist())

        return acc

    rows = _with_subsets("accuracy_official", "overall", pr, st, acc_of(official), votes,
                         "model_vote, exact official strings")
    has_response = any(r.response is not None for r in results)
    if has_response:
        rows += _with_subsets("accuracy_reparsed", "overall", pr, st, acc_of(reparsed), votes,
                              "response re-parsed with ieqa.metrics.parse_verdict")
        differ = int(sum(a != b for a, b in zip(official, reparsed, strict=True)))
        rows.append(MetricRow("overall", "verdicts_differ", float(differ), n=len(votes),
                              note="items whose official and re-parsed verdicts differ",
                              unit="count"))
    else:
        st.notes.append("the results carry no 'response' text: only the official accuracy is "
                        "computed")
    _judge_notes(results, official, reparsed, has_response, st)
    coverage = _judge_coverage(results, bench, st)
    meta = {"n_boot": st.n_boot, "seed": st.seed, "ci": st.ci, "source": results.source,
            "official_votes": sorted(OFFICIAL_GENAI_VOTES),
            "bootstrap": "percentile over items" if st.n_boot else "off"}
    return BenchResult("genai-bench", "judge", rows, coverage, {}, specs, st.notes, meta)


def _judge_notes(results: JudgeResults, official: np.ndarray, reparsed: np.ndarray,
                 has_response: bool, st: _Settings) -> None:
    odd = [r.model_vote for r in results
           if r.model_vote is not None and r.model_vote not in OFFICIAL_GENAI_VOTES]
    if odd:
        lenient = sum(parse_verdict(v) is not None for v in odd)
        st.notes.append(f"{len(odd)} model_vote values are not one of the official strings "
                        f"(e.g. {odd[0]!r}); the official rule counts them wrong ({lenient} of "
                        "them hold a verdict ieqa's parser would read)")
    n_null = sum(v is None for v in official)
    st.notes.append(f"no usable official verdict for {n_null} of {len(official)} items "
                    "(counted wrong)")
    if has_response:
        st.notes.append(f"no verdict found in the response of {sum(v is None for v in reparsed)} "
                        "items (counted wrong)")
    flags = [r.meta.get("correct") for r in results]
    if all(isinstance(f, bool) for f in flags):
        ours = [genai_bench_correct(r.human_vote, v)
                for r, v in zip(results, official, strict=True)]
        mismatch = sum(a != b for a, b in zip(ours, flags, strict=True))
        st.notes.append("the file's own 'correct' flags agree with the official rule on every item"
                        if not mismatch else
                        f"the file's own 'correct' flags disagree with the official rule on "
                        f"{mismatch} items")


def _judge_coverage(results: JudgeResults, bench: BenchmarkData | None, st: _Settings) -> Coverage:
    if bench is None:
        return Coverage(len(results), len(results))
    items = {p.meta.get("idx"): p for p in bench.preferences if p.meta.get("idx") is not None}
    if not items:
        raise BenchError(f"{bench.name} has no GenAI-Bench item indices (preference.meta['idx']); "
                         "judge results are matched to the items by idx")
    by_idx = results.by_idx()
    lost = sorted(i for i in items if i not in by_idx)
    unused = sum(1 for i in by_idx if i not in items)
    if lost:
        st.notes.append(f"{len(lost)} of {len(items)} GenAI-Bench items have no judge result")
    if unused:
        st.notes.append(f"{unused} judge results have an idx that is not an item of {bench.name}")
    clash = sum(1 for i, r in by_idx.items() if i in items
                and items[i].meta.get("vote_type", r.human_vote) != r.human_vote)
    if clash:
        st.notes.append(f"{clash} judge results carry a human_vote that differs from the item's "
                        "vote_type: are the results from another split?")
    listed = [str(i) for i in lost[:_MAX_MISSING_LISTED]]
    return Coverage(len(items), len(items) - len(lost), listed, len(lost), unused)


# --------------------------------------------------------------------------- outputs


def format_value(row: MetricRow) -> str:
    """Display text: accuracies as percentages (2 decimals), correlations and scores with
    4 decimals, counts as integers; ``–`` for NaN."""
    v = row.value
    if v is None or not math.isfinite(v):
        return "–"
    if row.unit == "accuracy":
        return f"{100 * v:.2f}%"
    if row.unit == "count":
        return str(int(v))
    return f"{v:.4f}"


def format_ci(row: MetricRow) -> str:
    """``[low, high]`` in the row's display units, or ``""``."""
    if row.ci_low is None or row.ci_high is None:
        return ""
    lo = MetricRow(row.dimension, row.metric, row.ci_low, unit=row.unit)
    hi = MetricRow(row.dimension, row.metric, row.ci_high, unit=row.unit)
    return f"[{format_value(lo)}, {format_value(hi)}]"


_CSV_COLUMNS = ("benchmark", "protocol", "dimension", "subset", "metric", "value", "ci_low",
                "ci_high", "n", "unit", "note")
DISPLAY_COLUMNS = ("dimension", "subset", "metric", "value", "CI", "n", "note")


def display_rows(result: BenchResult) -> list[list[str]]:
    """Text rows (:data:`DISPLAY_COLUMNS`) for tables."""
    return [[r.dimension, r.subset, r.metric, format_value(r), format_ci(r), str(r.n), r.note]
            for r in result.rows]


def _figures(report: HtmlReport, result: BenchResult) -> None:
    """One predicted-vs-human scatter per dimension (pointwise), or bar charts of the
    per-subset values (pairwise / multi-way / judge)."""
    if result.pairs:
        for dim, (pred, human) in result.pairs.items():
            report.add_figure(scatter_plot(pred, human, dim, "predicted", "human"),
                              f"{dim}: predicted vs human ({len(pred)} items; the title gives "
                              "SRCC and raw PLCC)")
        return
    charts: dict[tuple[str, str], list[MetricRow]] = {}
    for r in result.rows:
        if r.subset != "all" and r.unit == "accuracy" and math.isfinite(r.value):
            charts.setdefault((r.metric, r.dimension), []).append(r)
    for (metric, dim), rows in charts.items():
        values = np.array([100 * r.value for r in rows])
        errors = None
        if all(r.ci_low is not None for r in rows):
            errors = np.vstack([values - 100 * np.array([r.ci_low for r in rows]),
                                100 * np.array([r.ci_high for r in rows]) - values])
        report.add_figure(bar_chart([r.subset for r in rows], values, errors,
                                    title=f"{metric} ({dim})", ylabel="accuracy (%)"),
                          f"{metric} on {dim} per subset" + ("" if errors is None else
                          f"; error bars: {round(100 * result.meta.get('ci', 0.95))}% CI"))


def write_bench_outputs(result: BenchResult, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``results.json``, ``results.csv`` and ``report.html`` (metric table, protocol
    table, figures; standalone, no external URL) into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "csv": out / "results.csv", "html": out / "report.html"}
    write_json(paths["json"], result.to_dict())
    write_csv(paths["csv"], [{"benchmark": result.benchmark, "protocol": result.protocol,
                              **r.to_dict()} for r in result.rows], _CSV_COLUMNS)
    report = HtmlReport(f"{result.benchmark}: {result.protocol} benchmark")
    cov = result.coverage
    report.add_paragraph(f"{cov.n_predicted} of {cov.n_items} items have predictions"
                         + (f"; {cov.n_missing} missing" if cov.n_missing else "")
                         + (f"; {cov.n_unused} predictions unused" if cov.n_unused else "")
                         + ". Accuracies are in %, correlations in [-1, 1].")
    report.add_table(display_rows(result), DISPLAY_COLUMNS)
    report.add_heading("Protocol")
    report.add_table([[s.name, s.label, s.per, s.ties, s.plcc, s.needs, s.source]
                      for s in result.specs],
                     ["metric", "label", "per", "ties", "PLCC", "needs", "source"])
    notes = list(result.notes)
    try:
        _figures(report, result)
    except IeqaError as exc:  # matplotlib missing: the report keeps its tables
        notes.append(f"no figures: {exc}")
    if notes:
        report.add_heading("Notes")
        for note in notes:
            report.add_paragraph(note)
    settings = ", ".join(f"{k}={v}" for k, v in result.meta.items() if v is not None)
    report.add_paragraph(f"Settings: {settings}")
    report.save(paths["html"])
    return paths
