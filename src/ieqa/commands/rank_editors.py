"""``ieqa rank-editors``: an editor leaderboard from per-edit scores (EditHF Table 3).

The scores are a manifest (its ``scores``: human MOS or predictions written into a
manifest) or a predictions file (``id`` + one column per dimension, see
:mod:`ieqa.bench.predictions`), which takes editor, group and task from the ``--human``
manifest. With ``--human`` the predicted editor ranking is compared with the human one
(SRCC/KRCC over editors, per dimension), on the edits both files score.

A score file of ``ieqa score`` (it carries ``editor``, ``group_id`` and ``task`` next to
the scores) ranks editors on its predicted scores alone, without ``--human``; its rows
that failed to score are left out and counted in the notes. When the scores lack
``instruction_alignment`` (``classic``), the overall column rests on the other dimensions
and the notes say so: an editor that returns its input unchanged then ranks high on
preservation, so read the ``no_op`` flags before trusting such a ranking.

``--rankings FILE`` ranks editors the way EditHF's Table 3 does from human group rankings
(the JSONL format of :mod:`ieqa.human.rankings`: one line per group, dimension and rater,
editors best first, ties as inner lists): the raters' rankings of a group are averaged,
every pair of its editors becomes a preference, each edit scores its win count in its
group (1 per win, 0.5 per tie; ``--win-rate`` divides by the pairs it took part in), and
the leaderboard averages those counts per editor and dimension with the overall weighted
as ``--weights`` (EditHF's 0.3/0.4/0.3 by default). Without SCORES that is the
leaderboard; with SCORES the rankings are the human side the predicted editor ranking is
compared with (SRCC/KRCC over editors; the two sides are on different scales).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ieqa.bench.leaderboard import Leaderboard
from ieqa.bench.rank_editors import (
    EditorRankingError,
    fmt_number,
    leaderboard_display,
    rank_editors,
    summary_line,
    write_outputs,
)
from ieqa.commands.options import FROM_SCORER_OPT, MAX_MISMATCH_OPT

NAME = "rank-editors"
console = Console()


def _print_board(title: str, lb: Leaderboard, human_lb: Leaderboard | None) -> None:
    columns, rows = leaderboard_display(lb, human_lb)
    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c, justify="left" if c == "editor" else "right",
                         style="bold" if c == "overall" else None)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _print_comparison(comparisons: dict[str, dict[str, Any]]) -> None:
    table = Table(title="predicted vs human editor ranking", title_justify="left")
    for c in ("dimension", "editors", "SRCC", "KRCC", "mean |Δrank|", "max |Δrank|"):
        table.add_column(c, justify="left" if c == "dimension" else "right")
    for dim, cmp in comparisons.items():
        table.add_row(dim, str(cmp["n_editors"]), fmt_number(cmp["srcc"]), fmt_number(cmp["krcc"]),
                      fmt_number(cmp["mean_abs_displacement"], 2), str(cmp["max_abs_displacement"]))
    console.print(table)


# --------------------------------------------------------------------------- command


def command(
    scores: Path | None = typer.Argument(None, exists=True, dir_okay=False,
                                         help="manifest with per-edit scores (human or predicted), or a predictions "
                                              "file; optional with --rankings"),
    human: Path | None = typer.Option(None, "--human", exists=True, dir_okay=False,
                                      help="manifest with human MOS to compare with"),
    rankings: Path | None = typer.Option(
        None, "--rankings", exists=True, dir_okay=False,
        help="human group rankings (JSONL: group_id, dimension, ranking best first with ties as inner lists, "
             "optional rater and task): each edit scores its win count in its group (EditHF Table 3)"),
    win_rate: bool = typer.Option(False, "--win-rate", help="with --rankings: score each edit by its win rate "
                                  "(0-1) instead of its win count, for groups of different sizes"),
    out: Path | None = typer.Option(None, "--out", "-o", help="folder for JSON, CSV and HTML report"),
    weights: str | None = typer.Option(
        None, "--weights",
        help='overall-score weights, e.g. "visual_quality=0.3,instruction_alignment=0.4,content_preservation=0.3" '
             "(the default, EditHF Eq. 2), or the same as \"0.3*visual_quality + "
             "0.4*instruction_alignment + 0.3*content_preservation\" (the syntax of --reward "
             "and --by); normalised to sum 1"),
    by_task: bool = typer.Option(False, "--by-task", help="also rank the editors per task"),
    common_groups_only: bool = typer.Option(
        False, "--common-groups-only", help="use only the groups (source + instruction) every editor covers"),
    n_boot: int = typer.Option(0, "--bootstrap", min=0,
                               help="bootstrap resamples for the CIs (0: normal approximation)"),
    from_scorer: str | None = FROM_SCORER_OPT,
    max_mismatch: float = MAX_MISMATCH_OPT,
) -> None:
    """Rank image-editing models by their mean scores per dimension and overall (EditHF Table 3)."""
    try:
        result = rank_editors(scores, human=human, rankings=rankings, win_rate=win_rate,
                              weights=weights, by_task=by_task,
                              common_groups_only=common_groups_only, n_boot=n_boot,
                              scorer=from_scorer, max_mismatch=max_mismatch)
    except EditorRankingError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.option) from None
    lb, human_lb, comparisons = result.leaderboard, result.human, result.comparisons
    console.print(summary_line(lb))
    _print_board(f"editor leaderboard ({(scores or rankings).name})", lb, human_lb)
    for task, board in lb.by_task.items():
        _print_board(f"task: {task}", board, None if human_lb is None else human_lb.by_task.get(task))
    if comparisons:
        _print_comparison(comparisons)
    if out is not None:
        write_outputs(out, lb, human_lb, comparisons, result.sources, result.notes)
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    if out is not None:
        console.print(f"wrote [bold]{out / 'leaderboard.json'}[/bold], leaderboard.csv and report.html")
