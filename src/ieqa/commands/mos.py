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

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from ieqa.commands.mos_report import print_removed, print_report
from ieqa.data.textfile import UnreadableTextError
from ieqa.errors import IeqaError
from ieqa.human.mos_run import MosInputError, run_mos, write_mos
from ieqa.human.screening import MIN_RATER_SRCC

NAME = "mos"

console = Console()


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
    try:
        run = run_mos(ratings, out=out, scale=scale, clip=clip, duplicates=duplicates,
                      method=method, manifest=manifest, item_col=item_col, rater_col=rater_col,
                      value_col=value_col, dimension_col=dimension_col, dimension=dimension,
                      screen=screen, min_rater_corr=min_rater_corr, outlier_sigma=outlier_sigma,
                      max_outlier_fraction=max_outlier_fraction, rescale=rescale, iqr_k=iqr_k,
                      conflicts=conflicts, vote_tie=vote_tie, removed=removed)
        print_report(console, run.table, run.results, run.method, run.rules, run.options, run.notes)
        if run.cleaned is not None:
            print_removed(console, run.cleaned, listed_in=removed)
        counts = write_mos(run, out, removed=removed)
    except MosInputError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.option) from None
    except UnreadableTextError:
        raise  # bytes that cannot be read: exit 1 with the line named, as every command
    except IeqaError as exc:
        raise typer.BadParameter(str(exc), param_hint="RATINGS") from None
    if "rows" in counts:
        console.print(f"wrote [bold]{escape(str(out))}[/bold] ({counts['rows']} rows)")
    else:
        console.print(f"wrote [bold]{escape(str(out))}[/bold]: {counts['scored']} of {len(run.samples)} "
                      "samples scored"
                      + (f", {counts['replaced']} existing score(s) replaced" if counts["replaced"] else "")
                      + (f", {counts['removed']} score(s) on other dimensions removed (they were on "
                         "another scale than the MOS)" if counts["removed"] else ""))
