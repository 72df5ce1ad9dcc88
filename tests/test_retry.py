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


# ------------------------------------------------------------------ the two named policies

def test_the_judge_and_reward_policies_differ_only_where_the_docstring_says() -> None:
    from ieqa.retry import judge_policy, reward_policy

    judge, reward = judge_policy(max_retries=2), reward_policy(max_retries=2)
    retried = {s for s in range(400, 600) if judge.retries(s)}
    assert retried == {408, 409, 429, *range(500, 600)}
    assert {s for s in range(400, 600) if reward.retries(s)} == {429, 502, 503, 504}
    asks = {"retry-after": "7"}
    # the server's wait: on every retried status for the judge, on 429/503 for ieqa serve
    assert judge.after_status(0, 504, asks) == 7.0 and judge.after_status(0, 409, asks) == 7.0
    assert reward.after_status(0, 503, asks) == 7.0 and reward.after_status(0, 429, asks) == 7.0
    assert reward.after_status(0, 502, asks) == 0.5 and reward.after_status(1, 504, asks) == 1.0
    # not retried, or retries used up: final
    assert judge.after_status(0, 404, asks) is None and reward.after_status(0, 500) is None
    assert judge.after_status(2, 429) is None and reward.after_status(2, 503) is None
    # a read timeout: retried for a judge, final for ieqa serve (it may still be scoring)
    assert judge.after_error(0, timeout=True) is not None
    assert reward.after_error(0, timeout=True) is None
    # a refused connection or another transport error: retried by both, until used up
    assert reward.after_error(1, connect=True) == 1.0 and reward.after_error(0) == 0.5
    assert judge.after_error(0, connect=True) is not None and judge.after_error(2) is None
    # jitter for the judge's many concurrent requests, the exact schedule for the client
    waits = {judge.after_error(1) for _ in range(50)}
    assert len(waits) > 1 and all(1.0 <= w <= 2.0 for w in waits)
    assert judge.attempts == reward.attempts == 3


def test_both_clients_use_their_named_policy() -> None:
    from ieqa.backends.openai_compat import OpenAICompatBackend
    from ieqa.retry import judge_policy, reward_policy
    from ieqa.rewards.client import RewardClient

    backend = OpenAICompatBackend(model="m", base_url="http://127.0.0.1:9/v1", max_retries=5,
                                  backoff_s=0.25, max_backoff_s=4.0)
    assert backend.retry_policy == judge_policy(5, 0.25, 4.0)
    client = RewardClient("http://127.0.0.1:9", max_retries=1, backoff_s=0.1)
    try:
        assert client.retry_policy == reward_policy(1, 0.1, 30.0)
    finally:
        client.close()
