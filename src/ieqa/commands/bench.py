"""``ieqa bench``: a benchmark's own metric set from scores or verdicts you already have.

``--benchmark`` is a registered benchmark name (with ``--root``, the folder or file of
your download) or a path whose format is recognised. ``--scorer NAME`` scores the
benchmark now (into ``<out>/scores.parquet``, resumable like ``ieqa score``) and
evaluates those scores; otherwise ``--predictions`` is either

* a predictions file (JSONL/CSV/Parquet, e.g. ``ieqa score`` output: ``id`` + one column per dimension, see
  :mod:`ieqa.bench.predictions`) whose ids are the benchmark's sample ids, or
* a GenAI-Bench judge result file (``pairwise.jsonl`` / ``pairwise.json`` with ``idx``,
  ``human_vote``, ``model_vote``, ``response``): then ``--benchmark genai-bench`` alone
  is enough; the official leaderboard accuracy (from ``model_vote``) and the accuracy
  from re-parsing ``response`` with ieqa's verdict parser are both reported. With
  ``--root`` the items are loaded too and coverage is checked.

The metric set of each benchmark is listed in :mod:`ieqa.bench.protocols`. A table per
dimension is printed, then, where a peer's released evaluation code computes a number
differently, its ``..._published`` number beside ieqa's correct one; ``--out`` writes ``results.json``, ``results.csv`` and ``report.html``
(predicted-vs-human scatter plots per dimension, or accuracy bar charts).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.bench.errors import BenchError
from ieqa.bench.genai_judge import load_judge_results
from ieqa.bench.predictions import read_predictions
from ieqa.bench.run import (
    DISPLAY_COLUMNS,
    PUBLISHED_COLUMNS,
    BenchResult,
    display_rows,
    evaluate_judge_results,
    evaluate_predictions,
    published_rows,
    write_bench_outputs,
)
from ieqa.commands.options import (
    CHECKPOINT_OPT,
    FROM_SCORER_OPT,
    MAX_MISMATCH_OPT,
    MODEL_OPT,
    OPTION_OPT,
    benchmark_input_id,
    load_benchmark_arg,
    make_scorer,
)
from ieqa.data.loaders import BenchmarkData
from ieqa.data.loaders.genai_bench import NAME as GENAI_BENCH
from ieqa.data.loaders.genai_bench import is_judge_results
from ieqa.scorers.base import Scorer
from ieqa.scorers.run import score_to_file

NAME = "bench"
console = Console()
_VIEWS = ("pointwise", "pairwise", "multiway")


def _judge_run(benchmark: str, predictions: Path, root: Path | None, n_boot: int,
               seed: int) -> BenchResult:
    """Evaluate a GenAI-Bench judge result file; the items are loaded only when given
    (``--root``, or a path as ``--benchmark``) to check coverage."""
    bench = None
    if benchmark == GENAI_BENCH:
        if root is not None:
            bench = load_benchmark_arg(benchmark, root, None)
    elif Path(benchmark).exists():
        bench = load_benchmark_arg(benchmark, root, None)
        if bench.name != GENAI_BENCH:
            raise typer.BadParameter(f"{predictions.name} holds GenAI-Bench judge results but "
                                     f"--benchmark is {bench.name!r}", param_hint="--benchmark")
    else:
        raise typer.BadParameter(f"{predictions.name} is a GenAI-Bench judge result file: pass "
                                 f"--benchmark {GENAI_BENCH}", param_hint="--benchmark")
    return evaluate_judge_results(load_judge_results(predictions), bench, n_boot=n_boot, seed=seed)


def _score_benchmark(bench: BenchmarkData, scorer: Scorer, benchmark: str, root: Path | None,
                     out: Path | None, overwrite: bool = False) -> Path:
    """Score every sample of ``bench`` into ``<out>/scores.parquet`` (resumable), or into a
    temporary folder when there is no ``--out``; returns the scores file."""
    input_id = benchmark_input_id(bench, benchmark, root)
    folder = out if out is not None else Path(tempfile.mkdtemp(prefix="ieqa-bench-"))
    summary = score_to_file(scorer, bench.samples, folder / "scores.parquet", input_id=input_id,
                            total=len(bench.samples), overwrite=overwrite)
    console.print(f"scored {summary.n_rows} samples with {scorer.name} "
                  f"({summary.n_errors} errors) -> {summary.out}")
    for ident, err in summary.errors:
        console.print(f"[yellow]error[/yellow] {escape(ident)}: {escape(err)}")
    if summary.n_errors > len(summary.errors):
        console.print(f"... and {summary.n_errors - len(summary.errors)} more errors")
    return summary.out


def _print_published(result: BenchResult) -> None:
    """The as-published numbers beside the correct ones: metric names are never cut (the
    dimension column folds first), so the table reads at 100 columns."""
    rows = published_rows(result)
    if not rows:
        return
    table = Table(title="as published (a peer's released code) beside ieqa's correct number",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for c in PUBLISHED_COLUMNS:
        metric = c in ("ieqa (correct)", "as published")
        table.add_column(c, justify="right" if c.startswith("value") else "left",
                         no_wrap=metric or c.startswith("value"),
                         overflow="ellipsis" if metric else "fold",
                         style="bold" if c.startswith("value") else None)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)


def print_bench_result(result: BenchResult, source: str) -> None:
    """The coverage line, one metric table per dimension, the as-published numbers beside
    the correct ones, and the notes. Metric names and numbers are never cut; at a narrow
    width (100 columns) the subset and note columns fold instead."""
    cov = result.coverage
    console.print(f"[bold]{escape(result.benchmark)}[/bold] ({result.protocol}) — "
                  f"{escape(source)}: {escape(cov.describe())}")
    by_dim: dict[str, list[list[str]]] = {}
    for row in display_rows(result):
        by_dim.setdefault(row[0], []).append(row[1:])
    for dim, rows in by_dim.items():
        table = Table(title=f"{result.benchmark} metrics: {dim}", title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for c in DISPLAY_COLUMNS[1:]:
            table.add_column(c, justify="right" if c in ("value", "CI", "n") else "left",
                             style="bold" if c == "value" else None, overflow="fold",
                             no_wrap=c in ("metric", "value", "CI"))
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    _print_published(result)
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")


def command(
    benchmark: str = typer.Option(..., "--benchmark", "-b",
                                  help="registered name (with --root) or a path"),
    predictions: Path | None = typer.Option(
        None, "--predictions", "-p", exists=True, dir_okay=False,
        help="predictions file (JSONL/CSV/Parquet: id + one column per dimension) or a "
             "GenAI-Bench judge result file"),
    scorer_name: str | None = typer.Option(
        None, "--scorer", "-s",
        help="score the benchmark with this registered scorer instead (ieqa list scorers; "
             "default with --checkpoint: the scorer it holds)"),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    root: Path | None = typer.Option(None, "--root", exists=True,
                                     help="the folder or file of your benchmark download"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="folder for results.json, results.csv and report.html"),
    n_boot: int = typer.Option(0, "--bootstrap", min=0,
                               help="bootstrap resamples for confidence intervals (0: none)"),
    missing: str = typer.Option("raise", "--missing",
                                help="an item without a prediction: raise (error) or drop"),
    eps: float = typer.Option(0.0, "--eps", min=0.0,
                              help="pairwise / multi-way: the model calls a tie when "
                                   "|score(a) - score(b)| <= eps"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap and the calibration split"),
    dimension: str | None = typer.Option(
        None, "--dimension",
        help="pointwise: evaluate only this dimension; pairwise / multi-way: the predicted "
             "dimension to compare with every preference"),
    view: str | None = typer.Option(None, "--view",
                                    help="ShapesEdit folders: pointwise, pairwise or multiway"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="with --scorer and -o: replace scores.parquet written by "
                                        "another scorer configuration"),
    lower_better: bool = typer.Option(False, "--lower-better",
                                      help="the predictions are lower-is-better (distances)"),
    from_scorer: str | None = FROM_SCORER_OPT,
    max_mismatch: float = MAX_MISMATCH_OPT,
) -> None:
    """Compute a benchmark's own metrics from predictions, judge verdicts, or a scorer run now."""
    scoring = scorer_name is not None or checkpoint is not None  # a checkpoint names its scorer
    if (predictions is None) == (not scoring):
        raise typer.BadParameter("pass either --predictions or --scorer (or --checkpoint)",
                                 param_hint="--scorer")
    if missing not in ("raise", "drop"):
        raise typer.BadParameter("choose raise or drop", param_hint="--missing")
    if n_boot == 1:
        raise typer.BadParameter("use 0 (no intervals) or at least 2 resamples",
                                 param_hint="--bootstrap")
    if view is not None and view not in _VIEWS:
        raise typer.BadParameter(f"choose one of {', '.join(_VIEWS)}", param_hint="--view")
    if scoring:
        bench = load_benchmark_arg(benchmark, root, view)
        scorer = make_scorer(scorer_name, option, model, checkpoint)
        if lower_better:
            raise typer.BadParameter("a scorer states its own direction; --lower-better is for "
                                     "predictions files", param_hint="--lower-better")
        scores = _score_benchmark(bench, scorer, benchmark, root, out, overwrite)
        result = evaluate_predictions(bench, read_predictions(scores), missing=missing, eps=eps,
                                      n_boot=n_boot, seed=seed, dimension=dimension,
                                      higher_better=scorer.higher_better)
        source = f"{scorer.name} scores ({scores})"
    elif is_judge_results(predictions):
        result = _judge_run(benchmark, predictions, root, n_boot, seed)
        source = predictions.name
    else:
        bench = load_benchmark_arg(benchmark, root, view)
        result = evaluate_predictions(bench, read_predictions(predictions, scorer=from_scorer),
                                      missing=missing, eps=eps, n_boot=n_boot, seed=seed,
                                      dimension=dimension, higher_better=not lower_better,
                                      max_mismatch=max_mismatch)
        source = predictions.name
    print_bench_result(result, source)
    if out is not None:
        paths = write_bench_outputs(result, out)
        console.print(f"wrote [bold]{paths['json']}[/bold], results.csv and report.html")
    file = scores if scoring else predictions
    if file is not None and not is_judge_results(file):
        _released_pair(bench, file, out, source, from_scorer, eps=eps, n_boot=n_boot, seed=seed,
                       max_mismatch=max_mismatch,
                       dimension=dimension,
                       higher_better=scorer.higher_better if scoring else not lower_better)


def _released_pair(bench, file: Path, out: Path | None, source: str, from_scorer: str | None,
                   **settings) -> None:
    """The same metrics over the released code's reading of the judge's answers, where the
    scores hold one (``raw["released"]``: ``viescore``, ``editscore``, ``gedit-judge``):
    printed after ieqa's, written to ``OUT/released-reading/``. Rows without one are left
    out and counted."""
    released = read_predictions(file, reading="released", scorer=from_scorer)
    if not released:
        return
    try:
        result = evaluate_predictions(bench, released, missing="drop", **settings)
    except BenchError as exc:  # e.g. a dimension only ieqa's reading has
        console.print(f"[yellow]note:[/yellow] no metrics over the released reading: "
                      f"{escape(str(exc))}")
        return
    console.print("[bold]official: the same metrics over the released code's reading of the "
                  "judge's answers[/bold] (ieqa's own reading above)")
    print_bench_result(result, f"{source}, released reading")
    if out is not None:
        paths = write_bench_outputs(result, out / "released-reading")
        console.print(f"wrote [bold]{paths['json']}[/bold], results.csv and report.html")
