"""The real client against the real server: the same answers as in-process scoring, and
the RL adapters working through either."""

import asyncio

import numpy as np
import pytest

from ieqa.rewards import LocalRewarder, RewardRule
from ieqa.rewards.adapters import best_of_n, edit_reward_fn, group_advantages
from ieqa.rewards.client import AsyncRewardClient, RewardClient, RewardServiceError
from ieqa.serve.app import ServeConfig, create_app
from ieqa.serve.auth import TokenSet

from .helpers import running

TOKEN = "client-test-token"


def _image(level, size=48, seed=0):
    rng = np.random.default_rng(seed)
    img = np.full((size, size, 3), level, np.uint8)
    img[: size // 2] = np.clip(level + rng.integers(-30, 30, (size // 2, size, 3)), 0, 255)
    return img


@pytest.fixture(scope="module")
def rule():
    return RewardRule("0.5*visual_quality + 0.5*content_preservation", floor=1.0)


@pytest.fixture(scope="module")
def url(classic, rule):
    config = ServeConfig(max_batch=4, max_wait_ms=10, max_queue=64, tokens=TokenSet([TOKEN]))
    with running(create_app(classic, rule=rule, config=config)) as base:
        yield base


def _items():
    source = _image(120, seed=1)
    edits = [_image(120, seed=2), _image(60, seed=3), np.zeros_like(source), _image(200, seed=4)]
    return source, [(source, e, "make it warmer") for e in edits] + [(source, "/no/such/file.png", "x")]


def test_client_scores_equal_local_scores_in_chunks(url, classic, rule):
    source, items = _items()
    local = LocalRewarder(classic, rule).score(items)
    with RewardClient(url, token=TOKEN, max_items_per_request=2) as client:
        remote = client.score(items)
        assert client.ready()
        info = client.info()
    assert info.scorer == "classic" and info.reward_rule == rule.describe()
    assert remote.n_ok == local.n_ok == 4 and remote.n_failed == local.n_failed == 1
    for r, mine in zip(remote.results, local.results, strict=True):
        assert r.id == mine.id and r.flags == mine.flags and r.floored == mine.floored
        if mine.error is None:
            assert r.reward == pytest.approx(mine.reward, abs=1e-9)
            assert r.scores == pytest.approx(mine.scores, abs=1e-9)
        else:
            assert r.error and r.reward is None
    assert remote.results[2].floored and remote.results[2].reward == 1.0  # the black edit


def test_async_client_and_compare_equal_local(url, classic, rule):
    source, items = _items()
    group = {"id": "g", "source": source, "instruction": "make it warmer",
             "candidates": [it[1] for it in items[:4]]}
    local = LocalRewarder(classic, rule).compare([group])

    async def go():
        async with AsyncRewardClient(url, token=TOKEN) as client:
            return await client.compare([group])

    remote = asyncio.run(go())
    lg, rg = local.results[0], remote.results[0]
    assert rg.ranking == lg.ranking
    np.testing.assert_allclose(np.array(rg.preference, float), np.array(lg.preference, float), atol=1e-9)


def test_wrong_token_is_an_error_that_says_what_to_do(url):
    source, items = _items()
    with RewardClient(url, token="wrong") as client, pytest.raises(RewardServiceError) as err:
        client.score(items[:1])
    assert err.value.status == 403


def test_rl_adapters_through_the_server_equal_in_process(url, classic, rule):
    source, items = _items()
    images = [it[1] for it in items[:4]]
    local_fn = edit_reward_fn(LocalRewarder(classic, rule))
    with RewardClient(url, token=TOKEN) as client:
        remote_fn = edit_reward_fn(client)
        r_remote, info = remote_fn(images, ["make it warmer"] * 4, [{"source": source}] * 4)
        best_remote, _ = best_of_n(client, source, "make it warmer", images)
    r_local, _ = local_fn(images, ["make it warmer"] * 4, [{"source": source}] * 4)
    np.testing.assert_allclose(r_remote, r_local, atol=1e-9)
    assert info["n_failed"] == 0
    best_local, _ = best_of_n(LocalRewarder(classic, rule), source, "make it warmer", images)
    assert best_remote == best_local == int(np.argmax(r_local))
    adv, counts = group_advantages(r_remote, [0, 0, 1, 1])
    assert adv[0] == pytest.approx(-adv[1]) and adv[2] == pytest.approx(-adv[3])
