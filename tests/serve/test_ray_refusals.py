"""``ieqa serve --replicas``: a replica that cannot start (here: a reward rule its scorer
cannot feed, which only the replica, where the scorer is built, can tell) ends the command
within seconds with the replica's reason in one line, exit 1, instead of Ray Serve's
traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ports import free_port
from ray_lock import ray_lock

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_rule_the_scorer_cannot_feed_fails_the_ray_deployment_with_its_reason(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ieqa[ray]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "400"}
    with ray_lock():
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "ieqa", "serve", "--scorer", "ssim", "--reward", "reasonedit",
             "--replicas", "1", "--port", str(free_port())],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        seconds = time.monotonic() - t0
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, text[-3000:]
    assert "failed to start" in text and "needs visual_quality, instruction_alignment" in text
    assert "ssim does not report" in text and "Traceback" not in text, text[-3000:]
    assert seconds < 120, seconds
