"""``ieqa stand-in-judge``: an offline stand-in for a served VLM judge, to try the commands
that call one (``vlm-judge``, critiques, explanations, editor benchmarks, FDMPO) without a
GPU or an API key.

    ieqa stand-in-judge --port 8000 &
    ieqa score edits/manifest.jsonl --scorer vlm-judge --model judge \\
        -O base_url=http://localhost:8000/v1 -o scores.jsonl

It judges nothing: its answers are derived from each request's bytes
(:mod:`ieqa.testing.judge`).
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

NAME = "stand-in-judge"
console = Console()


def command(
    port: int = typer.Option(8000, "--port", min=0, max=65535,
                             help="TCP port (0: a free one, printed)"),
    host: str = typer.Option("127.0.0.1", "--host",
                             help="address to bind (loopback by default; it has no "
                                  "authentication)"),
) -> None:
    """Serve an offline stand-in judge (OpenAI chat completions) that answers in the shape
    each ieqa judge prompt asks for. It judges nothing: for trying commands, not for scores."""
    from ieqa.errors import IeqaError
    from ieqa.testing.judge import StandInJudgeServer

    try:
        server = StandInJudgeServer(host, port)
    except OSError as exc:
        raise IeqaError(f"cannot listen on {host}:{port}: {exc.strerror or exc}. Give another "
                        "--port (0 picks a free one), or stop what holds this one") from None
    console.print(f"stand-in judge on {server.url} (it judges nothing: answers derive from "
                  "each request's bytes); Ctrl-C stops it", highlight=False)
    sys.stdout.flush()
    try:  # Ctrl-C, or SIGTERM (ieqa.cli.main makes it one)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    console.print(f"stand-in judge stopped after {server.requests} request(s)", highlight=False)
