"""The request-size limit of ``ieqa serve`` (``--max-body-mb``): :class:`BodyLimit`.

A pure ASGI middleware: a request whose ``Content-Length`` is over the limit gets **413**
before its body is read; a body sent without a length (chunked) is counted as it arrives
and refused with 413 as soon as it passes the limit. Either way no more than the limit
(plus one network chunk) is ever held in memory.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BodyLimit", "BodyTooLarge"]


class BodyTooLarge(Exception):
    """Raised inside the app when the streamed body passes the limit."""


class BodyLimit:
    """ASGI middleware refusing bodies over ``max_bytes`` with 413.

    Args:
        app: the wrapped ASGI app.
        max_bytes: the largest accepted body, in bytes (> 0).
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
        self.app = app
        self.max_bytes = int(max_bytes)

    def _message(self, size: str) -> str:
        return (f"the request body ({size}) is over the server's limit of "
                f"{self.max_bytes / 2**20:g} MiB (--max-body-mb); send fewer or smaller images "
                "per request (split the items over several requests)")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _reply(send, 400, "the Content-Length header is not a number; send the "
                                        "body's length in bytes")
                return
            if declared > self.max_bytes:
                await _reply(send, 413, self._message(f"{declared:,} bytes"))
                return
        received = 0
        exceeded = replaced = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def checked_send(message: dict[str, Any]) -> None:
            # the app may turn BodyTooLarge into an answer of its own (FastAPI: 400);
            # the client gets the 413 instead
            nonlocal replaced
            if not exceeded:
                await send(message)
            elif not replaced:
                replaced = True
                await _reply(send, 413, self._message(f"over {self.max_bytes:,} bytes"))

        try:
            await self.app(scope, counted_receive, checked_send)
        except BodyTooLarge:
            if not replaced:
                await _reply(send, 413, self._message(f"over {self.max_bytes:,} bytes"))


async def _reply(send: Any, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
