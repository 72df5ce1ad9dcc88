"""ImgEdit-Bench through ``bench-editor`` against a scripted judge on 127.0.0.1.

The judge's requests are checked against the one ImgEdit's released
``Benchmark/Basic/basic_bench.py`` builds (read from its code; nothing of it is copied):
the edit type's text of ``prompts.json`` with the instruction in place of
``<edit_prompt>``, then the source file's bytes and the output file's bytes, each
base64-encoded unchanged under ``data:image/png`` (the sources are JPEGs), in ``{"model":
"gpt-4.1", "stream": false, "messages": [one user message]}`` and nothing else. The released
script sends it through the ``openai`` client, whose serialisation (key order, separators)
depends on the client's and httpx's versions, so the server compares the parsed body: every
field and every string, the images' bytes included. Anything else gets HTTP 500, so a
differing request fails the test.

The expected numbers are worked out here from the released scripts' rules: item score =
``round(mean of the score lines, 2)`` (``step1_get_avgscore.py``), type score =
``round(mean of its items, 2)`` (``step2_typescore.py``), and the two "Overall"
conventions papers print.
"""

from __future__ import annotations

import base64
import json
import math

import pytest

from chat_server import FakeServer, Reply, ScriptedJudge, canonical, chat_answer, serve
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, write_editor_outputs
from ieqa.bench.errors import BenchError
from ieqa.data.loaders.imgedit_bench import EDIT_TYPES
from ieqa.prompts.answers import write_criteria_answer
from ieqa.testing.editor_bench import (
    build_imgedit_fixture,
    imgedit_fixture_items,
    write_imgedit_outputs,
)

from .by_hand import stratified_bootstrap_by_hand

_CONTENT_FILTER = {"error": {"code": "content_policy_violation", "message": "filtered",
                             "type": "invalid_request_error"}}


@pytest.fixture
def prompts(tmp_path):
    from ieqa.scorers.published.imgedit_judge import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    return write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)


def official_request(prompts, source, edited, instruction, edit_type, model="gpt-4.1"):
    """The body ImgEdit's released code sends for one item (as parsed JSON)."""
    texts = json.loads((prompts / "Benchmark/Basic/prompts.json").read_text())
    type_key = {"alter": "adjust"}.get(edit_type, edit_type)  # the data's old name

    def url(path):
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("utf-8")

    return {"model": model, "stream": False, "messages": [{"role": "user", "content": [
        {"type": "text", "text": texts[type_key].replace("<edit_prompt>", instruction)},
        {"type": "image_url", "image_url": {"url": url(source)}},
        {"type": "image_url", "image_url": {"url": url(edited)}}]}]}


def _criteria(a, b, c):
    return chat_answer(write_criteria_answer(
        [("Prompt Compliance", a), ("Visual Naturalness", b), ("Physical & Detail", c)],
        "scripted"))


