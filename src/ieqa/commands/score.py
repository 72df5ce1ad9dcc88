"""``ieqa score``: score edits with any registered scorer.

Forms::

    ieqa score FOLDER -o OUT.parquet              # a folder of edits (source/, edited/, instructions.csv)
    ieqa score MANIFEST -o OUT.parquet            # a manifest (.jsonl, .jsonl.gz, .parquet, .csv)
    ieqa score BENCHMARK_PATH -o OUT.parquet      # a benchmark download ieqa recognises
    ieqa score NAME --root PATH -o OUT.parquet    # a registered benchmark name
    ieqa score SOURCE EDITED "instruction"        # one triplet, printed as a table
    ieqa score IMAGE --scorer niqe                # one image, no-reference scorers
    ieqa score MANIFEST -o OUT.parquet --engine ray --replicas 4 --gpus-per-replica 1
                                                  # the same run on a Ray Data actor pool

``--scorer`` picks the scorer (default: the one a ``--checkpoint`` holds, else ``classic``;
``ieqa list scorers``) and
``--option key=value`` passes it arguments. Long runs stream the input, decode images on
threads, show progress and can be re-run: the same command keeps the rows already scored
whose inputs did not change and scores the rest, errored rows included (see
:mod:`ieqa.scorers.run`).

Exit status: 0 when every row was scored; :data:`EXIT_ROW_ERRORS` (3) when the output
was written but some rows have errors (``--allow-errors`` makes that 0); 2 for a usage
error; 1 when the run could not be done (the message says why).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.backends.judge_log import JUDGE_LOG
from ieqa.commands.options import (
    ADAPTER_OPT,
    ALLOW_ERRORS_OPT,
    BASE_MODEL_OPT,
    CHECKPOINT_OPT,
    EXIT_PARTIAL,
    MODEL_OPT,
    NO_RETRY_OPT,
    OPTION_OPT,
    OUT_OPT,
    PROMPTS_OPT,
    REVISION_OPT,
    ROOT_OPT,
    SCORER_HELP,
    STRICT_OPT,
    WORKERS_OPT,
    exits_when_stopped,
    file_run_input,
    make_scorer,
    refuse_out_for_one,
    run_input,
)
from ieqa.data.resolve import is_manifest_file
from ieqa.registry import BENCHMARKS
from ieqa.scorers.base import Scorer, ScoreResult
from ieqa.scorers.run import (
    OUTPUT_SUFFIXES,
    ScoreRunSummary,
    judge_log_path,
    judge_logged,
    score_to_file,
)

NAME = "score"
console = Console()
#: the exit status of a run whose output was written with some rows in error
EXIT_ROW_ERRORS = EXIT_PARTIAL  # the contract's 3 (ieqa.commands.options)


def _fmt(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


def print_result(result: ScoreResult, scorer: Scorer) -> None:
    """One triplet's result as a table (scores with units, unavailable dimensions, region)."""
    if result.error is not None:
        console.print(f"[red]could not score:[/red] {escape(result.error)}")
        raise typer.Exit(1)
    info = scorer.info
    lo, hi = info.score_range
    scale = f"{'' if lo is None else _fmt(lo)}..{'' if hi is None else _fmt(hi)} {info.units}".strip()
    direction = "higher is better" if info.higher_better else "lower is better"
    table = Table(title=f"{scorer.name} ({scale}, {direction})", title_justify="left")
    table.add_column("dimension", style="bold")
    table.add_column("score", justify="right")
    table.add_column("note", overflow="fold")
    for dim in info.dimensions:
        if dim in result.scores:
            sigma = f" ± {_fmt(result.sigma[dim])}" if dim in result.sigma else ""
            table.add_row(dim, _fmt(result.scores[dim]) + sigma, "")
        elif dim in result.unavailable:
            table.add_row(dim, "[dim]n/a[/dim]", escape(result.unavailable[dim]))
    console.print(table)
    if result.flags:
        console.print(f"[yellow]flags:[/yellow] {', '.join(result.flags)} (a degenerate output; "
                      "see ieqa.scorers.flags)")
    if result.region is not None:
        r = result.region
        console.print(f"edit region <x, y, w, h>: <{r.x:.3f}, {r.y:.3f}, {r.w:.3f}, {r.h:.3f}>")
    if result.explanation:
        console.print(escape(result.explanation))
    if result.raw:
        console.print("[dim]raw:[/dim] " + escape(json.dumps(result.raw, sort_keys=True, default=str)))


