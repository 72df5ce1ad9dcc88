"""vlm-judge, vlm-levels and vlm-pairwise over a real local chat-completions server, the
overall rules and the ensemble, and the CLI end to end on a tiny model folder."""

from __future__ import annotations

import base64
import io
import json
import math
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

import ieqa
import ieqa.data.manifest
from chat_server import FakeServer, Reply
from ieqa.cli import app
from ieqa.data.schema import EditSample
from ieqa.errors import IeqaError
from ieqa.scorers.base import ScorerError
from ieqa.scorers.ensemble import EnsembleScorer, normalise_score
from ieqa.scorers.overall import overall_score
from ieqa.scorers.vlm.pairwise import PairVerdict, position_bias_report

RED, BLUE, GREY = (220, 20, 20), (20, 20, 220), (128, 128, 128)


def _png(tmp_path, name: str, color) -> Any:
    path = tmp_path / f"{name}.png"
    Image.new("RGB", (48, 40), color).save(path)
    return path


@pytest.fixture
def samples(tmp_path) -> list[EditSample]:
    src = _png(tmp_path, "src", GREY)
    return [EditSample(id=f"e{i}", source=src, edited=_png(tmp_path, f"e{i}", c),
                       instruction="make the square red", group_id="g")
            for i, c in enumerate((RED, BLUE, RED))]


def _texts(body: dict) -> str:
    return " ".join(p["text"] for m in body["messages"] if isinstance(m["content"], list)
                    for p in m["content"] if p["type"] == "text")


def _colours(body: dict) -> list[tuple[int, int, int]]:
    out = []
    for m in body["messages"]:
        for p in m["content"] if isinstance(m["content"], list) else []:
            if p["type"] == "image_url":
                data = base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
                out.append(Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0)))
    return out


def _reply(contents: list[str], top: list[dict[str, float]] | None = None) -> Reply:
    choices = []
    for i, text in enumerate(contents):
        choice: dict[str, Any] = {"index": i, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}
        if top is not None:
            choice["logprobs"] = {"content": [{"token": next(iter(top[0])), "logprob": -0.1,
                                               "top_logprobs": [{"token": t, "logprob": v}
                                                                for t, v in top[0].items()]}]}
        choices.append(choice)
    return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                       "choices": choices})


class JudgeServer(FakeServer):
    """Answers from a function of the request body."""

    answer = staticmethod(lambda body: ["{}"])
    top: list[dict[str, float]] | None = None

    def echo(self, body: dict) -> Reply:
        return _reply(self.answer(body), self.top)


@pytest.fixture
def judge_server(server):
    server.__class__ = JudgeServer
    return server


def judge(url: str, **kw) -> Any:
    kw.setdefault("backend_options", {"backoff_s": 0.01, "timeout_s": 5.0})
    return ieqa.create_scorer(kw.pop("name", "vlm-judge"), base_url=url, model="judge", **kw)


def test_json_judge_scores_are_parsed(judge_server, samples):
    judge_server.answer = lambda body: [json.dumps(
        {"visual_quality": 4, "instruction_alignment": 5 if (220, 20, 20) in _colours(body) else 1,
         "content_preservation": 3, "reasoning": "looks fine"})]
    results = judge(judge_server.url).score(samples)
    assert [r.scores["instruction_alignment"] for r in results] == [5.0, 1.0, 5.0]
    assert results[0].scores["visual_quality"] == 4.0 and results[0].explanation == "looks fine"
    body = judge_server.requests[0].body
    assert len(_colours(body)) == 2 and "make the square red" in _texts(body)


def test_self_ensemble_averages_parsed_passes_and_records_failures(judge_server, samples):
    def answer(body):
        return [json.dumps({"visual_quality": v, "instruction_alignment": 3,
                            "content_preservation": 2}) for v in (3, 5)] + ["no idea, sorry"]

    judge_server.answer = answer
    scorer = judge(judge_server.url, num_samples=3)
    assert scorer.temperature == 0.7
    result = scorer.score(samples[:1])[0]
    assert result.ok and result.scores["visual_quality"] == pytest.approx(4.0)
    assert result.raw["parse_failures"] == 1 and len(result.raw["passes"]) == 3
    assert judge_server.requests[0].body["n"] == 3
    assert judge_server.requests[0].body["temperature"] == pytest.approx(0.7)
    with pytest.raises(ScorerError, match="temperature > 0"):
        judge(judge_server.url, num_samples=2, temperature=0.0)


