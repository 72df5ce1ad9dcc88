"""Mean opinion scores from a ratings file, end to end: read the ratings (a manifest or a
long-form CSV/TSV), check them against the declared rating scale, compute the MOS of every
dimension with one method and its rater screening (:func:`run_mos`), and write the result
as a table or into the manifest (:func:`write_mos`). ``ieqa mos`` is the command; the
methods themselves are :mod:`ieqa.human.mos`, :mod:`ieqa.human.screening`,
:mod:`ieqa.human.ecdf_probit` and :mod:`ieqa.human.epaiqa`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.errors import OptionError
from ieqa.human.ecdf_probit import ecdf_probit_mos
from ieqa.human.epaiqa import EpaiqaResult, epaiqa_mos
from ieqa.human.mos import (
    AllRatersRejectedError,
    MosResult,
    iqr_mos,
    mean_opinion_score,
    zscore_mos,
)
from ieqa.human.ratings import DuplicateRatingsError, RatingTable, csv_columns
from ieqa.human.screening import (
    MIN_RATER_SRCC,
    MIN_SHARED_ITEMS,
    AgreementScreen,
    agreement_screen,
    mos_without_raters,
)

__all__ = ["CONFLICTS", "DUPLICATES", "METHODS", "RESCALES", "RULES", "VOTE_TIES", "MosDim",
           "MosInputError", "MosRun", "check_scale", "compute_dimension", "compute_epaiqa",
           "manifest_rating_scale", "mos_scale", "parse_scale", "parse_screen", "rating_file_kind",
           "read_rating_table", "run_mos", "write_manifest_scores", "write_mos", "write_removed",
           "write_table"]

METHODS = ("zscore", "iqr", "mean", "ecdf-probit", "epaiqa")
VOTE_TIES = ("lower", "higher", "median")
CONFLICTS = ("drop", "keep")
RULES = ("bt500", "corr")
DUPLICATES = {"error": "raise", "mean": "mean", "first": "first"}
_MANIFEST_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")
_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")
RESCALES = ("100(z+3)/6", "minmax", "none")


class MosInputError(OptionError):
    """The ratings or options cannot give a MOS as asked; ``option`` names the argument to
    change (``RATINGS``, ``--scale``, ...)."""


@dataclass
class MosDim:
    """One dimension's matrix (raw ratings), its agreement screen and its MOS result."""

    items: np.ndarray
    raters: np.ndarray
    matrix: np.ndarray
    result: MosResult
    agreement: AgreementScreen | None


def mos_scale(result: MosResult, rating_scale: tuple[float, float]) -> tuple[float, float] | None:
    """The range the MOS values lie in: ``None`` for unbounded ones (z-scores, probits)."""
    if result.method == "zscore":
        return None if result.params.get("rescale") == "none" else (0.0, 100.0)
    if result.method in ("mean", "iqr", "epaiqa", "epaiqa-vote"):
        return rating_scale
    return None


def rating_file_kind(path: Path, option: str, allowed: tuple[str, ...]) -> str:
    """``"manifest"`` or ``"table"`` by the file name of ``path``; :class:`MosInputError`
    naming ``option`` for another suffix or a kind not in ``allowed``."""
    name = path.name.lower()
    if name.endswith(_MANIFEST_SUFFIXES) and "manifest" in allowed:
        return "manifest"
    if name.endswith(_TABLE_SUFFIXES) and "table" in allowed:
        return "table"
    kinds = [*(_MANIFEST_SUFFIXES if "manifest" in allowed else ()), *(_TABLE_SUFFIXES if "table" in allowed else ())]
    raise MosInputError(f"{path.name}: unsupported file type; use one of {', '.join(kinds)}", option=option)


def read_rating_table(ratings: Path, cols: dict[str, str], dimension_col: str | None,
                      dimension: str) -> RatingTable:
    """A long-form CSV/TSV of ratings; ``cols`` maps ``--item-col``/``--rater-col``/``--value-col``
    to column names (each checked against the header)."""
    header = csv_columns(ratings)
    for option, col in cols.items():
        if col not in header:
            raise MosInputError(f"column {col!r} not in {ratings.name} (columns: {', '.join(header)}); "
                                     f"name the right one with {option}", option=option)
    if dimension_col is None:
        dimension_col = "dimension" if "dimension" in header else None
    elif dimension_col not in header:
        raise MosInputError(f"column {dimension_col!r} not in {ratings.name} (columns: {', '.join(header)}); "
                                 "name the right one with --dimension-col", option="--dimension-col")
    return RatingTable.from_csv(ratings, cols["--item-col"], cols["--rater-col"], cols["--value-col"],
                                dimension_col, dimension=dimension)


# --------------------------------------------------------------------------- options

