"""The reward service's state and limits: :class:`ServeConfig` (the ``ieqa serve`` options),
:class:`Service` (scorer, rule, batcher, metrics, readiness, item preparation under the
pixel budgets). :mod:`ieqa.serve.routes` answers requests with it; :func:`ieqa.serve.app.
create_app` builds one per app."""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.rewards.rule import RewardRule
from ieqa.scorers.base import Scorer, ScoreResult
from ieqa.serve import batcher as batching
from ieqa.serve.auth import TokenSet
from ieqa.serve.images import BadImage, check_pixels, decode_image
from ieqa.serve.metrics import ServeMetrics

__all__ = ["DEFAULT_MAX_PIXELS", "DEFAULT_MAX_REQUEST_PIXELS", "PixelBudget", "RequestTooLarge",
           "ServeConfig", "Service"]

log = logging.getLogger("ieqa.serve.app")

#: default pixel budget per image (width x height): 4096 x 4096
DEFAULT_MAX_PIXELS = 4096 * 4096
#: default pixel budget of one request (sum over its images): 256 Mpx, about 0.75 GiB as
#: decoded 8-bit RGB
DEFAULT_MAX_REQUEST_PIXELS = 2**28


@dataclass(frozen=True)
class ServeConfig:
    """The limits and options of a reward server (the ``ieqa serve`` options).

    Attributes:
        max_batch: most items per model call (>= 1).
        max_wait_ms: longest wait (milliseconds) for a batch to fill after its first item.
        max_queue: most items waiting for a batch; more -> 429 (>= 1).
        timeout_s: longest time (seconds) a request waits for its results; then 504.
        max_body_mb: largest request body (MiB); larger -> 413.
        max_pixels: pixel budget per image (width x height); a larger image is that
            item's error (its neighbours are scored). ``None``: no budget beyond the
            scorers' own decompression-bomb guard.
        max_request_pixels: pixel budget of a whole request (the sum over its images, read
            from their headers before anything is decoded); a larger request is refused
            with 413, so one request cannot make the server decode more than this.
            ``None``: no request budget.
        allow_root: folder that image paths may name (``None``: paths refused).
        tokens: accepted bearer tokens (``None``: no authentication).
        tie_threshold: reward difference (reward units, >= 0) at or below which two
            candidates of ``/v1/compare`` tie.
        model_ref: the model reference reported by ``/v1/info`` (hub id, path, checkpoint).
        warmup: score one tiny item at startup before ``/readyz`` says ready.
        drain_timeout_s: at shutdown, longest wait (seconds) for queued items to finish.
    """

    max_batch: int = 8
    max_wait_ms: float = 5.0
    max_queue: int = 256
    timeout_s: float = 60.0
    max_body_mb: float = 64.0
    max_pixels: int | None = DEFAULT_MAX_PIXELS
    max_request_pixels: int | None = DEFAULT_MAX_REQUEST_PIXELS
    allow_root: Path | None = None
    tokens: TokenSet | None = None
    tie_threshold: float = 0.0
    model_ref: str | None = None
    warmup: bool = True
    drain_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.max_body_mb > 0:
            raise ValueError(f"max_body_mb must be > 0, got {self.max_body_mb}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ValueError(f"max_pixels must be >= 1 or None, got {self.max_pixels}")
        if self.max_request_pixels is not None and self.max_request_pixels < 1:
            raise ValueError(f"max_request_pixels must be >= 1 or None, got {self.max_request_pixels}")
        if not self.tie_threshold >= 0:
            raise ValueError(f"tie_threshold must be >= 0, got {self.tie_threshold}")
        if self.allow_root is not None and not Path(self.allow_root).is_dir():
            raise ValueError(f"allow_root {self.allow_root} is not a folder; give an existing "
                             "folder (or none, to refuse paths)")


class Service:
    """The state one app holds: scorer, rule, config, batcher, metrics, readiness (the
    routes reach it through :func:`ieqa.serve.routes.service`)."""

    def __init__(self, scorer: Scorer, rule: RewardRule, config: ServeConfig) -> None:
        self.scorer, self.rule, self.config = scorer, rule, config
        self.metrics = ServeMetrics(queue_depth=lambda: self.batcher.queued_items)
        self.batcher = batching.Batcher(
            self._score_batch, max_batch=config.max_batch, max_wait_ms=config.max_wait_ms,
            max_queue=config.max_queue, timeout_s=config.timeout_s,
            on_error=lambda item, exc: ScoreResult.failed(
                item["id"], f"the scorer failed on this item's batch ({type(exc).__name__}: "
                            f"{exc}); send the item again, alone, to see whether it is the cause"),
            on_batch=self.metrics.observe_batch)
        self.ready = not config.warmup
        self.not_ready_reason = "warming up: the model scores one tiny item first"
        self.has_sigma = False

    def _score_batch(self, items: list[dict[str, Any]]) -> list[ScoreResult]:
        backend = getattr(self.scorer, "backend", None)
        before = getattr(backend, "flops_done", None)
        try:
            return self.scorer.score(items)
        finally:
            after = getattr(backend, "flops_done", None)
            if before is not None and after is not None and after.total > before.total:
                self.metrics.flops.inc(after.total - before.total)

    async def warm_up(self) -> None:
        try:
            result = (await self.batcher.run_exclusive(lambda: self._score_batch([_warmup_item()])))[0]
        except Exception as exc:  # noqa: BLE001 - reported by /readyz
            log.exception("warm-up failed")
            self.not_ready_reason = f"the warm-up item failed ({type(exc).__name__}: {exc})"
            return
        self.has_sigma = bool(result.sigma)
        self.ready = True

    # -------------------------------------------------------------- item preparation
    def prepare(self, raw: str, field: str, budget: PixelBudget) -> bytes | Path:
        image = decode_image(raw, allow_root=self.config.allow_root, field=field)
        budget.add(check_pixels(image, self.config.max_pixels, field))
        return image

    def prepare_items(self, items: Sequence[Any],
                      build: Callable[[Any, str, bytes | Path, bytes | Path], dict[str, Any]]
                      ) -> list[dict[str, Any] | ScoreResult]:
        """Decode each request item's two images under one request pixel budget and build its
        scorer item with ``build(item, id, source, edited)``; an item whose image is bad is a
        failed result (its neighbours go on). Raises :class:`RequestTooLarge` past the budget."""
        out: list[dict[str, Any] | ScoreResult] = []
        budget = PixelBudget(self.config.max_request_pixels)
        for i, item in enumerate(items):
            ident = item.id if item.id is not None else str(i)
            try:
                out.append(build(item, ident, self.prepare(item.source, f"items[{i}].source", budget),
                                 self.prepare(item.edited, f"items[{i}].edited", budget)))
            except BadImage as exc:
                out.append(ScoreResult.failed(ident, str(exc)))
        return out

    async def run(self, items: Sequence[dict[str, Any] | ScoreResult]) -> list[ScoreResult]:
        """Score the prepared items (a ScoreResult is an item already failed)."""
        todo = [(i, it) for i, it in enumerate(items) if not isinstance(it, ScoreResult)]
        keys = [_share_key(it) for _, it in todo]
        done = await self.batcher.submit([it for _, it in todo], keys) if todo else []
        results = list(items)
        for (i, item), result in zip(todo, done, strict=True):
            result.id = item["id"]
            results[i] = result
        n_ok = sum(r.error is None for r in results)
        self.metrics.count_items(n_ok, len(results) - n_ok)
        return results  # type: ignore[return-value]


class RequestTooLarge(batching.BatcherError):
    """The request's images hold more pixels than ``max_request_pixels`` (413)."""


class PixelBudget:
    """Sums a request's image pixels; raises :class:`RequestTooLarge` past the budget."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.total = limit, 0

    def add(self, pixels: int) -> None:
        self.total += pixels
        if self.limit is not None and self.total > self.limit:
            raise RequestTooLarge(
                f"the request's images hold more than {self.limit:,} pixels, the server's "
                "budget per request (--max-request-pixels); send fewer or smaller images per "
                "request (RewardClient: lower max_items_per_request)")


def _share_key(item: dict[str, Any]) -> tuple[str, str]:
    src = item["source"]
    where = hashlib.sha1(src).hexdigest() if isinstance(src, bytes) else str(src)
    return where, item["instruction"]


def _warmup_item() -> dict[str, Any]:
    import numpy as np
    from PIL import Image

    ramp = np.tile(np.linspace(0, 255, 64, dtype=np.uint8), (64, 1))
    source = np.stack([ramp, ramp.T, np.full_like(ramp, 128)], -1)
    edited = source.copy()
    edited[16:48, 16:48] = (200, 40, 40)
    encoded = []
    for arr in (source, edited):
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="PNG")
        encoded.append(buf.getvalue())
    return {"id": "warmup", "source": encoded[0], "edited": encoded[1],
            "instruction": "add a red square in the middle",
            # read by critique scorers only (meta["critique"]); other scorers ignore meta
            "meta": {"critique": "A red square was added in the middle; the rest is unchanged."}}


