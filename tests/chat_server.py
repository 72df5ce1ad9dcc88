"""A real chat-completions HTTP server on 127.0.0.1 for tests (``server`` fixture).

A ``ThreadingHTTPServer`` in a background thread: it records every request and answers
according to a per-test plan (normal echo answers, HTTP errors, delays, malformed bodies,
ignoring ``n``). Tests of the OpenAI-compatible backend and of the judges over HTTP use it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Reply:
    """One scripted answer: ``status`` with a JSON ``body`` (or ``raw`` bytes), after
    sleeping ``sleep_s`` seconds."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    sleep_s: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    t: float
    raw: bytes = b""


class FakeServer:
    """A configurable chat-completions endpoint.

    ``plan`` holds replies used by the next requests in order (``None`` = the normal echo
    answer); afterwards every request gets the echo answer. The echo answer's content is a
    JSON string describing the request (texts, image count, choice index, seed), so tests
    can check what arrived. ``ignore_n`` returns a single choice whatever ``n`` says;
    ``delay`` (body -> seconds) slows the echo answer down.
    """

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.plan: list[Reply | None] = []
        self.ignore_n = False
        self.logprobs = True
        self.finish_reason = "stop"
        self.delay: Callable[[dict[str, Any]], float] = lambda body: 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.url = ""

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            planned = self.plan.pop(0) if self.plan else None
        return planned if planned is not None else self.echo(body)

    def echo(self, body: dict[str, Any]) -> Reply:
        texts, images = [], 0
        for msg in body["messages"]:
            if msg["role"] != "user":
                continue
            for part in msg["content"]:
                if part["type"] == "text":
                    texts.append(part["text"])
                else:
                    images += 1
        n = 1 if self.ignore_n else int(body.get("n", 1))
        choices = []
        for i in range(n):
            content = json.dumps({"text": " ".join(texts), "images": images, "i": i,
                                  "seed": body.get("seed")})
            choice: dict[str, Any] = {"index": i, "finish_reason": self.finish_reason,
                                      "message": {"role": "assistant", "content": content}}
            k = body.get("top_logprobs", 0)
            if body.get("logprobs") and self.logprobs:
                alts = [{"token": t, "logprob": lp} for t, lp in
                        (("5", -0.1), ("4", -2.5), ("3", -4.0))][:k]
                choice["logprobs"] = {"content": [
                    {"token": "5", "logprob": -0.1, "top_logprobs": alts},
                    {"token": ".", "logprob": -0.01,
                     "top_logprobs": [{"token": ".", "logprob": -0.01}]}]}
            choices.append(choice)
        return Reply(body={"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
                           "model": body["model"], "choices": choices,
                           "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
                     sleep_s=self.delay(body))


class ScriptedJudge(FakeServer):
    """Answers exactly the expected requests, each from its list of scripted replies in
    order (the last one repeats); any other request gets HTTP 500, so a request that
    differs fails the test. ``script`` is keyed by the request body's bytes
    (``by="raw"``), or by :func:`canonical` of its parsed JSON (``by="json"``: every field
    and every string the same, key order and whitespace aside)."""

    def __init__(self, by: str = "raw") -> None:
        super().__init__()
        self.by = by
        self.script: dict[bytes, list[Reply]] = {}
        self._served: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def next_reply(self, body):
        raw = self.requests[-1].raw if self.requests else b""
        for seen in reversed(self.requests):  # the request being answered
            if json.loads(seen.raw) == body:
                raw = seen.raw
                break
        key = raw if self.by == "raw" else canonical(json.loads(raw))
        if key not in self.script:
            return Reply(status=500, body={"error": {"message": "unexpected request body"}})
        with self._lock:
            n = self._served.get(key, 0)
            self._served[key] = n + 1
        replies = self.script[key]
        return replies[min(n, len(replies) - 1)]


def canonical(body: Any) -> bytes:
    """A request body as comparable bytes: sorted keys, no whitespace."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def chat_answer(content: str, model: str = "gpt-4.1-2025-04-14") -> Reply:
    """A chat completion answering ``content``, with a model id, a system fingerprint and
    token usage (100 in, 20 out), as OpenAI's API returns them."""
    return Reply(body={"id": "x", "object": "chat.completion", "model": model,
                       "system_fingerprint": "fp_test", "choices": [{
                           "index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 20}})


def _make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            body = json.loads(raw)
            with server.lock:
                server.requests.append(Seen(self.path, dict(self.headers), body,
                                            time.monotonic(), raw))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                reply = server.next_reply(body)
                if reply.sleep_s:
                    time.sleep(reply.sleep_s)
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            finally:
                with server.lock:
                    server.in_flight -= 1
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (timeout tests)
                self.close_connection = True

    return Handler


@contextmanager
def serve(fake: FakeServer, port: int = 0) -> Iterator[FakeServer]:
    """Serve ``fake`` on 127.0.0.1 (``port`` 0: a free one) in a background thread; sets
    and yields ``fake`` with its ``url`` (the ``/v1`` base URL)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(fake))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve(FakeServer()) as fake:
        yield fake


def module_strings(path: Path) -> dict[str, str]:
    """The string constants of a Python prompt file (``NAME = "..."`` at module level),
    evaluated here, independently of ieqa's reader of published files."""
    import ast

    out = {}
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = eval(compile(ast.Expression(node.value), str(path), "eval"), {})  # noqa: S307
            if isinstance(value, str):
                out[node.targets[0].id] = value
    return out


def thumbnail_jpeg_part(path: str | Path) -> dict[str, Any]:
    """An image as the VLMEvalKit-style judges (RISEBench's, UniREditBench's) send it,
    written out: opened with Pillow, RGB when RGBA or P, ``thumbnail((768, 768))``, JPEG at
    Pillow's default quality, ``"detail": "high"``."""
    import base64
    import io

    from PIL import Image

    img = Image.open(path)
    if img.mode in ("RGBA", "P"):
        img = img.convert("RGB")
    img.thumbnail((768, 768))
    buf = io.BytesIO()
    img.save(buf, format="JPEG")
    return {"type": "image_url", "image_url": {
        "url": "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("utf-8"),
        "detail": "high"}}
