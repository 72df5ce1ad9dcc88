"""The ``ieqa`` command line (Typer + rich)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

import ieqa

app = typer.Typer(
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
