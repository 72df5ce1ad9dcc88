"""The ``ieqa`` command line (Typer + rich)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import ieqa
from ieqa.data.summary import DatasetSummary, summarize
from ieqa.registry import BENCHMARKS, DATASETS, RECIPES, SCORERS, TEMPLATES

if TYPE_CHECKING:
    from ieqa.bench.leaderboard import Leaderboard

app = typer.Typer(
    name="ieqa",
    help="Image Editing Quality Assessment: score, benchmark and train evaluators of image edits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

_LISTS = {"scorers": SCORERS, "benchmarks": BENCHMARKS, "recipes": RECIPES, "datasets": DATASETS,
          "templates": TEMPLATES}


def _version(value: bool) -> None:
    if value:
        console.print(f"ieqa {ieqa.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads for torch "
                                       "(default: $IEQA_NUM_THREADS, else the cores not busy "
                                       "with other processes when the command starts)."),
) -> None:
    """Image Editing Quality Assessment toolkit."""
    from ieqa.threads import configure_threads

    configure_threads(threads)


_LIST_KINDS = ("scorers", "benchmarks", "recipes", "datasets", "templates", "dimensions")


def _list_entries(kind: str) -> list[tuple[str, str]]:
    """``(name, description)`` of everything ieqa can build of one kind."""
    if kind == "dimensions":
        return list(ieqa.list_dimensions().items())
    return [(entry.name, entry.description) for entry in _LISTS[kind]]


@app.command("list")
def list_cmd(
    what: str | None = typer.Argument(None, help="scorers, benchmarks, recipes, datasets, templates or dimensions (default: a count of each)."),
) -> None:
    """List what ieqa can build: without an argument a count per kind, with one (e.g.
    `ieqa list scorers`) every name and its description."""
    if what is not None and what not in _LIST_KINDS:
        raise typer.BadParameter(f"choose one of: {', '.join(_LIST_KINDS)}", param_hint="WHAT")
    if what is None:
        table = Table(title="what ieqa can build", title_justify="left")
        for column in ("kind", "count", "details"):
            table.add_column(column, justify="right" if column == "count" else "left")
        for kind in _LIST_KINDS:
            table.add_row(kind, str(len(_list_entries(kind))), f"ieqa list {kind}")
        console.print(table)
        return
    table = Table(title=what, title_justify="left", show_header=True)
    table.add_column("name", style="bold")
    table.add_column("description")
    entries = _list_entries(what)
    for name, description in entries:
        table.add_row(name, escape(description))
    if not entries:
        table.add_row("[dim](none yet)[/dim]", "")
    console.print(table)


def _run_synth(out: Path, n: int, k: int, seed: int, size: int, photo_fraction: float, fmt: str) -> Path:
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    try:
        cfg = ShapesEditConfig(n=n, k=k, seed=seed, size=size, photo_fraction=photo_fraction)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return generate(out, cfg, format=fmt, progress=True)


def print_summary(summary: DatasetSummary) -> None:
    """Render a dataset summary as rich tables."""
    console.print(f"[bold]{summary.n_samples}[/bold] edits in [bold]{summary.n_groups}[/bold] groups")
    counts = Table(title="edits by task", title_justify="left")
    counts.add_column("task")
    counts.add_column("n", justify="right")
    for task, c in summary.tasks.most_common():
        counts.add_row(task, str(c))
    console.print(counts)
    dims = summary.dimensions
    if summary.mode_means:
        modes = Table(title="mean ground truth by failure mode (1-5)", title_justify="left")
        modes.add_column("mode")
        modes.add_column("n", justify="right")
        for d in dims:
            modes.add_column(d, justify="right")
        for mode, c in summary.modes.most_common():
            modes.add_row(mode, str(c), *(f"{summary.mode_means[mode].get(d, float('nan')):.2f}" for d in dims))
        console.print(modes)


def print_leaderboard(board: Leaderboard, true_ranking: list[str] | None = None) -> None:
    """Render an editor leaderboard (best first), with the true rank when it is known."""
    editors = Table(title="editors by mean overall score", title_justify="left")
    editors.add_column("rank", justify="right")
    editors.add_column("editor")
    if true_ranking:
        editors.add_column("true rank", justify="right")
    editors.add_column("n", justify="right")
    for c in board.columns:
        editors.add_column(c, justify="right")
    j_overall = len(board.columns) - 1
    for i, e in enumerate(board.editors):
        true = [str(true_ranking.index(e) + 1) if e in true_ranking else "-"] if true_ranking else []
        editors.add_row(f"{board.rank[i, j_overall]:.0f}", e, *true, str(int(board.n[i])),
                        *(f"{v:.2f}" for v in board.mean[i]))
    console.print(editors)


@app.command()
def synth(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (created)."),
    n: int = typer.Option(200, "--n", help="Number of edited images in total."),
    k: int = typer.Option(4, "--k", help="Candidates per (source, instruction) group, each from another editor."),
    seed: int = typer.Option(0, "--seed", help="Master seed: the same seed gives byte-identical output."),
    size: int = typer.Option(256, "--size", help="Image side in pixels."),
    photo_fraction: float = typer.Option(0.3, "--photo-fraction", help="Share of sources on real photos (0-1)."),
    fmt: str = typer.Option("jsonl", "--format", help="Manifest format: jsonl or parquet."),
) -> None:
    """Generate a ShapesEdit set (images + manifest with exact ground truth)."""
    t0 = time.perf_counter()
    manifest = _run_synth(out, n, k, seed, size, photo_fraction, fmt)
    console.print(f"wrote [bold]{manifest}[/bold] in {time.perf_counter() - t0:.1f} s")


@app.command()
def demo(
    out: Path = typer.Option(Path("ieqa-demo"), "--out", "-o", help="Working folder for the demo."),
    n: int = typer.Option(200, "--n", help="Number of ShapesEdit edits to generate."),
    seed: int = typer.Option(0, "--seed", help="Seed of the generated set."),
    train_recipe: str = typer.Option("editreward", "--train-recipe", help="Recipe the demo "
                                     "trains a tiny VLM with (ieqa list recipes); 'none' skips training."),
    train_steps: int = typer.Option(500, "--train-steps", min=1, help="Training steps per "
                                    "stage (500: about a minute on two CPU cores)."),
) -> None:
    """Run the end-to-end demo: generate a ShapesEdit set, score it with `classic`,
    benchmark the scores against the ground truth and write the HTML report; then train a
    tiny random VLM with a recipe and print its held-out SRCC before and after."""
    import json

    from ieqa.bench.leaderboard import editor_leaderboard
    from ieqa.bench.predictions import read_predictions
    from ieqa.bench.run import evaluate_predictions, write_bench_outputs
    from ieqa.commands.bench import print_bench_result
    from ieqa.commands.options import manifest_input_id
    from ieqa.commands.score import print_run
    from ieqa.data.loaders import load_benchmark
    from ieqa.data.manifest import iter_manifest
    from ieqa.scorers import create_scorer
    from ieqa.scorers.run import score_to_file

    t0 = time.perf_counter()
    console.rule("[bold]ieqa demo[/bold]: ShapesEdit")
    manifest = _run_synth(out / "shapesedit", n, 4, seed, 256, 0.3, "jsonl")
    card = json.loads((manifest.parent / "shapesedit.json").read_text())
    samples = list(iter_manifest(manifest))
    print_summary(summarize(samples))
    print_leaderboard(editor_leaderboard(samples), card["true_editor_ranking"])

    console.rule("[bold]score[/bold] with classic (weight-free default)")
    scorer = create_scorer("classic")
    summary = score_to_file(scorer, iter_manifest(manifest), out / "scores.parquet",
                            input_id=manifest_input_id(manifest), total=len(samples),
                            overwrite=True)
    print_run(summary)

    console.rule("[bold]bench[/bold]: classic scores against the ShapesEdit ground truth")
    result = evaluate_predictions(load_benchmark(manifest.parent),
                                  read_predictions(summary.out), n_boot=200, seed=seed)
    print_bench_result(result, f"classic scores ({summary.out.name})")
    paths = write_bench_outputs(result, out / "bench")
    console.print(f"report: [bold]{paths['html']}[/bold]")

    if train_recipe != "none":
        from ieqa.commands.train import train_demo

        console.rule(f"[bold]train[/bold] a tiny VLM with the {train_recipe} recipe")
        train_demo(out, train_recipe, train_steps)
    console.print(f"done in {time.perf_counter() - t0:.1f} s")


def _register_commands() -> None:
    import importlib

    from ieqa.commands import COMMAND_MODULES

    for name in COMMAND_MODULES:
        module = importlib.import_module(f"ieqa.commands.{name}")
        app.command(module.NAME)(module.command)


_register_commands()


def main() -> None:
    """Entry point of the ``ieqa`` console script."""
    try:
        app()
    except ieqa.IeqaError as exc:  # a run that could not be done: exit 1 (2 is a usage error)
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