def test_imgedit_protocol_requests_item_scores_and_both_overalls(tmp_path, prompts):
    items = imgedit_fixture_items(per_type=1, old_names=True)  # adjust spelled "alter"
    # extract gets two more items, so the item-weighted overall differs from the mean
    items += [{**items[2], "key": str(100 + j), "prompt": f"extract extra {j}",
               "id": f"cat2/extra{j}.jpg"} for j in range(2)]
    root = build_imgedit_fixture(tmp_path / "imgedit", items)
    outputs = write_imgedit_outputs(tmp_path / "editor", items)
    plan = {n: ([3, 4, 5][n % 3], [5, 4, 2][n % 3], 4) for n in range(len(items))}
    # extract's mean (3.67 + 4.33 + 4.67) / 3 = 4.2233 shows the type score's rounding
    plan[9], plan[10] = (4, 4, 5), (5, 5, 4)
    replies = {n: _criteria(*plan[n]) for n in plan}
    # item 1 (adjust, "alter" in the data): two score lines -> ieqa fails it, the released
    # reading keeps mean(4, 5) = 4.5
    replies[1] = chat_answer("Brief reasoning: fine.\nPrompt Compliance: 4\nVisual: 5")
    # item 3: no score line -> a failure, and dropped by the released reading too
    replies[3] = chat_answer("I cannot rate this edit.")
    # item 4: an API error -> a failure (the released scoring script stops on it)
    replies[4] = Reply(status=400, body=_CONTENT_FILTER)
    # item 5: a score out of the 1-5 scale -> ieqa fails it; the released reading keeps 7
    replies[5] = _criteria(7, 5, 3)
    with serve(ScriptedJudge(by="json")) as judge:
        for n, item in enumerate(items):
            body = official_request(prompts, root / item["id"], outputs / f"{item['key']}.png",
                                    item["prompt"], item["edit_type"])
            judge.script[canonical(body)] = [replies[n]]
        scorer = create_scorer("imgedit-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("imgedit-bench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=tmp_path / "imgedit", languages=["en"], progress=False,
                              n_boot=200)
        assert len(judge.requests) == len(items)  # one request per item, none refused
    rows = {r["key"]: r for r in result.items}
    assert rows["2"]["task_type"] == "adjust"  # "alter" is read as adjust
    released, ieqa_scores = {}, {}
    for n, item in enumerate(items):
        row = rows[item["key"]]
        if n in (1, 3, 4, 5):
            assert row["error"] is not None and row["score"] is None, row
        else:
            assert row["error"] is None, row
            assert row["score"] == pytest.approx(sum(plan[n]) / 3)
            ieqa_scores[n] = sum(plan[n]) / 3
        expected = {1: 4.5, 3: None, 4: None, 5: round(15 / 3, 2)}.get(
            n, round(sum(plan[n]) / 3, 2))
        assert row["released_score"] == expected
        if expected is not None:
            released[n] = expected
    types = [("adjust" if i["edit_type"] == "alter" else i["edit_type"]) for i in items]
    by_type = {t: [released[n] for n in released if types[n] == t] for t in EDIT_TYPES}
    type_scores = {t: round(sum(v) / len(v), 2) for t, v in by_type.items() if v}
    res = result.results
    official = res["official"]
    # the two types whose only item failed (remove: no score line; replace: API error)
    assert set(EDIT_TYPES) - set(type_scores) == {"replace", "remove"}
    assert all(math.isnan(official["per_type"][t]) for t in ("replace", "remove"))
    for t, v in type_scores.items():
        assert official["per_type"][t] == v
    assert math.isnan(official["overall_mean_of_types"])  # a type without score, as released
    assert official["scored"] == len(released)
    cov = res["coverage"]
    assert (cov["items"], cov["scored"], cov["failed"]) == (11, 7, 4)
    mine = res["ieqa"]
    ok_types = {t: [ieqa_scores[n] for n in ieqa_scores if types[n] == t] for t in EDIT_TYPES}
    assert mine["item_mean"] == pytest.approx(sum(ieqa_scores.values()) / len(ieqa_scores))
    assert mine["per_type"]["extract"] == pytest.approx(sum(ok_types["extract"]) / 3)
    judge_rec = res["judge"]
    assert judge_rec["official"] and judge_rec["served_models"] == ["gpt-4.1-2025-04-14"]
    assert judge_rec["system_fingerprints"] == ["fp_test"]
    assert judge_rec["usage"]["prompt_tokens"] == 100 * (len(items) - 1)  # the error has none
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert "11 items" in paths["report"].read_text() or "7 of 11 items" in paths["report"].read_text()
    assert official["per_type"]["extract"] == 4.22
    table = editor_table(res)[0]
    assert table["extract"] == official["per_type"]["extract"]
    assert table["coverage"] == ("7 of 11 items (4 failed to score); official numbers: 2 left "
                                 "out where the released scripts find no score line")
    assert cov["official_dropped"] == 2


def _type_scores(etype):
    i = EDIT_TYPES.index(etype)
    return (1 + i % 5, 1 + (i + 2) % 5, 5)