def test_unparsable_answers_are_recorded_failures(judge_server, samples):
    judge_server.answer = lambda body: ['{"visual_quality": 9}']  # out of the 1-5 scale
    result = judge(judge_server.url).score(samples[:1])[0]
    assert not result.ok and result.scores == {} and "no parsable answer" in result.error
    assert "error" in result.raw["passes"][0]


def test_server_failure_is_recorded_per_sample(judge_server, samples):
    judge_server.answer = lambda body: [json.dumps(
        {"visual_quality": 4, "instruction_alignment": 4, "content_preservation": 4})]
    judge_server.plan = [Reply(status=500, body={"error": {"message": "boom"}})] * 4
    results = judge(judge_server.url, batch_size=1).score(samples[:2])
    assert not results[0].ok and "500" in results[0].error  # 1 try + 3 retries, all 500
    assert results[1].ok and results[1].scores["visual_quality"] == 4.0


def test_viescore_combines_sc_and_pq(judge_server, samples):
    def answer(body):
        text = _texts(body) + " ".join(m["content"] if isinstance(m["content"], str) else ""
                                       for m in body["messages"])
        n_images = len(_colours(body))
        scores = [8, 6] if n_images == 2 else [9, 7]  # SC sees two images, PQ one
        return [json.dumps({"score": scores, "reasoning": text[:10]})]

    judge_server.answer = answer
    result = judge(judge_server.url, template="viescore").score(samples[:1])[0]
    assert result.scores["instruction_alignment"] == 6.0
    assert result.scores["visual_quality"] == 7.0
    assert result.scores["overall"] == pytest.approx(math.sqrt(42.0))


def test_levels_from_server_logprobs(judge_server, samples):
    judge_server.answer = lambda body: ["good"]
    judge_server.top = [{" good": math.log(0.5), " excellent": math.log(0.3), "Good": math.log(0.1),
                         " fair": math.log(0.05), " okay": math.log(0.05)}]
    scorer = judge(judge_server.url, name="vlm-levels", dimensions=["visual_quality"])
    result = scorer.score(samples[:1])[0]
    # good = 0.5 + 0.1, excellent 0.3, fair 0.05; poor and bad missing -> 0
    p = np.array([0.3, 0.6, 0.05, 0.0, 0.0])
    p /= p.sum()
    assert result.scores["visual_quality"] == pytest.approx(float(np.dot(p, [5, 4, 3, 2, 1])))
    assert result.raw["visual_quality"]["missing_from_top_logprobs"] == ["poor", "bad"]
    assert judge_server.requests[0].body["top_logprobs"] == 20
    judge_server.top = [{"maybe": -0.1}]
    assert "no level word" in scorer.score(samples[:1])[0].error


def test_forward_readouts_refuse_a_server(judge_server):
    with pytest.raises(ScorerError, match="needs a local transformers model"):
        judge(judge_server.url, name="vlm-digits")


def _verdict_for(body, prefer=RED, biased=False):
    colours = _colours(body)[1:]  # [source, A, B]
    if biased:
        return ["[[A>B]]"]
    return ["[[A>B]]" if colours[0] == prefer else "[[B>A]]"]


def test_pairwise_orders_and_position_bias(judge_server, samples):
    red, blue = samples[0], samples[1]
    judge_server.answer = lambda body: _verdict_for(body)
    fair = judge(judge_server.url, name="vlm-pairwise", order="both")
    v = fair.compare([(red, blue), (blue, red)])
    assert [x.verdict for x in v] == ["A>B", "B>A"] and all(x.consistent for x in v)

    judge_server.answer = lambda body: _verdict_for(body, biased=True)
    biased = judge(judge_server.url, name="vlm-pairwise", order="both")
    v = biased.compare([(red, blue)])[0]
    assert v.verdict == "A=B" and v.consistent is False
    fixed = judge(judge_server.url, name="vlm-pairwise", order="fixed")
    verdicts = fixed.compare([(red, blue), (blue, red)])
    report = position_bias_report(verdicts, ["A>B", "B>A"])
    # always "first": right when the better (red) edit is shown first, wrong otherwise
    assert report.accuracy_left == 1.0 and report.accuracy_right == 0.0
    assert report.picked_first_rate == 1.0 and report.gap == 1.0

    rand = judge(judge_server.url, name="vlm-pairwise", order="random", seed=1)
    judge_server.answer = lambda body: _verdict_for(body)
    out = rand.compare([(red, blue)] * 6)
    assert {x.verdict for x in out} == {"A>B"}  # un-swapped to the caller's view
    assert {r["a_first"] for x in out for r in x.shown} == {True, False}
    with pytest.raises(ScorerError, match="compare"):
        rand.score(samples)


