"""Retrying HTTP requests: one retry policy (:class:`RetryPolicy`: which failures are retried
and after how long), one backoff schedule (:class:`Backoff`) and one reading of
``Retry-After``, shared by the OpenAI-compatible backend (:mod:`ieqa.backends.openai_compat`,
:func:`judge_policy`) and the reward client (:mod:`ieqa.rewards.client`,
:func:`reward_policy`). The two policies differ where the services do, each difference
named in :class:`RetryPolicy`'s fields:

============================  ==========================  ==========================
                              judge (chat completions)    reward (``ieqa serve``)
============================  ==========================  ==========================
statuses retried              408, 409, 429, every 5xx    429, 502, 503, 504
``Retry-After`` honoured      on every retried status     on 429 and 503
a read timeout                retried                     final: the server may still
                                                          be scoring, a resend would
                                                          score the batch twice
jitter                        yes (many concurrent        no (the documented schedule)
                              requests to one server)
============================  ==========================  ==========================

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

__all__ = ["Backoff", "RetryPolicy", "judge_policy", "retry_after_s", "reward_policy"]


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


@dataclass(frozen=True)
class RetryPolicy:
    """Which failures of a request are retried, and how long to wait before each retry.

    Attributes:
        backoff: the schedule (retries, first wait, longest wait, jitter).
        statuses: HTTP statuses retried.
        server_errors: every 5xx status is retried too.
        retry_after_statuses: the retried statuses whose ``Retry-After`` is honoured (None:
            every retried status).
        read_timeout: a request that got no answer in time is retried.
        connect_error: a refused connection is retried.
    """

    backoff: Backoff
    statuses: frozenset[int]
    server_errors: bool = False
    retry_after_statuses: frozenset[int] | None = None
    read_timeout: bool = True
    connect_error: bool = True

    @property
    def attempts(self) -> int:
        """Attempts of one request: the first and its retries."""
        return self.backoff.max_retries + 1

    def retries(self, status: int) -> bool:
        """Whether an answer with this HTTP status is worth retrying."""
        return status in self.statuses or (self.server_errors and status >= 500)

    def after_status(self, attempt: int, status: int,
                     headers: Mapping[str, str] | None = None) -> float | None:
        """Seconds to wait before retrying after attempt ``attempt`` (0-based) got
        ``status``; None when the failure is final (not retried, or retries used up)."""
        if not self.retries(status) or attempt >= self.backoff.max_retries:
            return None
        honoured = self.retry_after_statuses is None or status in self.retry_after_statuses
        asked = retry_after_s(headers) if honoured and headers is not None else None
        return self.backoff.delay(attempt, asked)

    def after_error(self, attempt: int, *, timeout: bool = False,
                    connect: bool = False) -> float | None:
        """Seconds to wait before retrying after attempt ``attempt`` failed without an
        answer (``timeout``: none came in time; ``connect``: the connection was refused;
        neither: another transport error); None when final."""
        if (timeout and not self.read_timeout) or (connect and not self.connect_error) \
                or attempt >= self.backoff.max_retries:
            return None
        return self.backoff.delay(attempt)


def judge_policy(max_retries: int = 3, backoff_s: float = 1.0,
                 max_backoff_s: float = 30.0) -> RetryPolicy:
    """The policy of requests to an OpenAI-compatible judge (module docstring)."""
    return RetryPolicy(Backoff(max_retries, backoff_s, max_backoff_s, jitter=True),
                       frozenset({408, 409, 429}), server_errors=True, read_timeout=True)


def reward_policy(max_retries: int = 3, backoff_s: float = 0.5,
                  max_backoff_s: float = 30.0) -> RetryPolicy:
    """The policy of requests to ``ieqa serve`` (module docstring)."""
    return RetryPolicy(Backoff(max_retries, backoff_s, max_backoff_s),
                       frozenset({429, 502, 503, 504}), retry_after_statuses=frozenset({429, 503}),
                       read_timeout=False)


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
