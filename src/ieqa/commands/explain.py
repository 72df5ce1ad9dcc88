"""``ieqa explain``: structured critiques of edits from any VLM, parsed.

Forms::

    ieqa explain SOURCE EDITED "instruction" --model M           # one triplet, to the screen
    ieqa explain MANIFEST -o OUT.parquet --model M --format epaiqa
    ieqa explain FOLDER -o OUT.jsonl -O base_url=http://localhost:8000/v1 --model NAME
    ieqa explain MANIFEST -o OUT.parquet --checkpoint runs/epaiqa/evaluator

The critique is asked for with the format's template (``reasonedit``:
``reasonedit-critique``, per-dimension analysis then ``[Final Assessment]`` scores;
``epaiqa``: ``epaiqa-overall``, EPAIQA stage 3's completion / harmony / naturalness /
overall level with the early exit) and parsed (:mod:`ieqa.prompts.answers`). The scorer
is ``vlm-judge`` unless ``--scorer`` or a ``--checkpoint`` says otherwise; any VLM scorer
works (a local transformers model or an OpenAI-compatible server). The output is a score
file with ``format``, ``parse_status`` and ``parse_error`` columns
(:mod:`ieqa.explain.run`); the run prints the format-stability rate. Re-running the same
command keeps the rows already written.

Exit status: 0 when every row got a critique (parsed or not: a critique that does not
follow the format is a recorded ``parse_status=failed``, see ``--require-parse``); 3 when
the output was written but some rows have errors (0 with ``--allow-errors``); 2 for a
usage error; 1 when the run could not be done.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands.options import (
    ALLOW_ERRORS_OPT,
    CHECKPOINT_OPT,
    MODEL_OPT,
    NO_RETRY_OPT,
    OPTION_OPT,
    OUT_OPT,
    ROOT_OPT,
    STRICT_OPT,
    WORKERS_OPT,
    exits_when_stopped,
    file_run_input,
    make_scorer,
    refuse_out_for_one,
)
from ieqa.commands.score import (
    EXIT_ROW_ERRORS,
    exit_for,
    print_run,
)
from ieqa.prompts.answers import FORMATS, Critique
from ieqa.scorers.base import ScorerError
from ieqa.scorers.run import judge_log_path, judge_logged

NAME = "explain"
console = Console()
#: the scorer used when neither --scorer nor --checkpoint names one
DEFAULT_EXPLAIN_SCORER = "vlm-judge"


def print_critique(crit: Critique) -> None:
    """One critique: its sections, parsed values and parse status."""
    if crit.status == "error":
        console.print(f"[red]no critique:[/red] {escape(crit.error or '')}")
        raise typer.Exit(1)
    for name, text in crit.sections.items():
        console.print(f"[bold]{escape(name)}[/bold]: {escape(text)}")
    if crit.ok:
        table = Table(title=f"{crit.format} critique (parsed)", title_justify="left")
        table.add_column("dimension", style="bold")
        table.add_column("value", justify="right")
        table.add_column("level")
        for dim, value in crit.scores.items():
            table.add_row(dim, f"{value:.4g}", crit.levels.get(dim, ""))
        console.print(table)
        if crit.early_exit:
            console.print("early exit: the prompt is not fully followed")
        console.print("parse status: [green]ok[/green]")
    else:
        console.print(escape(crit.text or ""))
        console.print(f"parse status: [yellow]failed[/yellow]: {escape(crit.error or '')}")


def command(
    inputs: list[str] = typer.Argument(
        ..., metavar="INPUT...",
        help="FOLDER of edits, MANIFEST, a benchmark path or name, or SOURCE EDITED INSTRUCTION"),
    fmt: str | None = typer.Option(None, "--format", "-f",
                                   help="critique format: reasonedit (per-dimension analysis, "
                                        "then [Final Assessment] scores) or epaiqa (EPAIQA "
                                        "stage 3: completion, harmony, naturalness, overall "
                                        "level); default: the one a --checkpoint was trained "
                                        "for, else reasonedit"),
    scorer_name: str | None = typer.Option(
        None, "--scorer", "-s",
        help=f"VLM scorer (default: the one a --checkpoint holds, else {DEFAULT_EXPLAIN_SCORER})"),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    template: str | None = typer.Option(None, "--template",
                                        help="prompt template (name or file); default the "
                                             "format's own"),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1,
                                       help="answer length limit (tokens)"),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0,
                                      help="sampling temperature (0: greedy)"),
    seed: int = typer.Option(0, "--seed", help="sampling seed"),
    out: Path | None = OUT_OPT,
    root: Path | None = ROOT_OPT,
    batch_size: int = typer.Option(8, "--batch-size", min=1,
                                   help="samples per model call and per checkpointed part"),
    workers: int | None = WORKERS_OPT,
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="discard an existing output or unfinished run"),
    no_retry: bool = NO_RETRY_OPT,
    strict: bool = STRICT_OPT,
    allow_errors: bool = ALLOW_ERRORS_OPT,
    require_parse: bool = typer.Option(False, "--require-parse",
                                       help=f"exit {EXIT_ROW_ERRORS} when a critique does not "
                                            "follow the format (default: recorded, exit 0)"),
    fail_fast: bool = typer.Option(False, "--fail-fast",
                                   help="stop at the first row that gets no critique"),
    as_json: bool = typer.Option(False, "--json", help="one triplet: print the critique as JSON"),
) -> None:
    """Write structured critiques of edits (ReasonEdit or EPAIQA stage-3 format), parsed.

    Exit status: 0 when every row got a critique, 3 when some rows have errors (0 with
    --allow-errors; with --require-parse unparsed critiques count too), 2 for a usage
    error, 1 when the run failed.
    """
    from ieqa.explain.run import ExplainScorer, explain_to_file

    if fmt is not None and fmt not in FORMATS:
        raise typer.BadParameter(f"{fmt!r}: choose one of {', '.join(FORMATS)}",
                                 param_hint="--format")
    if len(inputs) not in (1, 3):
        raise typer.BadParameter("give one FOLDER/MANIFEST/benchmark, or SOURCE EDITED "
                                 "INSTRUCTION", param_hint="INPUT...")
    if scorer_name is None and checkpoint is None and not any(
            o.split("=", 1)[0].strip() == "checkpoint" for o in option or []):
        scorer_name = DEFAULT_EXPLAIN_SCORER
    scorer = make_scorer(scorer_name, option, model, checkpoint)
    fmt = fmt or getattr(scorer, "explain_format", None) or "reasonedit"
    try:
        explainer = ExplainScorer(scorer, fmt, template=template, max_new_tokens=max_new_tokens,
                                  temperature=temperature, seed=seed)
    except ScorerError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scorer") from None
    if len(inputs) == 3:
        refuse_out_for_one(out)
        crit = explainer.explain([(Path(inputs[0]), Path(inputs[1]), inputs[2])])[0]
        if as_json:
            console.print_json(json.dumps(crit.to_dict(), default=str))
            if crit.status == "error":
                raise typer.Exit(1)
        else:
            print_critique(crit)
        if require_parse and crit.status == "failed":
            raise typer.Exit(EXIT_ROW_ERRORS)
        return
    items, total, description = file_run_input(inputs, root, out, strict=strict,
                                               what="the critiques")
    with judge_logged(judge_log_path(out), scorer, overwrite=overwrite), exits_when_stopped():
        summary = explain_to_file(explainer, items, out, input_id=description, total=total,
                                  batch_size=batch_size, workers=workers, overwrite=overwrite,
                                  retry_errors=not no_retry, fail_fast=fail_fast)
    print_run(summary.run)
    rate = "n/a (no critique generated)" if summary.stability is None else \
        f"{summary.stability:.1%}"
    console.print(f"format stability ({fmt}): {rate} — {summary.n_parsed} parsed, "
                  f"{summary.n_failed} not following the format (parse_status=failed; the "
                  "parse_error column says why)")
    exit_for(summary.run, allow_errors)
    if require_parse and summary.n_failed:
        console.print(f"[red]{summary.n_failed} critiques do not follow the {fmt} format[/red] "
                      f"(--require-parse: exit status {EXIT_ROW_ERRORS})")
        raise typer.Exit(EXIT_ROW_ERRORS)
