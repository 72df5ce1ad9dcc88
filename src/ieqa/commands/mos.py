"""``ieqa mos``: mean opinion scores from raw human ratings, with a screening report.

Input (RATINGS), by file name:

* a manifest (``.jsonl``, ``.jsonl.gz``, ``.parquet``) whose samples carry ``ratings``
  (item = sample id);
* a long-form table (``.csv``, ``.tsv``, ``.tab``, ``.txt``) with a header and one rating
  per row: columns ``item``, ``rater``, ``value`` and optionally ``dimension`` (names set
  with ``--item-col`` ...; without a dimension column every rating is on ``--dimension``).
  Empty / NA value cells are missing ratings (counted in the report).

The rating scale (``--scale LO,HI``, e.g. ``--scale 1,5``; for a manifest also its
samples' ``meta["rating_scale"]``, which ``ieqa mos`` writes) must be declared: a rating
outside it is an error naming item and rater, unless ``--clip`` clips it into the scale.
A rater who rated one item twice on one dimension is an error unless ``--duplicates mean``
(average) or ``--duplicates first`` (keep the first row in file order).

``--method epaiqa`` is EPAIQA's whole cleaning (:func:`ieqa.human.epaiqa_mos`) on ratings of
``overall``, ``harmony``, ``local_naturalness`` and ``prompt_completion`` (levels 1-3):
a rater's completion below 3 with an overall rating above 2 is a conflict and both go
(``--conflicts keep`` keeps them); IQR outliers (``--iqr-k``) are removed on overall,
harmony and naturalness; a rater's completion rating goes with their removed overall
rating; the MOS is the mean of the rest and the completion level a vote (a tied vote takes
the ``--vote-tie`` level). Every removed rating is reported (counts per dimension and
reason, then the ratings themselves) and ``--removed FILE`` writes them all to a CSV
(``dimension, item, rater, value, reason``). It screens no rater (``--screen auto`` =
``none``).

Screening (``--screen``, rules joined by commas, or ``none``; default ``auto`` =
``bt500,corr`` for ``--method zscore``, ``corr`` for iqr, mean and ecdf-probit):

* ``bt500`` (zscore only): ratings beyond ``--outlier-sigma`` SDs of their item mean are
  outliers; a rater with more than ``--max-outlier-fraction`` outliers is rejected, and
  so is a rater whose kept ratings have zero variance (they cannot be z-scored). It can
  flag nothing with 5 or fewer ratings per item (see :mod:`ieqa.human.screening`); the
  report says so.
* ``corr``: leave-one-rater-out agreement, for any panel size: a rater whose ratings
  correlate (SRCC) below ``--min-rater-corr`` (default 0.3) with the mean of the other
  raters, over at least 10 shared items, is rejected
  (:func:`ieqa.human.agreement_screen`). It runs before the MOS method, which never sees
  the rejected raters.
* ``none``: nobody is rejected (zscore: a rater who gave every item the same rating gets
  z = 0, i.e. 50 on the 0-100 scale).

Output (``--out``), by file name:

* a table (``.csv`` / ``.tsv``): one row per (item, dimension) with columns
  ``item, dimension, mos, std, ci95, n_ratings, n_dropped`` (empty cell = NaN). Works for
  any input.
* a manifest (``.jsonl``, ``.jsonl.gz``, ``.parquet``): the samples with
  ``scores[dimension] = MOS`` and ``meta["mos"][dimension] = {method, scale, std, ci95,
  n_ratings}``; ``meta["score_scale"]`` is the range of the MOS (``[0, 100]`` for zscore
  rescaled 100(z+3)/6 or minmax, the rating scale for mean and iqr, absent for z-scores
  and ecdf-probit, which are unbounded) and ``meta["rating_scale"]`` the declared rating
  scale. A sample's scores on dimensions without a MOS here are kept only when its
  previous ``meta["score_scale"]`` equals the new one (one manifest, one scale); the
  report counts the ones removed. The samples are the input manifest's, or for CSV input
  those of ``--manifest`` (matched by ``sample.id == item``; an item with no such sample
  is an error; samples without ratings are written unchanged). Items whose every rating
  was dropped get no score.

The report lists per dimension the ratings used and dropped, every rejected rater with
the rule that rejected them, and the reliability of the raw ratings (ICC(2,1) on the items
every rater rated, Krippendorff's alpha (interval) on all).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from ieqa.commands._mos_output import (
    MosDim,
    print_removed,
    print_report,
    write_manifest_scores,
    write_removed,
    write_table,
)
from ieqa.errors import IeqaError
from ieqa.human import (
    MIN_RATER_SRCC,
    MIN_SHARED_ITEMS,
    AllRatersRejectedError,
    DuplicateRatingsError,
    MosResult,
    RatingTable,
    agreement_screen,
    csv_columns,
    ecdf_probit_mos,
    epaiqa_mos,
    iqr_mos,
    mean_opinion_score,
    mos_without_raters,
    zscore_mos,
)

NAME = "mos"

METHODS = ("zscore", "iqr", "mean", "ecdf-probit", "epaiqa")
VOTE_TIES = ("lower", "higher", "median")
CONFLICTS = ("drop", "keep")
RULES = ("bt500", "corr")
DUPLICATES = {"error": "raise", "mean": "mean", "first": "first"}
_MANIFEST_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")
_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")

console = Console()


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
            raise typer.BadParameter(f"column {col!r} not in {ratings.name} (columns: {', '.join(header)}); "
                                     f"name the right one with {option}", param_hint=option)
    if dimension_col is None:
        dimension_col = "dimension" if "dimension" in header else None
    elif dimension_col not in header:
        raise typer.BadParameter(f"column {dimension_col!r} not in {ratings.name} (columns: {', '.join(header)}); "
                                 "name the right one with --dimension-col", param_hint="--dimension-col")
    return RatingTable.from_csv(ratings, cols["--item-col"], cols["--rater-col"], cols["--value-col"],
                                dimension_col, dimension=dimension)


# --------------------------------------------------------------------------- options

def _parse_scale(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.replace(" ", "").split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: write the lowest and highest possible rating as LO,HI, "
                                 "e.g. --scale 1,5", param_hint="--scale") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise typer.BadParameter(f"{text!r}: need finite LO < HI, e.g. --scale 1,5", param_hint="--scale")
    return lo, hi


def _parse_screen(text: str, method: str) -> frozenset[str]:
    if text == "auto":
        return frozenset(RULES) if method == "zscore" else frozenset() if method == "epaiqa" else frozenset({"corr"})
    if text == "none":
        return frozenset()
    if method == "epaiqa":
        raise typer.BadParameter(f"{text!r}: EPAIQA's cleaning screens no rater; leave --screen out (or give "
                                 "none), or screen raters with --method iqr --screen corr", param_hint="--screen")
    rules = [r.strip() for r in text.split(",")]
    unknown = [r for r in rules if r not in RULES]
    if unknown or not rules:
        raise typer.BadParameter(f"{text!r}; choose auto, none, or rules joined by commas from: "
                                 f"{', '.join(RULES)} (e.g. --screen bt500,corr)", param_hint="--screen")
    if "bt500" in rules and method != "zscore":
        raise typer.BadParameter(f"bt500 screening is part of --method zscore; with --method {method} "
                                 "use --screen corr or --screen none", param_hint="--screen")
    return frozenset(rules)


def _manifest_rating_scale(samples: list) -> tuple[float, float] | None:
    """The ``meta["rating_scale"]`` every rated sample states, or ``None``."""
    stated = {tuple(s.meta["rating_scale"]) if isinstance(s.meta.get("rating_scale"), (list, tuple))
              else None for s in samples if s.ratings}
    if len(stated) != 1 or None in stated:
        return None
    lo, hi = (float(x) for x in stated.pop())
    return (lo, hi) if lo < hi else None


def _check_scale(table: RatingTable, scale: tuple[float, float], clip: bool) -> tuple[RatingTable, int]:
    """``table`` with its ratings checked against ``scale`` (clipped with ``clip``)."""
    bad = table.outside(*scale)
    if bad.size and not clip:
        named = ", ".join(f"item {str(table.item[r])!r} rater {str(table.rater[r])!r} ({table.dimension[r]}) = "
                          f"{table.value[r]:g}" for r in bad[:5])
        raise typer.BadParameter(
            f"{bad.size} rating(s) lie outside the rating scale [{scale[0]:g}, {scale[1]:g}]: {named}"
            f"{' ...' if bad.size > 5 else ''}; fix them, declare the right scale with --scale LO,HI, "
            "or clip them into the scale with --clip", param_hint="RATINGS")
    return (table.clipped(*scale) if bad.size else table), int(bad.size)


# --------------------------------------------------------------------------- computing

def _method(method: str, rules: frozenset[str], opts: dict):
    def compute(matrix: np.ndarray) -> MosResult:
        if method == "zscore":
            return zscore_mos(matrix, screen="bt500" if "bt500" in rules else "none",
                              outlier_sigma=opts["outlier_sigma"],
                              max_outlier_fraction=opts["max_outlier_fraction"], rescale=opts["rescale"])
        if method == "iqr":
            return iqr_mos(matrix, k=opts["iqr_k"])
        if method == "mean":
            return mean_opinion_score(matrix)
        return ecdf_probit_mos(matrix)
    return compute


def _all_rejected(dim: str, raters: np.ndarray, reasons: tuple[str | None, ...]) -> typer.BadParameter:
    listed = "; ".join(f"{raters[j]}: {why}" for j, why in enumerate(reasons) if why)
    return typer.BadParameter(
        f"{dim}: every rater was rejected, so no MOS is left ({listed}); keep every rater with "
        "--screen none",
        param_hint="--screen")


def _duplicates_error(exc: DuplicateRatingsError) -> typer.BadParameter:
    return typer.BadParameter(
        f"{exc.count} (item, rater) pair(s) rated more than once on {exc.dimension!r}, e.g. "
        f"{exc.named()}; average them with --duplicates mean or keep the first with "
        "--duplicates first", param_hint="--duplicates")


def _compute(table: RatingTable, dim: str, method: str, rules: frozenset[str], opts: dict) -> MosDim:
    try:
        items, raters, matrix = table.to_matrix(dim, duplicates=DUPLICATES[opts["duplicates"]])
    except DuplicateRatingsError as exc:
        raise _duplicates_error(exc) from None
    agreement = None
    rejected, reasons = np.zeros(len(raters), dtype=bool), (None,) * len(raters)
    if "corr" in rules:
        agreement = agreement_screen(matrix, min_srcc=opts["min_rater_corr"], min_items=MIN_SHARED_ITEMS)
        rejected, reasons = agreement.rejected, agreement.reasons
        if rejected.all():
            raise _all_rejected(dim, raters, reasons)
    try:
        result = mos_without_raters(matrix, rejected, reasons, _method(method, rules, opts))
    except AllRatersRejectedError as exc:
        raise _all_rejected(dim, raters, tuple(r or z for r, z in zip(reasons, exc.reasons, strict=True))) from None
    return MosDim(items, raters, matrix, result, agreement)


def _compute_epaiqa(table: RatingTable, opts: dict):
    """EPAIQA's cleaning of every dimension at once: ``(results per dimension, EpaiqaResult)``."""
    try:
        cleaned = epaiqa_mos(table, k=opts["iqr_k"], conflicts=opts["conflicts"] == "drop",
                             tie_break=opts["vote_tie"], duplicates=DUPLICATES[opts["duplicates"]])
    except DuplicateRatingsError as exc:
        raise _duplicates_error(exc) from None
    return {dim: MosDim(c.items, c.raters, c.matrix, c.result, None) for dim, c in cleaned.dimensions.items()}, cleaned





