"""The report of ``ieqa mos``, printed with rich: the screening and reliability of every
dimension, and for ``--method epaiqa`` the removed ratings. Computing and writing the MOS
is :mod:`ieqa.human.mos_run`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.errors import IeqaError
from ieqa.human import (
    EpaiqaResult,
    RatingTable,
    icc,
    krippendorff_alpha,
    min_flaggable_ratings,
)
from ieqa.human.mos_run import MosDim

__all__ = ["print_removed", "print_report"]
#: How many removed ratings ``print_removed`` names before it points to ``--removed``.
LISTED_REMOVALS = 20


# --------------------------------------------------------------------------- report

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


def _screen_notes(dim: str, d: MosDim, rules: frozenset[str], opts: dict) -> list[str]:
    """Warnings about what the screening could not do on this dimension."""
    notes = []
    per_item = (~np.isnan(d.matrix)).sum(axis=1)
    if "bt500" in rules:
        need = min_flaggable_ratings(opts["outlier_sigma"], 1)
        few = int((per_item < need).sum())
        if few == len(per_item):
            notes.append(f"[yellow]warning[/yellow]: {escape(dim)}: BT.500 screening cannot flag any rating: "
                         f"items have at most {int(per_item.max())} ratings, and at "
                         f"{opts['outlier_sigma']:g} sigma a rating can only be flagged with {need} or more "
                         "ratings per item" + ("; the rater-agreement rule (corr) still applies"
                                               if "corr" in rules else
                                               "; add the rater-agreement rule with --screen bt500,corr"))
        elif few:
            notes.append(f"{escape(dim)}: {few} of {len(per_item)} items have fewer than {need} ratings; "
                         "BT.500 screening cannot flag a rating there")
    if d.agreement is not None:
        unjudged = d.agreement.unjudged
        if unjudged.size:
            names = ", ".join(escape(str(d.raters[j])) for j in unjudged[:10])
            notes.append(f"[yellow]warning[/yellow]: {escape(dim)}: rater agreement (corr) not judged for "
                         f"{unjudged.size} of {len(d.raters)} rater(s) ({names}{' ...' if unjudged.size > 10 else ''}): "
                         f"fewer than {d.agreement.min_items} items shared with other raters, or constant "
                         "ratings")
    return notes


def _rejected_lines(dim: str, d: MosDim) -> list[str]:
    """One line per rejected rater naming the rule (the reason's prefix: ``bt500``,
    ``zero variance`` or ``corr``) and the numbers behind it."""
    res, lines = d.result, []
    for j in res.rejected_raters.tolist():
        rule, _, detail = (res.rejection_reasons[j] or "unknown: ").partition(": ")
        lines.append(f"  {escape(dim)}: rater [bold]{escape(str(d.raters[j]))}[/bold] rejected by "
                     f"[bold]{escape(rule)}[/bold]: {escape(detail)}")
    return lines


def print_report(console: Console, table: RatingTable, results: dict[str, MosDim], method: str,
                 rules: frozenset[str], opts: dict, pre_notes: list[str]) -> None:
    """Print the screening report: per-dimension summary, rejected raters with the rule
    that rejected them, reliability of the raw ratings, and warnings."""
    console.print(f"[bold]{len(table) - table.n_missing}[/bold] ratings, method [bold]{method}[/bold], "
                  f"screening [bold]{','.join(sorted(rules)) or 'none'}[/bold]"
                  + (f"; {table.n_missing} empty value cell(s) ignored" if table.n_missing else ""))
    summary = Table(title="MOS per dimension", title_justify="left")
    for col in ("dimension", "items", "raters", "used", "dropped", "outliers", "rejected", "MOS range"):
        summary.add_column(col, justify="left" if col == "dimension" else "right", overflow="fold")
    reliability = Table(title="reliability of the raw ratings", title_justify="left")
    for col in ("dimension", "ICC(2,1)", "complete items", "alpha (interval)"):
        reliability.add_column(col, justify="left" if col == "dimension" else "right")
    rejected: list[str] = []
    notes: list[str] = list(pre_notes)
    for dim, d in results.items():
        res = d.result
        finite = res.mos[~np.isnan(res.mos)]
        rng = f"{finite.min():.3g} - {finite.max():.3g}" if finite.size else "-"
        summary.add_row(escape(dim), str(len(d.items)), str(len(d.raters)), str(int(res.kept.sum())),
                        str(res.n_dropped), str(res.n_outliers), str(len(res.rejected_raters)), rng)
        cells, why = _reliability(d.matrix)
        reliability.add_row(escape(dim), *cells)
        notes += [escape(f"{dim}: {w}") for w in why]
        rejected += _rejected_lines(dim, d)
        notes += _screen_notes(dim, d, rules, opts)
        if res.items_without_ratings.size:
            empty = res.items_without_ratings
            notes.append(f"[yellow]{escape(dim)}: {empty.size} item(s) have no rating left and get no MOS, "
                         f"e.g. {escape(str(d.items[empty[:5]].tolist()))}[/yellow]")
        if res.n_clipped:
            notes.append(f"{escape(dim)}: {res.n_clipped} rescaled rating(s) beyond |z| = 3 clipped into [0, 100]")
    console.print(summary)
    console.print("rejected raters:" if rejected else "no rater rejected")
    for line in rejected:
        console.print(line)
    console.print(reliability)
    for note in notes:
        console.print(note)


# --------------------------------------------------------------------------- EPAIQA removals

def _reason_text(reason: str, params: dict) -> str:
    if reason == "conflict":
        return (f"prompt completion < {params['full_completion']:g} with overall > "
                f"{params['max_overall_if_incomplete']:g} (both of the rater's ratings removed)")
    if reason == "iqr":
        return f"outside the edit's fences Q1 - {params['k']:g} IQR, Q3 + {params['k']:g} IQR"
    return "the rater's overall rating of this edit was removed"


def print_removed(console: Console, cleaned: EpaiqaResult, *, listed_in: Path | None) -> None:
    """The ratings EPAIQA's cleaning removed: counts per dimension and reason, the first
    :data:`LISTED_REMOVALS` ratings by item and rater, and the tied completion votes."""
    p = cleaned.params
    console.print(f"EPAIQA cleaning: IQR fences k = {p['k']:g}; conflict rule "
                  + (f"on (completion < {p['full_completion']:g} and overall > {p['max_overall_if_incomplete']:g})"
                     if p["conflicts"] else "off (--conflicts keep)"))
    counts = cleaned.removed_counts()
    table = Table(title="ratings removed by EPAIQA's cleaning", title_justify="left")
    for col in ("dimension", "reason", "removed", "of given"):
        table.add_column(col, justify="right" if col in ("removed", "of given") else "left")
    for dim, d in cleaned.dimensions.items():
        given = str(d.result.n_input_ratings)
        for reason, n in counts.get(dim, {"-": 0}).items():
            table.add_row(escape(dim), escape(reason), str(n), given)
    console.print(table)
    for reason in sorted({r.reason for r in cleaned.removed}):
        console.print(f"  {escape(reason)}: {escape(_reason_text(reason, p))}")
    for r in cleaned.removed[:LISTED_REMOVALS]:
        console.print(f"  removed {escape(r.dimension)}: item [bold]{escape(r.item)}[/bold] rater "
                      f"[bold]{escape(r.rater)}[/bold] = {r.value:g} ({escape(r.reason)})")
    rest = len(cleaned.removed) - LISTED_REMOVALS
    if listed_in is not None:
        console.print(f"all {len(cleaned.removed)} removed rating(s) written to [bold]{escape(str(listed_in))}[/bold]")
    elif rest > 0:
        console.print(f"  ... and {rest} more removed rating(s); --removed FILE writes them all to a CSV")
    if cleaned.tied_votes:
        shown = ", ".join(cleaned.tied_votes[:10]) + (" ..." if len(cleaned.tied_votes) > 10 else "")
        console.print(f"prompt_completion: {len(cleaned.tied_votes)} item(s) had a tied vote and got the "
                      f"{escape(p['tie_break'])} tied level (--vote-tie): {escape(shown)}")
