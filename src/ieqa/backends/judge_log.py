"""The judge log: which answers a number came from (:class:`JudgeLog`).

Every request an :class:`~ieqa.backends.openai_compat.OpenAICompatBackend` sends while a
log is attached appends one JSON line to ``judge_log.jsonl``:

* ``request`` — the SHA-256 of the request body as sent (its images included, as the
  bytes they were sent as), ``images`` — the SHA-256 of each image's bytes (the images
  themselves are not in the log), ``context`` — where in the run it was asked (editor,
  repeat), ``model`` — the model asked for;
* the outcome: ``response`` (the server's JSON answer: its choices, the ``model`` and
  ``system_fingerprint`` it reported, ``usage``) or ``error``, ``error_kind`` (``http``,
  ``timeout``, ``connection``, ``unreadable``) and ``status`` (the HTTP status, where one
  came back);
* ``occurrence`` — how many times this run had asked the same request in the same context
  before (0 the first time): identical requests of one concurrent batch are numbered in
  the order they stand in the batch, not the order their answers came back, and a
  prompt's later requests (its other samples) carry its first request's number;
* ``attempts`` (retries included), ``latency_s``, ``time`` (UTC), ``source`` (``live``,
  or ``log`` when the outcome was taken from an earlier log) and ``session`` (the run that
  wrote the line); a prompt the run did not send (the rest of a batch after an error every
  later request would share) has ``not_sent: true``.

A log read back serves outcomes instead of the server, per ``(context, request)`` and
occurrence (a re-asked request sends the same bytes again, and gets the answer recorded
for its second occurrence; lines without one, from an earlier ieqa, in the order they were
recorded), from the lines of the last run that asked it (a re-run copies the
answers it took from the log under its own session, so its lines hold the whole sequence
it saw): **replay** serves every recorded outcome, failures included, and
never contacts the server (a request the log does not hold stops the run); **resume**
serves the recorded *answers* and sends live only what has none.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import threading
import uuid
from collections import defaultdict, deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["JUDGE_LOG", "MODES", "JudgeLog", "image_hashes", "local_request", "log_summary",
           "read_judge_log", "request_key"]

#: the log's file name in a run's output folder
JUDGE_LOG = "judge_log.jsonl"
#: the log modes: ``record`` (write only), ``resume`` and ``replay`` (see the module docstring)
MODES = ("record", "resume", "replay")

_DATA_URL = re.compile(rb'"data:[^;"]+;base64,([A-Za-z0-9+/=]+)"')


def request_key(payload: bytes) -> str:
    """The SHA-256 of a request body as sent."""
    return hashlib.sha256(payload).hexdigest()


def image_hashes(payload: bytes) -> list[str]:
    """The SHA-256 of each inline image's bytes in a request body, in order."""
    return [hashlib.sha256(base64.b64decode(m.group(1))).hexdigest()
            for m in _DATA_URL.finditer(payload)]


