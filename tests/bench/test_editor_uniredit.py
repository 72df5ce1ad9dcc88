"""UniREditBench through ``bench-editor`` against a scripted judge on 127.0.0.1.

The judge's requests are checked against the ones UniREditBench's released
``eval/gpt_eval_uniredit.py`` builds (read from its code at ``a7015c5``; nothing of it is
copied): per item ``{"model": "gpt-4.1-2025-04-14", "stream": false, "messages": [one user
message: the text, then the images], "max_tokens": 4096, "n": 1, "temperature": 0}`` for
consistency (original, output), reasoning (original, ground truth, output; text filled
with the instruction, after the item's rules for a game-world item, and its
``reference_effect``) and plausibility (output), each image opened with Pillow, shrunk by
``thumbnail((768, 768))`` and sent as a JPEG with ``"detail": "high"``. The server answers
only those bodies (anything else gets HTTP 500, so a differing request fails the test).

``RECORDED`` is what the released script printed (``{model}_judge.csv``) when it
aggregated exactly these answers, run outside CI with
``scripts/harness/uniredit_official_vs_released.py`` on 2026-11-30; ieqa's own numbers
are worked out by hand in the comments.
"""

from __future__ import annotations

import pytest

from chat_server import (
    Reply,
    ScriptedJudge,
    canonical,
    chat_answer,
    module_strings,
    serve,
    thumbnail_jpeg_part,
)
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, write_editor_outputs
from ieqa.testing.editor_bench import (
    build_uniredit_fixture,
    uniredit_fixture_items,
    write_uniredit_outputs,
)

F = "**Final Score:** **{}**"
#: name#idx -> the three answers (the same as the harness's)
ANSWERS = {
    "physics#0": [F.format(5), "Final Score: 5", "final score: 5"],
    "physics#1": ["Final Score: 4", "Final Score: 3, 5", "Final Score: 2"],
    "physics#2": ["Final Score: 7", "Final Score: 4", "Final Score: 5"],
    "physics#3": ["Final Score: 3", "The image is good.", "Final Scores: none"],
    "biology#0": ["Final Scores: 3", "final score: 2", "FINAL SCORE: 1"],
    "biology#1": ["Final Score: 5", "Final Score: 2", "**Final Score**: 4"],
    "sudoku#1": [None, "Final Score: 5", "Final Score: 3"],  # consistency: an API error
    "sudoku#2": ["Final Score: 5", "Final Score: 4", "Final Score: 4"],
}  # sudoku#0 has no output
#: the released script's {model}_judge.csv on these answers: Score-Origin, Score-Percentage,
#: Accuracy (completion)
RECORDED = {"Overall": (3.816666666666667, 70.41666666666667, 0.16666666666666666),
            "Overall_Reasoning": (3.3333333333333335, 58.333333333333336),
            "Overall_ApprConsistency": (4.833333333333333, 95.83333333333333),
            "Overall_VisualPlausibility": (3.5, 62.5),
            "Class-biology": (2.7, 42.50000000000001, 0.0),
            "Class-physics": (4.3999999999999995, 84.99999999999999, 0.3333333333333333),
            "Class-sudoku": (4.3, 82.5, 0.0)}


@pytest.fixture
def prompts(tmp_path):
    from ieqa.scorers.published.uniredit_judge import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    return write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)


def released_requests(c, item, root, output):  # noqa: ANN001, ANN201
    """judge name -> the body the released code sends for ``item``."""
    instruct = item["instruction"]
    if item.get("rules"):
        instruct = item["rules"] + "\n" + instruct
    src, ref = root / item["original_image_path"], root / item["reference_image_path"]
    plan = {"judge1": (c["prompt_consist"].format(instruct=instruct), [src, output]),
            "judge2": (c["prompt_reasoning_w_ref_image"].format(
                instruct=instruct, reference=item["reference_effect"]), [src, ref, output]),
            "judge3": (c["prompt_generation"], [output])}
    return {name: {"model": "gpt-4.1-2025-04-14", "stream": False, "messages": [
                {"role": "user", "content": [{"type": "text", "text": text},
                                             *[thumbnail_jpeg_part(p) for p in images]]}],
                "max_tokens": 4096, "n": 1, "temperature": 0}
            for name, (text, images) in plan.items()}


