"""One progress helper for every long-running loop in ieqa: :func:`progress_bar`.

On a terminal it draws a rich bar on stderr. When stderr is not a terminal (a log file, a
pipe, a CI job, ``nohup``) it prints a plain line instead, every
``IEQA_PROGRESS_INTERVAL`` seconds (default :data:`DEFAULT_INTERVAL_S`) from a
background timer, so a slow step never silences it, and once more at the end::

    Scoring with classic: 120/300 edits (40%), 12.3 edits/s, 15 s elapsed, ~15 s left
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ieqa.errors import IeqaError

__all__ = ["progress_bar", "progress_interval_s", "format_progress", "format_duration",
           "Advance", "DEFAULT_INTERVAL_S", "INTERVAL_ENV"]

#: seconds between two progress lines when stderr is not a terminal
DEFAULT_INTERVAL_S = 10.0
#: environment variable overriding :data:`DEFAULT_INTERVAL_S` (seconds, > 0)
INTERVAL_ENV = "IEQA_PROGRESS_INTERVAL"


class Advance(Protocol):
    """``advance(n=1, status=None)``: ``n`` more steps done; ``status`` (e.g. ``"loss
    0.41"``) replaces the short text shown after the counts."""

    def __call__(self, n: int = 1, status: str | None = None) -> None: ...


def progress_interval_s() -> float:
    """Seconds between progress lines: ``$IEQA_PROGRESS_INTERVAL`` or 10.

    Raises:
        IeqaError: the variable is set to something other than a positive number.
    """
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise IeqaError(f"{INTERVAL_ENV}={raw!r} is not a number of seconds > 0; set it to "
                        f"e.g. 30, or unset it for the default of {DEFAULT_INTERVAL_S:g} s")
    return value


def format_duration(seconds: float) -> str:
    """``"15 s"``, ``"2 min 05 s"`` or ``"1 h 02 min"`` (seconds rounded)."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def format_progress(description: str, done: int, total: int | None, elapsed_s: float,
                    unit: str = "", status: str | None = None, stopped: bool = False) -> str:
    """One progress line: counts, percentage, rate (steps per second, over the whole
    run so far), elapsed time and, when the total is known and the rate positive, the
    estimated time left at that rate (``stopped``: the loop ended early, no estimate)."""
    unit_s = f" {unit}" if unit else ""
    parts = [f"{description}: {done}/{total}{unit_s}" if total is not None
             else f"{description}: {done}{unit_s}"]
    if total:
        parts[0] += f" ({100.0 * done / total:.0f}%)"
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if done:
        parts.append(f"{rate:.3g}{unit_s}/s")
    parts.append(f"{format_duration(elapsed_s)} elapsed")
    if stopped:
        parts.append("stopped")
    elif total is not None and done >= total:
        parts.append("done")
    elif total is not None and rate > 0:
        parts.append(f"~{format_duration((total - done) / rate)} left")
    if status:
        parts.append(status)
    return ", ".join(parts)


class _Lines:
    """The non-terminal reporter: a daemon timer prints :func:`format_progress` lines."""

    def __init__(self, description: str, total: int | None, unit: str, interval_s: float,
                 write: Callable[[str], None]) -> None:
        self.description, self.total, self.unit = description, total, unit
        self.interval_s, self.write = interval_s, write
        self.done, self.status = 0, None
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ieqa-progress", daemon=True)

    def advance(self, n: int = 1, status: str | None = None) -> None:
        self.done += n
        if status is not None:
            self.status = status

    def line(self, stopped: bool = False) -> str:
        return format_progress(self.description, self.done, self.total,
                               time.perf_counter() - self.t0, self.unit, self.status, stopped)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.write(self.line())

    def __enter__(self) -> _Lines:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.write(self.line(stopped=exc_type is not None))


def _stderr_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextmanager
def progress_bar(description: str, total: int | None, *, enabled: bool = True,
                 unit: str = "") -> Iterator[Advance]:
    """Context manager yielding ``advance(n=1, status=None)`` (see :class:`Advance`).

    Args:
        description: what runs, e.g. ``"Scoring with classic"``.
        total: number of steps (None when unknown).
        enabled: False shows nothing.
        unit: what a step is (``"edits"``, ``"steps"``), shown in plain lines.

    On a terminal: a rich bar on stderr. Otherwise: a plain line on stderr every
    :func:`progress_interval_s` seconds and one at the end (see the module docstring).
    """
    if not enabled:
        yield lambda n=1, status=None: None
        return
    console = Console(stderr=True)
    if not console.is_terminal:
        with _Lines(description, total, unit, progress_interval_s(), _stderr_line) as lines:
            yield lines.advance
        return
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
               TextColumn("{task.fields[status]}"))
    with Progress(*columns, transient=False, console=console) as bar:
        task = bar.add_task(description, total=total, status="")

        def advance(n: int = 1, status: str | None = None) -> None:
            if status is None:
                bar.advance(task, n)
            else:
                bar.update(task, advance=n, status=status)

        yield advance
