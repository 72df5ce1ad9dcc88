"""The ``ieqa`` command line (Typer + rich)."""

from __future__ import annotations

import importlib
from typing import Any

import click
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from ieqa.commands import COMMANDS
from ieqa.errors import IeqaError
from ieqa.version import __version__


class _LazyCommands(TyperGroup):
    """The ``ieqa`` group: a command's module (and what it imports: torch, scipy, ...) is
    imported when that command runs, not when any command does."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in _LOADED:
            module = importlib.import_module(f"ieqa.commands.{COMMANDS[cmd_name]}")
            single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            single.command(module.NAME)(module.command)
            _LOADED[cmd_name] = typer.main.get_command(single)
        return _LOADED[cmd_name]


_LOADED: dict[str, Any] = {}

app = typer.Typer(
    cls=_LazyCommands,
    name="ieqa",
    help="Image Editing Quality Assessment: score, benchmark and train evaluators of image edits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

def _version(value: bool) -> None:
    if value:
        console.print(f"ieqa {__version__}")
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


def main() -> None:
    """Entry point of the ``ieqa`` console script."""
    try:
        app()
    except IeqaError as exc:  # a run that could not be done: exit 1 (2 is a usage error)
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