def test_pairwise_unparsable_verdict_is_recorded(judge_server, samples):
    judge_server.answer = lambda body: ["I cannot decide."]
    v = judge(judge_server.url, name="vlm-pairwise").compare([(samples[0], samples[1])])[0]
    assert v.verdict is None and v.error
    assert v.shown[0]["verdict"] is None and not v.shown[0].get("failed")


def test_pairwise_failed_request_is_marked_failed_not_unparsed(judge_server, samples):
    judge_server.plan = [Reply(status=400, body={"error": {"message": "bad request"}})]
    v = judge(judge_server.url, name="vlm-pairwise", order="fixed").compare(
        [(samples[0], samples[1])])[0]
    assert v.verdict is None and v.shown[0]["failed"] is True
    report = position_bias_report([v], ["A>B"])
    assert report.n_failed == 1 and report.n_left == 0 and report.n_unparsed == 0


def test_position_bias_report_by_hand():
    def pv(a_first, shown):
        return PairVerdict(a="a", b="b", verdict=None,
                           shown=[{"a_first": a_first, "verdict": shown, "text": ""}])

    verdicts = [pv(True, "A>B"), pv(True, "B>A"), pv(False, "A>B"), pv(False, "A>B"),
                pv(True, "A=B=Good")]
    labels = ["A>B", "A>B", "A>B", "B>A", "A>B"]
    r = position_bias_report(verdicts, labels)
    # better shown first: #0 right, #1 wrong, #3 (label B>A shown swapped, so b first... )
    # #0 a first, a better -> better first, correct; #1 better first, wrong;
    # #2 b first, a better -> better second, shown A>B means b>a: wrong;
    # #3 b first, b better -> better first, shown A>B correct; #4 better first, tie: wrong
    assert (r.n_left, r.n_right) == (4, 1)
    assert r.accuracy_left == pytest.approx(2 / 4) and r.accuracy_right == 0.0
    assert r.picked_first_rate == pytest.approx(3 / 4)



def test_position_bias_counts_unparsed_answers_wrong_and_reports_failures():
    def rec(a_first, shown, **extra):
        return {"a_first": a_first, "verdict": shown, "text": "", **extra}

    verdicts = [
        # a better, shown first and read right; then shown second and unreadable
        PairVerdict(a="a", b="b", verdict=None,
                    shown=[rec(True, "A>B"), rec(False, None, error="no verdict")]),
        # b better, a shown first (better second): right; then b first: unreadable
        PairVerdict(a="a", b="b", verdict=None,
                    shown=[rec(True, "B>A"), rec(False, None, error="no verdict")]),
        # a better, a shown first: the request failed (no answer): left out
        PairVerdict(a="a", b="b", verdict=None,
                    shown=[rec(True, None, error="HTTP 500", failed=True)]),
        # the images could not be loaded: nothing shown
        PairVerdict(a="a", b="b", verdict=None, error="FileNotFoundError: x.png"),
        # a human tie: skipped
        PairVerdict(a="a", b="b", verdict=None, shown=[rec(True, "A>B")]),
    ]
    r = position_bias_report(verdicts, ["A>B", "B>A", "A>B", "A>B", "A=B=Good"])
    # better first: pair 0 (right) + pair 1's unreadable second look -> 1 / 2
    # better second: pair 0's unreadable second look + pair 1 (right) -> 1 / 2
    assert (r.n_left, r.n_right) == (2, 2)
    assert r.accuracy_left == pytest.approx(0.5) and r.accuracy_right == pytest.approx(0.5)
    assert (r.n_unparsed_left, r.n_unparsed_right, r.n_unparsed) == (1, 1, 2)
    assert r.n_failed == 2 and r.n_skipped == 1
    # strict verdicts read: pair 0 "A>B" (first), pair 1 "B>A" (second) -> 1 / 2
    assert r.picked_first_rate == pytest.approx(0.5)
    text = r.describe()
    assert "1 unparsed counted wrong" in text and "2 presentation(s) failed" in text
    # the old rule (unparsed left out) would have said 1.0 on both sides
    assert r.accuracy_left != 1.0

