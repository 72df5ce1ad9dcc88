"""How many CPU threads torch uses in ieqa's commands, and how they wait: :func:`configure_threads`.

Torch starts one OpenMP thread per core, and every parallel operation waits at its end
for the slowest of them; by default the waiting threads spin. When another process keeps
one of the cores busy, the thread sharing its core runs only part of the time and every
operation waits for it, while the spinning threads burn the CPU it needs: a tiny model's
training step, made of many small operations, then runs several times slower. Measured
with ``benchmarks/demo_shared_cpu.py`` on 2 cores (``ieqa demo`` alone / beside one busy
process): 2 spinning threads 70-79 s / 682 s; 1 thread 96 s / 98 s; 2 threads with
``OMP_WAIT_POLICY=PASSIVE`` 90 s / 106 s. So ieqa's commands do both:

* threads = cores this process may use (``os.sched_getaffinity``) minus the other
  processes running when the command starts (``/proc/loadavg``), at least 1;
* ``OMP_WAIT_POLICY=PASSIVE``: waiting threads sleep instead of spinning, which keeps
  the slowdown away when other processes start later.

``ieqa --threads N COMMAND`` or ``IEQA_NUM_THREADS=N`` sets the count instead (an
``OMP_NUM_THREADS`` or ``OMP_WAIT_POLICY`` already set is kept). Both reach torch's
intra-op pool, OpenMP and MKL through ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``/
``OMP_WAIT_POLICY`` when torch is not imported yet (child processes inherit them); when
torch is already imported only the count can change (:func:`torch.set_num_threads`, and
the inter-op pool while it has not started). Library users who do not go through the CLI
keep torch's defaults unless they call :func:`configure_threads` before importing torch.
"""

from __future__ import annotations

import os
import sys
import time

from ieqa.errors import IeqaError

__all__ = ["configure_threads", "thread_count", "default_threads", "available_cores", "busy_cores",
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


def thread_count(threads: int | None = None) -> int:
    """The thread count :func:`configure_threads` would set, without setting anything:
    ``threads`` when given, else ``$IEQA_NUM_THREADS``, else ``$OMP_NUM_THREADS``, else
    :func:`default_threads`.

    Raises:
        IeqaError: the count given or set in the environment is not an integer >= 1.
    """
    if threads is not None:
        return _parse(threads, "--threads")
    if os.environ.get(THREADS_ENV, "").strip():
        return _parse(os.environ[THREADS_ENV].strip(), THREADS_ENV)
    if os.environ.get("OMP_NUM_THREADS", "").strip():  # the user's own OpenMP setting
        return _parse(os.environ["OMP_NUM_THREADS"].strip(), "OMP_NUM_THREADS")
    return default_threads()


def configure_threads(threads: int | None = None) -> int:
    """Set the CPU thread count of torch (and OpenMP/MKL) for this process, and passive
    OpenMP waiting when torch is not imported yet (see the module docstring).

    Args:
        threads: the count (>= 1); ``None``: ``$IEQA_NUM_THREADS`` when set, else
            ``$OMP_NUM_THREADS`` when set, else :func:`default_threads`.

    Returns:
        The count set.

    Raises:
        IeqaError: ``threads`` or ``$IEQA_NUM_THREADS`` is not an integer >= 1.
    """
    n = thread_count(threads)
    torch = sys.modules.get("torch")
    if torch is None:  # read by torch, OpenMP and MKL when they start
        for var in _THREAD_VARS:
            os.environ[var] = str(n)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    else:
        torch.set_num_threads(n)
        try:
            torch.set_num_interop_threads(n)
        except RuntimeError:  # inter-op pool already started; intra-op is what matters
            pass
    return n