def parse_scale(text: str) -> tuple[float, float]:
    """``"LO,HI"`` (e.g. ``"1,5"``) as ``(low, high)`` with finite ``low < high``."""
    try:
        lo, hi = (float(x) for x in text.replace(" ", "").split(","))
    except ValueError:
        raise MosInputError(f"{text!r}: write the lowest and highest possible rating as LO,HI, "
                                 "e.g. --scale 1,5", option="--scale") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise MosInputError(f"{text!r}: need finite LO < HI, e.g. --scale 1,5", option="--scale")
    return lo, hi


def parse_screen(text: str, method: str) -> frozenset[str]:
    """The screening rules ``--screen`` names for ``method`` (``auto``, ``none`` or rules
    from :data:`RULES` joined by commas)."""
    if text == "auto":
        return frozenset(RULES) if method == "zscore" else frozenset() if method == "epaiqa" else frozenset({"corr"})
    if text == "none":
        return frozenset()
    if method == "epaiqa":
        raise MosInputError(f"{text!r}: EPAIQA's cleaning screens no rater; leave --screen out (or give "
                                 "none), or screen raters with --method iqr --screen corr", option="--screen")
    rules = [r.strip() for r in text.split(",")]
    unknown = [r for r in rules if r not in RULES]
    if unknown or not rules:
        raise MosInputError(f"{text!r}; choose auto, none, or rules joined by commas from: "
                                 f"{', '.join(RULES)} (e.g. --screen bt500,corr)", option="--screen")
    if "bt500" in rules and method != "zscore":
        raise MosInputError(f"bt500 screening is part of --method zscore; with --method {method} "
                                 "use --screen corr or --screen none", option="--screen")
    return frozenset(rules)


def manifest_rating_scale(samples: list) -> tuple[float, float] | None:
    """The ``meta["rating_scale"]`` every rated sample states, or ``None``."""
    stated = {tuple(s.meta["rating_scale"]) if isinstance(s.meta.get("rating_scale"), (list, tuple))
              else None for s in samples if s.ratings}
    if len(stated) != 1 or None in stated:
        return None
    lo, hi = (float(x) for x in stated.pop())
    return (lo, hi) if lo < hi else None


def check_scale(table: RatingTable, scale: tuple[float, float], clip: bool) -> tuple[RatingTable, int]:
    """``table`` with its ratings checked against ``scale`` (clipped with ``clip``)."""
    bad = table.outside(*scale)
    if bad.size and not clip:
        named = ", ".join(f"item {str(table.item[r])!r} rater {str(table.rater[r])!r} ({table.dimension[r]}) = "
                          f"{table.value[r]:g}" for r in bad[:5])
        raise MosInputError(
            f"{bad.size} rating(s) lie outside the rating scale [{scale[0]:g}, {scale[1]:g}]: {named}"
            f"{' ...' if bad.size > 5 else ''}; fix them, declare the right scale with --scale LO,HI, "
            "or clip them into the scale with --clip", option="RATINGS")
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


def _all_rejected(dim: str, raters: np.ndarray, reasons: tuple[str | None, ...]) -> MosInputError:
    listed = "; ".join(f"{raters[j]}: {why}" for j, why in enumerate(reasons) if why)
    return MosInputError(
        f"{dim}: every rater was rejected, so no MOS is left ({listed}); keep every rater with "
        "--screen none",
        option="--screen")


def _duplicates_error(exc: DuplicateRatingsError) -> MosInputError:
    return MosInputError(
        f"{exc.count} (item, rater) pair(s) rated more than once on {exc.dimension!r}, e.g. "
        f"{exc.named()}; average them with --duplicates mean or keep the first with "
        "--duplicates first", option="--duplicates")


def compute_dimension(table: RatingTable, dim: str, method: str, rules: frozenset[str],
                      opts: dict) -> MosDim:
    """The MOS of one dimension with ``method`` after the ``rules`` screening."""
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


def compute_epaiqa(table: RatingTable, opts: dict):
    """EPAIQA's cleaning of every dimension at once: ``(results per dimension, EpaiqaResult)``."""
    try:
        cleaned = epaiqa_mos(table, k=opts["iqr_k"], conflicts=opts["conflicts"] == "drop",
                             tie_break=opts["vote_tie"], duplicates=DUPLICATES[opts["duplicates"]])
    except DuplicateRatingsError as exc:
        raise _duplicates_error(exc) from None
    return {dim: MosDim(c.items, c.raters, c.matrix, c.result, None) for dim, c in cleaned.dimensions.items()}, cleaned






