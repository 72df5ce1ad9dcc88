"""Helpers of the reward-service tests: a real uvicorn server in a thread on 127.0.0.1
(port 0), small PNG images, and a scorer that is slow on purpose."""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np
from PIL import Image

import ieqa
from ieqa.scorers.base import Scorer


def png(seed: int, size: int = 48) -> bytes:
    """A random RGB PNG (``size`` x ``size`` pixels) from ``seed``."""
    rng = np.random.default_rng(seed)
    base = np.tile(np.linspace(0, 255, size, dtype=np.uint8), (size, 1))
    arr = np.stack([base, base.T, np.full_like(base, 100)], -1).astype(np.int16)
    arr += rng.integers(-40, 40, arr.shape, dtype=np.int16)
    buf = io.BytesIO()
    Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@contextmanager
def running(app: Any, ready: bool = True, timeout_s: float = 60.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port) in a thread; yields its URL.
    Waits for ``/readyz`` when ``ready``; stops the server (graceful) on exit."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                            timeout_graceful_shutdown=10)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        assert thread.is_alive(), "the server thread died"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    if ready:
        while httpx.get(f"{url}/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the server never became ready"
            time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(30)
        assert not thread.is_alive(), "the server did not stop"


class SlowScorer(Scorer):
    """``classic`` with a pause per call (seconds) and a log of the batch sizes it got."""

    def __init__(self, pause_s: float = 0.2) -> None:
        self.inner = ieqa.create_scorer("classic")
        self.info = self.inner.info
        self.pause_s = pause_s
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.gate.set()

    def score_sample(self, sample):  # pragma: no cover - score_batch is used
        raise NotImplementedError

    def score_batch(self, samples):
        self.gate.wait(30)
        self.calls.append(len(samples))
        time.sleep(self.pause_s)
        return self.inner.score_batch(samples)
