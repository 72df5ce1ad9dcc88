"""``ieqa mos``: mean opinion scores from raw human ratings, with a screening report.

Input (RATINGS), by file name:

* a manifest (``.jsonl``, ``.jsonl.gz``, ``.parquet``) whose samples carry ``ratings``
  (item = sample id);
* a long-form table (``.csv``, ``.tsv``, ``.tab``, ``.txt``) with a header and one rating
  per row: columns ``item``, ``rater``, ``value`` and optionally ``dimension`` (names set
  with ``--item-col`` ...; without a dimension column every rating is on ``--dimension``).
  Empty / NA value cells are missing ratings (counted in the report).

Output (``--out``), by file name:

* a table (``.csv`` / ``.tsv``): one row per (item, dimension) with columns
  ``item, dimension, mos, std, ci95, n_ratings, n_dropped`` (empty cell = NaN). Works for
  any input.
* a manifest (``.jsonl``, ``.jsonl.gz``, ``.parquet``): the samples with
  ``scores[dimension] = MOS`` (existing scores on that dimension are replaced; ratings
  are kept) and ``meta["mos"][dimension] = {method, scale, std, ci95, n_ratings}``.
  The samples are the input manifest's, or for CSV input those of ``--manifest``
  (matched by ``sample.id == item``; an item with no such sample is an error; samples
  without ratings are written unchanged). Items whose every rating was dropped get no
  score.

The report lists per dimension the ratings used and dropped, rejected raters with their
outlier fraction, and the reliability of the raw ratings (ICC(2,1) on the items every
rater rated, Krippendorff's alpha (interval) on all).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from ieqa.errors import IeqaError
from ieqa.human import (
    MosResult,
    RatingTable,
    csv_columns,
    ecdf_probit_mos,
    icc,
    iqr_mos,
    krippendorff_alpha,
    mean_opinion_score,
    zscore_mos,
)

NAME = "mos"

METHODS = ("zscore", "iqr", "mean", "ecdf-probit")
_MANIFEST_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")
_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")

console = Console()


@dataclass
class _Dim:
    """One dimension's matrix (raw ratings) and its MOS result."""

    items: np.ndarray
    raters: np.ndarray
    matrix: np.ndarray
    result: MosResult


def _kind(path: Path, option: str, allowed: tuple[str, ...]) -> str:
    name = path.name.lower()
    if name.endswith(_MANIFEST_SUFFIXES) and "manifest" in allowed:
        return "manifest"
    if name.endswith(_TABLE_SUFFIXES) and "table" in allowed:
        return "table"
    kinds = [*(_MANIFEST_SUFFIXES if "manifest" in allowed else ()), *(_TABLE_SUFFIXES if "table" in allowed else ())]
    raise typer.BadParameter(f"{path.name}: unsupported file type; use one of {', '.join(kinds)}", param_hint=option)


def _read_table(ratings: Path, cols: dict[str, str], dimension_col: str | None, dimension: str) -> RatingTable:
    header = csv_columns(ratings)
    for option, col in cols.items():
        if col not in header:
            raise typer.BadParameter(f"column {col!r} not in {ratings.name} (columns: {', '.join(header)})",
                                     param_hint=option)
    if dimension_col is None:
        dimension_col = "dimension" if "dimension" in header else None
    elif dimension_col not in header:
        raise typer.BadParameter(f"column {dimension_col!r} not in {ratings.name} (columns: {', '.join(header)})",
                                 param_hint="--dimension-col")
    return RatingTable.from_csv(ratings, cols["--item-col"], cols["--rater-col"], cols["--value-col"],
                                dimension_col, dimension=dimension)


def _compute(matrix: np.ndarray, method: str, opts: dict) -> MosResult:
    if method == "zscore":
        return zscore_mos(matrix, screen=opts["screen"], outlier_sigma=opts["outlier_sigma"],
                          max_outlier_fraction=opts["max_outlier_fraction"], rescale=opts["rescale"])
    if method == "iqr":
        return iqr_mos(matrix, k=opts["iqr_k"])
    if method == "mean":
        return mean_opinion_score(matrix)
    return ecdf_probit_mos(matrix)


def _reliability(matrix: np.ndarray) -> tuple[list[str], list[str]]:
    """Report cells (ICC(2,1), items used, interval alpha) for the raw matrix, and the
    reasons of the statistics that are undefined for it."""
    cells, notes = [], []
    for name, fn in (("ICC(2,1)", lambda m: icc(m, "ICC(2,1)")),
                     ("alpha", lambda m: krippendorff_alpha(m, "interval"))):
        try:
            cells.append(f"{fn(matrix):.3f}")
        except IeqaError as exc:
            cells.append("n/a")
            notes.append(f"{name}: {exc}")
    cells.insert(1, str(int((~np.isnan(matrix)).all(axis=1).sum())))
    return cells, notes


