"""``ieqa serve`` as a user runs it: the CLI on uvicorn in a subprocess (127.0.0.1)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

import ieqa
from ieqa.cli import app
from ieqa.rewards import LocalRewarder
from ports import free_port

from .helpers import b64, png

SRC = Path(__file__).resolve().parents[2] / "src"


def test_cli_serves_tokens_and_offline_equal_scores(tmp_path):
    (tmp_path / "tokens.txt").write_text("cli-token-42\n")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ieqa", "serve", "--scorer", "classic", "--port", str(port),
         "--tokens-file", "tokens.txt", "--reward", "0.5*visual_quality + 0.5*content_preservation",
         "--reward-floor", "0", "--max-batch", "4", "--log-level", "info"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "ieqa serve did not become ready"
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        items = [{"id": "a", "source": b64(png(1)), "edited": b64(png(2)), "instruction": "x"},
                 {"id": "same", "source": b64(png(1)), "edited": b64(png(1)), "instruction": "x"}]
        assert httpx.post(f"{url}/v1/score", json={"items": items}).status_code == 401
        answer = httpx.post(f"{url}/v1/score", json={"items": items},
                            headers={"Authorization": "Bearer cli-token-42"})
        assert answer.status_code == 200, answer.text
        local = LocalRewarder(ieqa.create_scorer("classic"),
                              rule=ieqa.rewards.RewardRule("0.5*visual_quality + 0.5*content_preservation",
                                                         floor=0.0))
        expected = local.score([{**it, "source": png(1), "edited": png(2 if it["id"] == "a" else 1)}
                                for it in items]).model_dump()
        assert answer.json() == expected
        assert expected["results"][1]["floored"] and "no_op" in expected["results"][1]["flags"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    # uvicorn shuts down gracefully (lifespan: the batcher drains), then re-raises SIGTERM
    assert proc.returncode in (0, -signal.SIGTERM), out
    assert "Application shutdown complete" in out and "Traceback" not in out, out


def test_cli_refuses_a_public_host_without_tokens():
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "--tokens-file" in text and "--insecure" in text


def test_cli_reward_rule_errors_name_the_option(tmp_path):
    result = CliRunner().invoke(app, ["serve", "--reward", "0.5*nonsense"])
    assert result.exit_code == 2 and "--reward" in result.output
    (tmp_path / "empty.txt").write_text("# no token yet\n")
    result = CliRunner().invoke(app, ["serve", "--tokens-file", str(tmp_path / "empty.txt")])
    assert result.exit_code != 0 and "holds no token" in str(result.exception or result.output)


def test_cli_refuses_a_reward_rule_the_scorer_cannot_feed_before_serving():
    """ssim reports content_preservation only: reasonedit's rule (VQ, IA, CP) and
    viescore's (SC, PQ) would fail every request, so the server does not start."""
    for rule, missing in (("reasonedit", "visual_quality, instruction_alignment"),
                          ("viescore", "instruction_alignment, visual_quality"),
                          ("overall", "overall")):
        result = CliRunner().invoke(app, ["serve", "--scorer", "ssim", "--reward", rule])
        text = " ".join(re.sub("[\u2500-\u257f]", " ", result.output).split())  # no box
        assert result.exit_code == 2, text
        assert f"needs {missing}, which ssim does not report" in text, text
        assert "reports content_preservation" in text and "serving" not in text


def test_a_rule_names_what_it_needs():
    from ieqa.rewards.rule import RewardRule

    dims = ("visual_quality", "content_preservation")
    assert RewardRule("mean").missing(dims) == [] and RewardRule("min").missing(dims) == []
    assert RewardRule("0.5*VQ + 0.5*SC").missing(dims) == ["instruction_alignment"]
    assert RewardRule("editscore").missing(dims) == ["overall"]
    assert RewardRule("reasonedit").missing((*dims, "instruction_alignment")) == []

