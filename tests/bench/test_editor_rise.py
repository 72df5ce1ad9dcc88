"""RISEBench through ``bench-editor`` against a scripted judge on 127.0.0.1, and its
published overall accuracy from its per-category numbers.

The judge's requests are checked byte for byte against the ones RISEBench's released
``gpt_eval.py`` builds (read from its code at ``5f226519``; nothing of it is copied): per
item the consistency, reasoning and plausibility requests its category and flags call for,
each ``json.dumps({"model": "gpt-4.1-2025-04-14", "messages": [one user message: the text
filled by str.format, then the images], "max_tokens": 4096, "n": 1, "temperature": 0})``,
each image opened with Pillow, shrunk by ``thumbnail((768, 768))`` and sent as a JPEG at
Pillow's default quality with ``"detail": "high"``. The server answers only those exact
bodies (anything else gets HTTP 500, so a differing request fails the test).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chat_server import (
    Reply,
    ScriptedJudge,
    chat_answer,
    module_strings,
    serve,
    thumbnail_jpeg_part,
)
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, pooled_accuracy, write_editor_outputs
from ieqa.data.loaders.risebench import CATEGORY_COUNTS
from ieqa.prompts.answers import write_final_score_answer
from ieqa.testing.editor_bench import build_rise_fixture, rise_fixture_items, write_rise_outputs


@pytest.fixture
def prompts(tmp_path):
    from ieqa.scorers.published.rise_judge import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    return write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)




def released_requests(c, item, root, output):
    """judge name -> the body the released code sends for ``item`` (fields as in the data)."""
    cat, ins = item["category"], item["instruction"]
    src, out = root / item["image"], output
    ref = root / item["reference_img"] if "reference_img" in item else None
    if cat in ("temporal_reasoning", "causal_reasoning"):
        cons = (c["prompt_consist"].format(instruct=ins), [src, out])
        if "reasoning_img" in item:
            rea = (c["prompt_reasoning_w_input"].format(instruct=ins, reference=item["reference"]),
                   [src, out])
        else:
            rea = (c["prompt_reasoning"].format(instruct=ins, reference=item["reference"]), [out])
        qua = (c["prompt_generation"], [out])
    elif cat == "spatial_reasoning":
        if ref is not None:
            rea = (c["prompt_spatial_ref_img"].format(instruct=ins), [ref, out])
        elif "reasoning_img" in item:
            rea = (c["prompt_spatial_ref_w_input"].format(instruct=ins,
                                                          reference=item["reference"]), [src, out])
        else:
            rea = (c["prompt_spatial_ref"].format(instruct=ins, reference=item["reference"]), [out])
        cons = (c["prompt_spatial_cons"].format(instruct=ins), [ref or src, out])
        qua = (c["prompt_spatial_qual"], [out])
    else:
        qua = None
        if "reference_txt" in item:
            cons = (c["prompt_logical_cons_ans"].format(instruct=ins,
                                                        reference=item["reference_txt"]), [src, out])
            rea = (c["prompt_logical_txt"].format(instruct=ins, reference=item["reference_txt"]),
                   [out])
        else:
            cons = (c["prompt_logical_cons"].format(instruct=ins), [ref, out])
            rea = (c["prompt_logical_img"].format(instruct=ins), [ref, out])
    plan = {"judge1": None if "consistency_free" in item else cons, "judge2": rea,
            "judge3": qua}
    bodies = {}
    for judge, spec in plan.items():
        if spec is None:
            continue
        content = [{"type": "text", "text": spec[0]}] + [thumbnail_jpeg_part(p) for p in spec[1]]
        bodies[judge] = json.dumps({"model": "gpt-4.1-2025-04-14", "messages": [
            {"role": "user", "content": content}], "max_tokens": 4096, "n": 1,
            "temperature": 0}).encode()
    return bodies


def _score(value):
    return chat_answer(write_final_score_answer(value, "scripted"))


def test_risebench_requests_solved_items_and_both_completion_rules(tmp_path, prompts):
    items = rise_fixture_items()
    data = build_rise_fixture(tmp_path / "rise", items)
    outputs = write_rise_outputs(tmp_path / "editor", items)
    c = module_strings(prompts / "utils.py")
    five = [_score(5)]
    plan = {0: {"judge1": five, "judge2": five, "judge3": five},            # solved
            1: {"judge1": five, "judge2": [_score(4)], "judge3": five},     # not solved
            2: {"judge2": five, "judge3": five},       # consistency_free: solved since 2026-04
            3: {"judge1": five, "judge2": [chat_answer("**Final Score:** 4, 5")],  # stops
                "judge3": five},
            4: {"judge1": five, "judge2": five, "judge3": [chat_answer("It looks fine.")]},
            5: {"judge1": five, "judge2": five, "judge3": five},            # answer image: solved
            6: {"judge1": [_score(1)], "judge2": [_score(1)]},              # logical 1/1: solved
            7: {"judge1": [Reply(status=400, body={"error": {"message": "filtered"}})],
                "judge2": [_score(1)]}}
    with serve(ScriptedJudge()) as judge:
        for n, item in enumerate(items):
            bodies = released_requests(c, item, data.parent,
                                       outputs / "images" / item["category"] / f"{item['index']}.png")
            assert set(bodies) == set(plan[n]), n
            for name, body in bodies.items():
                judge.script[body] = plan[n][name]
        scorer = create_scorer("rise-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("risebench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=data, languages=["en"], progress=False, n_boot=100)
        refused = [s for s in judge.requests if s.raw not in judge.script]
    assert not refused  # every request was one the released code sends
    rows = {r["key"]: r for r in result.items}
    keys = [i["index"] for i in items]
    assert [rows[k]["error"] is None for k in keys] == [True, True, True, False, False, True,
                                                        True, False]
    assert rows[keys[1]]["rea"] == 4 and rows[keys[6]]["cons"] == 5  # logical 1 read as 5
    assert rows[keys[3]]["released"] == "stops" and rows[keys[4]]["released"] == "failed"
    assert rows[keys[2]]["cons"] is None  # consistency_free: not asked
    res = result.results
    official = res["official"]
    assert official["per_category"] == {"temporal_reasoning": 50.0, "causal_reasoning": 100.0,
                                        "spatial_reasoning": pytest.approx(100 / 3),
                                        "logical_reasoning": 50.0}
    assert official["overall"] == 50.0  # 4 of 8, pooled
    assert official["before_2026_04"]["causal_reasoning"] == 0.0
    assert official["overall_before_2026_04"] == 37.5
    assert (official["unreadable"], official["would_stop"]) == (2, 1)
    assert res["ieqa"]["overall"] == 80.0  # 4 of the 5 scored items
    assert res["coverage"]["text"] == ("5 of 8 items (3 failed to score); official numbers: 2 "
                                       "unreadable, counted as unsolved as released, 1 the "
                                       "released script would stop on, counted as unsolved")
    assert res["judge"]["official"] and res["judge"]["served_models"] == ["gpt-4.1-2025-04-14"]
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert "RISEBench&#x27;s official judge" in paths["report"].read_text() or \
        "RISEBench's official judge" in paths["report"].read_text()
    assert editor_table(res)[0]["Overall (before 2026-04)"] == 37.5


def test_published_risebench_overall_is_pooled_over_items():
    """PhoenixZ810/RISEBench README.md at 5f226519 (lines 108-110) and, before the
    completion-rule fix, at 91d5d3e5 (line 107): Temporal, Causal, Spatial, Logical,
    Overall in percent of 85, 90, 100 and 85 items."""
    rows = {"GPT-Image-1.5": ((57.6, 62.2, 62.0, 21.2), 51.4),
            "GPT-Image-2": ((45.9, 66.7, 50.0, 34.1), 49.4),
            "Gemini-3-pro-image-preview": ((43.5, 63.3, 48.0, 37.6), 48.3),
            "GPT-Image-1.5 (before the fix)": ((54.1, 60.0, 62.0, 21.2), 50.0)}
    for name, (parts, overall) in rows.items():
        per = dict(zip(CATEGORY_COUNTS, parts, strict=True))
        assert round(pooled_accuracy(per, CATEGORY_COUNTS), 1) == overall, name
        assert round(sum(parts) / 4, 1) != overall, name  # the mean of categories is not it
    assert math.isclose(pooled_accuracy({"a": 50.0}, {"a": 10}), 50.0)


def test_the_data_file_decides_reasoning_wo_ins_for_all_logical_items_as_released(tmp_path):
    from ieqa.data.loaders.risebench import output_path, read_risebench

    items = rise_fixture_items()
    items[-1] = {**items[-1], "reasoning_wo_ins": None}  # the field, even null, anywhere
    data = build_rise_fixture(tmp_path / "rise", items)
    read = read_risebench(data.parent.parent)  # the folder: data/data_total.json is found
    assert all(i.reasoning_wo_ins for i in read)
    assert read[2].consistency_free and read[1].reasoning_img and not read[0].reasoning_img
    out = tmp_path / "editor" / "images" / "logical_reasoning"
    out.mkdir(parents=True)
    (out / f"{read[-1].index}.jpg").write_bytes(b"x")  # .png tried first, then .jpg
    assert output_path(tmp_path / "editor", read[-1]).suffix == ".jpg"


def test_released_reading_of_an_items_answers():
    from ieqa.bench.editor.rise import released_judgements, solved

    assert released_judgements({}, False) == "failed"  # no request was built
    assert released_judgements({"judge2": [5], "judge3": [4]}, False) == (None, 5.0, 4.0)
    assert released_judgements({"judge1": [1], "judge2": [0]}, True) == (5.0, 1.0, None)
    assert released_judgements({"judge1": [5, 4], "judge2": [5], "judge3": [5]}, False) == "stops"
    assert released_judgements({"judge1": [], "judge2": [5], "judge3": [5]}, False) == "failed"
    assert solved("causal_reasoning", None, 5, 5, True)
    assert not solved("causal_reasoning", None, 5, 5, True, rule="2025-05")
    assert not solved("spatial_reasoning", 5, 5, 4, False)


# --------------------------------------------------------------------------- the aggregation by hand
#: (category, consistency_free, released reading, ieqa's (cons, rea, qua), error)
_ITEMS = [
    ("temporal_reasoning", False, [5.0, 5.0, 5.0], (5, 5, 5), None),        # solved
    ("temporal_reasoning", False, [4.0, 5.0, 5.0], (4, 5, 5), None),        # cons 4: not
    ("temporal_reasoning", True, [None, 5.0, 5.0], (None, 5, 5), None),     # free: solved now
    ("causal_reasoning", False, [5.0, 5.0, 5.0], (5, 5, 5), None),
    ("causal_reasoning", False, [5.0, 5.0, 5.0], (None, None, None), "ieqa: two scores"),
    ("causal_reasoning", False, "failed", (None, None, None), "no answer"),
    ("spatial_reasoning", False, [5.0, 4.0, 5.0], (5, 4, 5), None),
    ("spatial_reasoning", False, [5.0, 5.0, 5.0], (5, 5, 5), None),
    ("logical_reasoning", False, [5.0, 5.0, None], (5, 5, None), None),     # 1/1 read as 5/5
    ("logical_reasoning", False, [1.0, 5.0, None], (1, 5, None), None),
    ("logical_reasoning", False, "stops", (None, None, None), "two numbers"),
]


def _rise_entries():
    return [{"task_type": c, "consistency_free": free, "released": rel, "cons": m[0],
             "rea": m[1], "qua": m[2], "error": err, "score": None}
            for c, free, rel, m, err in _ITEMS]


def test_risebench_official_ieqa_and_dimensions_by_hand():
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("risebench")
    res = protocol.aggregate(_rise_entries(), n_boot=300)
    official, mine = res["official"], res["ieqa"]
    assert official["per_category"] == {"temporal_reasoning": pytest.approx(200 / 3),
                                        "causal_reasoning": pytest.approx(200 / 3),
                                        "spatial_reasoning": 50.0,
                                        "logical_reasoning": pytest.approx(100 / 3)}
    assert official["before_2026_04"]["temporal_reasoning"] == pytest.approx(100 / 3)
    assert official["overall"] == pytest.approx(600 / 11)  # 6 of 11 pooled
    assert official["overall_before_2026_04"] == pytest.approx(500 / 11)
    # 25 * (mean - 1) over the readable answers, a judgement not asked left out:
    # consistency 5 4 5 5 5 5 5 1 (free item: none) -> 35 / 8; reasoning 5 5 5 5 5 4 5 5 5
    # -> 44 / 9; plausibility 5 x 7 (logical items: none) -> 5
    assert official["dimensions"] == {"consistency": pytest.approx(25 * (35 / 8 - 1)),
                                      "reasoning": pytest.approx(25 * (44 / 9 - 1)),
                                      "plausibility": 100.0}
    assert (official["unreadable"], official["would_stop"]) == (1, 1)
    # ieqa: the three failed items left out
    assert mine["per_category"] == {"temporal_reasoning": pytest.approx(200 / 3),
                                    "causal_reasoning": 100.0, "spatial_reasoning": 50.0,
                                    "logical_reasoning": 50.0}
    assert mine["overall"] == 62.5  # 5 of 8
    flags = np.array([100.0, 0, 100, 100, 0, 100, 100, 0])
    rng = np.random.default_rng(0)
    means = flags[rng.integers(0, 8, size=(300, 8))].mean(axis=1)
    want = (np.quantile(means, 0.025), np.quantile(means, 0.975))
    assert res["ci"]["overall"] == pytest.approx(want)
    assert want[1] - want[0] > 20
    row = protocol.table_row(res)
    assert row["95% CI"] == f"[{want[0]:.1f}, {want[1]:.1f}]"
    assert row["Overall"] == pytest.approx(600 / 11) and row["ieqa Overall"] == 62.5
