"""MMRB2's image-editing subset: the layout build_from_hf.py writes, the official
aggregation (compute_accuracy.py's compute_task_accuracy) and ieqa's numbers beside it.

``RECORDED`` is what the authors' own ``compute_accuracy.py`` (facebookresearch/MMRB2 at
7ff0552, run outside CI: ``python compute_accuracy.py --task edit --predictions
preds.json --benchmark_dir . --output out.json`` on exactly ``PAIRS`` and ``PREDICTIONS``
below, 2026-11-30) printed; the other expected numbers are counted by hand in the comments.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ieqa.bench.mmrb2 import (
    judgements_from_scores,
    load_predictions,
    official_accuracy,
    write_predictions,
)
from ieqa.bench.run import evaluate_predictions
from ieqa.data.loaders import load_benchmark


def _j(value):  # noqa: ANN001, ANN202
    return [{"judgement": value, "evaluator": "x", "metadata": {}}]


PAIRS = [{"id": f"p{i}", "chosen": c} for i, c in enumerate("ABABABABABAB")]
PREDICTIONS = {
    "p0": {"forward": _j("A"), "reverse": _j("B")},  # A: right, right
    "p1": {"forward": _j("A"), "reverse": _j("A")},  # B: wrong, right (reverse A is B)
    "p2": {"forward": _j("tie"), "reverse": _j("B")},  # A: a tie is wrong; right
    "p3": {"forward": [], "reverse": _j("A")},  # B: unread; right
    "p4": {"forward": _j(None), "reverse": _j("")},  # A: unread, unread
    "p5": {"forward": _j("a"), "reverse": _j("b")},  # B: lower case is wrong twice
    "p6": {"reverse": _j("B")},  # A: no forward (unread); right
    # p7: missing
    "p8": {"forward": [{"judgement": "A"}, {"judgement": "B"}], "reverse": _j("B")},  # first only
    "p9": {"forward": [{"no": 1}], "reverse": _j("A")},  # B: unread; right
    "p10": {"forward": _j("B"), "reverse": _j("B")},  # A: wrong, right
    "p11": {"forward": _j("B"), "reverse": _j("A")},  # B: right, right
    "not-in-the-benchmark": {"forward": _j("A"), "reverse": _j("B")},
}
#: compute_accuracy.py's output on PAIRS and PREDICTIONS
RECORDED = {"accuracy": 0.7058823529411765, "total_pairs": 12, "evaluated_pairs": 11,
            "missing_pairs": 1}


def test_official_accuracy_is_the_released_rule_on_every_answer_shape() -> None:
    got = official_accuracy(PREDICTIONS, PAIRS)
    assert {k: getattr(got, k) for k in RECORDED} == pytest.approx(RECORDED, abs=1e-15)
    # by hand: 17 judgements read (2+2+2+1+0+2+1+2+1+2+2), 12 right; 5 unread (p3, p4 x2,
    # p6, p9 forward); over all 12 pairs x 2 orders, 12 of 24
    assert (got.total_evaluated, got.total_correct, got.unread) == (17, 12, 5)
    assert got.accuracy_all == pytest.approx(0.5)


def test_predictions_round_trip_and_bad_files_are_refused(tmp_path) -> None:
    path = write_predictions(tmp_path / "p.json", PREDICTIONS)
    assert official_accuracy(load_predictions(path), PAIRS) == official_accuracy(PREDICTIONS, PAIRS)
    (tmp_path / "bad.json").write_text(json.dumps({"p0": {"forward": "A"}}))
    with pytest.raises(Exception, match="forward must be a list"):
        load_predictions(tmp_path / "bad.json")


def test_judgements_from_scores() -> None:
    assert judgements_from_scores(2.0, 1.0)["forward"][0]["judgement"] == "A"
    assert judgements_from_scores(2.0, 1.0)["reverse"][0]["judgement"] == "B"
    assert judgements_from_scores(1.0, 1.0)["forward"][0]["judgement"] == "tie"
    assert judgements_from_scores(1.0, 1.05, eps=0.1)["forward"][0]["judgement"] == "tie"


def _png(path, seed) -> str:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(path)
    return f"{path.parent.name}/{path.name}"


@pytest.fixture()
def folder(tmp_path):
    """Seven pairs: three of emu-edit, two of dreambench, one with two output images and one
    with two input images (both unscorable)."""
    pairs = []
    spec = [("e0", "emu-edit", "A"), ("e1", "emu-edit", "B"), ("e2", "emu-edit", "A"),
            ("d0", "dreambench", "B"), ("d1", "dreambench", "A")]
    for k, (pid, source, chosen) in enumerate(spec):
        pairs.append({
            "id": pid, "prompt_source": source, "prompt_metadata": {"id": k},
            "prompt_content": [["image", _png(tmp_path / "input_images" / f"{pid}.png", k)],
                               ["text", f"edit number {k}"]],
            "response_a": {"model_name": "m1", "response_content": [
                ["image", _png(tmp_path / "images" / f"{pid}_a.png", 100 + k)]]},
            "response_b": {"model_name": "m2", "response_content": [
                ["image", _png(tmp_path / "images" / f"{pid}_b.png", 200 + k)]]},
            "chosen": chosen, "human_annotations": [5, 6, 4]})
    two_out = json.loads(json.dumps(pairs[0]))
    two_out["id"] = "x-out"
    two_out["response_a"]["response_content"].append(["image", "images/e0_b.png"])
    two_in = json.loads(json.dumps(pairs[1]))
    two_in["id"] = "x-in"
    two_in["prompt_content"].insert(0, ["image", "input_images/e0.png"])
    (tmp_path / "edit.json").write_text(json.dumps({"pairs": [*pairs, two_out, two_in]}))
    return tmp_path


def test_the_released_layout_loads_with_unscorable_pairs_named(folder) -> None:
    bench = load_benchmark("mmrb2-edit", root=folder)
    assert load_benchmark(folder).name == "mmrb2-edit"  # the folder is recognised
    assert [p.meta["pair_id"] for p in bench.preferences] == ["e0", "e1", "e2", "d0", "d1"]
    assert [p.label.value for p in bench.preferences] == ["a>b", "b>a", "a>b", "b>a", "a>b"]
    assert bench.meta["pairs"] == 7
    assert bench.meta["unscorable"] == {"x-out": "response A has 2 images and 0 texts",
                                        "x-in": "the prompt has 2 input images"}
    first = bench.preferences[0]
    assert first.a.instruction == "edit number 0" and first.a.task == "emu-edit"
    assert str(first.a.edited).endswith("images/e0_a.png")


def test_scores_give_the_official_accuracy_per_source_with_coverage(folder) -> None:
    bench = load_benchmark("mmrb2-edit", root=folder)
    # A's and B's scores per pair: e0 right, e1 wrong, e2 tie, d0 right, d1 wrong
    scores = {"e0": (3, 1), "e1": (3, 1), "e2": (2, 2), "d0": (1, 4), "d1": (0, 5)}
    preds = {f"{pid}:{side}": {"overall": float(v)} for pid, (a, b) in scores.items()
             for side, v in (("A", a), ("B", b))}
    result = evaluate_predictions(bench, preds)
    # two judgements per pair, the same verdict each: 2 right pairs of 5 -> 4/10; the tie
    # is wrong under the released rule
    assert result.row("accuracy_mmrb2").value == pytest.approx(0.4)
    assert result.row("accuracy_mmrb2", subset="emu-edit").value == pytest.approx(1 / 3)
    assert result.row("accuracy_mmrb2", subset="dreambench").value == pytest.approx(0.5)
    # ieqa's own pair accuracy beside it: the same here (a tie is wrong in both)
    assert result.row("accuracy_without_ties").value == pytest.approx(0.4)
    assert any("2 of 7 pairs cannot be scored" in n for n in result.notes), result.notes


def test_the_command_scores_the_folder_from_a_predictions_file(folder, tmp_path) -> None:
    from typer.testing import CliRunner

    from ieqa.cli import app

    rows = ["id,overall"] + [f"{pid}:{side},{v}" for pid, (a, b) in
                             {"e0": (3, 1), "e1": (3, 1), "e2": (2, 2), "d0": (1, 4),
                              "d1": (0, 5)}.items() for side, v in (("A", a), ("B", b))]
    (tmp_path / "preds.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "res"
    result = CliRunner().invoke(app, ["bench", "--benchmark", "mmrb2-edit", "--root", str(folder),
                                      "--predictions", str(tmp_path / "preds.csv"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text())["rows"]
    value = {(r["metric"], r.get("subset", "all")): r["value"] for r in rows}
    assert value[("accuracy_mmrb2", "all")] == pytest.approx(0.4)
    assert value[("accuracy_mmrb2", "dreambench")] == pytest.approx(0.5)


# ------------------------------------------------------------------------ the judge
SHAPES = [
    ('{"score": 5, "better_response": "A", "confidence": 0.4}', "A", "A"),
    ('```json\n{"better_response": "B"}\n```', "B", "B"),  # a fenced answer
    ('{"better_response": "B", "score": 2', "B", None),  # cut short: json_repair mends it
    ('{"better_response": "a"}', "a", None),  # lower case: read, and wrong as released
    ('{"better_response": "Response A"}', "Response A", None),
    ('{"score": 4}', None, None),  # no better_response: a failure
    ("A is better.", None, None),  # no JSON: json_repair gives "", then a failure
    ('[{"better_response": "A"}]', None, None),  # a list
]


@pytest.mark.parametrize(("text", "released", "strict"), SHAPES)
def test_the_released_and_the_strict_reading_of_an_answer(text, released, strict) -> None:
    from ieqa.bench.mmrb2 import released_judgement, strict_judgement

    assert released_judgement(text) == released
    assert strict_judgement(text) == strict


def _released_body(prompt, pair, first, second):  # noqa: ANN001, ANN202
    """The body the released gpt-4o evaluator sends: one user message of the rubric, the
    three labels (as its code writes them) with the contents, images as their files'
    bytes under the suffix's media type; model and n, nothing else."""
    mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}

    def part(kind, value):  # noqa: ANN001, ANN202
        if kind == "text":
            return {"type": "text", "text": value}
        data = base64.b64encode(open(value, "rb").read()).decode("utf-8")  # noqa: SIM115
        return {"type": "image_url", "image_url": {
            "url": f"data:{mime.get(Path(value).suffix.lower(), 'image/jpeg')};base64,{data}"}}

    content = [["text", prompt], ["text", "[ORIGINAL PROMPT TO MODEL:]"], *pair["prompt_content"],
               ["text", "[RESPONSE A:]"], *pair[f"response_{first}"],
               ["text", "[RESPONSE B:]"], *pair[f"response_{second}"]]
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        part(k, v) for k, v in content]}], "n": 1}


