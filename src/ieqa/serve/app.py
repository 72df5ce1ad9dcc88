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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Security
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPBearer

import ieqa
from ieqa.rewards.local import default_rule
from ieqa.rewards.rule import RewardRule
from ieqa.scorers.base import Scorer
from ieqa.serve import routes
from ieqa.serve.auth import BearerAuth
from ieqa.serve.limits import BodyLimit
from ieqa.serve.metrics import RequestMetrics
from ieqa.serve.service import DEFAULT_MAX_PIXELS, DEFAULT_MAX_REQUEST_PIXELS, ServeConfig, Service

__all__ = ["DEFAULT_MAX_PIXELS", "DEFAULT_MAX_REQUEST_PIXELS", "ServeConfig", "create_app",
           "route_paths"]


def route_paths(app: FastAPI) -> set[str]:
    """Every path ``app`` serves, those of its included routers too (FastAPI 0.16x keeps an
    included router as one entry of ``app.routes``): the endpoints the request metrics
    count by name; any other path is counted as ``other``."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # a FastAPI that copies an included router's routes into the app
        found = list(app.routes)
    else:
        found = list(iter_route_contexts(app.routes))
    return {getattr(r, "path", "") for r in found}


def create_app(scorer: Scorer, *, rule: RewardRule | str | None = None,
               config: ServeConfig | None = None) -> FastAPI:
    """The reward service for ``scorer`` (see the module docstring): the routers of
    :mod:`ieqa.serve.routes` around one :class:`~ieqa.serve.service.Service`.

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
    service = Service(scorer, rule, config)

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
    app.add_exception_handler(RequestValidationError, routes.invalid_request)  # type: ignore[arg-type]
    protected = [Security(HTTPBearer(auto_error=False))] if config.tokens is not None else []
    app.include_router(routes.health)
    app.include_router(routes.metrics_route, dependencies=protected)
    app.include_router(routes.api, dependencies=protected)
    paths = route_paths(app)
    app.add_middleware(BodyLimit, max_bytes=int(config.max_body_mb * 2**20))
    app.add_middleware(BearerAuth, tokens=config.tokens)
    app.add_middleware(RequestMetrics, metrics=service.metrics, routes=lambda: paths)
    return app