@dataclass
class MosRun:
    """What :func:`run_mos` computed.

    Attributes:
        table: the ratings read (after clipping).
        results: dimension -> its matrix, screening and MOS.
        method, rules, options: how (``options``: the numeric settings and choices).
        rating_scale: the declared ``(low, high)`` of a rating.
        notes: what was changed on the way (clipped ratings).
        cleaned: EPAIQA's whole cleaning (``method="epaiqa"``), else ``None``.
        samples: the samples the MOS goes into when the output is a manifest.
    """

    table: RatingTable
    results: dict[str, MosDim]
    method: str
    rules: frozenset[str]
    options: dict[str, Any]
    rating_scale: tuple[float, float]
    notes: list[str] = field(default_factory=list)
    cleaned: EpaiqaResult | None = None
    samples: list | None = None


def run_mos(ratings: str | Path, *, out: str | Path, scale: str | tuple[float, float] | None = None,
            clip: bool = False, duplicates: str = "error", method: str = "zscore",
            manifest: str | Path | None = None, item_col: str = "item", rater_col: str = "rater",
            value_col: str = "value", dimension_col: str | None = None,
            dimension: str = "overall", screen: str = "auto",
            min_rater_corr: float = MIN_RATER_SRCC, outlier_sigma: float = 2.0,
            max_outlier_fraction: float = 0.05, rescale: str = "100(z+3)/6", iqr_k: float = 1.5,
            conflicts: str = "drop", vote_tie: str = "lower",
            removed: str | Path | None = None) -> MosRun:
    """Read ``ratings`` and compute the MOS of every dimension (the options are those of
    ``ieqa mos``, whose help describes each). ``out`` only decides what is needed (a
    manifest output from CSV ratings needs ``manifest``); :func:`write_mos` writes it.

    Raises :class:`MosInputError` naming the option to change, and other
    :class:`~ieqa.errors.IeqaError` for unreadable files.
    """
    ratings, out = Path(ratings), Path(out)
    manifest = None if manifest is None else Path(manifest)
    if method not in METHODS:
        raise MosInputError(f"unknown method {method!r}; choose one of: {', '.join(METHODS)}",
                            option="--method")
    rules = parse_screen(screen, method)
    for value, option, allowed in ((rescale, "--rescale", RESCALES),
                                   (duplicates, "--duplicates", tuple(DUPLICATES)),
                                   (conflicts, "--conflicts", CONFLICTS), (vote_tie, "--vote-tie", VOTE_TIES)):
        if value not in allowed:
            raise MosInputError(f"{value!r}; choose one of: {', '.join(allowed)}", option=option)
    for ok, option, rule in ((outlier_sigma > 0, "--outlier-sigma", "must be > 0"),
                             (0 <= max_outlier_fraction <= 1, "--max-outlier-fraction", "must be in [0, 1]"),
                             (-1 <= min_rater_corr <= 1, "--min-rater-corr", "must be in [-1, 1]"),
                             (iqr_k >= 0, "--iqr-k", "must be >= 0")):
        if not ok:
            raise MosInputError(rule, option=option)
    if removed is not None and method != "epaiqa":
        raise MosInputError("lists the ratings EPAIQA's cleaning removed: add --method epaiqa, or leave "
                            "--removed out (the report counts the dropped ratings of every method)",
                            option="--removed")
    rating_scale = (None if scale is None else parse_scale(
        scale if isinstance(scale, str) else ",".join(str(float(x)) for x in scale)))
    in_kind = rating_file_kind(ratings, "RATINGS", ("manifest", "table"))
    out_kind = rating_file_kind(out, "--out", ("manifest", "table"))
    if manifest is not None and in_kind == "manifest":
        raise MosInputError("only for CSV/TSV ratings (a manifest input already holds the samples)",
                            option="--manifest")
    if in_kind == "table" and out_kind == "manifest" and manifest is None:
        raise MosInputError("writing a manifest from CSV/TSV ratings needs --manifest (the samples to "
                            "attach scores to); or write a .csv table", option="--out")
    if not ratings.is_file():
        raise MosInputError(f"{ratings} does not exist", option="RATINGS")
    opts = {"outlier_sigma": outlier_sigma, "max_outlier_fraction": max_outlier_fraction,
            "rescale": rescale, "iqr_k": iqr_k, "duplicates": duplicates, "min_rater_corr": min_rater_corr,
            "conflicts": conflicts, "vote_tie": vote_tie}
    from ieqa.data.manifest import iter_manifest

    samples = None
    if in_kind == "manifest":
        samples = list(iter_manifest(ratings))
        table = RatingTable.from_samples(samples)
        rating_scale = rating_scale or manifest_rating_scale(samples)
    else:
        cols = {"--item-col": item_col, "--rater-col": rater_col, "--value-col": value_col}
        table = read_rating_table(ratings, cols, dimension_col, dimension)
        if out_kind == "manifest":
            samples = list(iter_manifest(manifest))
    if len(table) == table.n_missing:
        raise MosInputError(f"{ratings.name} holds no rating; give a file with at least one "
                            "rating", option="RATINGS")
    if rating_scale is None:
        lo, hi = np.nanmin(table.value), np.nanmax(table.value)
        raise MosInputError(
            f"declare the rating scale: the lowest and highest rating a rater could give, e.g. "
            f"--scale 1,5 (the ratings in {ratings.name} range from {lo:g} to {hi:g})", option="--scale")
    table, n_clipped = check_scale(table, rating_scale, clip)
    notes = [f"{n_clipped} rating(s) outside [{rating_scale[0]:g}, {rating_scale[1]:g}] clipped into it "
             "(--clip)"] if n_clipped else []
    cleaned = None
    if method == "epaiqa":
        results, cleaned = compute_epaiqa(table, opts)
    else:
        results = {dim: compute_dimension(table, dim, method, rules, opts) for dim in table.dimensions}
    return MosRun(table, results, method, rules, opts, rating_scale, notes, cleaned, samples)


