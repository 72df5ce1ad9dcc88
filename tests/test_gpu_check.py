"""``benchmarks/gpu_check.sh --smoke``: the GPU check's scripts on tiny models on the CPU, so
that a session lent a GPU finds them working (CI never has one)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_check_runs_in_smoke_mode() -> None:
    t0 = time.perf_counter()
    env = {**os.environ, "PY": sys.executable, "HF_HUB_OFFLINE": "1"}
    res = subprocess.run(["bash", "benchmarks/gpu_check.sh", "--smoke"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    print(f"gpu_check.sh --smoke: {time.perf_counter() - t0:.1f} s")
    # every script ran its comparisons and its checks agreed
    assert "batch 4, prefix sharing (K=4)" in out and "MISMATCH" not in out, out
    assert "varlen vs per-window SDPA" in out, out  # the vision attention paths compared
    assert "batch 2, prefix sharing" in out and "relative diff" in out, out
    assert "released loop reproducible from its seeds: ok" in out, out
    assert "seeded batch vs released loop: 4 of 4 answers identical" in out, out
    assert "static cache vs released loop: 4 of 4 answers identical" in out, out
    assert "lost 0, mismatched 0, other errors 0" in out, out
    assert "serve vs offline at batch" in out and "latency at half load" in out, out
    assert "padding:" in out, out  # the mixed-size workload's padding share is stated
    # FLOP columns in every throughput table (no peak on the CPU)
    assert out.count("TFLOP/edit") >= 3 and "TFLOP/item" in out, out
