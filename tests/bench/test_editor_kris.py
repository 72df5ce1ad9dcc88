"""KRIS-Bench through ``bench-editor`` against a scripted judge on 127.0.0.1, and its
published aggregation from its own per-group numbers.

The judge's requests are checked against the ones KRIS-Bench's released ``metrics_*.py``
scripts build (read from the copies in nameoffly/Kris_Bench_output and ByteDance-Seed/Bagel;
nothing of them is copied): per item three requests (consistency, instruction following
— for knowledge categories the two-score request with the explanation — and quality), each
one user message of text parts and images in the scripts' order, every image its file's
bytes base64-encoded under ``data:image/jpeg`` (temporal items: re-encoded as JPEG at
quality 85), in ``{"model": "gpt-4o", "messages", "stream": false, "max_tokens": 1000}``.
The scripts send it through the ``openai`` client, whose serialisation depends on its
version, so the server compares the parsed body: every field and every string, the images'
bytes included. Anything else gets HTTP 500, so a differing request fails the test.
"""

from __future__ import annotations

import base64
import io
import json
import math

import numpy as np
import pytest
from PIL import Image

from chat_server import Reply, ScriptedJudge, canonical, chat_answer, module_strings, serve
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, kris_summary, write_editor_outputs
from ieqa.data.loaders.kris_bench import CATEGORIES, CATEGORY_COUNTS, GROUPS
from ieqa.testing.editor_bench import build_kris_fixture, kris_fixture_items, write_kris_outputs

KNOWLEDGE = ("humanities", "practical_knowledge", "biology", "chemistry", "geography",
             "medicine", "mathematics", "physics", "abstract_reasoning", "rule-based_reasoning")


@pytest.fixture
def prompts(tmp_path):
    from ieqa.scorers.published.kris_judge import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    return write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)




