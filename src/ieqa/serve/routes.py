"""The reward service's routes, by concern, as FastAPI routers that
:func:`ieqa.serve.app.create_app` assembles: :data:`health` (``/healthz``, ``/readyz``: open),
:data:`metrics_route` (``/metrics``) and :data:`api` (the API v1 endpoints). Each endpoint
reaches its app's :class:`~ieqa.serve.service.Service` through :func:`service`."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

import ieqa
from ieqa.data.dimensions import canonical_dimension
from ieqa.rewards.local import (
    compare_response,
    critique_capable,
    critique_item,
    critique_response,
    critique_weights,
    group_items,
    score_response,
)
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
from ieqa.scorers.base import ScoreResult
from ieqa.serve import batcher as batching
from ieqa.serve.images import BadImage, check_pixels
from ieqa.serve.metrics import CONTENT_TYPE_LATEST
from ieqa.serve.service import PixelBudget, RequestTooLarge, Service

__all__ = ["api", "health", "invalid_request", "metrics_route", "service"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text} for status, text in (
        (401, "no or malformed Authorization header"), (403, "unknown token"),
        (413, "body over --max-body-mb, images over --max-request-pixels, or more items than --max-queue"),
        (422, "malformed request: the invalid fields are named"),
        (429, "queue full: retry after the Retry-After header's seconds"),
        (503, "shutting down"), (504, "not scored within --timeout-s"))}


health = APIRouter(tags=["health"])
metrics_route = APIRouter()
api = APIRouter()


def service(request: Request) -> Service:
    """The app's service (the dependency of every endpoint)."""
    return request.app.state.service


async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    """A 422 that names the invalid fields (the app's RequestValidationError handler)."""
    return _validation_response(list(exc.errors()))


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


