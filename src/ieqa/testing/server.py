"""A real uvicorn server in a background thread, for tests and benchmarks:
:func:`serve_in_thread`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["serve_in_thread"]


@contextmanager
def serve_in_thread(app: Any, *, host: str = "127.0.0.1", ready: bool = True,
                    timeout_s: float = 60.0, graceful_s: int = 10) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on ``host`` (a free port) in a daemon thread.

    Args:
        app: an ASGI app (e.g. :func:`ieqa.serve.app.create_app`'s).
        host: address to bind (loopback by default).
        ready: wait until ``GET /readyz`` answers 200 before yielding.
        timeout_s: longest wait (seconds) for the start and for readiness.
        graceful_s: uvicorn's graceful-shutdown timeout (seconds) on exit.

    Yields:
        The server's URL, ``http://HOST:PORT``; on exit the server is stopped (in-flight
        requests drained) and the thread joined.

    Raises:
        RuntimeError: the server did not start, become ready or stop in time.
    """
    import httpx
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning",
                                           timeout_graceful_shutdown=graceful_s))
    thread = threading.Thread(target=server.run, name="ieqa-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start; see its log above")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://{host}:{port}"
    try:
        while ready and httpx.get(f"{url}/readyz", timeout=timeout_s).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} was not ready within {timeout_s} s; GET /readyz says why")
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(graceful_s + 20)
        if thread.is_alive():
            raise RuntimeError(f"the server at {url} did not stop within {graceful_s + 20} s")
