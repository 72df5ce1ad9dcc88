"""``ieqa list``: what ieqa can build (scorers, benchmarks, recipes, datasets, templates,
dimensions), each kind read from its registry (:mod:`ieqa.registry`)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.data.dimensions import list_dimensions
from ieqa.registry import BENCHMARKS, DATASETS, EDITOR_BENCHMARKS, RECIPES, SCORERS, TEMPLATES

NAME = "list"
console = Console()

_LISTS = {"scorers": SCORERS, "benchmarks": BENCHMARKS, "recipes": RECIPES, "datasets": DATASETS,
          "templates": TEMPLATES}


_LIST_KINDS = ("scorers", "benchmarks", "recipes", "datasets", "templates", "dimensions")


def _list_entries(kind: str) -> list[tuple[str, str]]:
    """``(name, description)`` of everything ieqa can build of one kind."""
    if kind == "dimensions":
        return list(list_dimensions().items())
    entries = [(entry.name, entry.description + _release_line(entry)) for entry in _LISTS[kind]]
    if kind == "benchmarks":  # the judge benchmarks (ieqa bench), then the editor ones
        entries += [(entry.name, f"editor benchmark (ieqa bench-editor): {entry.description}")
                    for entry in EDITOR_BENCHMARKS]
    return entries


def _release_line(entry: object) -> str:
    """For a published evaluator: its hub id, base model, size, dimensions and paper."""
    info = getattr(entry, "info", None)
    release = getattr(info, "release", None)
    if not release:
        return ""
    what = [f"base {release['base_model']}"] if release.get("base_model") else []
    what += [f"{release['parameters']} parameters"] if release.get("parameters") else []
    return (f"\n  released: {release['hub_id']} ({', '.join(what) + '; ' if what else ''}"
            f"{', '.join(info.dimensions)}; {release['paper']})")


def command(
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


