"""The reward service on Ray Serve (a local Ray on CPU, 2 replicas, classic scorer): the same
scores as the single-process server (1e-5), the same routes and auth; and the errors of
``ieqa serve --replicas`` that need no Ray."""

from __future__ import annotations

import functools
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from typer.testing import CliRunner

import ieqa
from ieqa.cli import app as cli
from ieqa.serve.app import ServeConfig, create_app
from ieqa.serve.auth import TokenSet
from ports import free_port

from .helpers import b64, png, running

TOKEN = "ray-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Ray Serve's own pydantic models warn on import; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:Using extra keyword arguments on `Field`")
CONFIG = ServeConfig(max_batch=4, max_wait_ms=20, timeout_s=30, tokens=TokenSet([TOKEN]))


@pytest.fixture(scope="module")
def ray_url(local_ray):
    """The classic scorer on 2 replicas of Ray Serve on the module's local Ray (2 CPUs);
    Ray Serve is shut down when the module's tests are done, Ray by ``local_ray``."""
    from ieqa.serve import rayserve

    try:
        application = rayserve.build_application(
            functools.partial(ieqa.create_scorer, "classic"), rule="mean", config=CONFIG,
            plan=rayserve.RayPlan(replicas=2))
        yield rayserve.deploy(application, port=free_port(), ready_timeout_s=60)
    finally:
        rayserve.shutdown(stop_ray=False)


def _requests() -> list[list[dict]]:
    sizes = (1, 3, 2, 4, 1, 2)
    out, n = [], 0
    for size in sizes:
        out.append([{"id": f"r{n + k}", "source": b64(png(50 + (n + k) % 3)),
                     "edited": b64(png(n + k)), "instruction": ("warmer", "add a hat")[k % 2]}
                    for k in range(size)])
        n += size
    return out


def _post_all(url: str, requests: list[list[dict]]) -> list[dict]:
    with httpx.Client(timeout=30, headers=AUTH) as client, ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda items: client.post(f"{url}/v1/score", json={"items": items}),
                                requests))
    for answer in answers:
        assert answer.status_code == 200, answer.text
    return [answer.json() for answer in answers]


def test_two_replicas_score_as_the_single_process_server(ray_url, classic):
    from ray import serve

    start = time.monotonic()
    states = serve.status().applications["ieqa"].deployments["ieqa-scorer"].replica_states
    assert states == {"RUNNING": 2}
    requests = _requests()
    on_ray = _post_all(ray_url, requests)
    with running(create_app(classic, rule="mean", config=CONFIG)) as url:
        alone = _post_all(url, requests)
    for got, want in zip(on_ray, alone, strict=True):
        assert got["reward_rule"] == want["reward_rule"]
        for a, b in zip(got["results"], want["results"], strict=True):
            assert a["id"] == b["id"] and a["error"] is None and b["error"] is None
            assert a["scores"].keys() == b["scores"].keys()
            assert all(math.isclose(a["scores"][k], b["scores"][k], abs_tol=1e-5) for k in a["scores"])
            assert math.isclose(a["reward"], b["reward"], abs_tol=1e-5)
    assert time.monotonic() - start < 60


def test_same_routes_and_auth_on_ray(ray_url):
    assert httpx.get(f"{ray_url}/healthz", timeout=10).status_code == 200
    assert httpx.get(f"{ray_url}/v1/info", timeout=10).status_code == 401
    assert httpx.get(f"{ray_url}/v1/info", timeout=10,
                     headers={"Authorization": "Bearer wrong"}).status_code == 403
    info = httpx.get(f"{ray_url}/v1/info", timeout=10, headers=AUTH).json()
    assert info["scorer"] == "classic" and info["max_batch"] == 4
    bad = httpx.post(f"{ray_url}/v1/score", timeout=10, headers=AUTH, json={"items": [{}]})
    assert bad.status_code == 422 and "items.0.source" in bad.text


runner = CliRunner()


def test_replicas_without_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    monkeypatch.delitem(sys.modules, "ieqa.serve.rayserve", raising=False)
    res = runner.invoke(cli, ["serve", "--scorer", "classic", "--replicas", "2"])
    assert res.exit_code != 0
    assert "pip install 'ieqa[ray]'" in res.output


def test_bad_autoscaling_bounds_are_refused():
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ieqa[ray]')")
    res = runner.invoke(cli, ["serve", "--scorer", "classic", "--replicas", "5",
                              "--min-replicas", "1", "--max-replicas", "2"])
    assert res.exit_code != 0
    assert "--min-replicas" in res.output and "--max-replicas" in res.output


def test_plan_options():
    rayserve = pytest.importorskip("ieqa.serve.rayserve", reason="ray is not installed "
                                   "(pip install 'ieqa[ray]')")
    fixed = rayserve.RayPlan(replicas=2, gpus_per_replica=1).deployment_options(CONFIG)
    assert fixed["num_replicas"] == 2 and fixed["ray_actor_options"]["num_gpus"] == 1
    assert fixed["max_ongoing_requests"] == CONFIG.max_queue
    auto = rayserve.RayPlan(replicas=1, max_replicas=4).deployment_options(CONFIG)
    assert "num_replicas" not in auto
    assert auto["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 4,
                                          "initial_replicas": 1, "target_ongoing_requests": 4}
