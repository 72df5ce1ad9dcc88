"""``ieqa stand-in-judge`` (``ieqa.testing.judge``): the offline judge the how-tos start.
Its answers have the shape each judge prompt asks for and derive from the request's bytes;
the server answers chat completions, health and models, refuses what is not a chat request
with a reason; the command stops cleanly on SIGTERM and says when its port is taken."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ieqa.testing.judge import FDMPO_PROPOSALS, stand_in_answer, stand_in_judge

SRC = Path(__file__).resolve().parents[1] / "src"


def _request(text: str, **extra) -> dict:
    return {"model": "judge", "messages": [{"role": "user", "content": [
        {"type": "text", "text": text},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}], **extra}


def test_a_scores_prompt_gets_one_to_five_per_dimension_derived_from_the_request():
    a = stand_in_answer(_request("Rate visual_quality ... as JSON"))
    scores = json.loads(a["choices"][0]["message"]["content"])
    assert set(scores) == {"visual_quality", "instruction_alignment", "content_preservation",
                           "overall", "reasoning"}
    assert all(scores[k] in range(1, 6) for k in scores if k != "reasoning")
    assert stand_in_answer(_request("Rate visual_quality ... as JSON")) == a  # same request
    others = {stand_in_answer(_request(f"Rate edit {i}"))["choices"][0]["message"]["content"]
              for i in range(8)}
    assert len(others) > 1  # different requests, different scores


def test_n_choices_logprobs_and_the_other_prompt_shapes():
    a = stand_in_answer(_request("Rate it", n=3, logprobs=True, top_logprobs=5))
    assert [c["index"] for c in a["choices"]] == [0, 1, 2]
    top = a["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert [t["token"].strip() for t in top] == ["excellent", "good", "fair", "poor", "bad"]
    assert math.isclose(sum(math.exp(t["logprob"]) for t in top), 1.0)
    vie = stand_in_answer(_request('answer {"score": [...], "reasoning": ...}'))
    score = json.loads(vie["choices"][0]["message"]["content"])["score"]
    assert len(score) == 2 and all(0 <= s <= 10 for s in score)
    pairwise = stand_in_answer(_request("verdict [[A>B]] or [[B>A]]"))
    assert re.search(r"\[\[[AB]>[AB]\]\]$", pairwise["choices"][0]["message"]["content"])
    fdmpo = stand_in_answer(_request("The 2 definitions tried so far ... <definition>"))
    assert fdmpo["choices"][0]["message"]["content"] == f"<definition>{FDMPO_PROPOSALS[1]}</definition>"


def test_the_server_answers_chat_health_and_models_and_refuses_the_rest():
    with stand_in_judge() as judge:
        assert judge.url.startswith("http://127.0.0.1:") and judge.url.endswith("/v1")
        base = judge.url.removesuffix("/v1")
        answer = httpx.post(f"{judge.url}/chat/completions", json=_request("Rate it"))
        assert answer.status_code == 200
        assert answer.json() == stand_in_answer(_request("Rate it"))
        assert httpx.get(f"{base}/health").json() == {"status": "ok"}
        assert httpx.get(f"{judge.url}/models").json()["data"][0]["id"] == "stand-in-judge"
        bad = httpx.post(f"{judge.url}/chat/completions", content=b"not json")
        assert bad.status_code == 400 and "not a chat-completions request" in bad.text
        assert httpx.post(f"{judge.url}/chat/completions", json={"model": "m"}).status_code == 400
        assert httpx.get(f"{base}/elsewhere").status_code == 404
        assert httpx.post(f"{judge.url}/chat/completions", json=_request("x", n=0)).status_code == 400
        import http.client

        host, port = judge.server_address[:2]
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Length", "abc")  # a client's bug: answered, not a traceback
        conn.endheaders(b"{}")
        assert conn.getresponse().status == 400
        conn.close()
        assert judge.requests == 1  # the refused ones are not counted
        one = httpx.post(f"{judge.url}/chat/completions", json=_request("x", n=None)).json()
        assert len(one["choices"]) == 1  # null n is one choice, as OpenAI's API reads it


def _start(port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "ieqa", "stand-in-judge", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_serves_until_sigterm_and_says_when_its_port_is_taken():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        taken = _start(held.getsockname()[1])
        out, err = taken.communicate(timeout=60)
        assert taken.returncode == 1, (out, err)
        assert "cannot listen on 127.0.0.1" in out + err and "--port" in out + err
    proc = _start(0)
    try:
        line = proc.stdout.readline()  # printed once it listens
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        assert httpx.post(f"{url}/chat/completions", json=_request("Rate it"), timeout=30
                          ).status_code == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out, err)
    assert "stopped after 1 request(s)" in out and "Traceback" not in err
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the port is free again
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]))) != 0:
                break
        time.sleep(0.1)
    else:
        pytest.fail("the port still answers after SIGTERM")
