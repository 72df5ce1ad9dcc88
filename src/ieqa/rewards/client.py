"""Clients of ``ieqa serve`` (API v1): :class:`RewardClient` (sync) and
:class:`AsyncRewardClient` (async), on httpx.

Both have the calls of the in-process :class:`~ieqa.rewards.local.LocalRewarder` —
``score(items, dimensions=None) -> ScoreResponse`` and ``compare(groups) ->
CompareResponse`` — so code written against one runs against the other. On top of a bare
HTTP call they:

* **encode images**: an item may hold local image references (a path, a ``PIL`` image,
  a numpy array, encoded ``bytes``), sent as base64 (see :func:`encode_image`: files and
  bytes travel as they are, in-memory images as lossless PNG, so the server decodes the
  very pixels :class:`LocalRewarder` would and the scores match), or strings that are
  already encoded (base64 or a ``data:`` URL); a path the *server* should open (only with
  ``ieqa serve --allow-root DIR``) is wrapped in :class:`ServerPath`;
* **chunk**: a long list is sent as requests of at most ``max_items_per_request`` items
  (compare: groups), answered in the input order, with ``n_ok`` / ``n_failed`` summed;
* **retry** with exponential backoff (``backoff_s · 2^attempt``, at most ``max_backoff_s``)
  on connection errors, 429 (after the server's ``Retry-After``, capped at ``max_backoff_s``),
  502, 503 and 504 (one schedule with the OpenAI-compatible backend: :mod:`ieqa.retry`) —
  never on other 4xx, nor on a read timeout (the server may still be working: raise
  ``timeout_s`` or send fewer items per request instead);
* **explain failures**: :class:`RewardServiceError` says what happened and what to do
  (401: pass ``token=``; 413: lower ``max_items_per_request``; ...).

An item whose local image cannot be read or encoded is not sent: its result carries the
error (as the server's would), and its neighbours are scored. Use the clients as context
managers (``with RewardClient(...) as client:``) or call ``close()`` to release
connections.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import itertools
import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
from PIL import Image, ImageOps
from pydantic import BaseModel, ValidationError

from ieqa.data.schema import EditSample
from ieqa.errors import IeqaError, ImageLoadError, ImageNotFoundError
from ieqa.retry import RetryPolicy, reward_policy
from ieqa.rewards.schema import (
    API_VERSION,
    CompareResponse,
    CritiqueResponse,
    InfoResponse,
    ItemResult,
    ScoreResponse,
)

__all__ = ["AsyncRewardClient", "RewardClient", "RewardServiceError", "ServerPath", "encode_image"]

#: statuses retried with backoff (429 after its Retry-After)
RETRY_STATUSES = reward_policy().statuses
#: the fields of a score item that API v1 carries
_ITEM_FIELDS = ("id", "source", "edited", "instruction")
#: EditSample fields that never change a score (labels and bookkeeping): not sent, no harm
_LABEL_FIELDS = frozenset({"task", "editor", "group_id", "scores", "ratings"})
#: EditSample fields a scorer may read: refused unless at their default (API v1 cannot carry them)
_SCORED_DEFAULTS: dict[str, Any] = {"meta": {}, "mask": None, "bbox": None, "instruction_kind": "instruction"}
# PNG can hold these modes as they are (alpha and colour keys included)
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I;16"})
# premultiplied / odd alpha modes, converted the way ieqa.data.images composites them
_ALPHA_CONVERT = {"La": "LA", "RGBa": "RGBA", "PA": "RGBA"}
_B64 = re.compile(r"^[A-Za-z0-9+/\s]*={0,2}\s*$")

T = TypeVar("T", bound=BaseModel)


class RewardServiceError(IeqaError):
    """A request to ``ieqa serve`` failed for good (after any retries).

    Attributes:
        status: the HTTP status, or ``None`` when no answer came (connection error).
        detail: the server's explanation (its JSON ``detail``) or the transport error.
    """

    def __init__(self, message: str, *, status: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class ServerPath(str):
    """A path the *server* opens (it must run with ``--allow-root DIR``, and the path must
    lie inside DIR); sent as it is, never read by the client."""

    __slots__ = ()


# --------------------------------------------------------------------------- encoding


def encode_image(ref: Any) -> str:
    """The string that carries one image reference in a request.

    * a ``data:`` URL or a :class:`ServerPath`: unchanged;
    * a path (``pathlib.Path``, or a ``str`` naming an existing file) or encoded ``bytes``:
      base64 of the file's bytes as they are (the server decodes them as ``load_image``
      would locally);
    * a ``PIL.Image``: upright per its EXIF orientation, then lossless PNG in its own
      mode (alpha and transparency kept, so the ``transparent`` flag survives; modes PNG
      cannot hold are converted as :func:`ieqa.data.images.load_image` converts them);
    * a numpy array (HxW, HxWx3, HxWx4; uint8, uint16, bool or floats in [0, 1]):
      converted to 8 bits exactly as ``load_image`` converts it, then lossless PNG;
    * any other ``str``: taken as base64 already (checked).

    Raises:
        ImageLoadError: a missing or unreadable file, an array that is not an image, or an
            image mode that cannot be converted.
        ImageNotFoundError: a string that is neither a file, a ``data:`` URL nor base64 (like
            a missing path in :class:`LocalRewarder`, it is that item's error in ``score``).
        TypeError: none of the above types.
    """
    if isinstance(ref, ServerPath):
        return str(ref)
    if isinstance(ref, str):
        if ref.startswith("data:"):
            return ref
        if len(ref) < 4096 and os.path.isfile(ref):
            return _b64(_read_file(Path(ref)))
        if len(ref) >= 16 and _B64.match(ref):
            try:
                base64.b64decode(ref, validate=False)
            except (binascii.Error, ValueError):
                pass
            else:
                return ref
        raise ImageNotFoundError(
            ref[:80], "neither a local file, a data: URL nor base64; pass an existing "
            "path, encoded bytes or an in-memory image, or wrap a path that the server should "
            "open (ieqa serve --allow-root DIR) in ieqa.rewards.ServerPath(...)")
    if isinstance(ref, os.PathLike):
        return _b64(_read_file(Path(ref)))
    if isinstance(ref, (bytes, bytearray, memoryview)):
        return _b64(bytes(ref))
    if isinstance(ref, Image.Image):
        return _b64(_png(_pil_for_png(ref)))
    if isinstance(ref, np.ndarray):
        return _b64(_png(_array_image(ref)))
    raise TypeError(f"cannot send an image given as {type(ref).__name__}; pass a path, encoded "
                    "bytes, a PIL image, a numpy array or a base64 / data: URL string")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read_file(path: Path) -> bytes:
    from ieqa.errors import ImageDecodeError, ImageNotFoundError

    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ImageNotFoundError(path, f"no such file (looked for {path.absolute()}); check the path") from None
    except OSError as exc:
        raise ImageDecodeError(path, f"cannot read it ({exc.strerror or exc}); pass a readable image file") from None


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _pil_for_png(image: Image.Image) -> Image.Image:
    from ieqa.data.images import load_image

    upright = ImageOps.exif_transpose(image)  # load_image applies the orientation too
    if upright.mode in _PNG_MODES:
        return upright
    if upright.mode in _ALPHA_CONVERT:
        return upright.convert(_ALPHA_CONVERT[upright.mode])
    return load_image(upright, max_pixels=None)  # CMYK, YCbCr, I, F, ...: as load_image makes RGB


def _array_image(arr: np.ndarray) -> Image.Image:
    from ieqa.data.images import array_to_uint8, check_array_shape

    check_array_shape(arr)
    return Image.fromarray(np.ascontiguousarray(array_to_uint8(arr)))


# --------------------------------------------------------------------------- items


def _item_dict(item: Any, index: int) -> dict[str, Any]:
    """An item as a dict of the API's fields (id defaults to the item's position)."""
    if isinstance(item, EditSample):
        data = item.model_dump()
    elif isinstance(item, tuple):
        if len(item) not in (2, 3):
            raise ValueError(f"item {index}: a tuple must be (source, edited) or (source, edited, "
                             f"instruction), got {len(item)} values")
        data = {"source": item[0], "edited": item[1], "instruction": item[2] if len(item) == 3 else ""}
    elif isinstance(item, Mapping):
        data = dict(item)
    else:
        raise TypeError(f"item {index}: expected an EditSample, a (source, edited, instruction) "
                        f"tuple or a dict, got {type(item).__name__}")
    extra = [k for k, v in data.items() if k not in _ITEM_FIELDS and k not in _LABEL_FIELDS
             and not (k in _SCORED_DEFAULTS and _is_default(v, _SCORED_DEFAULTS[k]))]
    if extra:
        raise ValueError(
            f"item {index} has field(s) {extra} that API v1 does not carry (it sends id, source, "
            "edited and instruction), so a server-side scorer would never see them; score such "
            "items in-process with ieqa.rewards.LocalRewarder, or send (source, edited, instruction) "
            "tuples (for an EditSample: sample.model_copy(update={'meta': {}, 'bbox': None, "
            "'mask': None}))")
    for key in ("source", "edited"):
        if data.get(key) is None:
            raise ValueError(f"item {index} has no {key!r} image; API v1 scores (source, edited, "
                             "instruction) triplets")
    out = {"id": str(data["id"]) if data.get("id") is not None else str(index),
           "source": data["source"], "edited": data["edited"],
           "instruction": str(data.get("instruction") or "")}
    return out


def _is_default(value: Any, default: Any) -> bool:
    value = getattr(value, "value", value)  # an enum member
    return value is None or value == default or (isinstance(value, Mapping) and not value)


def _encode_item(item: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return {**item, "source": encode_image(item["source"]), "edited": encode_image(item["edited"])}, None
    except ImageLoadError as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _group_dict(group: Any, index: int) -> dict[str, Any]:
    if not isinstance(group, Mapping):
        raise TypeError(f"group {index}: expected a dict with source, instruction and candidates, "
                        f"got {type(group).__name__}")
    unknown = [k for k in group if k not in ("id", "source", "instruction", "candidates")]
    if unknown:
        raise ValueError(f"group {index} has unknown field(s) {unknown}; a group holds id, source, "
                         "instruction and candidates")
    cands = list(group.get("candidates") or [])
    gid = str(group["id"]) if group.get("id") is not None else str(index)
    if len(cands) < 2:
        raise ValueError(f"group {gid!r} has {len(cands)} candidate(s); a comparison needs at least 2")
    if group.get("source") is None:
        raise ValueError(f"group {gid!r} has no 'source' image")
    try:
        return {"id": gid, "source": encode_image(group["source"]),
                "instruction": str(group.get("instruction") or ""),
                "candidates": [encode_image(c) for c in cands]}
    except ImageLoadError as exc:
        raise ImageLoadError(exc.path, f"group {gid!r}: {exc}; /v1/compare needs every candidate "
                                       "(score the group with .score() to get per-item errors)") from None


def _chunks(n: int, size: int) -> Iterator[range]:
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


# --------------------------------------------------------------------------- responses


@dataclass
class _Outcome:
    """What to do with one HTTP answer: return its JSON, retry after ``delay``, or raise."""

    data: Any = None
    delay: float | None = None
    error: RewardServiceError | None = None


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, Mapping) and "detail" in body:
        detail = body["detail"]
        if isinstance(detail, list):  # FastAPI's validation errors
            return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg')}"
                             if isinstance(d, Mapping) else str(d) for d in detail)
        return str(detail)
    return str(body)[:500]


_ADVICE = {
    400: "the server could not use the request; check the items against /v1/info",
    401: "the server requires a bearer token: pass token=... (a token from the server's --tokens-file)",
    403: "the server refused this token: check it against the server's --tokens-file",
    404: "no such endpoint: give base_url as the server's root (e.g. http://127.0.0.1:8000), "
         "and check that it is an ieqa serve of API v1",
    413: "the request is too large for the server (--max-body-mb or its pixel budget): lower "
         "max_items_per_request or send smaller images",
    422: "the server rejected the request as malformed; fix the field named above",
    429: "the server's queue stayed full: raise max_retries or backoff_s, send fewer "
         "concurrent requests, or scale the server out",
    502: "a proxy in front of the server could not reach it: check that ieqa serve is running",
    503: "the server is not ready (loading the model or shutting down): wait for "
         "client.ready() or raise max_retries",
    504: "the server timed out on this request: lower max_items_per_request or raise the "
         "server's request timeout",
}


def _classify(response: httpx.Response, attempt: int, policy: RetryPolicy, label: str) -> _Outcome:
    status = response.status_code
    if status < 300:
        try:
            return _Outcome(data=response.json())
        except ValueError:
            return _Outcome(error=RewardServiceError(
                f"{label}: the server answered {status} with a body that is not JSON; is base_url "
                "an ieqa serve?", status=status, detail=response.text[:500]))
    delay = policy.after_status(attempt, status, response.headers)
    if delay is not None:
        return _Outcome(delay=delay)
    detail = _detail(response)
    advice = _ADVICE.get(status) or (
        "the server failed on this request: see its log; retrying will not help if it fails again"
        if status >= 500 else "see the server's detail above")
    tried = f" after {attempt + 1} attempts" if policy.retries(status) else ""
    return _Outcome(error=RewardServiceError(
        f"{label}: HTTP {status}{tried}: {detail or response.reason_phrase}. {advice}",
        status=status, detail=detail))


def _transport_error(exc: httpx.TransportError, attempt: int, label: str, base_url: str,
                     timeout_s: float) -> RewardServiceError:
    if isinstance(exc, httpx.ReadTimeout):
        return RewardServiceError(
            f"{label}: no answer within timeout_s={timeout_s:g} s ({type(exc).__name__}); the server "
            "may still be scoring: raise timeout_s or lower max_items_per_request", detail=str(exc))
    return RewardServiceError(
        f"{label}: cannot reach {base_url} after {attempt + 1} attempts ({type(exc).__name__}: {exc}); "
        "is ieqa serve running there (ieqa serve --scorer NAME --host ... --port ...)?", detail=str(exc))


def _parse(model: type[T], data: Any, label: str) -> T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RewardServiceError(f"{label}: the server's answer does not match API v1 ({exc.error_count()} "
                                 f"problem(s), first: {exc.errors()[0]['msg']}); is base_url an ieqa "
                                 "serve of this ieqa version?") from None


@dataclass
class _ScoreParts:
    """Where a score call's items went: each item's local failure (``slots``), the items
    each chunk sent, and how many failed before sending."""

    slots: list[ItemResult | None]
    sent_ranges: list[list[int]] = field(default_factory=list)
    local_failed: int = 0


def _merge_score(parts: Sequence[ScoreResponse | None], slots: Sequence[ItemResult | None],
                 chunk_ranges: Sequence[list[int]], local_failed: int) -> ScoreResponse:
    """Reassemble chunk answers (``parts``, one per chunk; ``None`` for a chunk whose items
    all failed locally) into one response in input order."""
    results = list(slots)
    sent = [p for p in parts if p is not None]
    for part, indices in zip(parts, chunk_ranges, strict=True):
        if part is None:
            continue
        if len(part.results) != len(indices):
            raise RewardServiceError(f"the server answered {len(part.results)} results for {len(indices)} "
                                     "items; it does not follow API v1")
        for i, res in zip(indices, part.results, strict=True):
            results[i] = res
    _same(sent, lambda p: (p.scorer, p.reward_rule))
    scorer = sent[0].scorer if sent else ""
    rule = sent[0].reward_rule if sent else {}
    assert all(r is not None for r in results)
    return ScoreResponse(results=results, n_ok=sum(p.n_ok for p in sent),  # type: ignore[arg-type]
                         n_failed=sum(p.n_failed for p in sent) + local_failed, scorer=scorer,
                         reward_rule=rule)


def _merge_compare(parts: Sequence[CompareResponse]) -> CompareResponse:
    _same(parts, lambda p: (p.scorer, p.reward_rule, p.tie_threshold))
    return CompareResponse(results=[g for p in parts for g in p.results], scorer=parts[0].scorer,
                           reward_rule=parts[0].reward_rule, tie_threshold=parts[0].tie_threshold)


def _critique_dict(item: Any, index: int) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise TypeError(f"critique item {index}: expected a dict with source, edited, instruction "
                        f"and critique, got {type(item).__name__}")
    unknown = [k for k in item if k not in ("id", "source", "edited", "instruction", "critique")]
    missing = [k for k in ("source", "edited", "instruction", "critique") if item.get(k) is None]
    if unknown or missing:
        raise ValueError(f"critique item {index}: " + "; ".join(
            x for x in (f"unknown field(s) {unknown}" if unknown else "",
                        f"missing {missing}" if missing else "") if x)
            + " (a critique item holds id, source, edited, instruction and critique)")
    return {"id": str(item["id"]) if item.get("id") is not None else str(index),
            "source": encode_image(item["source"]), "edited": encode_image(item["edited"]),
            "instruction": str(item["instruction"]), "critique": str(item["critique"])}


def _merge_critique(parts: Sequence[CritiqueResponse]) -> CritiqueResponse:
    _same(parts, lambda p: (p.scorer, p.weights))
    results = [r for p in parts for r in p.results]
    return CritiqueResponse(results=results, n_ok=sum(p.n_ok for p in parts),
                            n_failed=sum(p.n_failed for p in parts), scorer=parts[0].scorer,
                            weights=parts[0].weights)


def _same(parts: Sequence[Any], key: Callable[[Any], Any]) -> None:
    if len({repr(key(p)) for p in parts}) > 1:
        raise RewardServiceError("the chunks of one call were answered under different scorers or "
                                 "reward rules (the server changed during the call); call again")


# --------------------------------------------------------------------------- clients


class _Base:
    """Configuration and request building shared by the sync and async clients."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 max_items_per_request: int = 64, transport: httpx.BaseTransport | httpx.AsyncBaseTransport
                 | None = None) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL such as http://127.0.0.1:8000, got {base_url!r}")
        url = base_url.rstrip("/")
        if url.endswith(f"/{API_VERSION}"):
            url = url[: -len(API_VERSION) - 1]
        for name, value, low in (("timeout_s", timeout_s, 0.0), ("backoff_s", backoff_s, 0.0),
                                 ("max_backoff_s", max_backoff_s, 0.0)):
            if not math.isfinite(value) or value < low or (name == "timeout_s" and value == 0):
                raise ValueError(f"{name} must be a finite number {'> 0' if name == 'timeout_s' else '>= 0'} "
                                 f"(seconds), got {value!r}")
        if int(max_retries) != max_retries or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if int(max_items_per_request) != max_items_per_request or max_items_per_request < 1:
            raise ValueError(f"max_items_per_request must be an integer >= 1, got {max_items_per_request!r}")
        self.base_url = url
        self.token = token
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_items_per_request = int(max_items_per_request)
        self._transport = transport

    def _client_kwargs(self) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        kwargs: dict[str, Any] = {"base_url": self.base_url, "headers": headers,
                                  "timeout": httpx.Timeout(self.timeout_s)}
        if self._transport is not None:
            kwargs["transport"] = self._transport
        return kwargs

    @property
    def retry_policy(self) -> RetryPolicy:
        """The requests' retry policy (:func:`ieqa.retry.reward_policy` with this client's
        ``max_retries``, ``backoff_s`` and ``max_backoff_s``)."""
        return reward_policy(self.max_retries, self.backoff_s, self.max_backoff_s)

    def _next(self, attempt: int, label: str, response: httpx.Response | None,
              error: httpx.TransportError | None) -> tuple[bool, Any]:
        """After attempt ``attempt`` (0-based): ``(True, json)`` when done, ``(False,
        seconds)`` to wait before retrying; raises :class:`RewardServiceError` when the
        failure is final (:attr:`retry_policy`: not retryable, or retries used up)."""
        policy = self.retry_policy
        if error is not None:
            delay = policy.after_error(attempt, timeout=isinstance(error, httpx.ReadTimeout),
                                       connect=isinstance(error, httpx.ConnectError))
            if delay is None:
                raise _transport_error(error, attempt, label, self.base_url, self.timeout_s)
            return False, delay
        assert response is not None
        outcome = _classify(response, attempt, policy, label)
        if outcome.error is not None:
            raise outcome.error
        if response.status_code < 300:
            return True, outcome.data
        return False, outcome.delay

    def _score_requests(self, items: Sequence[Any], dimensions: Sequence[str] | None
                        ) -> tuple[Iterator[dict[str, Any] | None], _ScoreParts]:
        """The request bodies of ``items``, one per chunk (``None`` for a chunk whose items
        all failed to encode), encoded as they are taken, and what :func:`_merge_score`
        needs to reassemble the answers (complete once every body was taken)."""
        dicts, chunks = self._score_plan(items)
        parts = _ScoreParts(slots=[None] * len(dicts))

        def bodies() -> Iterator[dict[str, Any] | None]:
            for indices in chunks:
                body, sent, failed = self._score_body(dicts, indices, parts.slots, dimensions)
                parts.local_failed += failed
                parts.sent_ranges.append(sent)
                yield body

        return bodies(), parts

    def _score_plan(self, items: Sequence[Any]) -> tuple[list[dict[str, Any]], list[list[int]]]:
        dicts = [_item_dict(item, i) for i, item in enumerate(items)]
        return dicts, [list(r) for r in _chunks(len(dicts), self.max_items_per_request)]

    @staticmethod
    def _score_body(dicts: Sequence[dict[str, Any]], indices: Sequence[int], slots: list[ItemResult | None],
                    dimensions: Sequence[str] | None) -> tuple[dict[str, Any] | None, list[int], int]:
        """The JSON body of one chunk; items that fail to encode get their result in ``slots``."""
        payload, sent, failed = [], [], 0
        for i in indices:
            encoded, error = _encode_item(dicts[i])
            if encoded is None:
                slots[i] = ItemResult(id=dicts[i]["id"], error=f"not sent: {error}")
                failed += 1
                continue
            payload.append(encoded)
            sent.append(i)
        if not payload:
            return None, sent, failed
        body: dict[str, Any] = {"items": payload}
        if dimensions is not None:
            body["dimensions"] = list(dimensions)
        return body, sent, failed

    def _compare_plan(self, groups: Sequence[Any]) -> list[range]:
        if not groups:
            raise ValueError("compare() needs at least one group")
        return list(_chunks(len(groups), self.max_items_per_request))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"


