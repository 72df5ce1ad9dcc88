"""Showing and saving a :class:`~ieqa.bench.results.BenchResult`: display text of values and
confidence intervals (:func:`format_value`, :func:`format_ci`, :func:`display_rows`) and
:func:`write_bench_outputs` (``results.json``, ``results.csv`` and a standalone
``report.html`` with the metric and protocol tables and figures).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ieqa.bench.results import BenchResult, MetricRow
from ieqa.errors import IeqaError
from ieqa.report import HtmlReport, bar_chart, scatter_plot, write_csv, write_json

__all__ = ["DISPLAY_COLUMNS", "PUBLISHED_COLUMNS", "display_rows", "format_ci", "format_value",
           "published_rows", "write_bench_outputs"]


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


PUBLISHED_COLUMNS = ("dimension", "ieqa (correct)", "value", "as published", "value ")


def published_rows(result: BenchResult) -> list[list[str]]:
    """The as-published numbers beside ieqa's correct ones, as text rows
    (:data:`PUBLISHED_COLUMNS`): one per row of a metric with ``published_beside``
    (:mod:`ieqa.bench.protocols`), matched to the correct metric's row of the same dimension
    and subset (``–`` where that has none, e.g. per K). The first cell is the dimension,
    with the subset after a comma unless it is ``all``; where the released code computes
    the correct number itself, the as-published cell says ``same number``."""
    by_key = {(r.metric, r.dimension, r.subset): r for r in result.rows}
    out = []
    for spec in result.specs:
        if not spec.published_beside:
            continue
        for r in result.rows:
            if r.metric != spec.name:
                continue
            where = r.dimension if r.subset == "all" else f"{r.dimension}, {r.subset}"
            if spec.published_beside == spec.name:
                out.append([where, r.metric, format_value(r), "same number", format_value(r)])
                continue
            correct = by_key.get((spec.published_beside, r.dimension, r.subset))
            out.append([where, spec.published_beside,
                         "–" if correct is None else format_value(correct),
                         r.metric, format_value(r)])
    return out


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
    report.add_paragraph(cov.describe() + ". Accuracies are in %, correlations in [-1, 1].")
    report.add_table(display_rows(result), DISPLAY_COLUMNS)
    beside = published_rows(result)
    if beside:
        report.add_heading("As published, beside the correct number")
        report.add_paragraph("Where a peer's released evaluation code computes the number "
                             "differently, its number is reported beside ieqa's correct one; the "
                             "protocol table names the released function.")
        report.add_table(beside, PUBLISHED_COLUMNS)
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
