"""``ieqa bench-editor``: an editor's outputs on an editor benchmark, judged with the
benchmark's official protocol (or a stand-in judge, labelled), aggregated as published and
as ieqa computes it (:func:`ieqa.bench.editor.bench_editor`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.backends import ERROR_KINDS
from ieqa.bench.editor.report import editor_table, table_columns, write_editor_outputs
from ieqa.bench.editor.run import BENCHMARKS, MISSING_RULES, PROTOCOLS, bench_editor, get_protocol
from ieqa.bench.errors import BenchError
from ieqa.commands.options import (
    ADAPTER_OPT,
    BASE_MODEL_OPT,
    EXIT_PARTIAL,
    MODEL_OPT,
    OPTION_OPT,
    PROMPTS_OPT,
    REVISION_OPT,
    exits_when_stopped,
    make_scorer,
    number_pair,
)

NAME = "bench-editor"
#: exit status when items failed to score (as `ieqa score`'s rows with errors)
EXIT_ITEM_ERRORS = EXIT_PARTIAL  # the contract's 3 (ieqa.commands.options)
console = Console()


def _outputs(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, folder = value.partition("=")
        if not sep:
            name, folder = Path(value).name or value, value
        if name in out:
            raise typer.BadParameter(f"editor name {name!r} twice; write NAME=DIR",
                                     param_hint="--outputs")
        out[name] = folder
    return out


def print_editor_table(out: Console, results: dict[str, Any]) -> None:
    """The benchmark's table of ``results`` (a ``results.json`` object), editors as rows."""
    columns = table_columns(results["benchmark"])
    table = Table(title=f"{results['benchmark']}, judge: {escape(results['judge']['label'])}")
    for column in columns:
        table.add_column(column)
    for row in editor_table(results):
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else escape(str(v))
                        for v in (row[c] for c in columns)])
    out.print(table)


def _prices(value: str | None) -> tuple[float, float] | None:
    return number_pair(value, "--price", "INPUT,OUTPUT in USD per million tokens, e.g. 2,8")


