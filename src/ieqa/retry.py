"""Retrying HTTP requests: one backoff policy and one reading of ``Retry-After``, shared by
the OpenAI-compatible backend (:mod:`ieqa.backends.openai_compat`) and the reward client
(:mod:`ieqa.rewards.client`).

The delay before retry ``attempt + 1`` (``attempt`` counts from 0) is what the server asked
for (``retry-after-ms`` or ``Retry-After``), capped at ``max_backoff_s``; without one it is
``backoff_s * 2**attempt``, capped at ``max_backoff_s`` and, with ``jitter``, scaled by a
random factor in [0.5, 1] so that many clients do not retry in step.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Backoff", "retry_after_s"]


@dataclass(frozen=True)
class Backoff:
    """A retry schedule.

    Attributes:
        max_retries: retries after the first attempt (an integer >= 0; 0: no retry).
        backoff_s: the first retry's wait in seconds (>= 0), doubled at each further retry.
        max_backoff_s: the longest wait in seconds (>= 0; ``inf`` for no bound), a
            server's ``Retry-After`` included.
        jitter: scale exponential waits by a random factor in [0.5, 1].
    """

    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    jitter: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or int(self.max_retries) != self.max_retries \
                or self.max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        for name in ("backoff_s", "max_backoff_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0):  # NaN fails too
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if not math.isfinite(self.backoff_s):
            raise ValueError(f"backoff_s must be finite, got {self.backoff_s!r}")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt + 1``; ``retry_after`` is the wait the
        server asked for (:func:`retry_after_s`), if any."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff_s)
        wait = min(self.backoff_s * 2.0 ** attempt, self.max_backoff_s)
        return wait * random.uniform(0.5, 1.0) if self.jitter else wait


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for, in seconds (>= 0): ``retry-after-ms``, else
    ``Retry-After`` as seconds or an HTTP date; ``None`` when absent or unreadable.
    ``headers`` is case-insensitive when it is an ``httpx.Headers``; a plain mapping must
    use lower-case keys."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None