def _run(tmp_path, prompts):  # noqa: ANN001, ANN202
    items = uniredit_fixture_items()
    data = build_uniredit_fixture(tmp_path / "uniredit", items)
    outputs = write_uniredit_outputs(tmp_path / "editor", items, skip=(6,))  # sudoku#0
    c = module_strings(prompts / "eval/utils.py")
    with serve(ScriptedJudge(by="json")) as judge:
        for item in items:
            key = f"{item['name']}#{item['idx']}"
            if key not in ANSWERS:
                continue
            bodies = released_requests(c, item, data, outputs / item["name"] / f"{item['idx']}.png")
            for n, body in enumerate(bodies.values()):
                answer = ANSWERS[key][n]
                judge.script[canonical(body)] = [
                    Reply(status=400, body={"error": {"message": "filtered"}}) if answer is None
                    else chat_answer(answer)]
        scorer = create_scorer("uniredit-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("unireditbench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=data, languages=["en"], progress=False, n_boot=100,
                              missing="skip")
        refused = [s for s in judge.requests if canonical(s.body) not in judge.script]
    return result, refused


def test_unireditbench_requests_and_the_released_numbers(tmp_path, prompts) -> None:
    result, refused = _run(tmp_path, prompts)
    assert not refused  # every request was one the released code sends
    res = result.results
    official = res["official"]
    got = {"Overall": (official["overall"], official["overall_percent"], official["completion"]),
           "Overall_Reasoning": (official["dimensions"]["Reasoning"],
                                 25 * (official["dimensions"]["Reasoning"] - 1)),
           "Overall_ApprConsistency": (official["dimensions"]["ApprConsistency"],
                                       25 * (official["dimensions"]["ApprConsistency"] - 1)),
           "Overall_VisualPlausibility": (official["dimensions"]["VisualPlausibility"],
                                          25 * (official["dimensions"]["VisualPlausibility"] - 1)),
           **{f"Class-{n}": (v["score"], v["percent"], v["completion"])
              for n, v in official["per_name"].items()}}
    assert got.keys() == RECORDED.keys()
    for key, values in RECORDED.items():
        assert got[key] == pytest.approx(values, rel=1e-12, abs=1e-12), key
    # ieqa: the items whose three answers each hold one score in 1-5: physics#0 (5.0),
    # biology#0 (0.9 + 1.0 + 0.2 = 2.1), biology#1 (1.5 + 1.0 + 0.8 = 3.3), sudoku#2 (4.3);
    # mean 3.675, 25 * 2.675 = 66.875; one of four complete
    mine = res["ieqa"]
    assert mine["overall"] == pytest.approx(3.675)
    assert mine["overall_percent"] == pytest.approx(66.875)
    assert mine["completion"] == pytest.approx(0.25)
    assert mine["per_name"]["physics"]["n"] == 1 and mine["per_name"]["biology"]["n"] == 2
    rows = {r["key"]: r for r in result.items}
    assert rows["physics#1"]["error"] and rows["physics#1"]["released"] == [4.0, 3.0, 2.0]
    assert rows["physics#2"]["released"] == [7.0, 4.0, 5.0]  # no range check, as released
    assert rows["physics#3"]["released"] is None and rows["sudoku#1"]["released"] is None
    assert rows["sudoku#2"]["score"] == pytest.approx(4.3)
    assert "sudoku#0" not in rows  # no output: skipped and counted
    assert official["unreadable"] == 2
    assert res["coverage"]["text"] == (
        "4 of 9 items (1 without an output) (4 failed to score); official numbers: 2 items "
        "the released reading cannot read, left out of every mean as released")
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert paths["report"].is_file()
    assert editor_table(res)[0]["Overall %"] == pytest.approx(70.41666666666667)


def test_the_data_layout_and_its_errors(tmp_path) -> None:
    from ieqa.bench.editor.uniredit import UniREditProtocol
    from ieqa.data.loaders.base import BenchmarkFormatError
    from ieqa.data.loaders.unireditbench import read_unireditbench

    items = uniredit_fixture_items()
    folder = build_uniredit_fixture(tmp_path / "u", items)
    read = read_unireditbench(folder)
    assert [i.key for i in read][:2] == ["physics#0", "physics#1"]
    assert read[8].rules == "Fill each row with 1-4." and read[0].rules == ""
    assert UniREditProtocol.detect(folder) and UniREditProtocol.detect(folder / "data.json")
    (folder / "reference_image" / "physics_1.png").unlink()
    with pytest.raises(BenchmarkFormatError, match="1 images .* missing.*unzip"):
        read_unireditbench(folder)
    with pytest.raises(BenchmarkFormatError, match="no data.json"):
        read_unireditbench(tmp_path)


def test_generate_finds_the_data_and_writes_the_released_layout(tmp_path) -> None:
    from ieqa.curate.generate import read_generation_items

    folder = build_uniredit_fixture(tmp_path / "u", uniredit_fixture_items())
    kind, found = read_generation_items(folder, work_dir=tmp_path / "work")
    assert kind == "unireditbench" and len(found) == 9
    assert all(i.skip is None for i in found)
