"""ieqa's torch thread count: explicit, from the environment, or the free cores."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from ieqa import threads
from ieqa.cli import app
from ieqa.errors import IeqaError


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    before = torch.get_num_threads()
    for var in ("IEQA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    yield
    torch.set_num_threads(before)


def test_explicit_env_and_user_openmp_settings_win(monkeypatch):
    assert threads.configure_threads(1) == 1 and torch.get_num_threads() == 1
    monkeypatch.setenv("IEQA_NUM_THREADS", "2")
    assert threads.configure_threads() == 2 and torch.get_num_threads() == 2
    monkeypatch.delenv("IEQA_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads.configure_threads() == 1
    monkeypatch.setenv("IEQA_NUM_THREADS", "zero")
    with pytest.raises(IeqaError, match="IEQA_NUM_THREADS must be a whole number"):
        threads.configure_threads()
    with pytest.raises(IeqaError, match="--threads"):
        threads.configure_threads(0)


@pytest.mark.parametrize(("cores", "busy", "expected"), [(2, 0, 2), (2, 1, 1), (2, 7, 1),
                                                         (16, 3, 13)])
def test_default_is_the_cores_not_busy(monkeypatch, cores, busy, expected):
    monkeypatch.setattr(threads, "available_cores", lambda: cores)
    monkeypatch.setattr(threads, "busy_cores", lambda: busy)
    assert threads.default_threads() == expected
    assert threads.configure_threads() == expected == torch.get_num_threads()


def test_busy_cores_reads_the_runnable_count(tmp_path, monkeypatch):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.10 2.05 1.00 4/312 98765\n")  # 4 runnable, this process included
    monkeypatch.setattr(threads, "_LOADAVG", str(loadavg))
    assert threads.busy_cores(pause_s=0.0) == 3
    monkeypatch.setattr(threads, "_LOADAVG", str(tmp_path / "missing"))
    assert threads.busy_cores(pause_s=0.0) == 0


def test_cli_threads_option(monkeypatch):
    result = CliRunner().invoke(app, ["--threads", "1", "list"])
    assert result.exit_code == 0, result.output
    assert torch.get_num_threads() == 1
    result = CliRunner().invoke(app, ["--threads", "0", "list"])
    assert result.exit_code != 0


def test_before_torch_starts_the_settings_reach_it_through_the_environment():
    """In a fresh process (torch not imported yet) the count and passive waiting go
    through the environment, which torch and OpenMP read when they start."""
    code = ("import os, sys; from ieqa.threads import configure_threads; "
            "assert 'torch' not in sys.modules; n = configure_threads(); import torch; "
            "print(n, torch.get_num_threads(), os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["IEQA_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["1", "1", "PASSIVE"]


def test_thread_count_reads_what_configure_threads_sets_and_sets_nothing(monkeypatch):
    monkeypatch.setattr(threads, "default_threads", lambda: 3)
    before = torch.get_num_threads()
    assert threads.thread_count() == 3
    assert threads.thread_count(2) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert threads.thread_count() == 5
    monkeypatch.setenv("IEQA_NUM_THREADS", "4")
    assert threads.thread_count() == 4
    assert torch.get_num_threads() == before and os.environ["OMP_NUM_THREADS"] == "5"
    with pytest.raises(IeqaError, match="--threads"):
        threads.thread_count(0)