def print_run(summary: ScoreRunSummary) -> None:
    """The end-of-run report: counts, time, the first errors, flags and per-dimension statistics."""
    resumed = f", {summary.n_resumed} kept from an earlier run" if summary.n_resumed else ""
    retried = f", {summary.n_retried} errored rows retried" if summary.n_retried else ""
    rate = summary.n_scored / summary.seconds if summary.seconds > 0 else float("nan")
    console.print(f"wrote [bold]{escape(str(summary.out))}[/bold]: {summary.n_rows} rows "
                  f"({summary.n_scored} scored in {summary.seconds:.1f} s, {rate:.1f}/s{resumed}"
                  f"{retried}); {summary.n_errors} with errors")
    if summary.flops is not None and summary.n_scored and summary.seconds > 0:
        from ieqa.backends.flops import describe_rate, peak_tflops

        peak = peak_tflops(summary.device)
        per, achieved, share = describe_rate(summary.flops / summary.n_scored,
                                             summary.n_scored / summary.seconds, peak)
        padding = (f"; {100 * summary.padding:.1f} % of the token positions were padding"
                   if summary.padding is not None else "")
        where = (f", {share} % of the {summary.device}'s dense bf16 peak" if peak
                 else "" if summary.device is None else f" ({summary.device}: peak unknown)")
        console.print(f"compute: {summary.flops / 1e12:.4g} TFLOP, {per} per row, {achieved} "
                      f"TFLOP/s{where}{padding}")
    for ident, err in summary.errors:
        console.print(f"[yellow]error[/yellow] {escape(ident)}: {escape(err)}")
    if summary.n_errors > len(summary.errors):
        console.print(f"... and {summary.n_errors - len(summary.errors)} more errors (the output's "
                      "error column has them all)")
    if summary.flags:
        listed = ", ".join(f"{n} {f}" for f, n in sorted(summary.flags.items()))
        console.print(f"[yellow]flagged outputs:[/yellow] {listed} (see the flags column)")
    table = Table(title="scores", title_justify="left")
    for c in ("dimension", "n", "mean", "min", "max", "unavailable"):
        table.add_column(c, justify="left" if c == "dimension" else "right")
    for dim, st in summary.stats.items():
        stats = tuple(_fmt(st[k]) for k in ("mean", "min", "max")) if st["n"] else ("-",) * 3
        table.add_row(dim, str(st["n"]), *stats, str(st["unavailable"]))
    console.print(table)


def command(
    inputs: list[str] = typer.Argument(
        ..., metavar="INPUT...",
        help="FOLDER of edits, MANIFEST, a benchmark path or name, SOURCE EDITED [INSTRUCTION], "
             "or one IMAGE"),
    scorer_name: str | None = typer.Option(None, "--scorer", "-s", help=SCORER_HELP),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    base_model: str | None = BASE_MODEL_OPT,
    revision: str | None = REVISION_OPT,
    prompts: Path | None = PROMPTS_OPT,
    adapter: str | None = ADAPTER_OPT,
    template: str | None = typer.Option(
        None, "--template", help="VLM scorers: prompt template name (ieqa list templates) or "
                                 "YAML/JSON file, e.g. ieqa optimize-prompt's "
                                 "best_template.yaml (same as -O template=...)"),
    out: Path | None = OUT_OPT,
    root: Path | None = ROOT_OPT,
    batch_size: int = typer.Option(8, "--batch-size", min=1,
                                   help="samples per scorer call and per checkpointed part"),
    workers: int | None = WORKERS_OPT,
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="discard an existing output or unfinished run (needed "
                                        "only when the scorer configuration changed)"),
    no_retry: bool = NO_RETRY_OPT,
    strict: bool = STRICT_OPT,
    allow_errors: bool = ALLOW_ERRORS_OPT,
    fail_fast: bool = typer.Option(False, "--fail-fast",
                                   help="stop at the first row that cannot be scored"),
    as_json: bool = typer.Option(False, "--json", help="one triplet: print the result as JSON"),
    engine: str = typer.Option("local", "--engine",
                               help="local: this process; ray: an actor pool on Ray Data (the "
                                    "ray extra), same output and resume"),
    address: str | None = typer.Option(None, "--address", "--ray-address",
                                       help="--engine ray: the Ray cluster (auto, "
                                            "ray://host:10001, ...); default: start a local Ray"),
    replicas: int | None = typer.Option(None, "--replicas", min=1,
                                        help="--engine ray: actors in the pool, one scorer "
                                             "each (default 1)"),
    gpus_per_replica: float | None = typer.Option(None, "--gpus-per-replica", min=0,
                                                  help="--engine ray: GPUs per actor (default 0)"),
    cpus_per_replica: float | None = typer.Option(None, "--cpus-per-replica",
                                                  help="--engine ray: CPUs per actor (default 1)"),
    replay: Path | None = typer.Option(None, "--replay",
                                       help="an earlier output of a server judge: every request "
                                            "is answered from its OUT.judge_log.jsonl, as "
                                            "recorded, and no server is contacted (-o: a new "
                                            "output)"),
) -> None:
    """Score edits: a folder, manifest or benchmark into a file, or one triplet to the screen.

    Exit status: 0 when every row was scored, 3 when the output was written but some rows
    have errors (0 with --allow-errors), 2 for a usage error, 1 when the run failed.
    """
    if engine not in ("local", "ray"):
        raise typer.BadParameter(f"{engine!r}: choose local or ray", param_hint="--engine")
    if template is not None:
        if any(o.partition("=")[0].strip() == "template" for o in option or []):
            raise typer.BadParameter("--template and -O template=... both given; use one",
                                     param_hint="--template")
        option = [*(option or []), f"template={template}"]
    ray_options = {"--address": address, "--replicas": replicas,
                   "--gpus-per-replica": gpus_per_replica, "--cpus-per-replica": cpus_per_replica}
    given = [name for name, value in ray_options.items() if value is not None]
    if engine == "local" and given:
        raise typer.BadParameter(f"{', '.join(given)} go with --engine ray; add --engine ray "
                                 "(or drop them)", param_hint="--engine")
    published = {"base_model": base_model, "revision": revision, "prompts": prompts,
                 "adapter": adapter}
    if replay is not None and (engine == "ray" or out is None):
        raise typer.BadParameter("--replay recomputes a scored file in this process: give -o "
                                 "NEW.parquet (or .jsonl), without --engine ray",
                                 param_hint="--replay")
    if engine == "ray":
        return _score_on_ray(inputs, out, root, strict=strict, allow_errors=allow_errors,
                             build=functools.partial(make_scorer, scorer_name, option, model,
                                                     checkpoint, **published),
                             scaling=dict(replicas=replicas or 1, gpus_per_replica=gpus_per_replica or 0.0,
                                          cpus_per_replica=1.0 if cpus_per_replica is None
                                          else cpus_per_replica, address=address),
                             run=dict(batch_size=batch_size, workers=workers, overwrite=overwrite,
                                      retry_errors=not no_retry, fail_fast=fail_fast))
    scorer = make_scorer(scorer_name, option, model, checkpoint, **published)
    first = Path(inputs[0])
    single = len(inputs) in (2, 3) or (
        len(inputs) == 1 and first.is_file() and not is_manifest_file(first)
        and inputs[0] not in BENCHMARKS.names() and _looks_like_image(first))
    if len(inputs) > 3:
        raise typer.BadParameter("give one FOLDER/MANIFEST/benchmark, or SOURCE EDITED "
                                 "[INSTRUCTION]", param_hint="INPUT...")
    if single:
        refuse_out_for_one(out)
        source, edited = (None, first) if len(inputs) == 1 else (first, Path(inputs[1]))
        instruction = inputs[2] if len(inputs) == 3 else ""
        result = scorer(source, edited, instruction)
        if as_json:
            console.print_json(json.dumps(_result_dict(result), default=str))
        else:
            print_result(result, scorer)
        return
    items, total, description = file_run_input(inputs, root, out, strict=strict,
                                               what="the scores")
    if replay is not None and not replay.name.endswith(JUDGE_LOG) and (
            replay.suffix.lower() in OUTPUT_SUFFIXES or not replay.exists()):
        replay = judge_log_path(replay)  # an earlier output: the log beside it
    with judge_logged(judge_log_path(out), scorer, replay=replay, overwrite=overwrite), \
            exits_when_stopped():
        summary = score_to_file(scorer, items, out, input_id=description, total=total,
                                batch_size=batch_size, workers=workers, overwrite=overwrite,
                                retry_errors=not no_retry, fail_fast=fail_fast)
    print_run(summary)
    exit_for(summary, allow_errors)


