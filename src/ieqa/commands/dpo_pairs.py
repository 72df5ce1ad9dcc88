"""``ieqa dpo-pairs``: DPO preference pairs as EditHF §5.5 builds them (Self-DPO and
Global-DPO; :mod:`ieqa.curate.dpo`), written in TRL's preference layout and as an ieqa
preference file, with a stats report.

Exit status: 0 ok, 3 written but some input rows had errors (they never enter a pair;
0 with ``--allow-errors``), 2 usage error, 1 failure.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands.curate import BY_HELP, errored_exit, make_rule
from ieqa.commands.options import FROM_SCORER_OPT, MAX_MISMATCH_OPT
from ieqa.curate.dpo import DROP_REASONS, dpo_pairs
from ieqa.curate.groups import parse_group_by
from ieqa.curate.source import CurateError
from ieqa.data.scorefile import other_scorer_note

NAME = "dpo-pairs"
console = Console()


def command(
    scores: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="SCORES",
                                  help="score file of ieqa score or a manifest with scores"),
    out: Path = typer.Option(..., "--out", "-o",
                             help="output folder: dpo.jsonl, preferences.jsonl, stats.json, report.html"),
    mode: str = typer.Option(..., "--mode", help="self: best vs worst of one model's candidates per "
                             "request; global: best vs worst editor per request"),
    by: str = typer.Option("mean", "--by", help=BY_HELP + "; default mean (EditHF's average)"),
    penalty: float = typer.Option(0.0, "--uncertainty-penalty", min=0.0,
                                  help="reward = mu - LAMBDA*sigma (scores with sigma only)"),
    floor: float | None = typer.Option(None, "--floor", help="reward of flagged edits (default: none)"),
    group_by: str | None = typer.Option(None, "--group-by",
                                        help="group fields (default self: source,instruction,editor; "
                                             "global: source,instruction)"),
    threshold: float | None = typer.Option(None, "--threshold",
                                           help="drop requests whose candidates all score below X"),
    min_margin: float = typer.Option(0.0, "--min-margin", min=0.0,
                                     help="minimum reward(chosen) - reward(rejected)"),
    min_prob: float | None = typer.Option(None, "--min-prob", min=0.5, max=1.0,
                                          help="minimum P(chosen > rejected)"),
    keep_fraction: float | None = typer.Option(None, "--keep-fraction", min=0.0, max=1.0,
                                               help="share of pairs kept per task, best chosen "
                                                    "first (default self 0.5, global 1.0)"),
    drop_flagged: bool = typer.Option(False, "--drop-flagged", help="flagged edits never enter a pair"),
    reference: Path | None = typer.Option(None, "--reference", exists=True, dir_okay=False,
                                          help="manifest whose scores (e.g. ground truth) the pairs "
                                               "are checked against (joined by id, after checking "
                                               "that its edits are the pairs')"),
    allow_errors: bool = typer.Option(False, "--allow-errors", help="exit 0 even when input rows had errors"),
    from_scorer: str | None = FROM_SCORER_OPT,
    max_mismatch: float = MAX_MISMATCH_OPT,
) -> None:
    """Build DPO pairs (EditHF §5.5): best vs worst candidate per group, low-score groups
    dropped, pairs ranked per task by the chosen edit's reward.

    Exit status: 0 ok, 3 written but some input rows had errors (0 with --allow-errors),
    2 usage error, 1 failure.
    """
    if mode not in ("self", "global"):
        raise typer.BadParameter("--mode takes self or global", param_hint="--mode")
    if threshold is not None and not math.isfinite(threshold):
        raise typer.BadParameter(f"needs a finite number (a reward), got {threshold}",
                                 param_hint="--threshold")
    if keep_fraction is not None and keep_fraction <= 0:
        raise typer.BadParameter("--keep-fraction must be > 0", param_hint="--keep-fraction")
    try:
        fields = None if group_by is None else parse_group_by(group_by)
    except CurateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--group-by") from None
    rule = make_rule(by, penalty, floor)
    result = dpo_pairs(scores, out, mode=mode, rule=rule, group_by=fields,  # type: ignore[arg-type]
                       threshold=threshold, min_margin=min_margin, min_prob=min_prob,
                       keep_fraction=keep_fraction, drop_flagged=drop_flagged, reference=reference,
                       progress=True, scorer=from_scorer, max_mismatch=max_mismatch)
    s = result.stats
    console.print(f"[bold]{s['pairs']}[/bold] {mode} pairs from {s['groups']} groups ({s['rows']} rows, "
                  f"reward {escape(rule.formula())}) -> [bold]{escape(str(result.dpo))}[/bold], "
                  f"{escape(str(result.preferences.name))}")
    console.print("groups without a pair: " + ", ".join(f"{s['dropped_groups'][r]} {r}" for r in DROP_REASONS))
    if "reference_agreement" in s:
        table = Table(title=f"agreement with {escape(str(reference))}", title_justify="left")
        for col in ("dimension", "agree", "tie", "disagree", "accuracy"):
            table.add_column(col, justify="left" if col == "dimension" else "right")
        for dim, a in s["reference_agreement"].items():
            acc = a["accuracy"]
            table.add_row(dim, str(a["agree"]), str(a["tie"]), str(a["disagree"]),
                          "-" if acc is None else f"{acc:.3f}")
        console.print(table)
        note = (s.get("reference_join") or {}).get("note")
        if note:
            console.print(f"[yellow]{escape(note)}[/yellow]")
    if s.get("other_scorer_rows"):
        console.print(escape(other_scorer_note(s['other_scorer_rows'], from_scorer)))
    console.print(f"report: {escape(str(result.report_html))}")
    errored_exit(s["error_rows"], s["rows"], allow_errors, "input rows had errors")
