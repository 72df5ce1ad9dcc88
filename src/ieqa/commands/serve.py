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

import ipaddress
from pathlib import Path

import typer
from rich.console import Console

from ieqa.commands._inputs import (
    CHECKPOINT_OPT,
    MODEL_OPT,
    OPTION_OPT,
    SCORER_HELP,
    make_scorer,
    parse_options,
)

NAME = "serve"
console = Console(stderr=True)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
                                      "viescore, min, mean or a weighted expression such as "
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
    from ieqa.scorers.reward import RewardRule, RewardRuleError
    from ieqa.serve.core import default_rule

    if tokens_file is None and not insecure and not is_loopback(host):
        raise typer.BadParameter(
            f"--host {host} accepts connections from other machines, and no --tokens-file was "
            "given: pass --tokens-file FILE (one token per line), or --insecure to serve without "
            "authentication on a network you trust, or bind 127.0.0.1", param_hint="--host")
    tokens = read_tokens(tokens_file) if tokens_file is not None else None
    scorer = make_scorer(scorer_name, option, model, checkpoint)
    if "batch_size" not in parse_options(option) and hasattr(scorer, "batch_size"):
        scorer.batch_size = max_batch  # one server batch = one model batch
    try:
        rule = RewardRule(reward or default_rule(scorer).rule,
                          uncertainty_penalty=uncertainty_penalty, floor=reward_floor)
    except RewardRuleError as exc:
        raise typer.BadParameter(str(exc), param_hint="--reward") from None
    model_ref = model or (str(checkpoint) if checkpoint is not None else None) or \
        parse_options(option).get("model")
    config = ServeConfig(max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue,
                         timeout_s=timeout_s, max_body_mb=max_body_mb, max_pixels=max_pixels,
                         max_request_pixels=max_request_pixels,
                         allow_root=allow_root, tokens=tokens, tie_threshold=tie_threshold,
                         model_ref=None if model_ref is None else str(model_ref))
    app = create_app(scorer, rule=rule, config=config)
    auth = f"{len(tokens)} token(s)" if tokens is not None else "no authentication"
    console.print(f"serving {scorer.name} (reward: {rule.formula()}) on http://{host}:{port} "
                  f"with {auth}; ready when GET /readyz answers 200")
    uvicorn.run(app, host=host, port=port, log_level=log_level,
                timeout_graceful_shutdown=max(5, int(timeout_s) + 5))