@pytest.fixture()
def judge_prompts(tmp_path):
    from ieqa.bench.mmrb2 import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    folder = write_prompt_standins(tmp_path / "mmrb2-prompts", PROMPT_SOURCES)
    return folder


def test_the_judge_sends_the_released_requests_and_reads_both_orders(folder, judge_prompts,
                                                                      tmp_path) -> None:
    from chat_server import Reply, ScriptedJudge, canonical, chat_answer, serve
    from ieqa.bench.mmrb2 import MMRB2Judge
    from ieqa.data.loaders.mmrb2 import read_pairs
    from ieqa.prompts.published import load_texts

    pairs = read_pairs(folder)
    assert len(pairs) == 7  # every pair, the two an edit scorer cannot take included
    from ieqa.bench.mmrb2 import PROMPT_SOURCES

    rubric = load_texts(PROMPT_SOURCES, prompts_dir=judge_prompts)["edit"]
    # forward, reverse per pair: e0 right twice; e1 (B chosen) wrong then unread; x-out a
    # server error then lower case; the rest right
    plan = {"e0": ('{"better_response": "A"}', '{"better_response": "B"}'),
            "e1": ('{"better_response": "A"}', "no verdict"),
            "x-out": (None, '{"better_response": "a"}')}
    with serve(ScriptedJudge(by="json")) as server:
        for pair in pairs:
            want = {"A": ("A", "B"), "B": ("B", "A")}[pair["chosen"]]
            answers = plan.get(pair["id"], tuple(f'{{"better_response": "{w}"}}' for w in want))
            for (first, second), answer in zip((("a", "b"), ("b", "a")), answers, strict=True):
                body = _released_body(rubric, pair, first, second)
                server.script[canonical(body)] = [
                    Reply(status=400, body={"error": {"message": "bad"}}) if answer is None
                    else chat_answer(answer, model="gpt-4o")]
        judge = MMRB2Judge(base_url=server.url, prompts=judge_prompts,
                           backend_options={"max_retries": 0})
        released, mine = judge.judge(pairs)
        refused = [s for s in server.requests if canonical(s.body) not in server.script]
    assert not refused
    assert released["e1"]["reverse"] == [] and released["x-out"]["forward"] == []
    assert released["x-out"]["reverse"][0]["judgement"] == "a"
    official = official_accuracy(released, [{"id": p["id"], "chosen": p["chosen"]} for p in pairs])
    # 14 orders: 2 unread (e1 reverse, x-out forward); of the 12 read, e1 forward and
    # x-out reverse ("a" is not "A") are wrong: 10 of 12
    assert (official.total_evaluated, official.total_correct, official.unread) == (12, 10, 2)
    strict = official_accuracy(mine, [{"id": p["id"], "chosen": p["chosen"]} for p in pairs])
    assert (strict.total_evaluated, strict.total_correct) == (11, 10)  # x-out reverse unread too


