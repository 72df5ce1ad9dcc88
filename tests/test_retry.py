"""The one retry schedule (ieqa.retry) shared by the OpenAI-compatible backend and the
reward client, against delays worked out by hand."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from ieqa.retry import Backoff, retry_after_s


def test_exponential_waits_double_and_are_capped() -> None:
    policy = Backoff(max_retries=5, backoff_s=0.5, max_backoff_s=3.0)
    assert [policy.delay(a) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_the_servers_wait_wins_but_is_capped() -> None:
    policy = Backoff(backoff_s=0.5, max_backoff_s=30.0)
    assert policy.delay(0, retry_after=7.0) == 7.0
    assert policy.delay(3, retry_after=3600.0) == 30.0
    assert policy.delay(0, retry_after=-2.0) == 0.0


def test_jitter_stays_between_half_and_the_full_wait() -> None:
    policy = Backoff(backoff_s=1.0, max_backoff_s=30.0, jitter=True)
    waits = [policy.delay(2) for _ in range(200)]
    assert all(2.0 <= w <= 4.0 for w in waits) and len(set(waits)) > 1
    assert policy.delay(2, retry_after=1.5) == 1.5  # a server's wait is not jittered


@pytest.mark.parametrize("bad", [{"max_retries": -1}, {"max_retries": 1.5}, {"backoff_s": -0.1},
                                 {"max_backoff_s": float("nan")}, {"backoff_s": float("inf")}])
def test_a_bad_schedule_is_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        Backoff(**bad)


def test_retry_after_forms() -> None:
    assert retry_after_s(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert retry_after_s(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    assert retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after_s(httpx.Headers({})) is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55.0 <= retry_after_s(httpx.Headers({"Retry-After": later})) <= 60.0
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after_s(httpx.Headers({"Retry-After": past})) == 0.0
