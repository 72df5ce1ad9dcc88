"""``ieqa score``: score edits with any registered scorer.

Forms::

    ieqa score MANIFEST -o OUT.parquet            # a manifest (.jsonl, .jsonl.gz, .parquet)
    ieqa score BENCHMARK_PATH -o OUT.parquet      # a benchmark download ieqa recognises
    ieqa score NAME --root PATH -o OUT.parquet    # a registered benchmark name
    ieqa score SOURCE EDITED "instruction"        # one triplet, printed as a table
    ieqa score IMAGE --scorer niqe                # one image, no-reference scorers

``--scorer`` picks the scorer (default: the one a ``--checkpoint`` holds, else ``classic``;
``ieqa list scorers``) and
``--option key=value`` passes it arguments. Long runs stream the input, decode images on
threads, show a progress bar and can be resumed: run the same command again after an
interruption and only the unfinished rows are scored (see :mod:`ieqa.scorers.run`).
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands._inputs import (
    CHECKPOINT_OPT,
    MODEL_OPT,
    OPTION_OPT,
    SCORER_HELP,
    benchmark_input_id,
    load_benchmark_arg,
    make_scorer,
    manifest_input_id,
)
from ieqa.data.manifest import first_row_keys, iter_manifest
from ieqa.data.schema import EditSample
from ieqa.registry import BENCHMARKS
from ieqa.scorers.base import Scorer, ScoreResult
from ieqa.scorers.run import ScoreRunSummary, score_to_file

NAME = "score"
console = Console()
_MANIFEST_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")


def _is_manifest(path: Path) -> bool:
    """A file whose rows are EditSample rows (they have an ``edited`` image)."""
    keys = first_row_keys(path) if path.is_file() else None
    return keys is not None and "edited" in keys


def _count_rows(path: Path) -> int:
    if path.name.endswith(".parquet"):
        return pq.ParquetFile(path).metadata.num_rows
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def _manifest_input(path: Path) -> tuple[Iterator[EditSample], int, str]:
    return iter_manifest(path), _count_rows(path), manifest_input_id(path)


def _benchmark_input(target: str, root: Path | None) -> tuple[list[EditSample], int, str]:
    bench = load_benchmark_arg(target, root)
    return bench.samples, len(bench.samples), benchmark_input_id(bench, target, root)


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
    if result.region is not None:
        r = result.region
        console.print(f"edit region <x, y, w, h>: <{r.x:.3f}, {r.y:.3f}, {r.w:.3f}, {r.h:.3f}>")
    if result.explanation:
        console.print(escape(result.explanation))
    if result.raw:
        console.print("[dim]raw:[/dim] " + escape(json.dumps(result.raw, sort_keys=True, default=str)))


def print_run(summary: ScoreRunSummary) -> None:
    """The end-of-run report: counts, time, the first errors and per-dimension statistics."""
    resumed = f", {summary.n_resumed} from an earlier run" if summary.n_resumed else ""
    rate = summary.n_scored / summary.seconds if summary.seconds > 0 else float("nan")
    console.print(f"wrote [bold]{summary.out}[/bold]: {summary.n_rows} rows ({summary.n_scored} "
                  f"scored in {summary.seconds:.1f} s, {rate:.1f}/s{resumed}); "
                  f"{summary.n_errors} with errors")
    for ident, err in summary.errors:
        console.print(f"[yellow]error[/yellow] {escape(ident)}: {escape(err)}")
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
        help="MANIFEST, a benchmark path or name, SOURCE EDITED [INSTRUCTION], or one IMAGE"),
    scorer_name: str | None = typer.Option(None, "--scorer", "-s", help=SCORER_HELP),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="output file (.parquet or .jsonl) for a manifest or "
                                         "benchmark"),
    root: Path | None = typer.Option(None, "--root", exists=True,
                                     help="with a registered benchmark name: your download"),
    batch_size: int = typer.Option(8, "--batch-size", min=1,
                                   help="samples per scorer call and per checkpointed part"),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="image-decoding threads (default: min(8, CPUs))"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="discard an existing output or unfinished run"),
    fail_fast: bool = typer.Option(False, "--fail-fast",
                                   help="stop at the first row that cannot be scored"),
    as_json: bool = typer.Option(False, "--json", help="one triplet: print the result as JSON"),
) -> None:
    """Score edits: a manifest or benchmark into a file, or one triplet to the screen."""
    scorer = make_scorer(scorer_name, option, model, checkpoint)
    first = Path(inputs[0])
    single = len(inputs) in (2, 3) or (
        len(inputs) == 1 and first.is_file() and not _is_manifest(first)
        and inputs[0] not in BENCHMARKS.names() and _looks_like_image(first))
    if len(inputs) > 3:
        raise typer.BadParameter("give one MANIFEST/benchmark, or SOURCE EDITED [INSTRUCTION]",
                                 param_hint="INPUT...")
    if single:
        if out is not None:
            raise typer.BadParameter("-o is for manifests and benchmarks; one triplet is printed "
                                     "(add --json for machine-readable output)", param_hint="--out")
        source, edited = (None, first) if len(inputs) == 1 else (first, Path(inputs[1]))
        instruction = inputs[2] if len(inputs) == 3 else ""
        result = scorer(source, edited, instruction)
        if as_json:
            console.print_json(json.dumps(_result_dict(result), default=str))
        else:
            print_result(result, scorer)
        return
    if out is None:
        raise typer.BadParameter("pass -o OUT.parquet (or .jsonl) for the scores",
                                 param_hint="--out")
    if _is_manifest(first):
        if root is not None:
            raise typer.BadParameter("--root goes with a registered benchmark name",
                                     param_hint="--root")
        samples, total, input_id = _manifest_input(first)
    else:
        samples, total, input_id = _benchmark_input(inputs[0], root)
    summary = score_to_file(scorer, samples, out, input_id=input_id, total=total,
                            batch_size=batch_size, workers=workers, overwrite=overwrite,
                            fail_fast=fail_fast)
    print_run(summary)


_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif")


def _looks_like_image(path: Path) -> bool:
    return path.suffix.lower() in _IMAGE_SUFFIXES


def _result_dict(result: ScoreResult) -> dict:
    return {"id": result.id, "scores": result.scores, "unavailable": result.unavailable,
            "sigma": result.sigma, "explanation": result.explanation,
            "region": None if result.region is None else result.region.model_dump(),
            "raw": result.raw, "error": result.error}