@health.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers (no token needed)."""
    return {"status": "ok"}


@health.get("/readyz", responses={503: {"model": ErrorResponse}})
async def readyz(svc: Service = Depends(service)) -> Response:
    """200 once the model is loaded and warmed up, else 503 (no token needed)."""
    if svc.ready and not svc.batcher.closing:
        return JSONResponse({"status": "ready"})
    return JSONResponse({"detail": svc.not_ready_reason}, status_code=503,
                        headers={"Retry-After": "1"})


@metrics_route.get("/metrics", tags=["health"],
                   response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(svc: Service = Depends(service)) -> Response:
    """Prometheus metrics (text exposition format)."""
    return Response(svc.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@api.get(f"/{API_VERSION}/info", response_model=InfoResponse,
         responses=_ERRORS)
async def info(svc: Service = Depends(service)) -> InfoResponse:
    """The scorer, its dimensions, range and units, the reward rule and the limits."""
    info_ = svc.scorer.info
    return InfoResponse(
        api_version=API_VERSION, ieqa_version=ieqa.__version__, scorer=svc.scorer.name,
        scorer_config=json.loads(json.dumps(svc.scorer.config(), default=str)),
        dimensions=list(svc.scorer.dimensions), higher_better=svc.scorer.higher_better,
        score_range=list(info_.score_range), units=info_.units,
        has_sigma=svc.has_sigma, reward_rule=svc.rule.describe(), model=svc.config.model_ref,
        max_batch=svc.config.max_batch, max_wait_ms=svc.config.max_wait_ms)


@api.post(f"/{API_VERSION}/score", response_model=ScoreResponse,
          responses=_ERRORS)
async def score(request: ScoreRequest, svc: Service = Depends(service)
                ) -> Response | ScoreResponse:
    """Score edits; one result per item, in order (a bad item gets its own ``error``)."""
    bad = _check_dimensions(request.dimensions)
    if bad is not None:
        return bad
    try:
        svc.batcher.check_size(len(request.items))
    except batching.TooManyItems as exc:
        return _refusal(exc)

    def prepare() -> list[dict[str, Any] | ScoreResult]:
        return svc.prepare_items(request.items, lambda item, ident, source, edited: {
            "id": ident, "instruction": item.instruction, "source": source, "edited": edited})

    try:
        results = await svc.run(await run_in_threadpool(prepare))
    except batching.BatcherError as exc:  # RequestTooLarge included
        return _refusal(exc)
    return score_response(results, svc.rule.rewards(results), scorer=svc.scorer.name, rule=svc.rule,
                          dimensions=request.dimensions)


@api.post(f"/{API_VERSION}/score/upload", response_model=ScoreResponse, responses=_ERRORS)
async def score_upload(source: UploadFile = File(..., description="the source image file"),
                       edited: UploadFile = File(..., description="the edited image file"),
                       instruction: str = Form("", description="the editing instruction"),
                       id: str | None = Form(None, max_length=512,
                                             description="caller's id, echoed back"),
                       svc: Service = Depends(service)) -> Response | ScoreResponse:
    """Score one edit sent as a multipart upload (no base64)."""
    ident = id if id is not None else "0"
    images = [await source.read(), await edited.read()]

    def prepare() -> dict[str, Any] | ScoreResult:
        budget = PixelBudget(svc.config.max_request_pixels)
        try:
            for name, data in zip(("source", "edited"), images, strict=True):
                if not data:
                    raise BadImage(f"{name}: the uploaded file is empty; upload the image file")
                budget.add(check_pixels(data, svc.config.max_pixels, name))
        except BadImage as exc:
            return ScoreResult.failed(ident, str(exc))
        return {"id": ident, "instruction": instruction, "source": images[0], "edited": images[1]}

    try:
        results = await svc.run([await run_in_threadpool(prepare)])
    except batching.BatcherError as exc:  # RequestTooLarge included
        return _refusal(exc)
    return score_response(results, svc.rule.rewards(results), scorer=svc.scorer.name, rule=svc.rule)


@api.post(f"/{API_VERSION}/compare", response_model=CompareResponse,
          responses=_ERRORS)
async def compare(request: CompareRequest, svc: Service = Depends(service)
                  ) -> Response | CompareResponse:
    """Preference probabilities among each group's candidates (K >= 2)."""
    namespace = uuid.uuid4().hex  # group ids are the caller's: keep them apart across requests
    try:
        svc.batcher.check_size(sum(len(g.candidates) for g in request.groups))
    except batching.TooManyItems as exc:
        return _refusal(exc)

    def prepare() -> tuple[list[dict[str, Any] | ScoreResult], list[tuple[str, int, int]]]:
        flat: list[dict[str, Any] | ScoreResult] = []
        spans = []
        budget = PixelBudget(svc.config.max_request_pixels)
        for g, group in enumerate(request.groups):
            gid = group.id if group.id is not None else str(g)
            try:
                source: bytes | Path | None = svc.prepare(group.source, f"groups[{g}].source",
                                                              budget)
                source_error = None
            except BadImage as exc:
                source, source_error = None, str(exc)
            start = len(flat)
            for c, item in enumerate(group_items(gid, source, group.instruction, group.candidates)):
                try:
                    if source_error is not None:
                        raise BadImage(source_error)
                    item["edited"] = svc.prepare(item["edited"], f"groups[{g}].candidates[{c}]",
                                                     budget)
                    item["group_id"] = f"{namespace}/{gid}"
                    flat.append(item)
                except BadImage as exc:
                    flat.append(ScoreResult.failed(item["id"], str(exc)))
            spans.append((gid, start, len(flat)))
        return flat, spans

    try:
        flat, spans = await run_in_threadpool(prepare)
        results = await svc.run(flat)
    except batching.BatcherError as exc:  # RequestTooLarge included
        return _refusal(exc)
    return compare_response(spans, results, svc.rule.rewards(results), scorer=svc.scorer.name,
                            rule=svc.rule, tie_threshold=svc.config.tie_threshold)


#: the critique endpoint's errors: the API's, and 400 for a scorer that judges no critiques
critique_errors = {**_ERRORS, 400: {"model": ErrorResponse,
                                    "description": "the served scorer does not judge critiques"}}


@api.post(f"/{API_VERSION}/critique", response_model=CritiqueResponse,
          responses=critique_errors)
async def critique(request: CritiqueRequest, svc: Service = Depends(service)
                   ) -> Response | CritiqueResponse:
    """Judge critiques of edits (RE-Reward): logicality, accuracy, usefulness and their
    weighted reward per item, in order (a bad item gets its own ``error``)."""
    why = critique_capable(svc.scorer)
    if why is not None:
        return JSONResponse({"detail": why}, status_code=400)
    try:
        svc.batcher.check_size(len(request.items))
    except batching.TooManyItems as exc:
        return _refusal(exc)

    def prepare() -> list[dict[str, Any] | ScoreResult]:
        return svc.prepare_items(request.items, lambda item, ident, source, edited: critique_item(
            ident, source, edited, item.instruction, item.critique))

    try:
        results = await svc.run(await run_in_threadpool(prepare))
    except batching.BatcherError as exc:  # RequestTooLarge included
        return _refusal(exc)
    return critique_response(results, scorer=svc.scorer.name, weights=critique_weights(svc.scorer))

