"""``scorer.explain`` and ``ieqa explain`` against the local chat-completions server and
on a tiny transformers model."""

from __future__ import annotations

import json
from typing import Any

import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

import ieqa
from chat_server import FakeServer, Reply
from ieqa.cli import app
from ieqa.data.schema import EditSample
from ieqa.explain import format_stability
from ieqa.explain.run import read_critiques

runner = CliRunner()
GOOD_RE = ("1. Visual quality: clean.\n2. Instruction alignment: done.\n3. Content "
           "preservation: kept.\n[Final Assessment]\nVisual Quality: 4\nInstruction Alignment: "
           "5\nContent Preservation: 3")
GOOD_EP = ("The prompt completion is fully followed. The square is red. The harmony: it fits, "
           "harmony level is good. The local naturalness: crisp edges. Therefore, the overall "
           "editing quality level of the image is good.")


class CritiqueServer(FakeServer):
    """Answers each request with the next scripted text (cycling)."""

    texts: list[str] = [GOOD_RE]

    def echo(self, body: dict) -> Reply:
        with self.lock:
            self.answered = getattr(self, "answered", 0) + 1
            text = self.texts[(self.answered - 1) % len(self.texts)]
        return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}]})


@pytest.fixture
def critique_server(server):
    server.__class__ = CritiqueServer
    return server


def _png(path, color) -> Any:
    Image.new("RGB", (40, 32), color).save(path)
    return path


@pytest.fixture
def manifest(tmp_path):
    src = _png(tmp_path / "src.png", (128, 128, 128))
    rows = [{"id": f"e{i}", "source": str(src),
             "edited": str(_png(tmp_path / f"e{i}.png", (40 * i, 20, 20))),
             "instruction": "make the square red"} for i in range(4)]
    path = tmp_path / "edits.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _judge(url: str) -> Any:
    return ieqa.create_scorer("vlm-judge", base_url=url, model="judge", batch_size=1,
                              backend_options={"backoff_s": 0.01, "timeout_s": 5.0})


def test_python_explain_over_http(critique_server, tmp_path):
    critique_server.texts = [GOOD_EP, "The edit is fine, I think."]
    src = _png(tmp_path / "s.png", (1, 2, 3))
    samples = [EditSample(id=f"x{i}", source=src, edited=_png(tmp_path / f"x{i}.png", (9, 9, i)),
                          instruction="make it red") for i in range(2)]
    crits = _judge(critique_server.url).explain(samples, "epaiqa")
    assert [c.id for c in crits] == ["x0", "x1"]
    assert crits[0].ok and crits[0].levels["overall"] == "good"
    assert crits[1].status == "failed" and crits[1].text == "The edit is fine, I think."
    assert format_stability(crits) == 0.5
    # the EPAIQA stage-3 question was asked, with both images
    asked = json.dumps(critique_server.requests[0].body)
    assert "First, determine whether the prompt is followed" in asked
    assert asked.count("\"type\": \"image_url\"") == 2


def test_cli_explain_manifest_to_file_with_parse_status_and_resume(critique_server, manifest,
                                                                   tmp_path):
    critique_server.texts = [GOOD_RE, GOOD_RE[:60]]  # every second answer is truncated
    out = tmp_path / "crit.parquet"
    args = ["explain", str(manifest), "-O", f"base_url={critique_server.url}", "--model",
            "judge", "-O", "backend_options={\"backoff_s\": 0.01}", "-o", str(out),
            "--batch-size", "1"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "format stability (reasonedit): 50.0%" in res.output
    table = pq.read_table(out)
    rows = table.to_pylist()
    assert [r["parse_status"] for r in rows] == ["ok", "failed", "ok", "failed"]
    assert rows[0]["format"] == "reasonedit" and rows[0]["parse_error"] is None
    assert rows[0]["instruction_alignment"] == 5.0 and rows[0]["explanation"] == GOOD_RE
    assert rows[1]["visual_quality"] is None and "Final Assessment" in rows[1]["parse_error"]
    assert rows[1]["error"] is None and rows[1]["explanation"] == GOOD_RE[:60]
    assert b"ieqa.run" in table.schema.metadata
    assert format_stability(read_critiques(out)) == 0.5
    log = (tmp_path / "crit.parquet.judge_log.jsonl").read_text().splitlines()
    assert len(log) == len(critique_server.requests) == 4  # every request, in the judge log
    assert [json.loads(x)["response"]["choices"][0]["message"]["content"][:20] for x in log] \
        == [r["explanation"][:20] for r in rows]
    # a re-run keeps every row: nothing is asked again
    n = len(critique_server.requests)
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert len(critique_server.requests) == n
    assert pq.read_table(out).column("parse_status").to_pylist() == ["ok", "failed", "ok",
                                                                     "failed"]
    res = runner.invoke(app, args + ["--require-parse"])
    assert res.exit_code == 3, res.output


def test_cli_explain_server_errors_are_row_errors_exit_3(critique_server, manifest, tmp_path):
    critique_server.plan = [Reply(status=400, body={"error": {"message": "bad"}})]
    out = tmp_path / "crit.jsonl"
    res = runner.invoke(app, ["explain", str(manifest), "-O", f"base_url={critique_server.url}",
                              "--model", "judge", "-o", str(out), "--batch-size", "1",
                              "--format", "reasonedit"])
    assert res.exit_code == 3, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["parse_status"] == "error" and rows[0]["error"]
    assert [r["parse_status"] for r in rows[1:]] == ["ok"] * 3


def test_cli_explain_one_triplet_and_usage_errors(critique_server, tmp_path):
    critique_server.texts = [GOOD_EP]
    src, edited = _png(tmp_path / "s.png", (1, 1, 1)), _png(tmp_path / "e.png", (200, 1, 1))
    base = ["explain", str(src), str(edited), "make it red", "-O",
            f"base_url={critique_server.url}", "--model", "judge", "--format", "epaiqa"]
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "parse status: ok" in res.output and "fully followed" in res.output
    res = runner.invoke(app, base + ["--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["scores"] == {"prompt_completion": 3.0, "overall": 4.0,
                                                "harmony": 4.0}
    res = runner.invoke(app, base[:-1] + ["json"])
    assert res.exit_code == 2 and "choose one of reasonedit, epaiqa" in res.output
    res = runner.invoke(app, ["explain", str(src), str(edited), "x", "--scorer", "ssim"])
    assert res.exit_code == 2 and "cannot write critiques" in res.output


def test_cli_explain_on_a_tiny_model(manifest, tmp_path, tiny_models):
    out = tmp_path / "crit.parquet"
    res = runner.invoke(app, ["explain", str(manifest), "--model", str(tiny_models["qwen2-vl"]),
                              "-O", "device=cpu", "--format", "epaiqa", "--max-new-tokens", "12",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 4
    # a random tiny model writes gibberish: recorded as failed, with its text, never scored
    for r in rows:
        assert r["parse_status"] in ("ok", "failed") and r["error"] is None
        assert isinstance(r["explanation"], str)
        if r["parse_status"] == "failed":
            assert r["parse_error"] and r["overall"] is None
    assert "format stability (epaiqa)" in res.output
