"""Prometheus metrics of ``ieqa serve`` (``GET /metrics``), on a registry of their own per
app (two apps in one process do not share counters).

=============================================  ==========================================
``ieqa_requests_total{endpoint,status}``       requests answered, by route and HTTP status
``ieqa_request_seconds{endpoint}``             latency histogram (seconds), by route
``ieqa_batch_size``                            items per model batch (histogram)
``ieqa_batch_seconds``                         time per model batch (histogram, seconds)
``ieqa_queue_items``                           items waiting for a batch (gauge)
``ieqa_items_total{outcome}``                  items scored, ``ok`` or ``error``; items/s is
                                               ``rate(ieqa_items_total[1m])``
``ieqa_model_flops_total``                     FLOPs the model computed (transformers
                                               backend, :mod:`ieqa.backends.flops`);
                                               TFLOP/s is ``rate(...[1m]) / 1e12``, divided
                                               by the GPU's dense peak the utilisation
``ieqa_device_memory_bytes{device}``           memory allocated by torch on each CUDA
                                               device (only when CUDA is available)
=============================================  ==========================================

:class:`RequestMetrics` is the ASGI middleware that counts requests; it labels them by
the matched route's path (``/v1/score``), or ``other`` for paths the app does not serve,
so a scan of random URLs cannot grow the label set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

__all__ = ["CONTENT_TYPE_LATEST", "RequestMetrics", "ServeMetrics"]

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ServeMetrics:
    """The metrics of one app (see the module docstring).

    Args:
        queue_depth: returns the number of queued items when scraped.
    """

    def __init__(self, queue_depth: Callable[[], float] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("ieqa_requests", "Requests answered, by route and HTTP status.",
                                ["endpoint", "status"], registry=self.registry)
        self.latency = Histogram("ieqa_request_seconds", "Request latency in seconds, by route.",
                                 ["endpoint"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.batch_size = Histogram("ieqa_batch_size", "Items per model batch.",
                                    buckets=_BATCH_BUCKETS, registry=self.registry)
        self.batch_seconds = Histogram("ieqa_batch_seconds", "Seconds per model batch.",
                                       buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.items = Counter("ieqa_items", "Items scored, by outcome (ok or error).", ["outcome"],
                             registry=self.registry)
        self.queue = Gauge("ieqa_queue_items", "Items waiting for a batch.", registry=self.registry)
        self.flops = Counter("ieqa_model_flops", "FLOPs the model computed (matrix products, "
                             "as torch's profiler counts them; transformers backends only).",
                             registry=self.registry)
        if queue_depth is not None:
            self.queue.set_function(queue_depth)
        self._device_memory()

    def _device_memory(self) -> None:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a core dependency
            return
        if not torch.cuda.is_available():
            return
        gauge = Gauge("ieqa_device_memory_bytes", "Bytes allocated by torch on a CUDA device.",
                      ["device"], registry=self.registry)
        for index in range(torch.cuda.device_count()):
            gauge.labels(device=f"cuda:{index}").set_function(
                lambda i=index: float(torch.cuda.memory_allocated(i)))

    def observe_batch(self, n_items: int, seconds: float) -> None:
        """Record one model batch of ``n_items`` that took ``seconds``."""
        self.batch_size.observe(n_items)
        self.batch_seconds.observe(seconds)

    def count_items(self, n_ok: int, n_error: int) -> None:
        """Record scored items by outcome."""
        if n_ok:
            self.items.labels(outcome="ok").inc(n_ok)
        if n_error:
            self.items.labels(outcome="error").inc(n_error)

    def render(self) -> bytes:
        """The Prometheus text exposition of the registry."""
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware counting every HTTP request (status and latency) in ``metrics``."""

    def __init__(self, app: Any, metrics: ServeMetrics, routes: Callable[[], set[str]]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        endpoint = path if path in self.routes() else "other"
        status = 500
        t0 = time.perf_counter()

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.requests.labels(endpoint=endpoint, status=str(status)).inc()
            self.metrics.latency.labels(endpoint=endpoint).observe(time.perf_counter() - t0)