class _Fixed(FakeServer):
    """Answers every request with a valid rubric answer that depends on the edit type (read
    from the stand-in rubric's text)."""

    def next_reply(self, body):
        text = body["messages"][0]["content"][0]["text"]
        etype = text.split("Stand-in text for ")[1].split(":")[0]
        return _criteria(*_type_scores(etype))


def test_imgedit_from_the_archive_overalls_and_missing_outputs(tmp_path, prompts):
    items = imgedit_fixture_items(per_type=2)
    archive = build_imgedit_fixture(tmp_path / "hub", items, archive=True)
    outputs = write_imgedit_outputs(tmp_path / "editor", items, skip=(0, 5, 9))
    with serve(_Fixed()) as judge:
        scorer = create_scorer("imgedit-judge", base_url=judge.url, prompts=str(prompts))
        with pytest.raises(BenchError, match=r"(?s)layout is \{key\}\.png.*3 of 18 outputs missing"):
            bench_editor("imgedit-bench", {"mine": outputs}, scorer, tmp_path / "out",
                         data=archive, progress=False)
        result = bench_editor("imgedit-bench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=archive, missing="skip", progress=False, n_boot=100)
    res = result.results
    assert res["coverage"]["text"] == "15 of 18 items (3 without an output)"
    per_type = {t: round(sum(_type_scores(t)) / 3, 2) for t in EDIT_TYPES}
    assert res["official"]["per_type"] == per_type
    counts = {t: 2 - (t in ("add", "extract", "remove")) for t in EDIT_TYPES}  # 0, 5, 9 skipped
    assert res["official"]["overall_mean_of_types"] == round(sum(per_type.values()) / 9, 2)
    weighted = round(sum(per_type[t] * counts[t] for t in EDIT_TYPES) / 15, 2)
    assert res["official"]["overall_item_weighted"] == weighted
    assert weighted != res["official"]["overall_mean_of_types"]
    assert (tmp_path / "out" / "data" / ".extracted").is_file()  # the archive, unpacked once


def test_imgedit_judge_refuses_an_unknown_edit_type(tmp_path, prompts):
    from ieqa.data.schema import EditSample

    items = imgedit_fixture_items(per_type=1)
    root = build_imgedit_fixture(tmp_path / "imgedit", items)
    outputs = write_imgedit_outputs(tmp_path / "editor", items)
    with serve(_Fixed()) as judge:
        scorer = create_scorer("imgedit-judge", base_url=judge.url, prompts=str(prompts))
        good = EditSample(id="a", source=root / items[0]["id"], edited=outputs / "1.png",
                          instruction="add a hat", task="add")
        bad = good.model_copy(update={"id": "b", "task": "recolour"})
        ok, failed = scorer.score([good, bad])
    assert ok.error is None and ok.scores["overall"] == pytest.approx(sum(_type_scores("add")) / 3)
    assert "edit type" in failed.error and "adjust" in failed.error


# --------------------------------------------------------------------------- the aggregation by hand
#: per edit type: ieqa's scores of the valid items (each the mean of three 1-5 scores),
#: the released scores of the items ieqa failed (e.g. two score lines, or a 7), and the
#: items the released reading dropped (no score line)
_PLAN = {
    "add": ([11 / 3, 13 / 3, 5 / 3], [], 0),
    "adjust": ([4.0], [4.5], 0),
    "extract": ([14 / 3, 10 / 3], [], 1),
    "replace": ([2.0, 3.0, 5.0, 5.0], [], 0),
    "remove": ([7 / 3], [7.0], 2),
    "background": ([3.0, 4.0, 4.0], [], 0),
    "style": ([5.0], [], 0),
    "compose": ([8 / 3, 4.0], [1.5], 0),
    "action": ([10 / 3, 11 / 3, 13 / 3, 14 / 3, 1.0], [], 1),
}


def _imgedit_entries(plan):
    entries = []
    for t, (ok, failed_released, dropped) in plan.items():
        entries += [{"task_type": t, "error": None, "score": s, "released_score": round(s, 2),
                     "criteria": None} for s in ok]
        entries += [{"task_type": t, "error": "not three 1-5 scores", "score": None,
                     "released_score": r, "criteria": None} for r in failed_released]
        entries += [{"task_type": t, "error": "no score line", "score": None,
                     "released_score": None, "criteria": None}] * dropped
    return entries


def test_imgedit_official_and_ieqa_blocks_by_hand():
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("imgedit-bench")
    res = protocol.aggregate(_imgedit_entries(_PLAN), n_boot=300)
    official, mine = res["official"], res["ieqa"]
    released = {t: [round(s, 2) for s in ok] + failed for t, (ok, failed, _) in _PLAN.items()}
    type_scores = {t: round(sum(v) / len(v), 2) for t, v in released.items()}
    # add: (3.67 + 4.33 + 1.67) / 3 = 3.2233 -> 3.22 (3.2 with one decimal)
    assert type_scores["add"] == 3.22 and type_scores["adjust"] == 4.25
    assert official["per_type"] == type_scores
    counts = {t: len(v) for t, v in released.items()}  # the dropped items are not counted
    assert sum(counts.values()) == official["scored"] == 25
    assert official["overall_mean_of_types"] == round(sum(type_scores.values()) / 9, 2) == 3.85
    weighted = round(sum(type_scores[t] * counts[t] for t in EDIT_TYPES) / 25, 2)
    # 3.74 if the 4 dropped items were counted
    assert official["overall_item_weighted"] == weighted == 3.67
    ok = {t: v[0] for t, v in _PLAN.items()}
    for t in EDIT_TYPES:
        assert mine["per_type"][t] == pytest.approx(sum(ok[t]) / len(ok[t]))
    ieqa_types = sum(sum(v) / len(v) for v in ok.values()) / 9
    assert mine["overall_mean_of_types"] == pytest.approx(ieqa_types)
    every_ok = [s for v in ok.values() for s in v]
    assert len(every_ok) == 22
    assert mine["item_mean"] == pytest.approx(sum(every_ok) / 22)  # unrounded, valid items only
    want = stratified_bootstrap_by_hand([ok[t] for t in EDIT_TYPES], 300)
    assert res["ci"]["overall_mean_of_types"] == pytest.approx(want)
    row = protocol.table_row(res)
    assert row["95% CI"] == f"[{want[0]:.3f}, {want[1]:.3f}]"
    assert row["Overall (mean of types)"] == 3.85 and row["Overall (item-weighted)"] == 3.67
    assert row["ieqa item mean"] == pytest.approx(sum(every_ok) / 22)


def test_imgedit_a_type_without_valid_items_makes_ieqa_nan_not_the_official():
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("imgedit-bench")
    plan = {**_PLAN, "compose": ([], [1.5, 3.0], 0)}  # compose: every item failed ieqa's reading
    res = protocol.aggregate(_imgedit_entries(plan), n_boot=50)
    assert res["official"]["per_type"]["compose"] == 2.25
    assert math.isfinite(res["official"]["overall_mean_of_types"])
    assert math.isnan(res["ieqa"]["per_type"]["compose"])
    assert math.isnan(res["ieqa"]["overall_mean_of_types"])  # as the official mean would be
    assert all(math.isnan(v) for v in res["ci"]["overall_mean_of_types"])
    assert protocol.table_row(res)["95% CI"] == "–"
    plan = {**_PLAN, "action": ([], [], 2)}  # action: nothing the released reading keeps
    res = protocol.aggregate(_imgedit_entries(plan), n_boot=50)
    assert math.isnan(res["official"]["per_type"]["action"])
    assert math.isnan(res["official"]["overall_mean_of_types"])
    assert math.isnan(res["official"]["overall_item_weighted"])


def test_imgedit_stand_in_item_values_round_the_released_score():
    from types import SimpleNamespace

    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("imgedit-bench")
    judge = SimpleNamespace(name="some-stand-in")
    values = protocol.item_values({"overall": 3.456, "error": None}, judge, None)
    assert values["released_score"] == 3.46 and values["score"] == 3.456
    assert values["error"] is None
    failed = protocol.item_values({"overall": None, "error": "boom"}, judge, None)
    assert failed["released_score"] is None and failed["error"] == "boom"