class JudgeLog:
    """Appends a run's requests to ``path`` and, in ``resume`` or ``replay`` mode, serves
    the outcomes recorded in ``source`` (see the module docstring).

    Args:
        path: the log this run writes (appended to; its folder is created).
        mode: ``record``, ``resume`` or ``replay``.
        source: the log read back (default ``path`` itself, read before this run appends).
    """

    def __init__(self, path: str | Path, *, mode: str = "record",
                 source: str | Path | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.source = Path(source) if source is not None else self.path
        self.context: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._queues: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        self._asked: dict[tuple[str, str], int] = defaultdict(int)
        self.served = 0
        #: this run's id, on every line it writes
        self.session = uuid.uuid4().hex[:12]
        if mode != "record" and self.source.is_file():
            groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
            for entry in read_judge_log(self.source):
                groups[(_context_key(entry.get("context")), entry["request"])].append(entry)
            for key, entries in groups.items():
                # the run that last asked a request saw its whole sequence (answers it took
                # from the log included, copied under its own session): only its lines count
                last = entries[-1].get("session")
                for entry in entries:
                    if entry.get("session") != last:
                        continue
                    if mode == "resume" and entry.get("response") is None:
                        continue  # only answers are reused; failures are asked again
                    self._queues[key].append(entry)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def occurrence(self, key: str) -> int:
        """The occurrence number of request ``key`` asked now in the current context (0,
        1, ... in the order this is called; a caller asking several at once calls it in
        their batch order)."""
        with self._lock:
            slot = (_context_key(self.context), key)
            n = self._asked[slot]
            self._asked[slot] = n + 1
            return n

    def take(self, key: str, occurrence: int | None = None) -> dict[str, Any] | None:
        """The recorded outcome of request ``key`` in the current context: the one recorded
        for ``occurrence``, else the next line without a number (an earlier ieqa's log), in
        recorded order; ``None`` when there is none (a resumed run sends it)."""
        with self._lock:
            queue = self._queues.get((_context_key(self.context), key))
            if not queue:
                return None
            if occurrence is not None:
                for i, entry in enumerate(queue):
                    if entry.get("occurrence") == occurrence:
                        del queue[i]
                        self.served += 1
                        return entry
                # a numbered line is this run's answer to its own occurrence only
                for i, entry in enumerate(queue):
                    if "occurrence" not in entry:
                        del queue[i]
                        self.served += 1
                        return entry
                return None
            self.served += 1
            return queue.popleft()

    def write(self, key: str, payload: bytes, model: str, outcome: dict[str, Any], *,
              attempts: int, latency_s: float, source: str,
              images: list[str] | None = None, occurrence: int | None = None) -> None:
        """Append one request and its outcome (``images``: the image hashes, when the
        payload does not carry the images as data URLs; ``occurrence``: see
        :meth:`occurrence`)."""
        line = {"request": key, "images": image_hashes(payload) if images is None else images,
                "context": dict(self.context), "session": self.session,
                **({"occurrence": occurrence} if occurrence is not None else {}),
                "model": model, **outcome, "attempts": attempts,
                "latency_s": round(latency_s, 4),
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "source": source}
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(text)


def _context_key(context: Any) -> str:
    return json.dumps(context or {}, sort_keys=True)


def read_judge_log(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a judge log; a last line cut short (a run killed while writing it) is
    left out with a warning."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines()
             if line.strip()]
    out = []
    for n, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if n < len(lines) - 1:
                raise ValueError(f"{path}: line {n + 1} is not JSON; the judge log is damaged "
                                 "(start a new one with --overwrite)") from None
            log.warning("%s: the last line is cut short (a run killed while writing it); "
                        "left out", path)
    return out


def log_summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Requests, answers, failures by kind, and the models and fingerprints the server
    reported, of a judge log."""
    kinds: dict[str, int] = defaultdict(int)
    models, prints = set(), set()
    answered = 0
    for e in entries:
        response = e.get("response")
        if response is None:
            kinds[e.get("error_kind") or "other"] += 1
            continue
        answered += 1
        if response.get("model"):
            models.add(str(response["model"]))
        if response.get("system_fingerprint"):
            prints.add(str(response["system_fingerprint"]))
    return {"requests": len(entries), "answered": answered, "failed_by_kind": dict(kinds),
            "served_models": sorted(models), "system_fingerprints": sorted(prints),
            "from_log": sum(1 for e in entries if e.get("source") == "log")}


def local_request(prompt: Any, settings: dict[str, Any]) -> tuple[str, list[str]]:
    """The key and the image hashes of one prompt to a local model: the SHA-256 of its
    texts, its images (each as the SHA-256 of its mode, size and pixels) and the
    generation settings."""
    images, parts = [], []
    for part in prompt.parts:
        if isinstance(part, str):
            parts.append(part)
            continue
        image = getattr(part, "image", part)  # an EncodedImage's decoded image
        digest = hashlib.sha256(f"{image.mode}{image.size}".encode() + image.tobytes())
        images.append(digest.hexdigest())
        parts.append({"image": images[-1]})
    body = {"system": prompt.system, "parts": parts, "answer_prefix": prompt.answer_prefix,
            "settings": settings}
    if getattr(prompt, "assistant_turn", None) is not None:  # only then: older keys unchanged
        body["assistant_turn"] = prompt.assistant_turn
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest(), \
        images
