"""Scale-out of the reward service on Ray Serve (the ``ray`` extra): ``ieqa serve --replicas N``.

Each Ray Serve replica holds one scorer and runs the app of :func:`ieqa.serve.app.create_app`
behind Ray Serve's FastAPI integration (``serve.ingress``), so the routes, the bearer
tokens, the body and pixel limits, the statuses and the per-replica dynamic batcher are
those of the single-process server. The scorer is built inside the replica, by the
``build_scorer`` callable this module is given (a model is never pickled from the driver):
with ``gpus_per_replica=1`` Ray gives every replica its own GPU (``CUDA_VISIBLE_DEVICES``),
so ``device="auto"`` lands on it.

Routing: Ray Serve's proxy sends each HTTP request to one replica (the one with fewer
requests in flight of two picked at random); that replica's batcher merges it with the
other requests it holds, by the same rules as the single-process server (``max_batch``,
``max_wait_ms``, groups kept together). A replica takes up to ``max_queue`` requests at
once, so a full replica answers 429 with ``Retry-After`` from its own queue rather than
Ray queueing without bound. ``GET /metrics`` and ``GET /readyz`` answer for the replica the
request reached.

Autoscaling (``min_replicas``/``max_replicas``): Ray Serve's ``autoscaling_config`` with
``target_ongoing_requests = max_batch`` (a replica is "busy" when it holds about one full
batch of requests).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

from ieqa.ray_cluster import start_ray
from ieqa.rewards.rule import RewardRule
from ieqa.scorers.base import Scorer
from ieqa.serve.app import ServeConfig, create_app

try:  # the ``ray`` extra
    from ray import serve
except ImportError as _exc:  # pragma: no cover - exercised where ray is missing
    raise ImportError(f"Ray Serve is not installed ({_exc}); install it with "
                      "pip install 'ieqa[ray]'") from None

__all__ = ["APP_NAME", "RayPlan", "ReplicaStartError", "ScorerReplica", "build_application", "deploy",
           "shutdown"]

#: the Ray Serve application name of the reward service
APP_NAME = "ieqa"

#: a reward rule, its rule string, None (the scorer's default), or a function of the scorer
RuleSpec = RewardRule | str | None | Callable[[Scorer], RewardRule]


@dataclass(frozen=True)
class RayPlan:
    """How many replicas, and what each one gets from Ray.

    Attributes:
        replicas: replicas to start (>= 1); with autoscaling, the initial number.
        gpus_per_replica: GPUs Ray reserves per replica (0 on CPU; 1: one replica per GPU;
            a fraction shares a GPU).
        cpus_per_replica: CPUs Ray reserves per replica (> 0; Ray also sets the replica's
            ``OMP_NUM_THREADS`` from it).
        min_replicas, max_replicas: autoscaling bounds (both ``None``: a fixed number of
            replicas). Given one, the other defaults to ``replicas``.
    """

    replicas: int = 1
    gpus_per_replica: float = 0.0
    cpus_per_replica: float = 1.0
    min_replicas: int | None = None
    max_replicas: int | None = None

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {self.replicas}")
        if not self.gpus_per_replica >= 0:
            raise ValueError(f"gpus_per_replica must be >= 0, got {self.gpus_per_replica}")
        if not self.cpus_per_replica > 0:
            raise ValueError(f"cpus_per_replica must be > 0, got {self.cpus_per_replica}")
        low, high = self.bounds or (self.replicas, self.replicas)
        if low < 0 or high < 1 or low > high:
            raise ValueError(f"autoscaling bounds must satisfy 0 <= min_replicas <= max_replicas "
                             f"and max_replicas >= 1, got min {low}, max {high}")
        if not low <= self.replicas <= high:
            raise ValueError(f"replicas ({self.replicas}) must lie within the autoscaling bounds "
                             f"[{low}, {high}]; pass --replicas between --min-replicas and "
                             "--max-replicas")

    @property
    def bounds(self) -> tuple[int, int] | None:
        """``(min_replicas, max_replicas)`` when autoscaling, else ``None``."""
        if self.min_replicas is None and self.max_replicas is None:
            return None
        low = self.min_replicas if self.min_replicas is not None else min(self.replicas, self.max_replicas or 1)
        high = self.max_replicas if self.max_replicas is not None else max(self.replicas, low)
        return low, high

    def deployment_options(self, config: ServeConfig) -> dict[str, Any]:
        """The keyword arguments of Ray Serve's ``Deployment.options`` for this plan."""
        options: dict[str, Any] = {
            "ray_actor_options": {"num_cpus": self.cpus_per_replica,
                                  "num_gpus": self.gpus_per_replica},
            # the replica's own bounded queue decides backpressure (429), not Ray's
            "max_ongoing_requests": config.max_queue,
            "graceful_shutdown_timeout_s": config.drain_timeout_s + 5,
        }
        if self.bounds is None:
            options["num_replicas"] = self.replicas
        else:
            low, high = self.bounds
            options["autoscaling_config"] = {
                "min_replicas": low, "max_replicas": high, "initial_replicas": self.replicas,
                "target_ongoing_requests": config.max_batch}
        return options


def _resolve_rule(rule: RuleSpec, scorer: Scorer) -> RewardRule | str | None:
    if callable(rule) and not isinstance(rule, RewardRule):
        return rule(scorer)
    return rule


