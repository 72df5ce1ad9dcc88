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

    def invoke(self, ctx: click.Context) -> Any:
        # Ctrl-C or SIGTERM: past click, which would print "Aborted!" and exit 1, to main()
        # (only under main(): app() called otherwise, by CliRunner say, keeps click's way)
        _SIGNAL["last"] = 2
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            if not _SIGNAL["main"]:
                raise
            raise Stopped(_SIGNAL["last"]) from None

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


class Stopped(Exception):
    """A command stopped by Ctrl-C (SIGINT) or SIGTERM: :func:`main` says so and exits with
    128 + the signal's number, as a shell reports a process the signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: the signal that stopped the command (SIGINT unless SIGTERM's handler saw one), and
#: whether main() runs it
_SIGNAL: dict[str, int] = {"last": 2, "main": 0}


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM stops a command as Ctrl-C does: a ``KeyboardInterrupt`` where it runs, so
    its ``finally`` blocks close and flush what it wrote (a command that serves installs
    its own handler when it starts serving)."""
    _SIGNAL["last"] = signum
    raise KeyboardInterrupt


def main() -> None:
    """Entry point of the ``ieqa`` console script."""
    import signal
    import threading

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _on_sigterm)
    _SIGNAL["main"] = 1
    try:
        app()
    except IeqaError as exc:  # a run that could not be done: exit 1 (2 is a usage error)
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise SystemExit(1) from None
    except Stopped as exc:
        name = signal.Signals(exc.signum).name
        err_console.print(f"stopped by {name}: what was written so far is kept, and a re-run "
                          "resumes it (ieqa score, bench-editor and generate go on where they "
                          "stopped when run again with the same options)", highlight=False)
        raise SystemExit(128 + exc.signum) from None


if __name__ == "__main__":
    main()
