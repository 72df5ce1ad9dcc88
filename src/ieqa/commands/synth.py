"""``ieqa synth``: generate a ShapesEdit set (images and a manifest with exact ground truth),
and the tables the demo prints of it."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ieqa.bench.leaderboard import Leaderboard
from ieqa.data.summary import DatasetSummary

NAME = "synth"
console = Console()


def run_synth(out: Path, n: int, k: int, seed: int, size: int, photo_fraction: float, fmt: str) -> Path:
    """Generate the set into ``out``; a bad setting is a usage error naming it."""
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


def command(
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
    manifest = run_synth(out, n, k, seed, size, photo_fraction, fmt)
    console.print(f"wrote [bold]{manifest}[/bold] in {time.perf_counter() - t0:.1f} s")


