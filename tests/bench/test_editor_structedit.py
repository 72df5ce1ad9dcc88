"""StructEditBench through ``bench-editor`` with StructScore against a scripted judge on
127.0.0.1.

The released ``qwen_scoring.py`` (zhuole1025/Structured-Visuals at c8cc9f4; nothing of it is
copied) asks, per question, one user message of the edited image (cropped to the nearest
aspect-ratio bucket: scaled by the larger covering scale with Lanczos, centre crop) then
``QA_PROMPT + question``, at most 256 tokens; then a text-only message of ``EVAL_PROMPT``
filled with the question, the ground truth and the answer, at most 16 tokens; temperature 0,
top-p 1 and its stop strings; "Correct" anywhere in the judgement is right. The stand-in
prompt file carries a small bucket table of its own, so the crop is checked on buckets of
this test.

``RECORDED`` is the report the released script wrote (``{dataset}_{model}_qwen_analysis.json``)
for exactly these items, answers and judgements, run outside CI from its ``__main__`` with
``scripts/harness/structscore_official_vs_released.py`` on 2026-11-30; ieqa's own numbers are
worked out by hand in the comments.
"""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from chat_server import FakeServer, Reply, module_strings, serve
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, write_editor_outputs
from ieqa.testing.editor_bench import (
    STRUCTEDIT_PLAN,
    build_structedit_fixture,
    structedit_fixture_items,
    write_structedit_outputs,
)

TABLE = {"0.5": [32.0, 64.0], "1.0": [48.0, 48.0], "2.0": [64.0, 32.0]}
#: the released report on these items
RECORDED = {"global_weighted_accuracy": 48.75, "global_editing_accuracy": 50.0,
            "global_maintain_accuracy": 25.0,
            "group_accuracies": {
                "chart": {"accuracy": 55.0, "editing_accuracy": 50.0, "maintain_accuracy": 100.0,
                          "num_samples": 1},
                "color": {"accuracy": 50.0, "editing_accuracy": 50.0, "maintain_accuracy": 0.0,
                          "num_samples": 1},
                "math": {"accuracy": 90.0, "editing_accuracy": 100.0, "maintain_accuracy": 0.0,
                         "num_samples": 1},
                "table": {"accuracy": 0.0, "editing_accuracy": 0.0, "maintain_accuracy": 0.0,
                          "num_samples": 1}},
            "total_samples": 4}


@pytest.fixture
def prompts(tmp_path):
    from ieqa.scorers.published.structscore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    folder = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    with open(folder / "qwen_scoring.py", "a") as f:
        f.write(f"\nASPECT_RATIO_1024 = {TABLE!r}\n")
    return folder


class Judge(FakeServer):
    """Answers a question request with the planned answer and a judging request with the
    planned judgement (the question found in the text)."""

    def next_reply(self, body):  # noqa: ANN001, ANN201
        content = body["messages"][0]["content"]
        text = content[-1]["text"] if isinstance(content, list) else content
        question = next(q for q in STRUCTEDIT_PLAN if q in text)
        judging = not any(p.get("type") == "image_url" for p in content)
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant",
                               "content": STRUCTEDIT_PLAN[question][1 if judging else 0]}}]})


def _crop(image: Image.Image) -> Image.Image:
    """The released crop written out: the nearest bucket, the covering scale, centre."""
    ratio = image.width / image.height
    w, h = (int(v) for v in TABLE[min(TABLE, key=lambda r: abs(float(r) - ratio))])
    scale = max(w / image.width, h / image.height)
    image = image.resize((round(image.width * scale), round(image.height * scale)),
                         Image.Resampling.LANCZOS)
    left, top = (image.width - w) // 2, (image.height - h) // 2
    return image.crop((left, top, left + w, top + h))