def write_mos(run: MosRun, out: str | Path, *, removed: str | Path | None = None) -> dict[str, int]:
    """Write ``run`` to ``out`` (a .csv/.tsv table, or a manifest of the samples with their
    MOS) and, for EPAIQA, every removed rating to ``removed``. Returns counts: ``rows`` for a
    table; ``scored``, ``replaced`` and ``removed`` for a manifest."""
    out = Path(out)
    if removed is not None and run.cleaned is not None:
        write_removed(Path(removed), run.cleaned)
    if rating_file_kind(out, "--out", ("manifest", "table")) == "table":
        write_table(out, run.results)
        return {"rows": sum(len(d.items) for d in run.results.values())}
    return write_manifest_scores(out, run.samples, run.results, run.rating_scale)


def _fmt(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def write_table(out: Path, results: dict[str, MosDim]) -> None:
    """The MOS as a .csv (comma) or .tsv (tab) table: item, dimension, mos, std, ci95,
    n_ratings, n_dropped; an undefined value is an empty cell."""
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


def write_manifest_scores(out: Path, samples: list, results: dict[str, MosDim],
                    rating_scale: tuple[float, float]) -> dict[str, int]:
    """Write the samples with their MOS; returns counts: scored, replaced (scores on a MOS
    dimension overwritten) and removed (scores on other dimensions, on another scale)."""
    from ieqa.data.manifest import write_manifest

    by_id = {s.id: k for k, s in enumerate(samples)}
    updates: dict[int, tuple[dict, dict]] = {}
    counts = {"scored": 0, "replaced": 0, "removed": 0}
    scales = {mos_scale(d.result, rating_scale) for d in results.values()}
    new_scale = scales.pop()  # one method, one scale for every dimension
    for dim, d in results.items():
        items, res = d.items, d.result
        unknown = [it for it in items.tolist() if it not in by_id]
        if unknown:
            raise MosInputError(f"{len(unknown)} rated item(s) match no sample id, e.g. {unknown[:5]}; "
                                     "pass the manifest that holds these items", option="--manifest")
        for i, item in enumerate(items.tolist()):
            if math.isnan(res.mos[i]):
                continue
            k = by_id[item]
            scores, meta = updates.setdefault(k, ({}, {}))
            counts["replaced"] += dim in samples[k].scores
            scores[dim] = float(res.mos[i])
            meta[dim] = {"method": res.method, "scale": res.scale, "std": _none_if_nan(res.std[i]),
                         "ci95": _none_if_nan(res.ci95[i]), "n_ratings": int(res.n_ratings[i])}
    stated = None if new_scale is None else [new_scale[0], new_scale[1]]
    for k, (scores, mos_meta) in updates.items():
        s = samples[k]
        old = s.meta.get("score_scale")
        same = (old is None and stated is None) or (
            isinstance(old, (list, tuple)) and stated is not None and [float(x) for x in old] == stated)
        kept = {dim: v for dim, v in s.scores.items() if same or dim in scores}
        counts["removed"] += len(s.scores) - len(kept)
        meta = {**s.meta, "mos": {**s.meta.get("mos", {}), **mos_meta},
                "rating_scale": [rating_scale[0], rating_scale[1]]}
        meta.pop("score_scale", None)
        if stated is not None:
            meta["score_scale"] = stated
        samples[k] = s.model_copy(update={"scores": {**kept, **scores}, "meta": meta})
    counts["scored"] = len(updates)
    write_manifest(samples, out)
    return counts


def write_removed(out: Path, cleaned: EpaiqaResult) -> None:
    """Every rating EPAIQA's cleaning removed, one CSV row each:
    ``dimension, item, rater, value, reason``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["dimension", "item", "rater", "value", "reason"])
        for r in cleaned.removed:
            w.writerow([r.dimension, r.item, r.rater, repr(r.value), r.reason])


