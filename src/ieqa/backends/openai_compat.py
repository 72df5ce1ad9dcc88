"""A :class:`~ieqa.backends.base.VLMBackend` that talks to an OpenAI-compatible server.

:class:`OpenAICompatBackend` sends each :class:`~ieqa.backends.base.Prompt` to
``POST {base_url}/chat/completions`` of any server that speaks the OpenAI chat-completions
protocol: vLLM (``vllm serve ...``), Ollama (``http://localhost:11434/v1``), SGLang, TGI or a
hosted API. Images travel inline as base64 data URLs, resized first to the backend's pixel
budget with :func:`~ieqa.backends.base.fit_pixel_budget`.

Prompts run concurrently on a thread pool (at most ``max_concurrency`` requests in flight).
Transient failures (connection errors, timeouts, HTTP 408/409/429/5xx) are retried with
exponential backoff and jitter, honouring ``Retry-After``. A prompt that still fails, or
whose answer is not a readable chat completion, yields
:class:`~ieqa.backends.base.Generation` objects with ``error`` and ``error_kind`` (``http``,
``timeout``, ``connection``, ``unreadable``) set; one bad prompt never aborts the batch.

**The stop rule.** A judge that is down must not turn a run into hours of failed requests
recorded one by one. After ``max_consecutive_failures`` requests in a row failed for good
(default 20), or when a request times out or cannot connect after all its attempts before
any request of this backend was answered, :meth:`OpenAICompatBackend.generate` sends
nothing more and raises :class:`~ieqa.errors.RunStopped`, naming the server and the last
error. A judge that never answers so ends a run after one request's attempts:
``(max_retries + 1) * timeout_s`` plus the backoff between them (at most ``max_retries *
max_backoff_s``) and the time the requests already in flight take to time out too.

An ``answer_prefix`` is sent as a final assistant message with vLLM's
``continue_final_message`` extension, so the model continues the prefix. Servers without
that extension silently start a new answer instead; pass ``answer_prefix_mode="error"`` to
refuse such prompts rather than risk it.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image

from ieqa.backends.base import EncodedImage, Generation, Prompt, fit_pixel_budget
from ieqa.backends.judge_log import JudgeLog, request_key
from ieqa.backends.processor import BackendError
from ieqa.errors import RunStopped
from ieqa.retry import RetryPolicy, judge_policy

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatBackend"]

log = logging.getLogger(__name__)

#: statuses after which every further request of the batch would fail the same way
_FATAL_STATUSES = frozenset({401, 403, 404})
#: finish reasons of other server families mapped onto OpenAI's
_FINISH_REASONS = {"eos_token": "stop", "eos": "stop", "stop_sequence": "stop",
                   "end_turn": "stop", "max_tokens": "length"}
_ERROR_BODY_CHARS = 500


class _RequestFailed(Exception):
    """A request failed for good (after its retries, or at once when not retryable)."""

    def __init__(self, message: str, *, kind: str, fatal: bool = False,
                 status: int | None = None, replayed: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.fatal = fatal
        self.status = status
        self.replayed = replayed


class _SharedImages:
    """Data URLs of the images of one ``generate`` call, each encoded once.

    Prompts of one source image usually share the same :class:`PIL.Image.Image` object;
    its URL is kept only until the last prompt that uses it has been built, so memory
    stays bounded by the requests in flight plus the shared images.
    """

    def __init__(self, prompts: Sequence[Prompt], encode: Any) -> None:
        self._encode = encode
        self._uses = Counter(id(im) for p in prompts for im in p.images)
        self._shared = frozenset(key for key, n in self._uses.items() if n > 1)
        self._lock = threading.Lock()
        self._entries: dict[int, list[Any]] = {}  # id -> [lock, url or None]

    def url(self, image: Image.Image) -> str:
        key = id(image)
        if key not in self._shared:
            return self._encode(image)
        with self._lock:
            entry = self._entries.setdefault(key, [threading.Lock(), None])
        with entry[0]:
            if entry[1] is None:
                entry[1] = self._encode(image)
            url = entry[1]
        with self._lock:
            self._uses[key] -= 1
            if self._uses[key] <= 0:
                self._entries.pop(key, None)
        return url


class OpenAICompatBackend:
    """Answers prompts through an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: the API root up to and including its version, e.g.
            ``"http://localhost:8000/v1"`` (vLLM) or ``"http://localhost:11434/v1"``
            (Ollama); requests go to ``{base_url}/chat/completions`` (a trailing ``/`` or
            ``/chat/completions`` is removed).
        model: the model name sent with every request (``vllm serve``'s model id or
            ``--served-model-name``).
        api_key: bearer token; ``None`` reads the environment variable ``api_key_env``.
            Without a key no ``Authorization`` header is sent.
        api_key_env: the environment variable holding the key when ``api_key`` is ``None``.
        timeout_s: limit of each network operation (connect, send, wait for the next bytes
            of the answer), in seconds. A server still generating after this long counts as
            a timeout and the request is retried.
        max_retries: retries after the first attempt of a request (0: no retry).
        backoff_s: delay before the first retry, in seconds; it doubles with each further
            retry and is scaled by a random factor in [0.5, 1] (jitter).
        max_backoff_s: upper bound of any delay between attempts, in seconds, a server's
            ``Retry-After`` included.
        max_concurrency: most requests in flight at once (one worker thread each).
        max_consecutive_failures: after this many requests in a row failed for good,
            :meth:`generate` stops and raises :class:`~ieqa.errors.RunStopped` (see the
            module docstring; 0: never, not even for a judge that never answered).
        max_pixels, min_pixels: pixel budget (width x height, in pixels) images are resized
            to before encoding (aspect ratio kept); ``None`` leaves that side unbounded.
        image_format: ``"png"`` (lossless) or ``"jpeg"`` (smaller requests).
        jpeg_quality: JPEG quality (1-95) when ``image_format="jpeg"``.
        extra_body: fields merged into every request body last, so they override ieqa's
            own (e.g. ``{"top_k": 1}``, ``{"chat_template_kwargs": {...}}``); must be
            JSON-serialisable.
        answer_prefix_mode: what to do with a prompt's ``answer_prefix``. ``"continue"``
            sends it as a final assistant message with ``continue_final_message: true,
            add_generation_prompt: false`` (vLLM's extension; the returned text is the
            continuation only). ``"error"`` raises :class:`BackendError` instead, for
            servers that cannot continue an assistant message.

    The backend holds one :class:`httpx.Client` (a connection pool); :meth:`close` it, or
    use the backend as a context manager, when done.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 60.0,
                 max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 max_concurrency: int = 8, max_consecutive_failures: int = 20,
                 max_pixels: int | None = 1024 * 1024,
                 min_pixels: int | None = None, image_format: Literal["png", "jpeg"] = "png",
                 jpeg_quality: int = 90, extra_body: dict[str, Any] | None = None,
                 answer_prefix_mode: Literal["continue", "error"] = "continue") -> None:
        try:
            import httpx
        except ImportError as exc:  # httpx is in ieqa's dev extra, not its core deps
            raise BackendError("the OpenAI-compatible backend needs httpx: "
                               "pip install httpx") from exc
        base_url = base_url.strip().rstrip("/")
        base_url = base_url.removesuffix("/chat/completions").rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must name the served model")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("backoff_s and max_backoff_s must be >= 0")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_consecutive_failures < 0:
            raise ValueError("max_consecutive_failures must be >= 0 (0: never stop), got "
                             f"{max_consecutive_failures}")
        for label, value in (("max_pixels", max_pixels), ("min_pixels", min_pixels)):
            if value is not None and value < 1:
                raise ValueError(f"{label} must be >= 1 or None, got {value}")
        if max_pixels is not None and min_pixels is not None and min_pixels > max_pixels:
            raise ValueError(f"min_pixels={min_pixels} exceeds max_pixels={max_pixels}")
        image_format = image_format.lower()  # type: ignore[assignment]
        if image_format == "jpg":
            image_format = "jpeg"
        if image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {image_format!r}")
        if not 1 <= jpeg_quality <= 95:
            raise ValueError(f"jpeg_quality must lie in [1, 95], got {jpeg_quality}")
        if answer_prefix_mode not in ("continue", "error"):
            raise ValueError("answer_prefix_mode must be 'continue' or 'error', "
                             f"got {answer_prefix_mode!r}")
        extra_body = dict(extra_body or {})
        try:
            json.dumps(extra_body)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"extra_body must be JSON-serialisable: {exc}") from exc

        self.base_url = base_url
        self.model = model
        self.url = f"{base_url}/chat/completions"
        self.api_key_env = api_key_env
        self._api_key = api_key if api_key is not None else (os.environ.get(api_key_env) or None)
        self._key_from = "api_key" if api_key is not None else f"${api_key_env}"
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_concurrency = int(max_concurrency)
        self.max_consecutive_failures = int(max_consecutive_failures)
        self._streak = 0  # requests failed in a row (for good)
        self._answered = False  # any request answered yet
        self._stop: str | None = None
        self._streak_lock = threading.Lock()
        #: the judge log requests go to and may be served from (None: none)
        self.judge_log: JudgeLog | None = None
        self.max_pixels = max_pixels
        self.min_pixels = min_pixels
        self.image_format: Literal["png", "jpeg"] = image_format  # type: ignore[assignment]
        self.jpeg_quality = int(jpeg_quality)
        self.extra_body = extra_body
        self.answer_prefix_mode = answer_prefix_mode
        self.name = f"openai:{model}@{base_url}"

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._httpx = httpx
        self._client: httpx.Client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=self.max_concurrency,
                                max_keepalive_connections=self.max_concurrency))

    # -- the VLMBackend contract ---------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """JSON-serialisable settings that reproduce the backend (never the API key)."""
        return {"backend": "openai_compat", "base_url": self.base_url, "model": self.model,
                "api_key_env": self.api_key_env, "api_key_set": self._api_key is not None,
                "timeout_s": self.timeout_s, "max_retries": self.max_retries,
                "backoff_s": self.backoff_s, "max_backoff_s": self.max_backoff_s,
                "max_concurrency": self.max_concurrency,
                "max_consecutive_failures": self.max_consecutive_failures,
                "max_pixels": self.max_pixels,
                "min_pixels": self.min_pixels, "image_format": self.image_format,
                "jpeg_quality": self.jpeg_quality, "extra_body": dict(self.extra_body),
                "answer_prefix_mode": self.answer_prefix_mode}

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int | None = 256,
                 temperature: float | None = 0.0, top_p: float | None = 1.0,
                 top_k: int | None = None, num_samples: int = 1, seed: int | None = None,
                 seed_per_sample: bool = False, top_logprobs: int = 0,
                 ) -> list[list[Generation]]:
        """``num_samples`` answers per prompt, in the order of ``prompts``.

        Each prompt is one request with ``n=num_samples``; when the server returns fewer
        choices (some ignore ``n``), further requests ask for the missing ones (with
        ``seed + k`` for the ``k``-th answer, so they differ when a seed is set).

        Args:
            prompts: the queries.
            max_new_tokens: most tokens per answer (``max_tokens`` in the request;
                ``None``: not sent, the server's limit applies, as a released judge that
                sends none).
            temperature, top_p: sampling settings (``temperature=0``: greedy; ``None``:
                not sent, the server's default applies).
            top_k: sample among the k most likely tokens (sent as ``top_k``, a vLLM/SGLang
                extension; ``None``: not sent).
            num_samples: answers per prompt.
            seed: sampling seed sent to the server (``None``: none sent).
            seed_per_sample: one request per answer, answer ``k`` with seed ``seed + k``
                (so each answer depends only on its prompt and seed); needs ``seed``.
            top_logprobs: when > 0, ask for that many alternatives per generated token
                (``logprobs: true, top_logprobs: k``); a server that returns none leaves
                :attr:`Generation.top_logprobs` ``None``.

        Returns:
            One list of ``num_samples`` generations per prompt. A prompt that failed after
            its retries, or got an unreadable answer, has generations with ``text=""``,
            ``error`` and ``error_kind`` set.

        Raises:
            BackendError: a prompt has an ``answer_prefix`` and ``answer_prefix_mode`` is
                ``"error"`` (nothing is sent then).
            ValueError: ``num_samples``, ``max_new_tokens`` or ``top_logprobs`` is out of
                range.
            RunStopped: the stop rule (module docstring) ended the run.
        """
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1 or None, got {max_new_tokens}")
        if top_logprobs < 0:
            raise ValueError(f"top_logprobs must be >= 0, got {top_logprobs}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
        if seed_per_sample and seed is None:
            raise ValueError("seed_per_sample needs a seed")
        if self.answer_prefix_mode == "error":
            with_prefix = [i for i, p in enumerate(prompts) if p.answer_prefix]
            if with_prefix:
                raise BackendError(
                    f"{len(with_prefix)} prompt(s) (first: #{with_prefix[0]}) end in an "
                    f"answer_prefix, but answer_prefix_mode='error' says {self.url} cannot "
                    "continue an assistant message; use a readout without an answer prefix "
                    "or a server with vLLM's continue_final_message "
                    "(answer_prefix_mode='continue')")
        raw = [i for i, p in enumerate(prompts) if not p.chat]
        if raw:
            raise BackendError(f"{len(raw)} prompt(s) (first: #{raw[0]}) have chat=False: a "
                               "chat-completions server always applies its chat template; run "
                               "such prompts on a local model (model=<checkpoint>)")
        if not prompts:
            return []

        sampling: dict[str, Any] = ({} if max_new_tokens is None
                                    else {"max_tokens": int(max_new_tokens)})
        for key, value in (("temperature", temperature), ("top_p", top_p)):
            if value is not None:
                sampling[key] = float(value)
        if top_k is not None:
            sampling["top_k"] = int(top_k)
        if top_logprobs > 0:
            sampling.update(logprobs=True, top_logprobs=int(top_logprobs))
        images = _SharedImages(prompts, self._encode_image)
        abort = _Abort()
        workers = min(self.max_concurrency, len(prompts))
        # identical requests of one batch take their judge-log occurrence numbers in batch
        # order, whichever is answered first
        order = _InOrder() if self.judge_log is not None and workers > 1 else None

        def run(indexed: tuple[int, Prompt]) -> list[Generation]:
            index, prompt = indexed
            occurrence = _Occurrence(self.judge_log, order, index)
            try:
                return self._answer(prompt, sampling, num_samples, seed, images, abort,
                                    occurrence, one_per_request=seed_per_sample)
            finally:
                occurrence.done()

        if self._stop is not None:
            raise RunStopped(self._stop)
        if workers == 1:
            out = [run(p) for p in enumerate(prompts)]
        else:
            with ThreadPoolExecutor(max_workers=workers,
                                    thread_name_prefix="ieqa-openai") as pool:
                out = list(pool.map(run, enumerate(prompts)))
        if self._stop is not None:
            raise RunStopped(self._stop)
        return out

    # -- housekeeping --------------------------------------------------------------------

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAICompatBackend({self.base_url!r}, {self.model!r})"

    # -- one prompt ----------------------------------------------------------------------

    def _answer(self, prompt: Prompt, sampling: dict[str, Any], num_samples: int,
                seed: int | None, images: _SharedImages, abort: _Abort,
                occurrence: _Occurrence, *, one_per_request: bool = False) -> list[Generation]:
        """All ``num_samples`` answers of one prompt (never raises for server trouble);
        ``one_per_request``: one request per answer (``n`` never sent)."""
        jlog = self.judge_log
        replaying = jlog is not None and jlog.mode == "replay"
        if abort.message is not None and not replaying:
            if jlog is not None:  # the log says which prompts this run did not send
                try:
                    body = self._body(self._messages(prompt, images), sampling, prompt,
                                      1 if one_per_request else num_samples, seed, 0)
                    payload = json.dumps(body).encode("utf-8")
                    key = request_key(payload)
                    jlog.write(key, payload, self.model,
                              {"response": None, "error": abort.message,
                               "error_kind": abort.kind, "status": None, "not_sent": True},
                              attempts=0, latency_s=0.0, source="live",
                              occurrence=occurrence.number(key))
                except Exception:  # noqa: BLE001 - an unencodable prompt fails below anyway
                    pass
            return [Generation(text="", error=abort.message, error_kind=abort.kind)
                    for _ in range(num_samples)]
        try:
            messages = self._messages(prompt, images)
        except Exception as exc:  # an image that cannot be encoded fails this prompt only
            msg = f"cannot encode the prompt's images: {type(exc).__name__}: {exc}"
            return [Generation(text="", error=msg) for _ in range(num_samples)]

        gens: list[Generation] = []
        while len(gens) < num_samples:
            need = 1 if one_per_request else num_samples - len(gens)
            body = self._body(messages, sampling, prompt, need, seed, len(gens))
            try:
                answer, live = self._serve(body, occurrence)
                new = self._parse(answer, need)
            except _RequestFailed as exc:
                message = str(exc)
                # an outcome taken from the judge log is not the server failing now
                stop = False if exc.replayed else self._failed(exc)
                if (exc.fatal and not replaying) or stop:
                    abort.set(message, exc.kind)
                gens.extend(Generation(text="", error=message, error_kind=exc.kind)
                            for _ in range(num_samples - len(gens)))
                break
            if live:
                with self._streak_lock:
                    self._streak, self._answered = 0, True
            if len(new) < need:
                log.debug("%s returned %d of %d choices; asking for the rest",
                          self.url, len(new), need)
            gens.extend(new)
        return gens

    def _body(self, messages: list[dict[str, Any]], sampling: dict[str, Any], prompt: Prompt,
              need: int, seed: int | None, done: int) -> dict[str, Any]:
        """The request body asking ``need`` answers (``done`` asked before)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **sampling}
        if need > 1:
            body["n"] = need
        if seed is not None:
            body["seed"] = int(seed) + done
        if prompt.answer_prefix:
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        body.update(self.extra_body)
        return body

    def reset_stop(self) -> None:
        """Forget the stop rule's state (a new run: the count of failures in a row, whether
        any request was answered, a stop)."""
        with self._streak_lock:
            self._stop, self._streak, self._answered = None, 0, False

    def _serve(self, body: dict[str, Any],
               occurrence: _Occurrence | None = None) -> tuple[dict[str, Any], bool]:
        """The JSON answer to ``body`` and whether it came from the server now (``False``:
        from the judge log, :mod:`ieqa.backends.judge_log`); every request and its outcome
        is appended to the log when one is attached.

        Raises:
            _RequestFailed: the request failed (or failed when it was recorded: then its
                ``replayed`` is set).
        """
        log = self.judge_log
        if log is None:
            return self._post(body), True
        payload = json.dumps(body).encode("utf-8")
        key = request_key(payload)
        number = occurrence.number(key) if occurrence is not None else log.occurrence(key)
        recorded = log.take(key, number) if log.mode != "record" else None
        if recorded is not None:
            outcome = {k: recorded.get(k) for k in ("response", "error", "error_kind", "status",
                                                    "fatal", "not_sent") if k in recorded}
            log.write(key, payload, self.model, outcome, attempts=int(recorded.get("attempts") or 1),
                      latency_s=0.0, source="log", occurrence=number)
            if recorded.get("response") is not None:
                return recorded["response"], False
            raise _RequestFailed(str(recorded.get("error")),
                                 kind=recorded.get("error_kind") or "http",
                                 status=recorded.get("status"),
                                 fatal=bool(recorded.get("fatal")), replayed=True)
        if log.mode == "replay":
            with self._streak_lock:
                self._stop = self._stop or (
                    f"stopped: a request is not in the judge log {log.source} (context "
                    f"{log.context or 'none'}, request {key[:12]}): a replay needs the run's "
                    "judge, options and inputs unchanged; nothing was sent to the server")
            raise _RequestFailed("not in the judge log", kind="replay", fatal=True)
        info: dict[str, Any] = {}
        start = time.monotonic()
        try:
            answer = self._post(body, info)
        except _RequestFailed as exc:
            log.write(key, payload, self.model,
                      {"response": None, "error": str(exc), "error_kind": exc.kind,
                       "status": exc.status, "fatal": exc.fatal},
                      attempts=int(info.get("attempts") or 1),
                      latency_s=time.monotonic() - start, source="live", occurrence=number)
            raise
        log.write(key, payload, self.model, {"response": answer, "status": info.get("status")},
                  attempts=int(info.get("attempts") or 1), latency_s=time.monotonic() - start,
                  source="live", occurrence=number)
        return answer, True

    def _failed(self, exc: _RequestFailed) -> bool:
        """Count a request that failed for good; True when the run must stop (the stop
        rule of the module docstring), with the message :meth:`generate` raises."""
        with self._streak_lock:
            self._streak += 1
            never = not self._answered and exc.kind in ("timeout", "connection")
            if self._stop is None and self.max_consecutive_failures > 0 \
                    and (never or self._streak >= self.max_consecutive_failures):
                what = (f"{self.url} has not answered any request" if never else
                        f"{self._streak} requests in a row to {self.url} failed")
                self._stop = (
                    f"stopped: {what} (the last: {exc}). Nothing more is sent. Check the "
                    "server (is it running, is base_url right, does it answer within "
                    f"{self.timeout_s:g} s?), then run the same command again: ieqa score, "
                    "explain and bench-editor resume, judging only what has no answer yet "
                    f"(the limit: max_consecutive_failures, now {self.max_consecutive_failures}"
                    "; -O max_consecutive_failures=K on the command line, 0 never stops)")
            return self._stop is not None

    def _messages(self, prompt: Prompt, images: _SharedImages) -> list[dict[str, Any]]:
        """The chat-completions ``messages`` of ``prompt`` with inline images."""
        content: list[dict[str, Any]] = []
        for part in prompt.parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
            elif isinstance(part, EncodedImage):  # sent as given, never re-encoded
                data = base64.b64encode(part.data).decode("ascii")
                url: dict[str, Any] = {"url": f"data:{part.mime};base64,{data}"}
                if part.detail is not None:
                    url["detail"] = part.detail
                content.append({"type": "image_url", "image_url": url})
            else:
                content.append({"type": "image_url", "image_url": {"url": images.url(part)}})
        messages: list[dict[str, Any]] = []
        if prompt.system:
            messages.append({"role": "system", "content": prompt.system})
        messages.append({"role": "user", "content": content})
        if prompt.answer_prefix:
            messages.append({"role": "assistant", "content": prompt.answer_prefix})
        if prompt.assistant_turn is not None:  # sent as it is; the server's template decides
            messages.append({"role": "assistant", "content": prompt.assistant_turn})
        return messages

    def _encode_image(self, image: Image.Image) -> str:
        """``image`` fitted to the pixel budget as a ``data:image/...;base64,`` URL."""
        image = fit_pixel_budget(image, self.max_pixels, self.min_pixels)
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        buf = io.BytesIO()
        if self.image_format == "jpeg":
            image.save(buf, format="JPEG", quality=self.jpeg_quality)
        else:
            image.save(buf, format="PNG", compress_level=1)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        return f"data:image/{self.image_format};base64,{data}"

    # -- HTTP ----------------------------------------------------------------------------

    def _post(self, body: dict[str, Any], info: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON answer to ``body``, retrying transient failures (``info`` gets the
        ``attempts`` made and the last HTTP ``status``).

        Raises:
            _RequestFailed: the request failed for good; the message says what to do.
        """
        httpx = self._httpx
        info = {} if info is None else info
        payload = json.dumps(body).encode("utf-8")
        policy = self.retry_policy
        status: int | None = None
        for attempt in range(policy.attempts):
            info["attempts"] = attempt + 1
            try:
                resp = self._client.post(self.url, content=payload)
            except httpx.TimeoutException as exc:
                problem = (f"timed out: no answer from {self.url} within "
                           f"timeout={self.timeout_s:g} s ({type(exc).__name__})")
                hint = ("; raise it (timeout_s; -O timeout=S for ieqa score, explain and "
                        "bench-editor) or lower the load on the server")
                fatal, kind = False, "timeout"
                delay = policy.after_error(attempt, timeout=True)
            except httpx.ConnectError as exc:
                problem = f"cannot connect to {self.url} ({exc})"
                hint = "; is the server running and base_url right?"
                fatal, kind = True, "connection"
                delay = policy.after_error(attempt, connect=True)
            except httpx.TransportError as exc:
                problem = f"request to {self.url} failed: {type(exc).__name__}: {exc}"
                hint = ""
                fatal, kind = False, "connection"
                delay = policy.after_error(attempt)
            else:
                status = info["status"] = resp.status_code
                if 200 <= status < 300:
                    try:
                        answer = resp.json()
                    except ValueError as exc:
                        raise _RequestFailed(
                            f"unreadable answer from {self.url}: not JSON "
                            f"({_snippet(resp.text)!r})", kind="unreadable",
                            status=status) from exc
                    if not isinstance(answer, dict):
                        raise _RequestFailed(f"unreadable answer from {self.url}: a JSON "
                                             f"{type(answer).__name__}, not an object",
                                             kind="unreadable", status=status)
                    return answer
                server_message = _server_message(resp)
                problem = f"HTTP {status} {resp.reason_phrase} from {self.url}: {server_message}"
                if not policy.retries(status):
                    hint = self._hint(status, continues=bool(body.get("continue_final_message")),
                                      message=server_message)
                    raise _RequestFailed(problem + hint, kind="http", status=status,
                                         fatal=status in _FATAL_STATUSES)
                hint = ""
                fatal, kind = False, "http"
                delay = policy.after_status(attempt, status, resp.headers)
            if delay is None:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise _RequestFailed(problem + tries + hint, kind=kind, fatal=fatal,
                                     status=status if kind == "http" else None)
            log.warning("%s; retry %d of %d in %.2f s", problem, attempt + 1,
                        self.max_retries, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def retry_policy(self) -> RetryPolicy:
        """The requests' retry policy (:func:`ieqa.retry.judge_policy` with this backend's
        ``max_retries``, ``backoff_s`` and ``max_backoff_s``)."""
        return judge_policy(self.max_retries, self.backoff_s, self.max_backoff_s)

    def _hint(self, status: int, *, continues: bool = False, message: str = "") -> str:
        """What to do about a non-retryable HTTP status (``continues``: the request
        asked to continue an answer prefix; ``message``: the server's error message)."""
        if status in (400, 413, 422) and _is_context_overflow(message):
            return ("; the prompt is longer than the served model's context: shorten the "
                    "instruction (VLM scorers refuse instructions over max_instruction_chars "
                    "up front) or lower max_pixels for fewer image tokens")
        if status in (401, 403):
            if self._api_key is None:
                return f"; set {self.api_key_env} or pass api_key"
            return f"; check the API key (from {self._key_from}) and its access to {self.model!r}"
        if status == 404:
            return (f"; check base_url (the API root, usually ending in /v1, e.g. "
                    f"http://localhost:8000/v1) and that the server serves model "
                    f"{self.model!r} (GET {self.base_url}/models lists them)")
        if status == 413:
            return "; lower max_pixels or use image_format='jpeg'"
        if status in (400, 422) and continues:
            return ("; if the server does not support vLLM's continue_final_message, "
                    "answer prefixes cannot be continued there (answer_prefix_mode='error' "
                    "says so up front)")
        return ""

    def _parse(self, answer: dict[str, Any], need: int) -> list[Generation]:
        """Up to ``need`` generations from a chat-completions answer.

        Raises:
            _RequestFailed: the answer has no choices.
        """
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices:
            what = "an empty 'choices'" if isinstance(choices, list) else "no 'choices'"
            raise _RequestFailed(f"unreadable answer from {self.url}: {what} "
                                 f"({_snippet(json.dumps(answer))!r})", kind="unreadable")
        raw = {k: answer[k] for k in ("id", "model", "usage", "system_fingerprint")
               if answer.get(k) is not None}
        ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
        return [self._generation(choice, raw) for choice in ordered[:need]]

    def _generation(self, choice: Any, raw: dict[str, Any]) -> Generation:
        """One choice as a :class:`Generation` (``error`` set when it is unreadable)."""
        if not isinstance(choice, dict):
            return Generation(text="", error=f"unreadable answer from {self.url}: a choice "
                              f"is a {type(choice).__name__}, not an object", raw=dict(raw),
                              error_kind="unreadable")
        finish = choice.get("finish_reason")
        finish = _FINISH_REASONS.get(finish, finish) if isinstance(finish, str) else None
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if isinstance(text, list):  # content as a list of parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not isinstance(text, str):
            detail = "no message" if not isinstance(message, dict) else "no message content"
            if isinstance(message, dict) and message.get("reasoning_content"):
                detail += " (only reasoning_content; raise max_new_tokens or turn thinking off)"
            return Generation(text="", finish_reason=finish, raw=dict(raw),
                              error=f"unreadable answer from {self.url}: the choice has "
                                    f"{detail}", error_kind="unreadable")
        return Generation(text=text, top_logprobs=_top_logprobs(choice.get("logprobs")),
                          finish_reason=finish, raw=dict(raw))


class _InOrder:
    """Lets the prompts of one batch, each on its own thread, take turns in batch order:
    prompt ``i`` waits until every earlier prompt has had its turn or passed. The pool hands
    prompts to threads in that order, so the wait ends."""

    def __init__(self) -> None:
        self._next = 0
        self._cond = threading.Condition()

    def turn(self, index: int, fn: Any) -> Any:
        with self._cond:
            self._cond.wait_for(lambda: self._next == index)
            try:
                return fn() if fn is not None else None
            finally:
                self._next += 1
                self._cond.notify_all()


class _Occurrence:
    """The judge-log occurrence number of one prompt's requests
    (:meth:`~ieqa.backends.judge_log.JudgeLog.occurrence`): its first request takes one in
    batch order (``order``), and its later ones (the other samples, the rest of a short
    answer) carry the same, so that identical prompts keep their own numbers whichever
    runs first; :meth:`done` passes the turn of a prompt that sent nothing."""

    def __init__(self, log: JudgeLog | None, order: _InOrder | None, index: int) -> None:
        self.log, self.order, self.index = log, order, index
        self._turned = order is None
        self._first: int | None = None

    def number(self, key: str) -> int | None:
        if self.log is None:
            return None
        if self._first is not None:
            return self._first
        log = self.log
        if self._turned:
            self._first = log.occurrence(key)
        else:
            self._turned = True
            assert self.order is not None
            self._first = self.order.turn(self.index, lambda: log.occurrence(key))
        return self._first

    def done(self) -> None:
        if not self._turned:
            self._turned = True
            assert self.order is not None
            self.order.turn(self.index, None)


class _Abort:
    """Set once a request fails in a way every later request of the batch would too."""

    def __init__(self) -> None:
        self.message: str | None = None
        self.kind: str | None = None
        self._lock = threading.Lock()

    def set(self, message: str, kind: str | None = None) -> None:
        with self._lock:
            if self.message is None:
                self.message = f"not sent: an earlier request failed: {message}"
                self.kind = kind


def _top_logprobs(logprobs: Any) -> list[dict[str, float]] | None:
    """Per generated token, ``{token_text: logprob}`` of the top alternatives.

    Reads the chat format (``{"content": [{"token", "logprob", "top_logprobs": [...]}]}``)
    and the legacy completions format (``{"top_logprobs": [{token: logprob}, ...]}``).
    When two alternatives decode to the same text the more likely one is kept.
    """
    if not isinstance(logprobs, dict):
        return None
    out: list[dict[str, float]] = []
    content = logprobs.get("content")
    if isinstance(content, list):
        for tok in content:
            alts = tok.get("top_logprobs") if isinstance(tok, dict) else None
            step: dict[str, float] = {}
            for alt in alts if isinstance(alts, list) else []:
                if isinstance(alt, dict) and isinstance(alt.get("token"), str) \
                        and isinstance(alt.get("logprob"), (int, float)):
                    lp = float(alt["logprob"])
                    if lp > step.get(alt["token"], float("-inf")):
                        step[alt["token"]] = lp
            out.append(step)
        return out or None
    legacy = logprobs.get("top_logprobs")
    if isinstance(legacy, list):
        for alts in legacy:
            out.append({str(k): float(v) for k, v in alts.items()}
                       if isinstance(alts, dict) else {})
        return out or None
    return None


#: lower-case fragments of servers' "prompt longer than the context" messages (vLLM,
#: OpenAI, TGI, SGLang, llama.cpp)
_CONTEXT_MESSAGES = ("context length", "context window", "max_model_len", "maximum context",
                     "input is too long", "prompt is too long", "too many tokens",
                     "exceeds the available context", "maximum input length")


def _is_context_overflow(message: str) -> bool:
    """Whether a server's error message says the prompt exceeds the model's context."""
    lower = message.lower()
    return any(fragment in lower for fragment in _CONTEXT_MESSAGES)


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _ERROR_BODY_CHARS else text[:_ERROR_BODY_CHARS] + "..."


def _server_message(resp: httpx.Response) -> str:
    """The error message in an error answer (OpenAI, vLLM and FastAPI shapes)."""
    try:
        data = resp.json()
    except ValueError:
        return _snippet(resp.text) or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return _snippet(str(err["message"]))
        for key in ("message", "detail", "error"):
            if data.get(key):
                value = data[key]
                return _snippet(value if isinstance(value, str) else json.dumps(value))
    return _snippet(json.dumps(data))