@serve.deployment(name="ieqa-scorer")
@serve.ingress()
class ScorerReplica:
    """One Ray Serve replica: builds its scorer, then serves :func:`create_app` on it.

    Args:
        build_scorer: called once in the replica, returns the scorer (e.g. a
            ``functools.partial`` of :func:`ieqa.create_scorer`); it must be picklable by
            reference or by value, not the scorer itself.
        rule: the reward rule (see :data:`RuleSpec`).
        config: the server's limits and options (the same for every replica).
    """

    def __init__(self, build_scorer: Callable[[], Scorer], rule: RuleSpec,
                 config: ServeConfig) -> None:
        self._scorer = build_scorer()
        self._rule = _resolve_rule(rule, self._scorer)
        self._config = config

    def __serve_build_asgi_app__(self) -> FastAPI:
        return create_app(self._scorer, rule=self._rule, config=self._config)


def build_application(build_scorer: Callable[[], Scorer], *, rule: RuleSpec = None,
                      config: ServeConfig | None = None, plan: RayPlan | None = None) -> Any:
    """The Ray Serve application (``Deployment.bind(...)``) of the reward service.

    Args:
        build_scorer: zero-argument callable that builds the scorer inside each replica.
        rule: the reward rule (a :class:`RewardRule`, its rule string, ``None`` for the
            scorer's default, or a function of the scorer returning one).
        config: limits and options of every replica's app (default :class:`ServeConfig()`).
        plan: replicas and their resources (default: one replica, one CPU).

    Returns:
        A ``ray.serve.Application`` to pass to :func:`deploy` or ``serve.run``.
    """
    config = config or ServeConfig()
    plan = plan or RayPlan()
    return ScorerReplica.options(**plan.deployment_options(config)).bind(build_scorer, rule, config)


def deploy(application: Any, *, host: str = "127.0.0.1", port: int = 8000,
           ray_address: str | None = None, ready_timeout_s: float = 600.0,
           plan: RayPlan | None = None) -> str:
    """Start (or join) Ray, start Ray Serve's HTTP proxy on ``host:port`` and run
    ``application``; returns the service URL once a replica answers ``/readyz`` with 200.

    Args:
        application: from :func:`build_application`.
        host, port: where Ray Serve's proxy listens (Ray Serve's HTTP options; on an
            existing cluster whose Serve already runs, its own options stay).
        ray_address: an existing cluster (``ray://...`` or ``HOST:PORT``, or ``auto``);
            ``None`` starts a local Ray instance unless Ray is already initialised.
        ready_timeout_s: longest wait (seconds) for the replicas and their warm-up.
        plan: the application's :class:`RayPlan`, to check before anything starts that
            one replica's GPUs and CPUs fit on the cluster.

    Raises:
        RayStartError: the address cannot be reached or a replica does not fit (within
            seconds, instead of Ray waiting for ever).
        TimeoutError: no replica was ready within ``ready_timeout_s``.
        ReplicaStartError: Ray Serve gave up starting the replicas (after its retries, in
            seconds for a scorer or rule that fails at once): the failure's last line.
        RuntimeError: Ray Serve could not deploy the application (its message says why,
            e.g. a replica's scorer failed to build).
    """
    import httpx

    start_ray(ray_address, num_gpus=plan.gpus_per_replica if plan else 0.0,
              num_cpus=plan.cpus_per_replica if plan else 0.0, include_dashboard=False,
              log_to_driver=False)
    serve.start(http_options={"host": host, "port": port})
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    try:
        serve.run(application, name=APP_NAME, route_prefix="/", blocking=False)
    except RuntimeError as exc:  # Ray Serve gave up; its status holds the replica's error
        failure = _deploy_failure(serve.status()) or str(exc)
        raise ReplicaStartError(
            f"the replicas of {url} failed to start: {failure} (the whole report: ray "
            "logs, or /tmp/ray/session_latest/logs)") from None
    deadline = time.monotonic() + ready_timeout_s
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return url
        except httpx.HTTPError:
            pass
        failure = _deploy_failure(serve.status())
        if failure is not None:
            raise ReplicaStartError(
                f"the replicas of {url} failed to start: {failure} (the whole report: ray "
                "logs, or /tmp/ray/session_latest/logs)")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no replica of {url} was ready within {ready_timeout_s:.0f} s; "
                               "see the replica logs (ray logs, or /tmp/ray/session_latest/logs)")
        time.sleep(0.2)


class ReplicaStartError(RuntimeError):
    """Ray Serve gave up starting the replicas (their constructor failed each time it
    tried: the scorer could not be built, or the reward rule does not fit it)."""


def _deploy_failure(status: Any) -> str | None:
    """The reason Ray Serve's ``status`` gives for the application's failed deployment (the
    exception's last line), or ``None`` while it has not failed."""
    app = getattr(status, "applications", {}).get(APP_NAME)
    if app is None or str(getattr(app.status, "value", app.status)) != "DEPLOY_FAILED":
        return None
    messages = [d.message for d in getattr(app, "deployments", {}).values() if d.message]
    text = "\n".join(messages) or app.message or "no reason given"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"


def shutdown(stop_ray: bool = True) -> None:
    """Delete the application, stop Ray Serve and (``stop_ray``) disconnect from Ray."""
    import ray

    if ray.is_initialized():
        serve.shutdown()
        if stop_ray:
            ray.shutdown()
