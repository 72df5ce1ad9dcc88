"""A tiny offline VLM (vlm-gaussian, with sigma) behind the server: whatever batch an item
lands in, its scores equal scoring it alone offline (1e-5)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import ieqa
from ieqa.rewards import LocalRewarder
from ieqa.serve.app import ServeConfig, create_app

from .helpers import b64, png, running

TOL = 1e-5


@pytest.fixture(scope="module")
def gaussian(tmp_path_factory):
    from ieqa.testing import build_tiny_vlm

    path = build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "qwen2-vl", "qwen2-vl")
    scorer = ieqa.create_scorer("vlm-gaussian", model=str(path), device="cpu", hidden_features=16,
                                aggregation="mean", batch_size=8)
    return scorer


def _close(a, b):
    assert a.keys() == b.keys()
    return all(math.isclose(a[k], b[k], abs_tol=TOL) for k in a)


def test_scores_equal_offline_whatever_the_batch(gaussian):
    # three sources x two instructions; requests of sizes 1-3 mixing groups
    def item(i):
        return {"id": f"e{i}", "source": png(200 + i % 3), "edited": png(i),
                "instruction": ("make it warmer", "add a hat")[i % 2]}

    sizes = (1, 2, 3, 2)
    requests, n = [], 0
    for size in sizes:
        requests.append([item(n + k) for k in range(size)])
        n += size
    config = ServeConfig(max_batch=8, max_wait_ms=30, max_pixels=None)
    app = create_app(gaussian, rule="mean", config=config)
    with running(app) as url, httpx.Client(timeout=60) as client, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda its: client.post(f"{url}/v1/score", json={"items": [
            {**it, "source": b64(it["source"]), "edited": b64(it["edited"])} for it in its]}),
            requests))
        info = client.get(f"{url}/v1/info").json()
        metrics = client.get(f"{url}/metrics").text
    assert info["has_sigma"] is True
    multi = [line for line in metrics.splitlines() if line.startswith("ieqa_batch_size_bucket")]
    assert multi, metrics
    batched = any(float(line.split()[-1]) < float(_count(metrics)) for line in multi
                  if 'le="1.0"' in line)
    assert batched, "no batch held more than one item"
    # the model's FLOPs, as the backend counts them (the warm-up item included)
    flops = next(float(line.split()[-1]) for line in metrics.splitlines()
                 if line.startswith("ieqa_model_flops_total"))
    assert flops == gaussian.backend.flops_done.total > 0
    rewarder = LocalRewarder(gaussian, rule="mean")
    for items, answer in zip(requests, answers, strict=True):
        assert answer.status_code == 200, answer.text
        for it, got in zip(items, answer.json()["results"], strict=True):
            alone = rewarder.score([it]).results[0]
            assert got["id"] == it["id"] and got["error"] is None
            assert _close(got["scores"], alone.scores) and _close(got["sigma"], alone.sigma)
            assert math.isclose(got["reward"], alone.reward, abs_tol=TOL)


def _count(metrics: str) -> str:
    return next(line.split()[-1] for line in metrics.splitlines()
                if line.startswith("ieqa_batch_size_count"))


def test_compare_uses_sigma(gaussian):
    src, cands = png(300), [png(301), png(302), png(303)]
    config = ServeConfig(max_batch=8, max_wait_ms=5, max_pixels=None)
    with running(create_app(gaussian, rule="mean", config=config)) as url:
        body = httpx.post(f"{url}/v1/compare", timeout=60, json={"groups": [
            {"id": "g", "source": b64(src), "instruction": "add a hat",
             "candidates": [b64(c) for c in cands]}]}).json()
    local = LocalRewarder(gaussian, rule="mean").compare(
        [{"id": "g", "source": src, "instruction": "add a hat", "candidates": cands}])
    got, want = body["results"][0], local.results[0]
    assert got["ranking"] == want.ranking
    for row, ref in zip(got["preference"], want.preference, strict=True):
        assert all(math.isclose(a, b, abs_tol=TOL) for a, b in zip(row, ref, strict=True))
    assert all(c["sigma"] for c in got["candidates"])  # P(A > B) integrates over sigma
