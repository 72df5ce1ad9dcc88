"""``ieqa serve``: the reward service (FastAPI on uvicorn; the ``serve`` extra).

::

    ieqa serve --scorer classic --tokens-file tokens.txt            # 127.0.0.1:8000
    ieqa serve --checkpoint my-evaluator --reward reasonedit --max-batch 16

Builds the scorer as ``ieqa score`` does (``--scorer``, ``--model``, ``--checkpoint``,
``-O key=value``), the reward rule from ``--reward``, ``--uncertainty-penalty`` and
``--reward-floor``, and serves :func:`ieqa.serve.app.create_app`. Without
``--tokens-file`` the server binds only a loopback address unless ``--insecure`` is given.
See ``docs/howto/serve.md`` for the endpoints, statuses and limits.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from ieqa.commands._net import is_loopback
from ieqa.commands.options import (
    CHECKPOINT_OPT,
    MODEL_OPT,
    OPTION_OPT,
    SCORER_HELP,
    make_scorer,
    parse_options,
)

if TYPE_CHECKING:
    from ieqa.rewards.rule import RewardRule
    from ieqa.scorers.base import Scorer
    from ieqa.serve.app import ServeConfig

NAME = "serve"
console = Console(stderr=True)


def build_scorer(name: str | None, options: list[str] | None, model: str | None,
                 checkpoint: Path | None, max_batch: int) -> Scorer:
    """The scorer of the ``ieqa serve`` options; its ``batch_size`` (when it has one and
    ``-O batch_size=...`` is not given) is ``max_batch``, so one server batch is one
    model batch. Called in the server process, or in each Ray Serve replica."""
    scorer = make_scorer(name, options, model, checkpoint)
    if "batch_size" not in parse_options(options) and hasattr(scorer, "batch_size"):
        scorer.batch_size = max_batch
    return scorer


def reward_rule(scorer: Scorer | None, *, reward: str | None, uncertainty_penalty: float,
                floor: float | None) -> RewardRule:
    """The reward rule of ``--reward``, ``--uncertainty-penalty`` and ``--reward-floor``
    (``--reward`` left out: the scorer's default rule; ``scorer=None`` only checks an
    explicit ``--reward``)."""
    from ieqa.rewards.local import default_rule
    from ieqa.rewards.rule import RewardRule, RewardRuleError

    rule = reward or (default_rule(scorer).rule if scorer is not None else "mean")
    try:
        made = RewardRule(rule, uncertainty_penalty=uncertainty_penalty, floor=floor)
    except RewardRuleError as exc:
        raise typer.BadParameter(str(exc), param_hint="--reward") from None
    missing = made.missing(scorer.dimensions) if scorer is not None else []
    if missing:  # refused before the server starts, not on every request
        raise typer.BadParameter(
            f"the rule {made.formula()!r} needs {', '.join(missing)}, which {scorer.name} does "
            f"not report (it reports {', '.join(scorer.dimensions)}); choose a rule over "
            "those, e.g. mean, min or a weighted expression", param_hint="--reward")
    return made


def serve_on_ray(build: Callable[[], Scorer], make_rule: Callable[[Scorer], RewardRule],
                 config: ServeConfig, *, host: str, port: int, ray_address: str | None,
                 replicas: int, gpus_per_replica: float, cpus_per_replica: float,
                 min_replicas: int | None, max_replicas: int | None, auth: int) -> None:
    """``ieqa serve --replicas N``: deploy on Ray Serve and wait for Ctrl-C (or SIGTERM),
    then delete the deployment (and stop the local Ray instance this started)."""
    from ieqa.errors import IeqaError

    try:
        import ray

        from ieqa.serve import rayserve
    except ImportError as exc:
        raise typer.BadParameter(f"--replicas/--ray-address need Ray Serve ({exc}); install it "
                                 "with pip install 'ieqa[ray]'", param_hint="--replicas") from None
    try:
        plan = rayserve.RayPlan(replicas=replicas, gpus_per_replica=gpus_per_replica,
                                cpus_per_replica=cpus_per_replica, min_replicas=min_replicas,
                                max_replicas=max_replicas)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--replicas") from None
    started_ray = not ray.is_initialized()
    application = rayserve.build_application(build, rule=make_rule, config=config, plan=plan)
    try:
        try:
            url = rayserve.deploy(application, host=host, port=port, ray_address=ray_address,
                                  plan=plan)
        except (rayserve.ReplicaStartError, TimeoutError) as exc:
            raise IeqaError(str(exc)) from None
        scale = (f"{plan.replicas} replica(s)" if plan.bounds is None
                 else f"{plan.replicas} replica(s), autoscaling within {list(plan.bounds)}")
        console.print(f"serving on Ray Serve at {url} with {scale}, "
                      f"{auth or 'no'} token(s); Ctrl-C stops it")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        rayserve.shutdown(stop_ray=started_ray)


def command(
    scorer_name: str | None = typer.Option(None, "--scorer", "-s", help=SCORER_HELP),
    option: list[str] | None = OPTION_OPT,
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind; anything but a "
                             "loopback address needs --tokens-file (or --insecure)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port"),
    tokens_file: Path | None = typer.Option(None, "--tokens-file", exists=True, dir_okay=False,
                                            help="accepted bearer tokens, one per line (# "
                                                 "comments); /v1/* and /metrics then need one"),
    insecure: bool = typer.Option(False, "--insecure", help="serve a non-loopback --host "
                                  "without tokens (only on a network you trust)"),
    allow_root: Path | None = typer.Option(None, "--allow-root", exists=True, file_okay=False,
                                           help="let requests name image files inside this "
                                                "folder (never outside it)"),
    max_batch: int = typer.Option(8, "--max-batch", min=1, help="most items per model call "
                                  "(also the VLM's batch_size unless -O batch_size=... is given)"),
    max_wait_ms: float = typer.Option(5.0, "--max-wait-ms", min=0.0, help="longest wait (ms) "
                                      "for a batch to fill after its first item"),
    max_queue: int = typer.Option(256, "--max-queue", min=1, help="most items waiting; more "
                                  "-> 429 with Retry-After"),
    timeout_s: float = typer.Option(60.0, "--timeout-s", min=0.001, help="longest time (s) a "
                                    "request waits for its scores; then 504"),
    max_body_mb: float = typer.Option(64.0, "--max-body-mb", min=0.001, help="largest request "
                                      "body (MiB); larger -> 413"),
    max_pixels: int = typer.Option(4096 * 4096, "--max-pixels", min=1, help="pixel budget per "
                                   "image (width x height); a larger image is that item's error"),
    max_request_pixels: int = typer.Option(2**28, "--max-request-pixels", min=1,
                                           help="pixel budget of a whole request (sum over its "
                                                "images, from their headers); more -> 413"),
    reward: str | None = typer.Option(None, "--reward", help="reward rule: overall, reasonedit, "
                                      "viescore, min, mean, editscore (overall/10), editreward "
                                      "or a weighted expression such as "
                                      "'0.5*IA + 0.5*VQ' (default: overall when the scorer "
                                      "reports it, else mean)"),
    uncertainty_penalty: float = typer.Option(0.0, "--uncertainty-penalty", min=0.0,
                                              help="lambda in reward = mu - lambda*sigma "
                                                   "(scorers with sigma, e.g. vlm-gaussian)"),
    reward_floor: float | None = typer.Option(None, "--reward-floor", help="the reward of a "
                                              "flagged (blank, transparent, tiny, no_op, "
                                              "unrelated) edit"),
    tie_threshold: float = typer.Option(0.0, "--tie-threshold", min=0.0, help="/v1/compare: "
                                        "reward difference at or below which candidates tie"),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level"),
    replicas: int | None = typer.Option(None, "--replicas", min=1, rich_help_panel="Ray Serve",
                                        help="serve on Ray Serve with this many scorer "
                                             "replicas, each with its own dynamic batcher "
                                             "(the ray extra)"),
    ray_address: str | None = typer.Option(None, "--ray-address", rich_help_panel="Ray Serve",
                                           help="join this Ray cluster (HOST:PORT, ray://..., "
                                                "auto) instead of starting a local one"),
    gpus_per_replica: float = typer.Option(0.0, "--gpus-per-replica", min=0.0,
                                           rich_help_panel="Ray Serve",
                                           help="GPUs per replica (1: one replica per GPU)"),
    cpus_per_replica: float = typer.Option(1.0, "--cpus-per-replica", min=0.001,
                                           rich_help_panel="Ray Serve", help="CPUs per replica"),
    min_replicas: int | None = typer.Option(None, "--min-replicas", min=0,
                                            rich_help_panel="Ray Serve",
                                            help="autoscale: fewest replicas"),
    max_replicas: int | None = typer.Option(None, "--max-replicas", min=1,
                                            rich_help_panel="Ray Serve",
                                            help="autoscale: most replicas"),
) -> None:
    """Serve scores and rewards over HTTP (API v1: /v1/score, /v1/compare, /v1/info,
    /metrics, /healthz, /readyz), with dynamic batching across requests."""
    try:
        import uvicorn

        from ieqa.serve.app import ServeConfig, create_app
        from ieqa.serve.auth import read_tokens
    except ImportError as exc:
        raise typer.BadParameter(f"ieqa serve needs the serve extra ({exc}); install it with "
                                 "pip install 'ieqa[serve]'") from None
    if tokens_file is None and not insecure and not is_loopback(host):
        raise typer.BadParameter(
            f"--host {host} accepts connections from other machines, and no --tokens-file was "
            "given: pass --tokens-file FILE (one token per line), or --insecure to serve without "
            "authentication on a network you trust, or bind 127.0.0.1", param_hint="--host")
    tokens = read_tokens(tokens_file) if tokens_file is not None else None
    build = functools.partial(build_scorer, scorer_name, option, model, checkpoint, max_batch)
    make_rule = functools.partial(reward_rule, reward=reward, uncertainty_penalty=uncertainty_penalty,
                                  floor=reward_floor)
    on_ray = (replicas is not None or ray_address is not None or min_replicas is not None
              or max_replicas is not None)
    if on_ray:  # checked here; the scorer itself is built in each replica
        parse_options(option)
        if reward is not None:
            make_rule(None)
    else:
        scorer = build()
        rule = make_rule(scorer)
    model_ref = model or (str(checkpoint) if checkpoint is not None else None) or \
        parse_options(option).get("model")
    config = ServeConfig(max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue,
                         timeout_s=timeout_s, max_body_mb=max_body_mb, max_pixels=max_pixels,
                         max_request_pixels=max_request_pixels,
                         allow_root=allow_root, tokens=tokens, tie_threshold=tie_threshold,
                         model_ref=None if model_ref is None else str(model_ref))
    if on_ray:
        serve_on_ray(build, make_rule, config, host=host, port=port, ray_address=ray_address,
                     replicas=replicas if replicas is not None else max(1, min_replicas or 0), gpus_per_replica=gpus_per_replica,
                     cpus_per_replica=cpus_per_replica, min_replicas=min_replicas,
                     max_replicas=max_replicas, auth=len(tokens) if tokens else 0)
        return
    app = create_app(scorer, rule=rule, config=config)
    auth = f"{len(tokens)} token(s)" if tokens is not None else "no authentication"
    console.print(f"serving {scorer.name} (reward: {rule.formula()}) on http://{host}:{port} "
                  f"with {auth}; ready when GET /readyz answers 200")
    uvicorn.run(app, host=host, port=port, log_level=log_level,
                timeout_graceful_shutdown=max(5, int(timeout_s) + 5))
