"""Ray is started or joined failing fast: an unreachable address and a GPU request on a
machine without one are errors that say what to do, within 30 s (Ray itself would wait
for minutes, or for ever)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ieqa.ray_cluster import RayStartError, check_address, check_resources
from ports import free_port

SRC = Path(__file__).resolve().parents[1] / "src"


def _closed_port() -> int:
    return free_port()  # free now: nothing listens there


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_an_unreachable_address_fails_at_once(form: str) -> None:
    address = form.format(port=_closed_port())
    t0 = time.monotonic()
    with pytest.raises(RayStartError, match="cannot reach the Ray cluster at .*ray start --head"):
        check_address(address, connect_timeout_s=2)
    assert time.monotonic() - t0 < 5
    check_address(None)
    check_address("auto")  # Ray resolves it itself


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_a_port_that_answers_but_is_not_ray_fails_within_the_stated_time(
        form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A web server where the cluster's head should be: TCP accepts, gRPC never does.
    Ray's own start would retry for minutes, deaf to SIGTERM. (The handshake's time limit
    is 2 s here instead of its 10 s: the test waits it out twice.)"""
    pytest.importorskip("grpc", reason="grpcio comes with ray")
    import http.server
    import threading

    from ieqa import ray_cluster

    assert ray_cluster.HANDSHAKE_TIMEOUT_S + 5 < 30  # what the commands promise
    monkeypatch.setattr(ray_cluster, "HANDSHAKE_TIMEOUT_S", 2.0)
    HANDSHAKE_TIMEOUT_S = 2.0

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = form.format(port=server.server_address[1])
        t0 = time.monotonic()
        with pytest.raises(RayStartError, match="answers but is not a Ray cluster.*2 s.*6379"):
            check_address(address, connect_timeout_s=2)
        seconds = time.monotonic() - t0
    finally:
        server.shutdown()
        server.server_close()
    assert HANDSHAKE_TIMEOUT_S <= seconds < HANDSHAKE_TIMEOUT_S + 5


class _Cluster:
    def __init__(self, **resources: float) -> None:
        self.resources = resources

    def cluster_resources(self) -> dict[str, float]:
        return self.resources


def test_a_replica_that_does_not_fit_is_refused() -> None:
    with pytest.raises(RayStartError, match=r"asks for 1 GPU\(s\) and the Ray cluster has 0; .*--gpus-per-replica 0"):
        check_resources(_Cluster(CPU=2.0), num_gpus=1)
    with pytest.raises(RayStartError, match=r"asks for 4 CPU\(s\) and the Ray cluster has 2"):
        check_resources(_Cluster(CPU=2.0), num_cpus=4)
    check_resources(_Cluster(CPU=2.0, GPU=1.0), num_gpus=1, num_cpus=1)


def _ieqa(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ieqa", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=90)
    return proc, time.monotonic() - t0


@pytest.fixture(scope="module", autouse=True)
def _one_ray_at_a_time():
    """The commands below start (or try to join) Ray: one Ray at a time (tests/ray_lock.py)."""
    from ray_lock import ray_lock

    with ray_lock():
        yield


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    return generate(tmp_path_factory.mktemp("shapes"), ShapesEditConfig(n=2, k=2, seed=1, size=64),
                    progress=False)


@pytest.mark.slow
def test_the_commands_fail_within_30_s(tmp_path: Path, shapes: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ieqa[ray]')")
    from ieqa.ray_cluster import _host_port

    port = _closed_port()
    runs = {
        "score, unreachable": ["score", str(shapes), "-o", "a.parquet", "--engine", "ray",
                               "--address", f"127.0.0.1:{port}"],
        "score, ray://": ["score", str(shapes), "-o", "b.parquet", "--engine", "ray",
                          "--address", f"ray://127.0.0.1:{port}"],
        "serve, unreachable": ["serve", "--scorer", "classic", "--replicas", "1",
                               "--port", str(free_port()), "--ray-address", f"127.0.0.1:{port}"],
        "score, GPU on CPU": ["score", str(shapes), "-o", "c.parquet", "--engine", "ray",
                              "--gpus-per-replica", "1"],
        "serve, GPU on CPU": ["serve", "--scorer", "classic", "--replicas", "1",
                              "--port", str(free_port()), "--gpus-per-replica", "1"],
    }
    assert _host_port(f"ray://127.0.0.1:{port}") == ("127.0.0.1", port)
    for what, args in runs.items():
        proc, seconds = _ieqa(args, tmp_path)
        text = " ".join((proc.stdout + proc.stderr).split())
        assert proc.returncode == 1, (what, text[-2000:])
        assert seconds < 30, (what, seconds)
        assert "Traceback" not in text, (what, text[-2000:])
        wanted = "cannot reach the Ray cluster" if "unreachable" in what or "ray://" in what \
            else "--gpus-per-replica 0"
        assert wanted in text, (what, text[-2000:])