def test_overall_rules_by_hand():
    s = {"SC": 4.0, "PQ": 9.0, "content_preservation": 1.0}
    assert overall_score(s, "viescore") == pytest.approx(6.0)
    assert overall_score({"visual_quality": 1, "instruction_alignment": 2,
                          "content_preservation": 3}, "reasonedit") == pytest.approx(0.3 + 0.8 + 0.9)
    two = {"visual_quality": 1.0, "content_preservation": 4.0}
    assert overall_score({**two, "overall": 100.0}, "mean") == pytest.approx(2.5)
    assert overall_score(two, "min") == 1.0
    assert overall_score(two, "sum") == 5.0
    with pytest.raises(IeqaError, match="needs visual_quality"):
        overall_score({"SC": 1.0}, "viescore")
    with pytest.raises(IeqaError, match="unknown overall rule"):
        overall_score(s, "median")


def test_ensemble_normalises_and_averages(tmp_path):
    rng = np.random.default_rng(0)
    src = (rng.random((64, 64, 3)) * 255).astype(np.uint8)
    edt = src.copy()
    edt[10:30, 10:30] = 255
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    Image.fromarray(src).save(a)
    Image.fromarray(edt).save(b)
    sample = EditSample(id="s", source=a, edited=b, instruction="x")
    ens = ieqa.create_scorer("ensemble", members=["ssim", "gmsd"], ranges={"gmsd": (0.0, 0.5)})
    result = ens.score([sample])[0]
    ssim = ieqa.create_scorer("ssim").score([sample])[0].scores["content_preservation"]
    gmsd = ieqa.create_scorer("gmsd").score([sample])[0].scores["content_preservation"]
    expected = (normalise_score(ssim, -1, 1) + (1 - gmsd / 0.5)) / 2
    assert result.scores["content_preservation"] == pytest.approx(expected)
    assert normalise_score(2.0, 1.0, 5.0) == 0.25
    assert normalise_score(2.0, 1.0, 5.0, higher_better=False) == 0.75
    with pytest.raises(ScorerError, match="open score range"):
        EnsembleScorer(["ssim", "psnr"])
    with pytest.raises(ScorerError, match="at least two"):
        EnsembleScorer(["ssim"])


runner = CliRunner()


def test_cli_score_and_bench_with_a_tiny_model(tmp_path):
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    model = tmp_path / "tiny"
    res = runner.invoke(app, ["tiny-vlm", str(model), "--family", "qwen2.5-vl"])
    assert res.exit_code == 0, res.output
    assert (model / "config.json").is_file()
    res = runner.invoke(app, ["tiny-vlm", str(model)])
    assert res.exit_code == 2  # exists, no --overwrite

    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=6, k=3, seed=1, size=64),
                        progress=False)
    out = tmp_path / "scores.parquet"
    res = runner.invoke(app, ["score", str(manifest), "--scorer", "vlm-levels", "--model", str(model),
                              "-O", "device=cpu", "-o", str(out)])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out)
    assert table.num_rows == len(list(ieqa.data.manifest.iter_manifest(manifest)))
    values = table.column("visual_quality").to_pylist()
    assert all(1.0 <= v <= 5.0 for v in values) and len(set(values)) > 1
    meta = json.loads(table.schema.metadata[b"ieqa.run"])
    assert meta["config"]["backend"]["model"] == str(model)

    res = runner.invoke(app, ["bench", "-b", str(manifest.parent), "--scorer", "vlm-gaussian",
                              "--model", str(model), "-O", "hidden_features=8", "-o",
                              str(tmp_path / "bench")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "bench" / "results.json").is_file()

    sample = next(ieqa.data.manifest.iter_manifest(manifest))
    res = runner.invoke(app, ["score", str(sample.source), str(sample.edited), "make it red",
                              "--scorer", "vlm-digits", "--model", str(model), "--json"])
    assert res.exit_code == 0, res.output
    assert "instruction_alignment" in res.output
