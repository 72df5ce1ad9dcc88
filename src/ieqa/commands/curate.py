"""``ieqa curate``: keep the best-scored edits of a score file or manifest (EditReward's
"score, keep the top 20K by overall" is ``--keep top-k=20000 --by overall``).

See :mod:`ieqa.curate.select` for the algorithm and outputs. Exit status: 0 when done and
no row errored, 3 when the subset was written but some input rows had errors (they are
never kept; ``--allow-errors`` makes that 0), 2 for a usage error, 1 when it failed.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands.options import EXIT_PARTIAL, FROM_SCORER_OPT
from ieqa.curate.select import KeepRule, curate
from ieqa.curate.source import CurateError
from ieqa.data.scorefile import other_scorer_note
from ieqa.rewards.rule import REWARD_RULES, RewardRule, RewardRuleError

NAME = "curate"
console = Console()
#: the exit status when some input rows had errors (as ``ieqa score``)
EXIT_ROW_ERRORS = EXIT_PARTIAL  # the contract's 3 (ieqa.commands.options)

BY_HELP = (f"reward rule: {', '.join(REWARD_RULES)} or a weighted expression such as "
           "'0.5*instruction_alignment + 0.5*visual_quality' (ieqa.rewards.rule)")


def make_rule(by: str, penalty: float = 0.0, floor: float | None = None) -> RewardRule:
    """The ``--by`` / ``--uncertainty-penalty`` / ``--floor`` rule, or a usage error."""
    try:
        return RewardRule(by, uncertainty_penalty=penalty, floor=floor)
    except RewardRuleError as exc:
        raise typer.BadParameter(str(exc), param_hint="--by") from None


def errored_exit(n_errors: int, n_rows: int, allow_errors: bool, what: str) -> None:
    """Exit 3 when ``n_errors`` rows errored, unless ``allow_errors``."""
    if n_errors and not allow_errors:
        console.print(f"[yellow]{n_errors} of {n_rows} {what}[/yellow]: they were left out (see the "
                      f"report); pass --allow-errors to accept them (exit status {EXIT_ROW_ERRORS})")
        raise typer.Exit(EXIT_ROW_ERRORS)


def command(
    scores: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="SCORES_OR_MANIFEST",
                                  help="score file of ieqa score (.parquet/.jsonl) or a manifest with scores"),
    out: Path = typer.Option(..., "--out", "-o", help="output folder: manifest, report.html, report.json"),
    keep: str = typer.Option(..., "--keep", help="top-k=N, threshold=X (reward >= X) or quantile=Q "
                             "(reward >= the Q-quantile)"),
    by: str = typer.Option("overall", "--by", help=BY_HELP),
    penalty: float = typer.Option(0.0, "--uncertainty-penalty", min=0.0,
                                  help="reward = mu - LAMBDA*sigma (scores with sigma only)"),
    floor: float | None = typer.Option(None, "--floor", help="reward of flagged edits (default: none)"),
    per: str | None = typer.Option(None, "--per", help="apply --keep/--quota within each task or editor"),
    quota: int | None = typer.Option(None, "--quota", min=1, help="with --per: at most N per task/editor"),
    max_sigma: float | None = typer.Option(None, "--max-sigma", min=0.0,
                                           help="drop edits whose reward sigma is above S (or unknown)"),
    drop_flagged: bool = typer.Option(False, "--drop-flagged", help="drop degenerate outputs (blank, no_op, ...)"),
    copy: bool = typer.Option(False, "--copy", help="copy the kept images into OUT/images"),
    link: bool = typer.Option(False, "--link", help="symlink the kept images into OUT/images"),
    fmt: str = typer.Option("jsonl", "--format", help="kept manifest format: jsonl or parquet"),
    allow_errors: bool = typer.Option(False, "--allow-errors", help="exit 0 even when input rows had errors"),
    from_scorer: str | None = FROM_SCORER_OPT,
) -> None:
    """Keep the best-scored edits: a kept manifest plus an HTML/JSON report (distributions
    before and after, counts per task and editor, thresholds, a gallery).

    Exit status: 0 ok, 3 written but some input rows had errors (0 with --allow-errors),
    2 usage error, 1 failure.
    """
    if copy and link:
        raise typer.BadParameter("choose one of --copy and --link", param_hint="--copy/--link")
    if per not in (None, "task", "editor"):
        raise typer.BadParameter("--per takes task or editor", param_hint="--per")
    if quota is not None and per is None:
        raise typer.BadParameter("--quota goes with --per task|editor", param_hint="--quota")
    if fmt not in ("jsonl", "parquet"):
        raise typer.BadParameter("--format takes jsonl or parquet", param_hint="--format")
    try:
        rule_keep = KeepRule.parse(keep)
    except CurateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--keep") from None
    rule = make_rule(by, penalty, floor)
    result = curate(scores, out, rule_keep, rule=rule, per=per, quota=quota, scorer=from_scorer,  # type: ignore[arg-type]
                    max_sigma=max_sigma, drop_flagged=drop_flagged,
                    images="copy" if copy else "link" if link else "as-is", format=fmt,  # type: ignore[arg-type]
                    progress=True)
    c = result.report["counts"]
    console.print(f"kept [bold]{result.n_kept}[/bold] of {result.n_rows} edits ({rule_keep}, reward "
                  f"{escape(rule.formula())}) -> [bold]{escape(str(result.manifest))}[/bold]")
    table = Table(title="cuts", title_justify="left")
    for col in ("partition", "eligible", "threshold", "kept", "lowest kept reward"):
        table.add_column(col, justify="left" if col == "partition" else "right")
    for name, cut in result.cuts.items():
        thr = cut.get("threshold")
        low = cut.get("lowest_kept_reward")
        table.add_row(escape(name), str(cut["eligible"]), "-" if thr is None else f"{thr:.4g}",
                      str(cut["kept"]), "-" if low is None else f"{low:.4g}")
    console.print(table)
    console.print(f"left out before selection: {c['errors']} errors, {c['dropped_flagged']} flagged, "
                  f"{c['dropped_sigma']} above --max-sigma; report: {escape(str(result.report_html))}")
    if c.get("other_scorer_rows"):
        console.print(escape(other_scorer_note(c['other_scorer_rows'], from_scorer)))
    errored_exit(c["errors"], c["rows"], allow_errors, "input rows had errors")
