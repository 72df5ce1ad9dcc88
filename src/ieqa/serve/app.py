"""The reward service's web app: :func:`create_app` (a scorer and a :class:`ServeConfig` in,
a FastAPI app out). ``ieqa serve`` runs it on uvicorn; a Ray Serve deployment can wrap
the same app.

Endpoints (API v1, the models of :mod:`ieqa.rewards.schema`):

* ``POST /v1/score`` — score items (JSON, images as base64 or data URLs);
  ``POST /v1/score/upload`` — one item as a multipart upload (files ``source`` and
  ``edited``, fields ``instruction`` and ``id``);
* ``POST /v1/compare`` — preference probabilities among each group's candidates;
* ``POST /v1/critique`` — judge critiques of edits (RE-Reward: logicality, accuracy,
  usefulness and their weighted reward) when the scorer judges critiques (``critique``);
  another scorer answers 400 saying so;
* ``GET /v1/info`` — the scorer, its dimensions and units, the reward rule, the limits;
* ``GET /metrics`` — Prometheus metrics (:mod:`ieqa.serve.metrics`);
* ``GET /healthz`` (the process answers) and ``GET /readyz`` (the model is loaded and
  warmed up with one tiny item) — both open, without a token.

Every item is scored as ``scorer.score`` scores it offline, whatever batch it lands in
(:mod:`ieqa.serve.batcher`); a bad item (an image that does not decode, a path outside
``--allow-root``, an image over the pixel budget) gets its own ``error`` and never fails
its neighbours. Error statuses: 401/403 (:mod:`ieqa.serve.auth`), 413 (body over
``max_body_mb``, or more items than the queue holds), 422 (malformed request, the
fields named), 429 with ``Retry-After`` (queue full), 503 (shutting down), 504
(``timeout_s`` passed).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, Form, Request, Security, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer

import ieqa
from ieqa.data.dimensions import canonical_dimension
from ieqa.rewards.local import (
    compare_response,
    critique_capable,
    critique_item,
    critique_response,
    critique_weights,
    default_rule,
    group_items,
    score_response,
)
from ieqa.rewards.rule import RewardRule
from ieqa.rewards.schema import (
    API_VERSION,
    CompareRequest,
    CompareResponse,
    CritiqueRequest,
    CritiqueResponse,
    ErrorResponse,
    InfoResponse,
    ScoreRequest,
    ScoreResponse,
)
from ieqa.scorers.base import Scorer, ScoreResult
from ieqa.serve import batcher as batching
from ieqa.serve.auth import BearerAuth, TokenSet
from ieqa.serve.images import BadImage, check_pixels, decode_image
from ieqa.serve.limits import BodyLimit
from ieqa.serve.metrics import CONTENT_TYPE_LATEST, RequestMetrics, ServeMetrics

__all__ = ["DEFAULT_MAX_PIXELS", "DEFAULT_MAX_REQUEST_PIXELS", "ServeConfig", "create_app"]

log = logging.getLogger(__name__)

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


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text} for status, text in (
        (401, "no or malformed Authorization header"), (403, "unknown token"),
        (413, "body over --max-body-mb, images over --max-request-pixels, or more items than --max-queue"),
        (422, "malformed request: the invalid fields are named"),
        (429, "queue full: retry after the Retry-After header's seconds"),
        (503, "shutting down"), (504, "not scored within --timeout-s"))}


class _Service:
    """The state one app holds: scorer, rule, batcher, metrics, readiness."""

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
        return self.scorer.score(items)

    async def warm_up(self) -> None:
        try:
            result = (await self.batcher.run_exclusive(lambda: self.scorer.score([_warmup_item()])))[0]
        except Exception as exc:  # noqa: BLE001 - reported by /readyz
            log.exception("warm-up failed")
            self.not_ready_reason = f"the warm-up item failed ({type(exc).__name__}: {exc})"
            return
        self.has_sigma = bool(result.sigma)
        self.ready = True

    # -------------------------------------------------------------- item preparation
    def prepare(self, raw: str, field: str, budget: _PixelBudget) -> bytes | Path:
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
        budget = _PixelBudget(self.config.max_request_pixels)
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


class _PixelBudget:
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


def _refusal(exc: batching.BatcherError) -> JSONResponse:
    status = {batching.QueueFull: 429, batching.TooManyItems: 413, RequestTooLarge: 413,
              batching.Timeout: 504, batching.ShuttingDown: 503}[type(exc)]
    headers = {}
    if isinstance(exc, batching.QueueFull):
        headers["Retry-After"] = str(exc.retry_after_s)
    elif isinstance(exc, batching.ShuttingDown):
        headers["Retry-After"] = "5"
    return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)


def _check_dimensions(dimensions: list[str] | None) -> JSONResponse | None:
    for i, name in enumerate(dimensions or []):
        try:
            canonical_dimension(name)
        except Exception as exc:  # noqa: BLE001 - a 422 naming the field
            return _validation_response([{"loc": ["body", "dimensions", i], "msg": str(exc),
                                          "type": "unknown_dimension"}])
    return None


def _validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
    detail = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
              for e in errors]
    line = "; ".join(f"{'.'.join(str(p) for p in d['loc'])}: {d['msg']}" for d in detail)
    return JSONResponse({"detail": detail, "error": f"invalid request: {line}; fix these "
                                                    "fields (see /openapi.json)"}, status_code=422)


def create_app(scorer: Scorer, *, rule: RewardRule | str | None = None,
               config: ServeConfig | None = None) -> FastAPI:
    """The reward service for ``scorer`` (see the module docstring).

    Args:
        scorer: the scorer every request uses (called from one thread, one batch at a time).
        rule: the reward rule (a :class:`RewardRule` or its rule string; default
            ``overall`` when the scorer reports it, else ``mean``).
        config: limits and options (default :class:`ServeConfig()`).

    Returns:
        A FastAPI app; its lifespan starts the batcher and the warm-up and, at shutdown,
        finishes the queued items (run it under a server that runs the lifespan, e.g.
        uvicorn).
    """
    config = config or ServeConfig()
    rule = default_rule(scorer) if rule is None else (rule if isinstance(rule, RewardRule) else RewardRule(rule))
    service = _Service(scorer, rule, config)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await service.batcher.start()
        warm = asyncio.get_running_loop().create_task(service.warm_up()) if config.warmup else None
        try:
            yield
        finally:
            service.ready = False
            service.not_ready_reason = "shutting down"
            if warm is not None and not warm.done():
                warm.cancel()
            await service.batcher.stop(config.drain_timeout_s)

    app = FastAPI(title="ieqa reward service", version=ieqa.__version__, lifespan=lifespan,
                  description="Scores and rewards of image edits (API v1). See the ieqa docs, "
                              "'Serve rewards over HTTP'.")
    app.state.service = service
    protected = [Security(HTTPBearer(auto_error=False))] if config.tokens is not None else []

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_response(list(exc.errors()))

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process answers (no token needed)."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses={503: {"model": ErrorResponse}})
    async def readyz() -> Response:
        """200 once the model is loaded and warmed up, else 503 (no token needed)."""
        if service.ready and not service.batcher.closing:
            return JSONResponse({"status": "ready"})
        return JSONResponse({"detail": service.not_ready_reason}, status_code=503,
                            headers={"Retry-After": "1"})

    @app.get("/metrics", tags=["health"], dependencies=protected,
             response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
    async def metrics() -> Response:
        """Prometheus metrics (text exposition format)."""
        return Response(service.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get(f"/{API_VERSION}/info", response_model=InfoResponse, dependencies=protected,
             responses=_ERRORS)
    async def info() -> InfoResponse:
        """The scorer, its dimensions, range and units, the reward rule and the limits."""
        info_ = scorer.info
        return InfoResponse(
            api_version=API_VERSION, ieqa_version=ieqa.__version__, scorer=scorer.name,
            scorer_config=json.loads(json.dumps(scorer.config(), default=str)),
            dimensions=list(scorer.dimensions), higher_better=scorer.higher_better,
            score_range=list(info_.score_range), units=info_.units,
            has_sigma=service.has_sigma, reward_rule=rule.describe(), model=config.model_ref,
            max_batch=config.max_batch, max_wait_ms=config.max_wait_ms)

    @app.post(f"/{API_VERSION}/score", response_model=ScoreResponse, dependencies=protected,
              responses=_ERRORS)
    async def score(request: ScoreRequest) -> Response | ScoreResponse:
        """Score edits; one result per item, in order (a bad item gets its own ``error``)."""
        bad = _check_dimensions(request.dimensions)
        if bad is not None:
            return bad
        try:
            service.batcher.check_size(len(request.items))
        except batching.TooManyItems as exc:
            return _refusal(exc)

        def prepare() -> list[dict[str, Any] | ScoreResult]:
            return service.prepare_items(request.items, lambda item, ident, source, edited: {
                "id": ident, "instruction": item.instruction, "source": source, "edited": edited})

        try:
            results = await service.run(await run_in_threadpool(prepare))
        except batching.BatcherError as exc:  # RequestTooLarge included
            return _refusal(exc)
        return score_response(results, rule.rewards(results), scorer=scorer.name, rule=rule,
                              dimensions=request.dimensions)

    @app.post(f"/{API_VERSION}/score/upload", response_model=ScoreResponse,
              dependencies=protected, responses=_ERRORS)
    async def score_upload(source: UploadFile = File(..., description="the source image file"),
                           edited: UploadFile = File(..., description="the edited image file"),
                           instruction: str = Form("", description="the editing instruction"),
                           id: str | None = Form(None, max_length=512,
                                                 description="caller's id, echoed back")
                           ) -> Response | ScoreResponse:
        """Score one edit sent as a multipart upload (no base64)."""
        ident = id if id is not None else "0"
        images = [await source.read(), await edited.read()]

        def prepare() -> dict[str, Any] | ScoreResult:
            budget = _PixelBudget(config.max_request_pixels)
            try:
                for name, data in zip(("source", "edited"), images, strict=True):
                    if not data:
                        raise BadImage(f"{name}: the uploaded file is empty; upload the image file")
                    budget.add(check_pixels(data, config.max_pixels, name))
            except BadImage as exc:
                return ScoreResult.failed(ident, str(exc))
            return {"id": ident, "instruction": instruction, "source": images[0], "edited": images[1]}

        try:
            results = await service.run([await run_in_threadpool(prepare)])
        except batching.BatcherError as exc:  # RequestTooLarge included
            return _refusal(exc)
        return score_response(results, rule.rewards(results), scorer=scorer.name, rule=rule)

    @app.post(f"/{API_VERSION}/compare", response_model=CompareResponse, dependencies=protected,
              responses=_ERRORS)
    async def compare(request: CompareRequest) -> Response | CompareResponse:
        """Preference probabilities among each group's candidates (K >= 2)."""
        namespace = uuid.uuid4().hex  # group ids are the caller's: keep them apart across requests
        try:
            service.batcher.check_size(sum(len(g.candidates) for g in request.groups))
        except batching.TooManyItems as exc:
            return _refusal(exc)

        def prepare() -> tuple[list[dict[str, Any] | ScoreResult], list[tuple[str, int, int]]]:
            flat: list[dict[str, Any] | ScoreResult] = []
            spans = []
            budget = _PixelBudget(config.max_request_pixels)
            for g, group in enumerate(request.groups):
                gid = group.id if group.id is not None else str(g)
                try:
                    source: bytes | Path | None = service.prepare(group.source, f"groups[{g}].source",
                                                                  budget)
                    source_error = None
                except BadImage as exc:
                    source, source_error = None, str(exc)
                start = len(flat)
                for c, item in enumerate(group_items(gid, source, group.instruction, group.candidates)):
                    try:
                        if source_error is not None:
                            raise BadImage(source_error)
                        item["edited"] = service.prepare(item["edited"], f"groups[{g}].candidates[{c}]",
                                                         budget)
                        item["group_id"] = f"{namespace}/{gid}"
                        flat.append(item)
                    except BadImage as exc:
                        flat.append(ScoreResult.failed(item["id"], str(exc)))
                spans.append((gid, start, len(flat)))
            return flat, spans

        try:
            flat, spans = await run_in_threadpool(prepare)
            results = await service.run(flat)
        except batching.BatcherError as exc:  # RequestTooLarge included
            return _refusal(exc)
        return compare_response(spans, results, rule.rewards(results), scorer=scorer.name,
                                rule=rule, tie_threshold=config.tie_threshold)

    critique_errors = {**_ERRORS, 400: {"model": ErrorResponse,
                                        "description": "the served scorer does not judge critiques"}}

    @app.post(f"/{API_VERSION}/critique", response_model=CritiqueResponse, dependencies=protected,
              responses=critique_errors)
    async def critique(request: CritiqueRequest) -> Response | CritiqueResponse:
        """Judge critiques of edits (RE-Reward): logicality, accuracy, usefulness and their
        weighted reward per item, in order (a bad item gets its own ``error``)."""
        why = critique_capable(scorer)
        if why is not None:
            return JSONResponse({"detail": why}, status_code=400)
        try:
            service.batcher.check_size(len(request.items))
        except batching.TooManyItems as exc:
            return _refusal(exc)

        def prepare() -> list[dict[str, Any] | ScoreResult]:
            return service.prepare_items(request.items, lambda item, ident, source, edited: critique_item(
                ident, source, edited, item.instruction, item.critique))

        try:
            results = await service.run(await run_in_threadpool(prepare))
        except batching.BatcherError as exc:  # RequestTooLarge included
            return _refusal(exc)
        return critique_response(results, scorer=scorer.name, weights=critique_weights(scorer))

    routes = {getattr(r, "path", "") for r in app.routes}
    app.add_middleware(BodyLimit, max_bytes=int(config.max_body_mb * 2**20))
    app.add_middleware(BearerAuth, tokens=config.tokens)
    app.add_middleware(RequestMetrics, metrics=service.metrics, routes=lambda: routes)
    return app
