"""One local Ray at a time in a test session.

Two Ray clusters (each with its raylet, GCS, workers and, for Ray Serve, a controller, a
proxy and replicas) on a 2-core machine starve each other: a Ray Serve deployment then
took over the docs runner's 300 s. pytest-xdist runs two workers, and the docs runner two
pages at once, so everything that starts Ray holds this lock while its Ray runs:
``local_ray`` (tests/conftest.py), tests/test_ray_cluster.py and the docs pages that use
Ray (tests/docs/test_examples.py). The lock is a file in the temp folder (across the
xdist workers) behind a thread lock (across the docs runner's threads); a wait longer
than ``TIMEOUT_S`` fails the test that waits, so no wait is unbounded.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock

TIMEOUT_S = 1200
_THREADS = threading.RLock()
_FILE = FileLock(str(Path(tempfile.gettempdir()) / "ieqa-tests-ray.lock"), timeout=TIMEOUT_S,
                 thread_local=False)


@contextlib.contextmanager
def ray_lock() -> Iterator[None]:
    """Hold the session's Ray lock (re-entrant in one thread)."""
    with _THREADS, _FILE:
        yield