# --------------------------------------------------------------------------- command

def command(
    ratings: Path = typer.Argument(..., help="Manifest with per-sample `ratings` (.jsonl/.jsonl.gz/.parquet) "
                                   "or a long-form CSV/TSV: one rating per row (item, rater, value[, dimension])."),
    out: Path = typer.Option(..., "--out", "-o", help="A .csv/.tsv table (item, dimension, mos, std, ci95, "
                             "n_ratings, n_dropped) or a manifest (.jsonl/.parquet) with scores set to the MOS."),
    scale: str | None = typer.Option(None, "--scale", help="LO,HI: the lowest and highest rating a rater could "
                                     "give, e.g. 1,5 (required unless a manifest's samples state "
                                     "meta.rating_scale). Ratings outside it are an error, or clipped with --clip."),
    clip: bool = typer.Option(False, "--clip", help="Clip ratings outside --scale into it (counted in the report) "
                              "instead of stopping."),
    duplicates: str = typer.Option("error", "--duplicates", help="A rater who rated an item twice on one "
                                   "dimension: error | mean (average the ratings) | first (keep the first row)."),
    method: str = typer.Option("zscore", "--method", help="zscore (EditHF/BT.500) | iqr (IQR outliers per "
                               "item) | mean | ecdf-probit (ReasonEdit) | epaiqa (EPAIQA's cleaning of overall, "
                               "harmony, naturalness and prompt completion, every removal reported)"),
    manifest: Path | None = typer.Option(None, "--manifest", "-m", exists=True, dir_okay=False, help="CSV input + manifest output: the "
                                         "samples to attach the MOS to (sample id = item)."),
    item_col: str = typer.Option("item", "--item-col", help="CSV column of the item (sample) id."),
    rater_col: str = typer.Option("rater", "--rater-col", help="CSV column of the rater id."),
    value_col: str = typer.Option("value", "--value-col", help="CSV column of the rating."),
    dimension_col: str | None = typer.Option(None, "--dimension-col", help="CSV column of the dimension "
                                             "(default: 'dimension' when present)."),
    dimension: str = typer.Option("overall", "--dimension", help="Dimension of every rating when the CSV "
                                  "has no dimension column."),
    screen: str = typer.Option("auto", "--screen", help="Rater screening: rules joined by commas from bt500 "
                               "(zscore: 2-sigma outliers, raters with > max-outlier-fraction or zero variance "
                               "rejected) and corr (leave-one-rater-out SRCC < --min-rater-corr over 10+ shared "
                               "items rejected); none rejects nobody; auto = bt500,corr for zscore, corr otherwise."),
    min_rater_corr: float = typer.Option(MIN_RATER_SRCC, "--min-rater-corr",
                                         help="corr: reject raters whose SRCC with the mean of the others is "
                                              "below this (-1..1)."),
    outlier_sigma: float = typer.Option(2.0, "--outlier-sigma", help="bt500: outlier distance in item SDs."),
    max_outlier_fraction: float = typer.Option(0.05, "--max-outlier-fraction",
                                               help="bt500: reject raters with a larger outlier share."),
    rescale: str = typer.Option("100(z+3)/6", "--rescale", help="zscore: 100(z+3)/6 | minmax | none."),
    iqr_k: float = typer.Option(1.5, "--iqr-k", help="iqr, epaiqa: fences at Q1 - k IQR and Q3 + k IQR."),
    conflicts: str = typer.Option("drop", "--conflicts", help="epaiqa: a rater's prompt completion below 3 "
                                  "with overall above 2 (EPAIQA's instructions cap overall at 2 when the prompt "
                                  "is not fully followed): drop both ratings | keep them."),
    vote_tie: str = typer.Option("lower", "--vote-tie", help="epaiqa: a tied prompt-completion vote takes the "
                                 "lower | higher | median tied level (tied items are reported)."),
    removed: Path | None = typer.Option(None, "--removed", help="epaiqa: write every removed rating to this "
                                        "CSV (dimension, item, rater, value, reason)."),
) -> None:
    """Compute MOS per item and dimension from raw ratings and report who was screened out."""
    if method not in METHODS:
        raise typer.BadParameter(f"unknown method {method!r}; choose one of: {', '.join(METHODS)}",
                                 param_hint="--method")
    rules = _parse_screen(screen, method)
    for value, option, allowed in ((rescale, "--rescale", ("100(z+3)/6", "minmax", "none")),
                                   (duplicates, "--duplicates", tuple(DUPLICATES)),
                                   (conflicts, "--conflicts", CONFLICTS), (vote_tie, "--vote-tie", VOTE_TIES)):
        if value not in allowed:
            raise typer.BadParameter(f"{value!r}; choose one of: {', '.join(allowed)}", param_hint=option)
    for ok, option, rule in ((outlier_sigma > 0, "--outlier-sigma", "must be > 0"),
                             (0 <= max_outlier_fraction <= 1, "--max-outlier-fraction", "must be in [0, 1]"),
                             (-1 <= min_rater_corr <= 1, "--min-rater-corr", "must be in [-1, 1]"),
                             (iqr_k >= 0, "--iqr-k", "must be >= 0")):
        if not ok:
            raise typer.BadParameter(rule, param_hint=option)
    if removed is not None and method != "epaiqa":
        raise typer.BadParameter("lists the ratings EPAIQA's cleaning removed: add --method epaiqa, or leave "
                                 "--removed out (the report counts the dropped ratings of every method)",
                                 param_hint="--removed")
    rating_scale = _parse_scale(scale) if scale is not None else None
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
    opts = {"outlier_sigma": outlier_sigma, "max_outlier_fraction": max_outlier_fraction,
            "rescale": rescale, "iqr_k": iqr_k, "duplicates": duplicates, "min_rater_corr": min_rater_corr,
            "conflicts": conflicts, "vote_tie": vote_tie}
    try:
        from ieqa.data.manifest import iter_manifest

        samples = None
        if in_kind == "manifest":
            samples = list(iter_manifest(ratings))
            table = RatingTable.from_samples(samples)
            rating_scale = rating_scale or _manifest_rating_scale(samples)
        else:
            cols = {"--item-col": item_col, "--rater-col": rater_col, "--value-col": value_col}
            table = _read_table(ratings, cols, dimension_col, dimension)
            if out_kind == "manifest":
                samples = list(iter_manifest(manifest))
        if len(table) == table.n_missing:
            raise typer.BadParameter(f"{ratings.name} holds no rating; give a file with at least one "
                                     "rating", param_hint="RATINGS")
        if rating_scale is None:
            lo, hi = np.nanmin(table.value), np.nanmax(table.value)
            raise typer.BadParameter(
                f"declare the rating scale: the lowest and highest rating a rater could give, e.g. "
                f"--scale 1,5 (the ratings in {ratings.name} range from {lo:g} to {hi:g})", param_hint="--scale")
        table, n_clipped = _check_scale(table, rating_scale, clip)
        pre = [f"{n_clipped} rating(s) outside [{rating_scale[0]:g}, {rating_scale[1]:g}] clipped into it "
               "(--clip)"] if n_clipped else []
        if method == "epaiqa":
            results, cleaned = _compute_epaiqa(table, opts)
        else:
            results = {dim: _compute(table, dim, method, rules, opts) for dim in table.dimensions}
        print_report(console, table, results, method, rules, opts, pre)
        if method == "epaiqa":
            print_removed(console, cleaned, listed_in=removed)
            if removed is not None:
                write_removed(removed, cleaned)
        if out_kind == "table":
            write_table(out, results)
            console.print(f"wrote [bold]{escape(str(out))}[/bold] "
                          f"({sum(len(d.items) for d in results.values())} rows)")
        else:
            counts = write_manifest_scores(out, samples, results, rating_scale)
            console.print(f"wrote [bold]{escape(str(out))}[/bold]: {counts['scored']} of {len(samples)} samples "
                          "scored" + (f", {counts['replaced']} existing score(s) replaced" if counts["replaced"] else "")
                          + (f", {counts['removed']} score(s) on other dimensions removed (they were on another "
                             "scale than the MOS)" if counts["removed"] else ""))
    except IeqaError as exc:
        raise typer.BadParameter(str(exc), param_hint="RATINGS") from None