class RewardClient(_Base):
    """A synchronous client of ``ieqa serve``, with :class:`LocalRewarder`'s calls.

    Args:
        base_url: the server's root, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is
            accepted).
        token: bearer token (one of the server's ``--tokens-file`` lines); ``None`` for a
            server without tokens.
        timeout_s: seconds to wait for each HTTP answer (> 0); a long batch needs more.
        max_retries: retries after the first attempt (>= 0) on connection errors, 429, 502,
            503 and 504.
        backoff_s: the first retry's wait in seconds (>= 0), doubled at each retry; a 429
            or 503 with ``Retry-After`` waits what the server asks instead (capped too).
        max_backoff_s: the longest wait in seconds (>= 0), the server's ``Retry-After``
            included (:class:`ieqa.retry.Backoff`).
        max_items_per_request: items (for ``compare``: groups) per request (>= 1); larger
            lists are split and reassembled in order.
        transport: an httpx transport to use instead of the network (tests:
            ``httpx.MockTransport``).

    Examples:
        >>> from ieqa.rewards import RewardClient
        >>> with RewardClient("http://127.0.0.1:8000", max_retries=0) as client:
        ...     client.base_url
        'http://127.0.0.1:8000'
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 max_items_per_request: int = 64, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, token=token, timeout_s=timeout_s, max_retries=max_retries,
                         backoff_s=backoff_s, max_backoff_s=max_backoff_s,
                         max_items_per_request=max_items_per_request, transport=transport)
        self._http = httpx.Client(**self._client_kwargs())

    # ------------------------------------------------------------------ transport
    def _request(self, method: str, path: str, body: Any = None) -> Any:
        for attempt in itertools.count():
            try:
                response, error = self._http.request(method, path, json=body), None
            except httpx.TransportError as exc:
                response, error = None, exc
            done, value = self._next(attempt, f"{method} {path}", response, error)
            if done:
                return value
            _sleep(value)

    # ------------------------------------------------------------------ API
    def score(self, items: Sequence[Any], dimensions: Sequence[str] | None = None) -> ScoreResponse:
        """Score edits on the server; the answer :meth:`LocalRewarder.score` would give.

        Args:
            items: EditSamples, ``(source, edited[, instruction])`` tuples or dicts with
                ``source``, ``edited``, ``instruction`` and optionally ``id`` (default: the
                item's position, ``"0"``, ``"1"``, ...); images as :func:`encode_image` takes.
            dimensions: return only these dimensions' scores (the reward still uses all).

        Returns:
            One result per item, in order; ``n_ok`` / ``n_failed`` over all chunks.

        Raises:
            RewardServiceError: a request failed for good (see the message for what to do).
        """
        bodies, plan = self._score_requests(items, dimensions)
        answers = [None if body is None else _parse(ScoreResponse, self._request(
            "POST", f"/{API_VERSION}/score", body), "POST /v1/score") for body in bodies]
        return _merge_score(answers, plan.slots, plan.sent_ranges, plan.local_failed)

    def compare(self, groups: Sequence[Mapping[str, Any]]) -> CompareResponse:
        """Preferences among each group's candidates (:meth:`LocalRewarder.compare`).

        Args:
            groups: dicts with ``source``, ``instruction``, ``candidates`` (K >= 2 images)
                and optionally ``id`` (default: the group's position).

        Raises:
            ImageLoadError: a candidate image cannot be read (compare needs all of them).
            RewardServiceError: a request failed for good.
        """
        parts = []
        for chunk in self._compare_plan(groups):
            body = {"groups": [_group_dict(groups[g], g) for g in chunk]}
            parts.append(_parse(CompareResponse, self._request("POST", f"/{API_VERSION}/compare", body),
                                "POST /v1/compare"))
        return _merge_compare(parts)

    def critique(self, items: Sequence[Mapping[str, Any]]) -> CritiqueResponse:
        """Judge critiques on a server running a critique scorer (``POST /v1/critique``;
        :meth:`LocalRewarder.critique` in-process).

        Args:
            items: dicts with ``source``, ``edited`` (images as :func:`encode_image` takes),
                ``instruction``, ``critique`` and optionally ``id`` (default: the position).

        Raises:
            ImageLoadError: an image cannot be read; ValueError: an item lacks a field.
            RewardServiceError: a request failed for good (a 400 when the server's scorer
                does not judge critiques).
        """
        if not items:
            raise ValueError("critique() needs at least one item")
        parts = []
        for chunk in _chunks(len(items), self.max_items_per_request):
            body = {"items": [_critique_dict(items[i], i) for i in chunk]}
            parts.append(_parse(CritiqueResponse, self._request(
                "POST", f"/{API_VERSION}/critique", body), "POST /v1/critique"))
        return _merge_critique(parts)

    def info(self) -> InfoResponse:
        """``GET /v1/info``: the scorer, its dimensions, ranges and units, and the reward rule."""
        return _parse(InfoResponse, self._request("GET", f"/{API_VERSION}/info"), "GET /v1/info")

    def ready(self) -> bool:
        """True when ``GET /readyz`` answers 200 (model loaded and warm); False when it
        answers otherwise or the server cannot be reached. Never retries."""
        try:
            return self._http.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    def wait_until_ready(self, timeout_s: float = 120.0, poll_s: float = 0.5) -> None:
        """Poll :meth:`ready` every ``poll_s`` seconds until it is True.

        Raises:
            RewardServiceError: not ready within ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if time.monotonic() >= deadline:
                raise RewardServiceError(f"{self.base_url} was not ready within {timeout_s:g} s; check "
                                         "that ieqa serve is running and its log for model loading errors")
            _sleep(poll_s)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient(_Base):
    """The asynchronous twin of :class:`RewardClient` (same arguments, awaitable calls).

    Chunks of one call are sent concurrently, at most ``max_concurrent_requests`` at a time
    (>= 1), so a large batch keeps the server's dynamic batcher fed; the answer is still
    in input order.

    Examples:
        >>> import asyncio
        >>> from ieqa.rewards import AsyncRewardClient
        >>> async def main():
        ...     async with AsyncRewardClient("http://127.0.0.1:8000") as client:
        ...         return client.max_items_per_request
        >>> asyncio.run(main())
        64
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 3, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 max_items_per_request: int = 64, max_concurrent_requests: int = 4,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, token=token, timeout_s=timeout_s, max_retries=max_retries,
                         backoff_s=backoff_s, max_backoff_s=max_backoff_s,
                         max_items_per_request=max_items_per_request, transport=transport)
        if int(max_concurrent_requests) != max_concurrent_requests or max_concurrent_requests < 1:
            raise ValueError(f"max_concurrent_requests must be an integer >= 1, got {max_concurrent_requests!r}")
        self.max_concurrent_requests = int(max_concurrent_requests)
        self._http = httpx.AsyncClient(**self._client_kwargs())

    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        for attempt in itertools.count():
            try:
                response, error = await self._http.request(method, path, json=body), None
            except httpx.TransportError as exc:
                response, error = None, exc
            done, value = self._next(attempt, f"{method} {path}", response, error)
            if done:
                return value
            await _asleep(value)

    async def _gather(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        gate = asyncio.Semaphore(self.max_concurrent_requests)

        async def run(call: Callable[[], Any]) -> Any:
            async with gate:
                return await call()

        return list(await asyncio.gather(*(run(c) for c in calls)))

    async def score(self, items: Sequence[Any], dimensions: Sequence[str] | None = None) -> ScoreResponse:
        """See :meth:`RewardClient.score`."""
        bodies, plan = self._score_requests(items, dimensions)

        def call(body: dict[str, Any] | None) -> Callable[[], Any]:
            async def go() -> ScoreResponse | None:
                if body is None:
                    return None
                return _parse(ScoreResponse, await self._request("POST", f"/{API_VERSION}/score", body),
                              "POST /v1/score")
            return go

        answers = await self._gather([call(b) for b in bodies])
        return _merge_score(answers, plan.slots, plan.sent_ranges, plan.local_failed)

    async def compare(self, groups: Sequence[Mapping[str, Any]]) -> CompareResponse:
        """See :meth:`RewardClient.compare`."""
        bodies = [{"groups": [_group_dict(groups[g], g) for g in chunk]} for chunk in self._compare_plan(groups)]

        def call(body: dict[str, Any]) -> Callable[[], Any]:
            async def go() -> CompareResponse:
                return _parse(CompareResponse, await self._request("POST", f"/{API_VERSION}/compare", body),
                              "POST /v1/compare")
            return go

        return _merge_compare(await self._gather([call(b) for b in bodies]))

    async def critique(self, items: Sequence[Mapping[str, Any]]) -> CritiqueResponse:
        """See :meth:`RewardClient.critique` (chunks are sent concurrently)."""
        if not items:
            raise ValueError("critique() needs at least one item")
        bodies = [{"items": [_critique_dict(items[i], i) for i in chunk]}
                  for chunk in _chunks(len(items), self.max_items_per_request)]

        def call(body: dict[str, Any]) -> Callable[[], Any]:
            async def go() -> CritiqueResponse:
                return _parse(CritiqueResponse, await self._request(
                    "POST", f"/{API_VERSION}/critique", body), "POST /v1/critique")
            return go

        return _merge_critique(await self._gather([call(b) for b in bodies]))

    async def info(self) -> InfoResponse:
        """See :meth:`RewardClient.info`."""
        return _parse(InfoResponse, await self._request("GET", f"/{API_VERSION}/info"), "GET /v1/info")

    async def ready(self) -> bool:
        """See :meth:`RewardClient.ready`."""
        try:
            return (await self._http.get("/readyz")).status_code == 200
        except httpx.TransportError:
            return False

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _sleep(seconds: float) -> None:
    """The client's wait between retries (a module function so tests can record it)."""
    if seconds > 0:
        time.sleep(seconds)


async def _asleep(seconds: float) -> None:
    """The async client's wait between retries."""
    if seconds > 0:
        await asyncio.sleep(seconds)