def _score_on_ray(inputs: list[str], out: Path | None, root: Path | None, *, strict: bool,
                  allow_errors: bool, build: Any, scaling: dict[str, Any],
                  run: dict[str, Any]) -> None:
    """``--engine ray``: a folder, manifest or benchmark into ``out`` on Ray Data."""
    from ieqa.scale.raydata import RayScoring, score_to_ray

    if len(inputs) != 1 or out is None:
        raise typer.BadParameter("--engine ray scores a FOLDER, MANIFEST or benchmark into -o "
                                 "OUT.parquet (or .jsonl); score one triplet without it",
                                 param_hint="--engine")
    plan = RayScoring(**scaling)
    items, total, description = run_input(inputs[0], root, strict=strict)
    summary = score_to_ray(build, items, out, scaling=plan, input_id=description, total=total,
                           **run)
    print_run(summary)
    exit_for(summary, allow_errors)


def exit_for(summary: ScoreRunSummary, allow_errors: bool) -> None:
    """Exit with :data:`EXIT_ROW_ERRORS` when rows errored (unless ``allow_errors``)."""
    if summary.n_errors and not allow_errors:
        console.print(f"[red]{summary.n_errors} of {summary.n_rows} rows have errors[/red]: fix "
                      "their cause and run the same command again (only those rows are scored "
                      "again), or pass --allow-errors to accept them (exit status "
                      f"{EXIT_ROW_ERRORS})")
        raise typer.Exit(EXIT_ROW_ERRORS)


_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif")


def _looks_like_image(path: Path) -> bool:
    return path.suffix.lower() in _IMAGE_SUFFIXES


def _result_dict(result: ScoreResult) -> dict:
    return {"id": result.id, "scores": result.scores, "unavailable": result.unavailable,
            "sigma": result.sigma, "explanation": result.explanation,
            "region": None if result.region is None else result.region.model_dump(),
            "raw": result.raw, "flags": result.flags, "error": result.error}