def _b64(path, reencode=False):
    if reencode:
        buf = io.BytesIO()
        Image.open(path).convert("RGB").save(buf, format="JPEG", quality=85)
        data = buf.getvalue()
    else:
        data = path.read_bytes()
    return {"type": "image_url",
            "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(data).decode()}}


def _text(t):
    return {"type": "text", "text": t}


def released_requests(c, item, root, output):
    """answer key -> the parsed body the released scripts send for ``item``."""
    cat, ins, folder = item["category"], item["ins_en"], root / "KRIS_Bench" / item["category"]
    temporal = cat == "temporal_prediction"
    names = item["ori_img"] if isinstance(item["ori_img"], list) else [item["ori_img"]]
    srcs = [_b64(folder / n, temporal) for n in names]
    out = _b64(output, temporal)
    if cat == "multi-element_composition":
        imgs = [p for i, s in enumerate(srcs, 1) for p in (_text(f"Reference Image {i}:"), s)]
        imgs += [_text("Predicted Image:"), out]
        vc = [_text(c["prompt_consist_multi"].format(instruct=ins)), *imgs]
        if_ = [_text(c["prompt_instruction_multi"].format(instruct=ins)), *imgs]
    elif temporal:  # frames 1, 2, 4 given: the edit is frame 3, in its place
        frames = [(1, srcs[0], "Reference"), (2, srcs[1], "Reference"), (3, out, "Generated"),
                  (4, srcs[2], "Reference")]
        imgs = [p for n, img, kind in frames for p in (_text(f"Frame {n} ({kind}):"), img)]
        vc = [_text(c["prompt_consist_temporal"].format(instruct=ins)), *imgs]
        if_ = [_text(c["prompt_instruction_temporal"].format(instruct=ins)), *imgs]
    else:
        pair = [_text("This is the original image:"), srcs[0], _text("This is the edited image:"),
                out]
        vc = [_text(c["prompt_consist"].format(instruct=ins)), *pair]
        if cat in KNOWLEDGE:
            if_ = [_text(c["prompt_dual_evaluation"].format(instruct=ins,
                                                            explanation=item["explain_en"])),
                   *pair]
        elif cat == "viewpoint_change":
            if_ = [_text(c["prompt_view_instruction_following"].format(instruct=ins)), *pair,
                   _text("This is the ground truth image:"), _b64(folder / item["gt_img"])]
        else:  # anomaly_correction too: the released test looks for "abnormality_correction"
            if_ = [_text(c["prompt_instruction_following"].format(instruct=ins)), *pair]
    label = "This is the image to evaluate:" if cat in ("multi-element_composition",
                                                        "temporal_prediction") \
        else "This is the edited image:"
    vq = [_text(c["prompt_quality"]), _text(label), out]
    return {key: canonical({"model": "gpt-4o", "messages": [{"role": "user", "content": body}],
                            "stream": False, "max_tokens": 1000})
            for key, body in (("consistency_score", vc), ("instruction_score", if_),
                              ("quality_score", vq))}


def _json(**scores):
    return chat_answer("1. Detect Difference. 2. Decision.\n"
                       + json.dumps({"reasoning": "scripted", **scores}), model="gpt-4o")


def test_kris_requests_released_and_ieqa_numbers(tmp_path, prompts):
    items = kris_fixture_items()
    build_kris_fixture(tmp_path / "kris", items)
    outputs = write_kris_outputs(tmp_path / "editor", items)
    c = module_strings(prompts / "eval/gen/kris/prompts.py")
    # the prompt's own template: reasoning unquoted, so json.loads fails; the released
    # reading then falls through to the first standalone digit, the "1" of "1. Detect"
    bad_json = chat_answer('{\n"reasoning": 1. Detect Difference: none,\n"consistency_score": 4\n}',
                           model="gpt-4o")
    filtered = Reply(status=400, body={"error": {"message": "content filter"}})
    plan = {
        0: {"consistency_score": [_json(consistency_score=5)],
            "instruction_score": [_json(instruction_score=3)],
            "quality_score": [_json(quality_score=4)]},
        1: {"consistency_score": [bad_json], "instruction_score": [_json(instruction_score=2)],
            "quality_score": [_json(quality_score=5)]},
        2: {"consistency_score": [_json(consistency_score=4)],
            "instruction_score": [_json(instruction_score=5)],
            "quality_score": [_json(quality_score=4)]},
        3: {"consistency_score": [_json(consistency_score=5)],
            "instruction_score": [_json(instruction_score=4, knowledge_score=2)],
            "quality_score": [_json(quality_score=5)]},
        4: {"consistency_score": [filtered],
            "instruction_score": [_json(instruction_score=3, knowledge_score=3)],
            "quality_score": [chat_answer("It looks great.", model="gpt-4o")]},
        5: {k: [_json(**{k: 3})] for k in ("consistency_score", "instruction_score",
                                            "quality_score")},
        6: {"consistency_score": [_json(consistency_score=2)],
            "instruction_score": [_json(instruction_score=1)],
            "quality_score": [_json(quality_score=4)]},
    }
    with serve(ScriptedJudge(by="json")) as judge:
        for n, item in enumerate(items):
            out = outputs / item["category"] / f"{item['index']}.png"
            for key, body in released_requests(c, item, tmp_path / "kris", out).items():
                judge.script[body] = plan[n][key]
        scorer = create_scorer("kris-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("kris-bench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=tmp_path / "kris", languages=["en"], progress=False,
                              n_boot=100)
        refused = [s for s in judge.requests if canonical(json.loads(s.raw)) not in judge.script]
    assert not refused  # every request was one the released scripts send
    rows = {r["task_type"]: r for r in result.items}
    assert rows["anomaly_correction"]["released"]["VC"] == 1  # the first digit anywhere
    assert rows["anomaly_correction"]["VC"] == 4  # ieqa reads it under its key
    assert rows["chemistry"]["KP"] == 2 and rows["count_change"]["KP"] is None
    assert rows["abstract_reasoning"]["error"] is not None
    assert rows["abstract_reasoning"]["released"] == {"VC": None, "VQ": None, "IF": 3, "KP": 3}
    res = result.results
    # released values mapped by 25 * (s - 1):
    #   count 100/50/75 (VC/IF/VQ), anomaly 0/25/100, viewpoint 75/100/75,
    #   chemistry 100/75/100 KP 25, abstract IF 50 KP 50 (VC, VQ unread),
    #   multi 50/50/50, temporal 25/0/75
    official = res["official"]
    ap = official["groups"]["Attribute Perception"]
    assert (ap["VC"], ap["VQ"], ap["IF"]) == (50.0, 87.5, 37.5)
    assert ap["AVG"] == pytest.approx(350 / 6)
    assert official["groups"]["Natural Science"]["AVG"] == 75.0
    assert official["groups"]["Logical Reasoning"]["AVG"] == 50.0
    assert math.isnan(official["groups"]["Logical Reasoning"]["VC"])
    assert math.isnan(official["groups"]["Social Science"]["AVG"])  # no item
    assert official["factual"] == pytest.approx(700 / 12)
    assert official["procedural"] == pytest.approx(250 / 5)
    assert official["overall"] == pytest.approx(1250 / 21)  # flat over 21 (item, judgement)
    assert official["unread"] == 2
    # ieqa: the abstract item failed; the anomaly item's consistency is 4 (75), not 1
    assert res["ieqa"]["overall"] == pytest.approx(1225 / 19)
    assert res["coverage"]["text"] == ("6 of 7 items (1 failed to score); official numbers: 2 "
                                       "judgements of 1 item left out where the released "
                                       "reading finds no score")
    low, high = res["editors"]["mine"]["en"]["ci"]["overall"]
    assert low <= res["ieqa"]["overall"] <= high
    assert res["judge"]["official"] and res["judge"]["served_models"] == ["gpt-4o"]
    row = editor_table(res)[0]
    assert row["Overall"] == pytest.approx(1250 / 21)
    assert row["coverage"] == res["coverage"]["text"]
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert "6 of 7 items" in paths["report"].read_text()


def test_missing_outputs_fail_with_the_list_or_are_skipped(tmp_path, prompts):
    from ieqa.bench.errors import BenchError

    items = kris_fixture_items()
    build_kris_fixture(tmp_path / "kris", items)
    outputs = write_kris_outputs(tmp_path / "editor", items, skip=(1, 4), fmt="JPEG")
    scorer = create_scorer("classic")  # weight-free: a stand-in judge
    with pytest.raises(BenchError, match=r"2 of 7 outputs missing.*anomaly_correction/2\.png"):
        bench_editor("kris-bench", {"mine": outputs}, scorer, tmp_path / "out",
                     data=tmp_path / "kris", languages=["en"], progress=False)
    result = bench_editor("kris-bench", {"mine": outputs}, scorer, tmp_path / "out",
                          data=tmp_path / "kris", languages=["en"], progress=False,
                          missing="skip", n_boot=50)
    res = result.results
    # classic gives neither instruction following nor knowledge: left out, and said
    assert res["coverage"]["text"] == ("5 of 7 items (2 without an output); official numbers: "
                                       "6 judgements of 5 items left out that the stand-in "
                                       "judge does not give")
    assert not res["judge"]["official"]  # a stand-in, labelled
    lo, hi = scorer.score_range
    first = result.items[0]  # a stand-in's scores mapped to 0-100 from its own range
    vc = 100 * (first["VC"] - lo) / (hi - lo)
    assert res["official"]["categories"][first["task_type"]]["VC"] == pytest.approx(vc)


def test_published_bagel_rows_are_the_flat_pool_over_items_and_judgements():
    """ByteDance-Seed/Bagel EVAL.md at 056b5fd5 (lines 128-231; the same numbers in
    mercurystraw/Kris_Bench issue #2): BAGEL and BAGEL w/ CoT, judge gpt-4o-2024-11-20.
    Each group's printed VC, VQ, IF (, KP) given to every item of its categories (1,267
    items), :func:`kris_summary` must give the printed group AVG, knowledge types and
    Overall; the mean of the group AVGs does not."""
    published = {
        "BAGEL": ({"Attribute Perception": (76.64, 74.45, 41.73), "Spatial Perception":
                   (70.25, 80.00, 37.00), "Temporal Prediction": (36.49, 61.82, 29.05),
                   "Social Science": (76.20, 78.80, 37.00, 29.60), "Natural Science":
                   (69.59, 84.03, 40.27, 30.15), "Logical Reasoning": (80.17, 85.67, 26.33, 18.00),
                   "Instruction Decomposition": (40.17, 69.50, 42.00)},
                  (64.27, 62.42, 42.45, 55.40, 56.01, 52.54, 50.56), (60.26, 55.86, 51.69),
                  56.21),
        "BAGEL w/ CoT": ({"Attribute Perception": (75.09, 74.00, 53.18), "Spatial Perception":
                          (78.75, 87.25, 39.00), "Temporal Prediction": (48.31, 81.08, 46.62),
                          "Social Science": (80.40, 79.40, 51.60, 42.80), "Natural Science":
                          (67.68, 82.95, 52.10, 42.88), "Logical Reasoning":
                          (62.83, 79.67, 28.33, 21.67), "Instruction Decomposition":
                          (47.83, 66.83, 36.00)},
                         (67.42, 68.33, 58.67, 63.55, 61.40, 48.12, 50.22),
                         (66.18, 61.92, 49.02), 60.18),
    }
    for name, (dims, avgs, types, overall) in published.items():
        entries = []
        for group, values in dims.items():
            named = dict(zip(("VC", "VQ", "IF", "KP")[:len(values)], values, strict=True))
            for category in GROUPS[group]:
                entries += [(category, named)] * CATEGORY_COUNTS[category]
        got = kris_summary(entries)
        assert [round(got["groups"][g]["AVG"], 2) for g in GROUPS] == list(avgs), name
        assert [round(got[t], 2) for t in ("factual", "conceptual", "procedural")] \
            == list(types), name
        # the printed inputs are rounded to 2 decimals: the CoT Overall comes out 60.17
        assert abs(got["overall"] - overall) <= 0.0101, name
        assert abs(sum(avgs) / len(avgs) - overall) > 0.3, name  # not the mean of the groups


def test_released_readings_of_an_answer():
    from ieqa.prompts.answers import (
        JudgeParseError,
        parse_kris_scores,
        released_kris_dual,
        released_kris_score,
        write_kris_answer,
    )

    # JSON first, through int(): out-of-range values are kept
    assert released_kris_score('{"quality_score": 7}', "quality_score") == 7
    # the prefix pattern; its colon is optional for the common scripts, required for the
    # knowledge script
    assert released_kris_score("1 image. Quality score 4", "quality_score") == 4
    assert released_kris_score("1 image. Quality score 4", "quality_score", "knowledge") == 1
    assert released_kris_score("1. Look. I give 3/5", "quality_score", "generic") == 3
    assert released_kris_score("Step 2 shows it", "quality_score", "generic") == 2
    assert released_kris_score("", "quality_score") is None
    # the knowledge script stops at a parsed block whose score is null
    assert released_kris_score('{"consistency_score": null} 3/5', "consistency_score",
                               "knowledge") is None
    assert released_kris_score('{"consistency_score": null} 3/5', "consistency_score") == 3
    assert released_kris_dual('{"instruction_score": 4, "knowledge_score": 1}') == (4, 1)
    assert released_kris_dual("instruction score: 2, knowledge: 5") == (2, None)
    assert released_kris_dual("it is a 4") == (None, None)  # no digit fallback
    # ieqa: only under the key, agreeing, an integer 1-5
    for bad in ('{"quality_score": 7}', "quality 4", '"quality_score": 4, quality_score: 3',
                '{"quality_score": 3.5}'):
        with pytest.raises(JudgeParseError):
            parse_kris_scores(bad, ["quality_score"])
    answer = write_kris_answer({"instruction_score": 4, "knowledge_score": 2}, "fine")
    assert parse_kris_scores(answer, ["instruction_score", "knowledge_score"]) == \
        {"instruction_score": 4, "knowledge_score": 2}
    assert released_kris_dual(answer) == (4, 2)


def test_data_layout_and_outputs(tmp_path):
    from ieqa.data.loaders.base import BenchmarkFormatError
    from ieqa.data.loaders.kris_bench import output_path, read_kris, temporal_frames

    items = kris_fixture_items()
    build_kris_fixture(tmp_path / "kris", items)
    read = read_kris(tmp_path / "kris" / "KRIS_Bench")  # either folder
    order = sorted(items, key=lambda i: CATEGORIES.index(i["category"]))  # the groups' order
    assert [i.id for i in read] == [f"{i['category']}/{i['index']}" for i in order]
    by_cat = {i.category: i for i in read}
    assert temporal_frames(by_cat["temporal_prediction"].source_names) == ([1, 2, 4], 3)
    assert temporal_frames(["9-1.jpg", "9-2.jpg", "9-3.jpg"]) == ([1, 2, 3], 4)
    assert len(by_cat["multi-element_composition"].sources) == 3
    assert by_cat["viewpoint_change"].gt is not None and by_cat["count_change"].gt is None
    out = tmp_path / "editor" / "count_change"
    out.mkdir(parents=True)
    (out / "1.png").write_bytes(b"x")
    assert output_path(tmp_path / "editor", read[0]).name == "1.png"
    (out / "1.jpg").write_bytes(b"x")  # .jpg first, as the released scripts read
    assert output_path(tmp_path / "editor", read[0]).name == "1.jpg"
    (tmp_path / "kris" / "KRIS_Bench" / "count_change" / "1.jpg").unlink()
    with pytest.raises(BenchmarkFormatError, match="1 images .* missing"):
        read_kris(tmp_path / "kris")
    with pytest.raises(BenchmarkFormatError, match="hf download Liang0223/KRIS_Bench|"
                                                   "no KRIS-Bench category folder"):
        read_kris(tmp_path / "editor")


# --------------------------------------------------------------------------- the aggregation by hand
#: (category, released 1-5 scores VC VQ IF KP, ieqa's, error); None: not read / not given
_ITEMS = [
    ("count_change", (5, 4, 3, None), (5, 4, 3, None), None),
    ("count_change", (3, None, 2, None), (3, 2, 2, None), None),  # VQ unread as released
    ("color_change", (2, 2, 5, None), (2, 2, 5, None), None),
    ("viewpoint_change", (4, 4, 4, None), (4, 4, 4, None), None),
    ("position_movement", (1, 5, 5, None), (None, None, None, None), "judge failed"),
    ("biology", (5, 5, 4, 2), (5, 5, 4, 2), None),
    ("biology", (4, 3, None, 1), (4, 3, 1, 1), None),  # IF unread as released
    ("chemistry", (5, 3, 3, 3), (5, 3, 3, None), None),  # ieqa: KP not given, not a failure
    ("abstract_reasoning", (2, 5, 1, 1), (2, 5, 1, 1), None),
    ("multi-element_composition", (3, 3, 3, None), (3, 3, 3, None), None),
]
_J = ("VC", "VQ", "IF", "KP")


def _kris_entries():
    return [{"task_type": c, "error": err, "scale": [1.0, 5.0],
             "released": dict(zip(_J, rel, strict=True)), **dict(zip(_J, mine, strict=True))}
            for c, rel, mine, err in _ITEMS]


def test_kris_official_pools_flat_over_items_and_judgements_by_hand():
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("kris-bench")
    res = protocol.aggregate(_kris_entries(), n_boot=200)
    official = res["official"]
    # released values mapped by 25 * (s - 1):
    #   count_change VC 100, 50; VQ 75; IF 50, 25   -> 300 / 5
    #   color_change 25, 25, 100                    -> AP: VC 175/3, VQ 100/2, IF 175/3
    #   viewpoint 75, 75, 75; position 0, 100, 100  -> SP 425 / 6
    #   biology 100, 100, 75, KP 25; 75, 50, -, KP 0; chemistry 100, 50, 50, KP 50
    #   abstract 25, 100, 0, KP 0; multi-element 50, 50, 50
    cc = official["categories"]["count_change"]
    assert (cc["VC"], cc["VQ"], cc["IF"]) == (75.0, 75.0, 37.5)
    assert cc["AVG"] == 60.0  # flat 300 / 5, not the mean of the judgements (62.5)
    ap = official["groups"]["Attribute Perception"]
    assert (ap["VC"], ap["VQ"], ap["IF"]) == (pytest.approx(175 / 3), 50.0, pytest.approx(175 / 3))
    assert ap["AVG"] == 56.25  # 450 / 8, not 55.56
    assert official["groups"]["Spatial Perception"]["AVG"] == pytest.approx(425 / 6)
    ns = official["groups"]["Natural Science"]
    assert (ns["IF"], ns["KP"]) == (62.5, 25.0)
    assert ns["AVG"] == pytest.approx(675 / 11)
    assert official["groups"]["Logical Reasoning"]["AVG"] == 31.25
    assert math.isnan(official["groups"]["Temporal Prediction"]["AVG"])
    assert official["factual"] == 62.5  # (450 + 425) / 14
    assert official["conceptual"] == pytest.approx(675 / 11)
    assert official["procedural"] == pytest.approx(275 / 7)
    assert official["overall"] == pytest.approx(1825 / 32)
    assert official["unread"] == 2
    assert protocol.table_row(res)["Overall"] == pytest.approx(1825 / 32)
    mine = res["ieqa"]  # the failed position item left out; chemistry's KP not given
    assert mine["overall"] == pytest.approx(1600 / 30)
    assert mine["groups"]["Natural Science"]["KP"] == 12.5
    assert mine["categories"]["chemistry"]["AVG"] == pytest.approx(200 / 3)


def test_kris_ieqa_interval_is_the_hand_flat_bootstrap_within_categories():
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("kris-bench")
    res = protocol.aggregate(_kris_entries(), n_boot=200)
    ok = [(c, [25 * (s - 1) for s in mine if s is not None]) for c, _, mine, err in _ITEMS
          if err is None]
    sums = np.array([sum(v) for _, v in ok], dtype=float)
    counts = np.array([len(v) for _, v in ok], dtype=float)  # chemistry: 3 values, not 4
    strata = np.array([c for c, _ in ok])
    assert sums.sum() / counts.sum() == pytest.approx(1600 / 30)
    rng = np.random.default_rng(0)
    tot_s, tot_n = np.zeros(200), np.zeros(200)
    for name in dict.fromkeys(strata):  # categories in order of appearance
        idx = np.flatnonzero(strata == name)
        draws = idx[rng.integers(0, idx.size, size=(200, idx.size))]
        tot_s += sums[draws].sum(axis=1)
        tot_n += counts[draws].sum(axis=1)
    means = tot_s / tot_n
    want = (np.quantile(means, 0.025), np.quantile(means, 0.975))
    assert res["ci"]["overall"] == pytest.approx(want)
    assert want[1] - want[0] > 1.0
    assert protocol.table_row(res)["95% CI"] == f"[{want[0]:.2f}, {want[1]:.2f}]"
