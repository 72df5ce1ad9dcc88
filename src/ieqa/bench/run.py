"""Evaluate predictions a user already has against a benchmark's own metric set.

Examples:
    >>> from ieqa.data.loaders import load_benchmark
    >>> from ieqa.bench.genai_judge import load_judge_results
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
  (when the samples carry ``group_id``; pair accuracy both pooled and averaged per
  group), SRCC per editor (Fisher z) where the protocol has it, and the NTIRE final score
  (``sample.meta["split"]`` in ``"in"`` / ``"out"``).
* **as published** — where a peer's released evaluation code computes a benchmark's
  number differently, the protocol also has a ``..._published`` metric following that
  code (``MetricSpec.published_beside`` names the correct one it stands beside);
  :func:`~ieqa.bench.outputs.published_rows` pairs them for display.
* **pairwise / multi-way with numeric predictions** — a pair's model verdict comes from
  ``delta = score(a) - score(b)`` (``Preference.a.id`` / ``.b.id``), a model tie when
  ``|delta| <= eps``. The predicted dimension is the preference's own dimension unless
  ``dimension=`` names one.
* **GenAI-Bench judge results** (:class:`~ieqa.bench.genai_judge.JudgeResults`) — the official
  accuracy from ``model_vote`` with the exact rule of GenAI-Bench's ``parse_response``
  (the vote string must be exactly one of ``[[A>B]]``, ``[[A>>B]]``, ``[[B>A]]``,
  ``[[B>>A]]``, ``[[A=B]]``, ``[[A=B=Good]]``, ``[[A=B=Bad]]``; ``[[A=B]]`` is right for
  both tie kinds; ``null`` or any other string is wrong), and the accuracy from
  re-parsing ``response`` with :func:`ieqa.prompts.answers.genai_bench_verdict`, plus how many items'
  verdicts differ.

Accuracies are fractions in [0, 1] (``MetricRow.unit == "accuracy"``; the CLI prints
percentages). Bootstrap confidence intervals (``n_boot`` > 0, percentile, seeded) resample
whole groups when the data has group ids, else items (or pairs).

This module is the entry point: :func:`evaluate_predictions` checks the predictions and
hands them to :mod:`ieqa.bench.pointwise` or :mod:`ieqa.bench.preferences` (which uses
:mod:`ieqa.bench.pairs` and :mod:`ieqa.bench.multiway`); judge results go to
:mod:`ieqa.bench.judge`. It re-exports the result types (:mod:`ieqa.bench.results`) and
the output helpers (:mod:`ieqa.bench.outputs`), so ``from ieqa.bench.run import ...``
gives every public name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ieqa.bench._common import Missing, Predictions, _settings
from ieqa.bench.errors import BenchError
from ieqa.bench.genai_judge import JudgeResults
from ieqa.bench.judge import OFFICIAL_GENAI_VOTES, evaluate_judge_results
from ieqa.bench.outputs import (
    DISPLAY_COLUMNS,
    PUBLISHED_COLUMNS,
    display_rows,
    format_ci,
    format_value,
    published_rows,
    write_bench_outputs,
)
from ieqa.bench.pointwise import _evaluate_pointwise
from ieqa.bench.preferences import _evaluate_preferences
from ieqa.bench.protocols import protocol_for
from ieqa.bench.results import BenchResult, Coverage, MetricRow
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.loaders.base import BenchmarkData
from ieqa.data.scorefile import check_join, join_fields, other_scorer_note
from ieqa.errors import UnknownDimensionError

__all__ = [
    "DISPLAY_COLUMNS", "OFFICIAL_GENAI_VOTES", "PUBLISHED_COLUMNS", "BenchResult", "Coverage",
    "MetricRow", "display_rows", "evaluate_judge_results", "evaluate_predictions", "format_ci",
    "format_value", "published_rows", "write_bench_outputs",
]


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
    max_mismatch: float = 0.0,
) -> BenchResult:
    """Compute ``bench``'s own metric set (:mod:`ieqa.bench.protocols`) from predictions.

    Args:
        bench: the loaded benchmark (:func:`ieqa.data.loaders.load_benchmark`); may be
            ``None`` for GenAI-Bench judge results.
        predictions: ``{sample id: {dimension: score}}`` (e.g.
            :func:`ieqa.bench.predictions.read_predictions`), or
            :class:`~ieqa.bench.genai_judge.JudgeResults` (see :func:`evaluate_judge_results`).
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
        max_mismatch: predictions that carry their inputs (a score file of ``ieqa score``)
            are joined with the benchmark's edits by id only after checking that they are
            the same edits (source, edited image, editor:
            :func:`ieqa.data.scorefile.check_join`); :class:`BenchError` when the share of
            mismatched ids is above this.
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
    st.failed = dict(getattr(predictions, "failed", {}) or {})
    inputs = getattr(predictions, "inputs", None)
    if inputs:
        join = check_join(inputs, {s.id: join_fields(s) for s in bench.samples}, sides=(getattr(predictions, "name", "the predictions"),
                                                 f"the {bench.name} data"),
                          max_mismatch=max_mismatch, error=BenchError)
        if join.note():
            st.notes.append(join.note())
    if getattr(predictions, "other_scorer_rows", 0):
        st.notes.append(other_scorer_note(predictions.other_scorer_rows,  # type: ignore[union-attr]
                                          getattr(predictions, "scorer", None)))
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
