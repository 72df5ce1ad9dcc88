"""The core of ``benchmarks/serve_load.py`` for a couple of seconds against classic on
127.0.0.1: 16 closed-loop clients lose no request and get no mismatched score; past
capacity the server answers only 200 or 429 with Retry-After. (Correctness, not speed.)"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from ieqa.serve.app import ServeConfig, create_app
from ieqa.testing import serve_in_thread

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "serve_load.py"


@pytest.fixture(scope="module")
def load():
    spec = importlib.util.spec_from_file_location("serve_load", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["serve_load"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("serve_load", None)


@pytest.fixture(scope="module")
def workload(load, classic):
    return load.make_workload(classic, n_items=24, items_per_request=2, group_size=4,
                              image_size=48)


def test_sixteen_clients_lose_nothing(load, classic, workload):
    config = ServeConfig(max_batch=8, max_wait_ms=5, max_queue=256, timeout_s=30)
    with serve_in_thread(create_app(classic, rule="mean", config=config)) as url:
        phase = asyncio.run(load.closed_loop(url, workload, clients=16, duration_s=2.0,
                                             max_requests=400, timeout_s=30))
    assert phase.sent > 16 and phase.lost == 0 and phase.mismatched == 0, phase.problems
    assert phase.statuses == {200: phase.sent}
    assert phase.items_ok == 2 * phase.sent


def test_open_loop_answers_every_request(load, classic, workload):
    config = ServeConfig(max_batch=8, max_wait_ms=5, timeout_s=30)
    with serve_in_thread(create_app(classic, rule="mean", config=config)) as url:
        phase = asyncio.run(load.open_loop(url, workload, rate_rps=20, duration_s=1.0,
                                           max_requests=40, timeout_s=30))
    assert phase.sent == 20 and phase.statuses[200] == 20 and phase.mismatched == 0
    assert phase.percentile_ms(50) > 0


def test_past_capacity_only_429_with_retry_after(load, classic, workload):
    config = ServeConfig(max_batch=2, max_wait_ms=5, max_queue=2, timeout_s=30)
    with serve_in_thread(create_app(classic, rule="mean", config=config)) as url:
        phase = asyncio.run(load.closed_loop(url, workload, clients=16, duration_s=1.5,
                                             max_requests=400, timeout_s=30, retry_429_s=0.01))
    assert phase.lost == 0 and phase.mismatched == 0 and phase.other_errors == 0, phase.problems
    assert phase.statuses[429] > 0 and phase.retry_after_ok == phase.statuses[429]
    assert phase.statuses[200] > 0