def test_the_command_writes_the_authors_format_and_both_accuracies(folder, judge_prompts,
                                                                   tmp_path) -> None:
    from typer.testing import CliRunner

    from chat_server import FakeServer, Reply, serve
    from ieqa.cli import app

    class AlwaysA(FakeServer):
        def next_reply(self, body):  # noqa: ANN001, ANN201
            return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant",
                                   "content": '{"better_response": "A"}'}}]})

    with serve(AlwaysA()) as server:
        result = CliRunner().invoke(app, ["mmrb2-judge", "--root", str(folder), "--base-url",
                                          server.url, "--prompts", str(judge_prompts),
                                          "--limit", "5", "-o", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    res = json.loads((tmp_path / "res" / "results.json").read_text())
    # always A: right in one order of every judged pair: 5 of 10; 2 pairs missing (limit)
    assert res["official"]["accuracy"] == pytest.approx(0.5)
    assert res["official"]["missing_pairs"] == 2 and res["official"]["accuracy_all"] == pytest.approx(5 / 14)
    preds = load_predictions(tmp_path / "res" / "predictions.json")
    assert set(preds) == {"e0", "e1", "e2", "d0", "d1"}


def test_the_local_judge_samples_seeded_with_the_checkpoints_top_p_and_top_k(
        folder, judge_prompts, tmp_path) -> None:
    """Their qwen3vl8b-pairwise judge runs the model here: temperature 1.0 with the
    checkpoint's own top-p/top-k (the tiny checkpoint sets 0.8 and 20 here), seeded, so
    two runs with one seed give the same answers; a random model's answers are unread."""
    from transformers import GenerationConfig

    from ieqa.bench.mmrb2 import MMRB2Judge
    from ieqa.data.loaders.mmrb2 import read_pairs
    from ieqa.testing import build_tiny_vlm

    base = build_tiny_vlm(tmp_path / "qwen3vl", "qwen3-vl", seed=2)
    config = GenerationConfig.from_pretrained(base)
    config.do_sample, config.top_p, config.top_k = True, 0.8, 20  # as the released checkpoints
    config.save_pretrained(base)
    pairs = read_pairs(folder)[:2]
    runs = []
    for _ in range(2):
        judge = MMRB2Judge(local=True, model=str(base), prompts=judge_prompts, seed=3,
                           max_new_tokens=6,
                           backend_options={"device": "cpu", "dtype": "float32"})
        assert judge.generation_options() == {"max_new_tokens": 6, "temperature": 1.0,
                                              "top_p": 0.8, "top_k": 20, "seed": 3}
        runs.append(judge.judge(pairs))
    released, mine = runs[0]
    texts = [released[p["id"]][k] or mine[p["id"]][k] for p in pairs
             for k in ("forward", "reverse")]
    assert all(t and t[0]["metadata"].get("text") for t in texts)
    assert runs[0] == runs[1]
    prompt = judge.requests(pairs[0])[0]
    assert len(prompt.images) == 3 and "[RESPONSE B:]" in prompt.parts