def _fmt(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def _write_table(out: Path, results: dict[str, _Dim]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    delimiter = "," if out.name.lower().endswith(".csv") else "\t"
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter=delimiter)
        w.writerow(["item", "dimension", "mos", "std", "ci95", "n_ratings", "n_dropped"])
        for dim, d in results.items():
            items, res = d.items, d.result
            dropped = res.present.sum(axis=1) - res.kept.sum(axis=1)
            for i, item in enumerate(items.tolist()):
                w.writerow([item, dim, _fmt(res.mos[i]), _fmt(res.std[i]), _fmt(res.ci95[i]),
                            int(res.n_ratings[i]), int(dropped[i])])


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _write_manifest(out: Path, samples: list, results: dict[str, _Dim]) -> tuple[int, int]:
    from ieqa.data.manifest import write_manifest

    by_id = {s.id: k for k, s in enumerate(samples)}
    updates: dict[int, tuple[dict, dict]] = {}
    replaced = 0
    for dim, d in results.items():
        items, res = d.items, d.result
        unknown = [it for it in items.tolist() if it not in by_id]
        if unknown:
            raise typer.BadParameter(f"{len(unknown)} rated item(s) match no sample id, e.g. {unknown[:5]}",
                                     param_hint="--manifest")
        for i, item in enumerate(items.tolist()):
            if math.isnan(res.mos[i]):
                continue
            k = by_id[item]
            scores, meta = updates.setdefault(k, ({}, {}))
            replaced += dim in samples[k].scores
            scores[dim] = float(res.mos[i])
            meta[dim] = {"method": res.method, "scale": res.scale, "std": _none_if_nan(res.std[i]),
                         "ci95": _none_if_nan(res.ci95[i]), "n_ratings": int(res.n_ratings[i])}
    for k, (scores, meta) in updates.items():
        s = samples[k]
        samples[k] = s.model_copy(update={"scores": {**s.scores, **scores},
                                          "meta": {**s.meta, "mos": {**s.meta.get("mos", {}), **meta}}})
    write_manifest(samples, out)
    return len(updates), replaced


def _report(table: RatingTable, results: dict[str, _Dim], method: str) -> None:
    console.print(f"[bold]{len(table) - table.n_missing}[/bold] ratings, method [bold]{method}[/bold]"
                  + (f"; {table.n_missing} empty value cell(s) ignored" if table.n_missing else ""))
    summary = Table(title="MOS per dimension", title_justify="left")
    for col in ("dimension", "items", "raters", "used", "dropped", "outliers", "rejected", "MOS range"):
        summary.add_column(col, justify="left" if col == "dimension" else "right", overflow="fold")
    reliability = Table(title="reliability of the raw ratings", title_justify="left")
    for col in ("dimension", "ICC(2,1)", "complete items", "alpha (interval)"):
        reliability.add_column(col, justify="left" if col == "dimension" else "right")
    rejected = Table(title="rejected raters", title_justify="left")
    for col in ("dimension", "rater", "outlier fraction", "reason"):
        rejected.add_column(col)
    notes: list[str] = []
    for dim, d in results.items():
        res = d.result
        finite = res.mos[~np.isnan(res.mos)]
        rng = f"{finite.min():.3g} - {finite.max():.3g}" if finite.size else "-"
        summary.add_row(dim, str(len(d.items)), str(len(d.raters)), str(int(res.kept.sum())),
                        str(res.n_dropped), str(res.n_outliers), str(len(res.rejected_raters)), rng)
        cells, why = _reliability(d.matrix)
        reliability.add_row(dim, *cells)
        notes += [f"{dim}: {w}" for w in why]
        for j in res.rejected_raters.tolist():
            rejected.add_row(dim, str(d.raters[j]), f"{res.rater_outlier_fraction[j]:.1%}",
                             res.rejection_reasons[j] or "")
        if res.items_without_ratings.size:
            empty = res.items_without_ratings
            notes.append(f"[yellow]{dim}: {empty.size} item(s) have no rating left and get no MOS, "
                         f"e.g. {d.items[empty[:5]].tolist()}[/yellow]")
        if res.n_clipped:
            notes.append(f"{dim}: {res.n_clipped} rescaled rating(s) clipped into [0, 100]")
    console.print(summary)
    console.print(rejected if rejected.row_count else "no rater rejected")
    console.print(reliability)
    for note in notes:
        console.print(note)


def command(
    ratings: Path = typer.Argument(..., help="Manifest with per-sample `ratings` (.jsonl/.jsonl.gz/.parquet) "
                                   "or a long-form CSV/TSV: one rating per row (item, rater, value[, dimension])."),
    out: Path = typer.Option(..., "--out", "-o", help="A .csv/.tsv table (item, dimension, mos, std, ci95, "
                             "n_ratings, n_dropped) or a manifest (.jsonl/.parquet) with scores set to the MOS."),
    method: str = typer.Option("zscore", "--method", help="zscore (EditHF/BT.500) | iqr (EPAIQA) | mean | "
                               "ecdf-probit (ReasonEdit)"),
    manifest: Path | None = typer.Option(None, "--manifest", "-m", exists=True, dir_okay=False, help="CSV input + manifest output: the "
                                         "samples to attach the MOS to (sample id = item)."),
    item_col: str = typer.Option("item", "--item-col", help="CSV column of the item (sample) id."),
    rater_col: str = typer.Option("rater", "--rater-col", help="CSV column of the rater id."),
    value_col: str = typer.Option("value", "--value-col", help="CSV column of the rating."),
    dimension_col: str | None = typer.Option(None, "--dimension-col", help="CSV column of the dimension "
                                             "(default: 'dimension' when present)."),
    dimension: str = typer.Option("overall", "--dimension", help="Dimension of every rating when the CSV "
                                  "has no dimension column."),
    screen: str = typer.Option("bt500", "--screen", help="zscore: bt500 (2-sigma outliers, raters with "
                               "> max-outlier-fraction rejected) | none."),
    outlier_sigma: float = typer.Option(2.0, "--outlier-sigma", help="zscore: outlier distance in item SDs."),
    max_outlier_fraction: float = typer.Option(0.05, "--max-outlier-fraction",
                                               help="zscore: reject raters with a larger outlier share."),
    rescale: str = typer.Option("100(z+3)/6", "--rescale", help="zscore: 100(z+3)/6 | minmax | none."),
    iqr_k: float = typer.Option(1.5, "--iqr-k", help="iqr: fences at Q1 - k IQR and Q3 + k IQR."),
) -> None:
    """Compute MOS per item and dimension from raw ratings and report who was screened out."""
    if method not in METHODS:
        raise typer.BadParameter(f"unknown method {method!r}; choose one of: {', '.join(METHODS)}",
                                 param_hint="--method")
    for value, option, allowed in ((screen, "--screen", ("bt500", "none")),
                                   (rescale, "--rescale", ("100(z+3)/6", "minmax", "none"))):
        if value not in allowed:
            raise typer.BadParameter(f"{value!r}; choose one of: {', '.join(allowed)}", param_hint=option)
    for ok, option, rule in ((outlier_sigma > 0, "--outlier-sigma", "must be > 0"),
                             (0 <= max_outlier_fraction <= 1, "--max-outlier-fraction", "must be in [0, 1]"),
                             (iqr_k >= 0, "--iqr-k", "must be >= 0")):
        if not ok:
            raise typer.BadParameter(rule, param_hint=option)
    in_kind = _kind(ratings, "RATINGS", ("manifest", "table"))
    out_kind = _kind(out, "--out", ("manifest", "table"))
    if manifest is not None and in_kind == "manifest":
        raise typer.BadParameter("only for CSV/TSV ratings (a manifest input already holds the samples)",
                                 param_hint="--manifest")
    if in_kind == "table" and out_kind == "manifest" and manifest is None:
        raise typer.BadParameter("writing a manifest from CSV/TSV ratings needs --manifest (the samples to "
                                 "attach scores to); or write a .csv table", param_hint="--out")
    if not ratings.is_file():
        raise typer.BadParameter(f"{ratings} does not exist", param_hint="RATINGS")
    opts = {"screen": screen, "outlier_sigma": outlier_sigma, "max_outlier_fraction": max_outlier_fraction,
            "rescale": rescale, "iqr_k": iqr_k}
    try:
        from ieqa.data.manifest import iter_manifest

        samples = None
        if in_kind == "manifest":
            samples = list(iter_manifest(ratings))
            table = RatingTable.from_samples(samples)
        else:
            cols = {"--item-col": item_col, "--rater-col": rater_col, "--value-col": value_col}
            table = _read_table(ratings, cols, dimension_col, dimension)
            if out_kind == "manifest":
                samples = list(iter_manifest(manifest))
        if len(table) == table.n_missing:
            raise typer.BadParameter(f"{ratings.name} holds no rating", param_hint="RATINGS")
        results = {}
        for dim in table.dimensions:
            items, raters, matrix = table.to_matrix(dim)
            results[dim] = _Dim(items, raters, matrix, _compute(matrix, method, opts))
        _report(table, results, method)
        if out_kind == "table":
            _write_table(out, results)
            console.print(f"wrote [bold]{out}[/bold] ({sum(len(d.items) for d in results.values())} rows)")
        else:
            n_scored, n_replaced = _write_manifest(out, samples, results)
            console.print(f"wrote [bold]{out}[/bold]: {n_scored} of {len(samples)} samples scored"
                          + (f", {n_replaced} existing score(s) replaced" if n_replaced else ""))
    except IeqaError as exc:
        raise typer.BadParameter(str(exc), param_hint="RATINGS") from None
