"""Bearer-token authentication of ``ieqa serve``.

Tokens come from a file (``--tokens-file``): one token per line; blank lines and lines
starting with ``#`` are ignored, and so is anything after whitespace on a line (write a
comment there, e.g. ``s3cr3t  # the RL job``). Only the SHA-256 digests of the tokens are
kept in memory, and a presented token's digest is compared with each of them by
:func:`hmac.compare_digest` (constant time, all of them, whatever matches).

:class:`BearerAuth` is a pure ASGI middleware: a protected path (``/v1/...`` and
``/metrics``) without an ``Authorization: Bearer <token>`` header, or with a malformed
one, gets **401** (with ``WWW-Authenticate: Bearer``); an unknown token gets **403**. The
request body is never read before the token is checked. ``/healthz``, ``/readyz``, and the
OpenAPI schema (``/openapi.json``, ``/docs``) stay open, so orchestrators can probe the
server without a token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError

__all__ = ["PROTECTED_PREFIXES", "BearerAuth", "TokenSet", "read_tokens"]

#: paths (prefixes) that need a token when the server has tokens
PROTECTED_PREFIXES: tuple[str, ...] = ("/v1/", "/metrics")


class TokenSet:
    """The SHA-256 digests of the accepted tokens (the tokens themselves are not kept).

    Args:
        tokens: the accepted tokens (non-empty strings without whitespace).

    Raises:
        IeqaError: no token, or a token with whitespace.
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        digests = []
        for token in tokens:
            if not token or any(c.isspace() for c in token):
                raise IeqaError("a token must be a non-empty string without whitespace")
            digests.append(_digest(token))
        if not digests:
            raise IeqaError("no token given; write at least one token (one per line) in the "
                            "tokens file, e.g. python -c 'import secrets; print(secrets."
                            "token_urlsafe(32))' >> tokens.txt")
        self._digests = tuple(digests)

    def __len__(self) -> int:
        return len(self._digests)

    def accepts(self, token: str) -> bool:
        """True when ``token`` is one of the accepted tokens (constant-time comparisons)."""
        digest = _digest(token)
        found = False
        for known in self._digests:  # no early exit: the time does not depend on which one
            found |= hmac.compare_digest(digest, known)
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def read_tokens(path: str | Path) -> TokenSet:
    """The tokens of a tokens file (see the module docstring for its format).

    Raises:
        IeqaError: the file cannot be read or holds no token.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IeqaError(f"cannot read the tokens file {path}: {exc}; give a readable file with "
                        "one token per line") from None
    tokens = [line.split()[0] for line in text.splitlines()
              if line.strip() and not line.lstrip().startswith("#")]
    if not tokens:
        raise IeqaError(f"the tokens file {path} holds no token; write one token per line, e.g. "
                        "python -c 'import secrets; print(secrets.token_urlsafe(32))' >> "
                        f"{path}")
    return TokenSet(tokens)


class BearerAuth:
    """ASGI middleware enforcing bearer tokens on :data:`PROTECTED_PREFIXES`.

    Args:
        app: the wrapped ASGI app.
        tokens: the accepted tokens (``None``: no authentication).
    """

    def __init__(self, app: Any, tokens: TokenSet | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (self.tokens is None or scope["type"] != "http"
                or not scope["path"].startswith(PROTECTED_PREFIXES)):
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization")
        scheme, _, token = (header or b"").decode("latin-1").strip().partition(" ")
        token = token.strip()
        if header is None or scheme.lower() != "bearer" or not token or " " in token:
            await _refuse(send, 401, "missing or malformed Authorization header; send "
                                     "'Authorization: Bearer <token>' with a token from the "
                                     "server's --tokens-file")
        elif not self.tokens.accepts(token):
            await _refuse(send, 403, "unknown token; use a token listed in the server's "
                                     "--tokens-file")
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
