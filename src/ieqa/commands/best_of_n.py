"""``ieqa best-of-n``: the best candidate per group, as a manifest.

Ties are broken deterministically: reward high first, then reward sigma low first
(unknown last), then id ascending (:mod:`ieqa.curate.groups`). A group whose candidates
all failed is listed, not dropped silently. Exit status: 0 ok, 3 written but some groups
had no scorable candidate or some input rows had errors (0 with ``--allow-errors``), 2 usage
error, 1 failure.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from ieqa.commands.curate import BY_HELP, errored_exit, make_rule
from ieqa.commands.options import FROM_SCORER_OPT
from ieqa.curate.groups import best_of_n, parse_group_by
from ieqa.curate.source import CurateError
from ieqa.data.scorefile import other_scorer_note

NAME = "best-of-n"
console = Console()
_MAX_LISTED = 10


def command(
    scores: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="SCORES",
                                  help="score file of ieqa score or a manifest with scores"),
    out: Path = typer.Option(..., "--out", "-o", help="output manifest (.jsonl or .parquet)"),
    group_by: str = typer.Option("source,instruction", "--group-by",
                                 help="fields that make a group: source, edited, instruction, "
                                      "editor, task, group_id (comma-separated)"),
    by: str = typer.Option("overall", "--by", help=BY_HELP),
    penalty: float = typer.Option(0.0, "--uncertainty-penalty", min=0.0,
                                  help="reward = mu - LAMBDA*sigma (scores with sigma only)"),
    floor: float | None = typer.Option(None, "--floor", help="reward of flagged edits (default: none)"),
    drop_flagged: bool = typer.Option(False, "--drop-flagged", help="never pick a flagged edit"),
    allow_errors: bool = typer.Option(False, "--allow-errors",
                                      help="exit 0 even when input rows had errors or some groups had no "
                                           "scorable candidate"),
    from_scorer: str | None = FROM_SCORER_OPT,
) -> None:
    """Pick the best candidate of each group (ties: lowest sigma, then smallest id).

    Exit status: 0 ok, 3 written but some input rows had errors or some groups failed
    entirely (0 with --allow-errors), 2 usage error, 1 failure.
    """
    try:
        fields = parse_group_by(group_by)
    except CurateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--group-by") from None
    if not out.name.endswith((".jsonl", ".jsonl.gz", ".parquet")):
        raise typer.BadParameter("the output manifest must end in .jsonl, .jsonl.gz or .parquet",
                                 param_hint="--out")
    rule = make_rule(by, penalty, floor)
    result = best_of_n(scores, out, group_by=fields, rule=rule, drop_flagged=drop_flagged, progress=True,
                       scorer=from_scorer)
    console.print(f"picked [bold]{result.n_picked}[/bold] of {result.n_groups} groups ({result.n_rows} "
                  f"rows, reward {escape(rule.formula())}) -> [bold]{escape(str(result.manifest))}[/bold]")
    if result.ungrouped:
        console.print(f"[yellow]{result.ungrouped} rows have no {'/'.join(fields)}[/yellow] and belong "
                      "to no group (left out)")
    for g in result.failed[:_MAX_LISTED]:
        console.print(f"[yellow]no pick[/yellow] {escape(str(g['group']))}: {g['n']} candidates, "
                      f"{escape(str(g['error']))}")
    if len(result.failed) > _MAX_LISTED:
        console.print(f"... and {len(result.failed) - _MAX_LISTED} more (all in "
                      f"{escape(str(result.report_json))})")
    if result.other_scorer_rows:
        console.print(escape(other_scorer_note(result.other_scorer_rows, from_scorer)))
    if result.error_rows:
        console.print(f"[yellow]{result.error_rows} of {result.n_rows} input rows[/yellow] failed to "
                      "score or hold a NaN/infinite score: never picked")
    errored_exit(len(result.failed), result.n_groups, allow_errors, "groups had no scorable candidate")
    errored_exit(result.error_rows, result.n_rows, allow_errors, "input rows had errors")
