"""``ieqa editor-table``: one table of editors from several ``bench-editor`` runs of one
benchmark (:func:`ieqa.bench.editor.merge_results`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from ieqa.bench.editor.report import merge_results, write_merged_table
from ieqa.commands.bench_editor import print_editor_table

NAME = "editor-table"
console = Console()


def command(
    results: list[Path] = typer.Argument(..., exists=True, dir_okay=True,
                                         help="results.json files (or the result folders "
                                              "holding them) of bench-editor runs of one "
                                              "benchmark, judged the same way"),
    out: Path = typer.Option(..., "--out", "-o", help="folder for results.json, results.csv "
                                                      "and report.html"),
) -> None:
    """Put the editors of several bench-editor runs in one table, as the papers do.

    The runs must be of one benchmark and judged by the same judge, model, temperature and
    prompt files; an editor name may appear once.
    """
    files = [p / "results.json" if p.is_dir() else p for p in results]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no results.json in {', '.join(missing)}",
                                 param_hint="RESULTS")
    merged = merge_results([json.loads(p.read_text(encoding="utf-8")) for p in files],
                           sources=[str(p) for p in files])
    paths = write_merged_table(merged, out)
    print_editor_table(console, merged)
    console.print(f"wrote {paths['results']}, {paths['csv']} and {paths['report']}")