def test_structscore_requests_and_the_released_report(tmp_path, prompts) -> None:
    items = structedit_fixture_items()
    data = build_structedit_fixture(tmp_path / "structedit", items)
    outputs = write_structedit_outputs(tmp_path / "editor", items)
    texts = module_strings(prompts / "qwen_scoring.py")  # none at module level: read below
    assert "ASPECT_RATIO_1024" not in texts
    with serve(Judge()) as judge:
        scorer = create_scorer("structscore", base_url=judge.url, model="qwen72b",
                               prompts=str(prompts), backend_options={"max_retries": 0})
        result = bench_editor("structeditbench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=data, languages=["en"], progress=False, n_boot=100)
        requests = [s.body for s in judge.requests]
    # 11 questions (the one without its text is not asked) in two rounds
    assert len(requests) == 22
    asked = [b for b in requests if any(p.get("type") == "image_url"
                                        for p in b["messages"][0]["content"])]
    first = next(b for b in asked if "q0 title?" in b["messages"][0]["content"][1]["text"])
    image_part, text_part = first["messages"][0]["content"]
    sent = Image.open(io.BytesIO(base64.b64decode(image_part["image_url"]["url"].split(",")[1])))
    want = _crop(Image.open(outputs / "0.png").convert("RGB"))
    assert sent.size == (64, 32) and sent.tobytes() == want.tobytes() and sent.mode == want.mode
    assert text_part["text"].endswith("q0 title?") and first["max_tokens"] == 256
    assert (first["temperature"], first["top_p"]) == (0.0, 1.0)
    assert first["stop"] == ["\ufffd\ufffd", "\n\ufffd\ufffd", "\U0001f4d0\n"]
    judging = next(b for b in requests if b not in asked and "q4 color?" in str(b))
    assert judging["max_tokens"] == 16 and "red" in str(judging["messages"])
    res = result.results
    official = res["official"]
    assert official["accuracy"] == pytest.approx(RECORDED["global_weighted_accuracy"])
    assert official["editing"] == pytest.approx(RECORDED["global_editing_accuracy"])
    assert official["maintain"] == pytest.approx(RECORDED["global_maintain_accuracy"])
    for category, want_c in RECORDED["group_accuracies"].items():
        got = official["per_category"][category]
        assert (got["accuracy"], got["editing"], got["maintain"], got["n"]) == pytest.approx(
            (want_c["accuracy"], want_c["editing_accuracy"], want_c["maintain_accuracy"],
             want_c["num_samples"])), category
    # ieqa: the color item's "correct" and "The answer is Correct" are no plain verdicts:
    # a failure; the others: 55, 90, 0 -> 48.33; maintain over the items that have it:
    # chart 100, math 0 -> 50
    mine = res["ieqa"]
    assert mine["accuracy"] == pytest.approx(145 / 3)
    assert mine["maintain"] == pytest.approx(50.0)
    rows = {r["key"]: r for r in result.items}
    assert rows["1"]["error"] and "not Correct or Incorrect" in rows["1"]["error"]
    assert rows["1"]["released"] == [50.0, 0.0, 50.0]
    assert res["coverage"]["text"].startswith("3 of 4 items")
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert paths["report"].is_file()
    assert editor_table(res)[0]["Accuracy"] == pytest.approx(48.75)


def test_released_tally_of_an_item() -> None:
    from ieqa.scorers.published.structscore import released_item_accuracy

    # a question missing before the last judged one counts as a wrong editing question;
    # a null label counts in neither share; none judged: no accuracy
    assert released_item_accuracy({0: True, 2: True}, ["editing", "editing", "editing"]) == \
        pytest.approx((200 / 3, 0.0, 200 / 3))
    assert released_item_accuracy({0: True, 1: False}, ["editing", None]) == (100.0, 0.0, 100.0)
    assert released_item_accuracy({0: False, 1: True}, ["editing", "maintain"]) == \
        pytest.approx((0.0, 100.0, 10.0))
    assert released_item_accuracy({}, ["editing"]) is None


def test_generate_reads_the_source_and_instruction(tmp_path) -> None:
    from ieqa.curate.generate import read_generation_items

    folder = build_structedit_fixture(tmp_path / "s", structedit_fixture_items())
    kind, found = read_generation_items(folder, work_dir=tmp_path / "work")
    assert kind == "structeditbench" and len(found) == 4
    assert all(i.skip is None for i in found)


class FailingJudge(Judge):
    """The scripted judge, with the question request of "q1 bars?" failing."""

    def next_reply(self, body):  # noqa: ANN001, ANN201
        content = body["messages"][0]["content"]
        if any(p.get("type") == "image_url" for p in content) and "q1 bars?" in str(content):
            return Reply(status=500, body={"error": {"message": "overloaded"}})
        return super().next_reply(body)


def test_an_item_with_a_failed_request_is_left_out_of_the_official_numbers(tmp_path,
                                                                           prompts) -> None:
    """The released code never loses a request; an item that did here gets no released
    tally (not one with the failed question skipped) and is counted."""
    items = structedit_fixture_items()
    data = build_structedit_fixture(tmp_path / "structedit", items)
    outputs = write_structedit_outputs(tmp_path / "editor", items)
    with serve(FailingJudge()) as judge:
        scorer = create_scorer("structscore", base_url=judge.url, model="qwen72b",
                               prompts=str(prompts), backend_options={"max_retries": 0})
        result = bench_editor("structeditbench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=data, languages=["en"], progress=False, n_boot=20)
    rows = {r["key"]: r for r in result.items}
    assert rows["0"]["released"] is None and rows["0"]["failed_requests"] == 1
    official = result.results["official"]
    assert official["accuracy"] == pytest.approx((50 + 90 + 0) / 3)  # items 1, 2, 3
    assert "1 items with a failed request, left out" in result.results["coverage"]["text"]


def test_a_stand_in_judge_with_only_an_overall_score(tmp_path) -> None:
    """A judge other than StructScore: its overall takes the weighted accuracy's place
    (and the editing share's, when it gives none)."""
    from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo

    class Overall(Scorer):
        info = ScorerInfo("overall-only", "a stand-in", "vlm", ("overall",),
                          higher_better=True, needs_source=False, factory="tests:none",
                          score_range=(0, 100))

        def score_sample(self, sample):  # noqa: ANN001, ANN201
            return ScoreResult(sample.id, scores={"overall": 10.0 * (1 + int(sample.id))})

    items = structedit_fixture_items()
    data = build_structedit_fixture(tmp_path / "structedit", items)
    outputs = write_structedit_outputs(tmp_path / "editor", items)
    result = bench_editor("structeditbench", {"mine": outputs}, Overall(), tmp_path / "out",
                          data=data, languages=["en"], progress=False, n_boot=20)
    res = result.results
    assert res["official"]["accuracy"] == pytest.approx(25.0)  # 10, 20, 30, 40
    assert res["ieqa"]["accuracy"] == pytest.approx(25.0)
    assert res["judge"]["official"] is False
