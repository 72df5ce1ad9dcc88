"""How many CPU threads torch uses in ieqa's commands: :func:`configure_threads`.

Torch starts one OpenMP thread per core, and every parallel operation waits at its end
for the slowest of them. When another process keeps one of the cores busy, the thread
that shares its core runs only part of the time, so each operation waits for it: a tiny
model's training step, made of many small operations, then runs several times slower
than on one thread (``ieqa demo`` beside one busy process: see
``benchmarks/README.md``). ieqa's commands therefore give torch only the cores that are
free when the command starts:

    threads = cores this process may use (os.sched_getaffinity)
              - other processes running right now (/proc/loadavg), at least 1

``ieqa --threads N COMMAND`` or ``IEQA_NUM_THREADS=N`` sets the count instead (an
``OMP_NUM_THREADS`` already set is kept when neither is given). The count
reaches torch (intra-op and inter-op threads), OpenMP and MKL through ``OMP_NUM_THREADS``
and ``MKL_NUM_THREADS`` when torch is not imported yet (child processes inherit them),
and through :func:`torch.set_num_threads` when it is. Library users who do not go
through the CLI keep torch's defaults unless they call :func:`configure_threads`.
"""

from __future__ import annotations

import os
import sys
import time

from ieqa.errors import IeqaError

__all__ = ["configure_threads", "default_threads", "available_cores", "busy_cores",
           "THREADS_ENV"]

#: environment variable with an explicit thread count (an integer >= 1)
THREADS_ENV = "IEQA_NUM_THREADS"
_LOADAVG = "/proc/loadavg"
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity; ``os.cpu_count()`` where the
    platform has no affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def busy_cores(samples: int = 3, pause_s: float = 0.02) -> int:
    """Other processes (threads) running right now: the kernel's count of runnable tasks
    (``/proc/loadavg``, 4th field) minus this process, the median of ``samples`` readings
    ``pause_s`` seconds apart (a short-lived process seen once does not count); 0 where
    it cannot be read."""
    counts = []
    for i in range(samples):
        if i:
            time.sleep(pause_s)
        try:
            with open(_LOADAVG) as fh:
                counts.append(int(fh.read().split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return 0
    return max(0, sorted(counts)[len(counts) // 2])


def default_threads() -> int:
    """The thread count ieqa's commands use unless told otherwise (module docstring)."""
    return max(1, available_cores() - busy_cores())


def _parse(value: int | str, source: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise IeqaError(f"{source} must be a whole number of threads >= 1, got {value!r}; "
                        f"unset it to let ieqa choose ({default_threads()} here)")
    return n


def configure_threads(threads: int | None = None) -> int:
    """Set the CPU thread count of torch (and OpenMP/MKL) for this process.

    Args:
        threads: the count (>= 1); ``None``: ``$IEQA_NUM_THREADS`` when set, else
            ``$OMP_NUM_THREADS`` when set, else :func:`default_threads`.

    Returns:
        The count set.

    Raises:
        IeqaError: ``threads`` or ``$IEQA_NUM_THREADS`` is not an integer >= 1.
    """
    if threads is not None:
        n = _parse(threads, "--threads")
    elif os.environ.get(THREADS_ENV, "").strip():
        n = _parse(os.environ[THREADS_ENV].strip(), THREADS_ENV)
    elif os.environ.get("OMP_NUM_THREADS", "").strip():  # the user's own OpenMP setting
        n = _parse(os.environ["OMP_NUM_THREADS"].strip(), "OMP_NUM_THREADS")
    else:
        n = default_threads()
    torch = sys.modules.get("torch")
    if torch is None:  # read by torch, OpenMP and MKL when they start
        for var in _THREAD_VARS:
            os.environ[var] = str(n)
    else:
        torch.set_num_threads(n)
        try:
            torch.set_num_interop_threads(n)
        except RuntimeError:  # inter-op pool already started; intra-op is what matters
            pass
    return n