def command(
    benchmark: str = typer.Argument(..., help=f"editor benchmark: {', '.join(BENCHMARKS)}"),
    outputs: list[str] = typer.Option(..., "--outputs",
                                      help="an editor's outputs in the benchmark's layout ("
                                           + "; ".join(f"{p.name}: {p.layout}"
                                                       for p in PROTOCOLS.values())
                                           + "): DIR or NAME=DIR; repeat it to compare "
                                             "editors"),
    data: Path | None = typer.Option(None, "--data", exists=True,
                                     help="the benchmark's data ("
                                          + "; ".join(f"{p.name}: {p.data_help}"
                                                      for p in PROTOCOLS.values())
                                          + "); default: the hub dataset in the local cache"),
    language: list[str] | None = typer.Option(None, "--language",
                                              help="en and/or cn (zh is read as cn; default "
                                                   "both; only gedit-bench has cn)"),
    judge: str | None = typer.Option(None, "--judge",
                                     help="the judge: the benchmark's own (default: "
                                          + ", ".join(p.official_judge for p in PROTOCOLS.values())
                                          + ") or any scorer of `ieqa list scorers` as a "
                                            "labelled stand-in"),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    prompts: Path | None = PROMPTS_OPT,
    base_model: str | None = BASE_MODEL_OPT,
    revision: str | None = REVISION_OPT,
    adapter: str | None = ADAPTER_OPT,
    missing: str = typer.Option("error", "--missing",
                                help="items without an output: error (list them and stop) or "
                                     "skip (score the rest; the coverage is stated)"),
    repeats: int = typer.Option(1, "--repeats", min=1,
                                help="judge runs per editor; tables give their mean, "
                                     "results.json their std"),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="items per judge call"),
    n_boot: int = typer.Option(1000, "--n-boot", min=2, help="bootstrap resamples of the CIs"),
    price: str | None = typer.Option(None, "--price",
                                     help="USD per million input,output tokens for the cost "
                                          "line, e.g. 2,8"),
    out: Path = typer.Option(..., "--out", "-o", help="result folder"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="discard score files made with another judge "
                                        "configuration"),
    allow_errors: bool = typer.Option(False, "--allow-errors",
                                      help="exit with status 0 even when items failed to "
                                           "score (the coverage counts them either way)"),
    replay: Path | None = typer.Option(None, "--replay",
                                       help="a finished run's folder: every judge request is "
                                            "answered from its judge_log.jsonl, as recorded, "
                                            "and no server is contacted (-o: a new folder)"),
) -> None:
    """Judge editors' outputs on an editor benchmark (GEdit-Bench, ImgEdit-Bench, KRIS-Bench,
    RISEBench, UniREditBench, StructEditBench; the Emu Edit and MagicBrush test sets with
    their papers' metrics; `ieqa list benchmarks` lists them) and print its table.

    Writes OUT/items.jsonl, results.json, results.csv, report.html, the resumable score
    files OUT/scores/EDITOR/repeat-N.jsonl (a re-run scores only what is missing or failed)
    and, with a server judge, OUT/judge_log.jsonl: every request and its answer (a re-run
    takes the answers recorded there first; --replay recomputes a run from it).
    Exits with status 3 when items failed to score (unless --allow-errors), and prints no
    table when nothing scored.
    """
    if missing not in MISSING_RULES:
        raise typer.BadParameter(f"{missing!r}: choose error or skip", param_hint="--missing")
    try:
        protocol = get_protocol(benchmark)
    except BenchError as exc:
        raise typer.BadParameter(str(exc), param_hint="BENCHMARK") from None
    options = list(option or [])
    if judge is None:  # the official judge, with what the protocol needs unless given
        given = {o.split("=", 1)[0].strip() for o in options}
        options = [f"{k}={v}" for k, v in protocol.official_options.items()
                   if k not in given] + options
    scorer = make_scorer(judge or protocol.official_judge, options or None, model, None,
                         prompts=prompts, base_model=base_model, revision=revision,
                         adapter=adapter)
    with exits_when_stopped():
        result = bench_editor(benchmark, _outputs(outputs), scorer, out, data=data,
                              languages=language or ["en", "cn"], missing=missing,
                              repeats=repeats, batch_size=batch_size, n_boot=n_boot,
                              prices=_prices(price), overwrite=overwrite, replay=replay)
    paths = write_editor_outputs(result, out)
    res = result.results
    failed, scored, judged = _failure_counts(res)
    if judged and not any(item["error"] is None for item in result.items):
        console.print(f"[red]Nothing scored: all {judged} items with an output failed to "
                      f"score[/red] ({escape(_first_errors(result.items))}), so there is no "
                      "table. Check that the judge answers, fix the cause and run the same "
                      f"command again: only the failed items are judged again. Each item's "
                      f"error is in {paths['items']}.")
        raise typer.Exit(EXIT_ITEM_ERRORS)
    print_editor_table(console, res)
    usage = res["judge"]["usage"]
    console.print(f"judge tokens: {usage['prompt_tokens']} in, {usage['completion_tokens']} out"
                  + (f", cost ${res['judge']['cost_usd']:.4f}" if "cost_usd" in res["judge"] else ""))
    console.print(f"wrote {paths['results']}, {paths['items']} and {paths['report']}")
    if failed and not allow_errors:
        console.print(f"[red]{failed} of {judged} items failed to score[/red] "
                      f"({escape(_first_errors(result.items))}); the numbers above leave them "
                      "out. Fix the cause and run the same command again (only the failed items "
                      f"are judged again), or pass --allow-errors to accept them (exit status "
                      f"{EXIT_ITEM_ERRORS})")
        raise typer.Exit(EXIT_ITEM_ERRORS)


def _failure_counts(results: dict[str, Any]) -> tuple[int, int, int]:
    """(failed, scored, with an output) over every editor and language of ``results``."""
    covs = [cov["coverage"] for langs in results["editors"].values() for cov in langs.values()]
    return (sum(c["failed"] for c in covs), sum(c["scored"] for c in covs),
            sum(c["with_output"] for c in covs))


def _first_errors(items: list[dict[str, Any]], k: int = 3) -> str:
    """How many items failed by kind, then the first ``k`` distinct errors of ``items``,
    each with how many items had it."""
    counts: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for item in items:
        if item.get("error") is not None:
            counts[str(item["error"])] = counts.get(str(item["error"]), 0) + 1
            kind = (item.get("error_kinds") or ["other"])[0]
            kinds[kind] = kinds.get(kind, 0) + 1
    by_kind = ", ".join(f"{n} {ERROR_KINDS.get(kind, 'other error')}" for kind, n in kinds.items())
    shown = [f"{n} x {error}" if n > 1 else error for error, n in list(counts.items())[:k]]
    more = len(counts) - len(shown)
    return (f"{by_kind}: " if by_kind else "") + "; ".join(shown) \
        + (f"; {more} other errors" if more > 0 else "")
