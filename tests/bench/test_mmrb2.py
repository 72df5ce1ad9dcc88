"""MMRB2's image-editing subset: the layout build_from_hf.py writes, the official
aggregation (compute_accuracy.py's compute_task_accuracy) and ieqa's numbers beside it.

``RECORDED`` is what the authors' own ``compute_accuracy.py`` (facebookresearch/MMRB2 at
7ff0552, run outside CI: ``python compute_accuracy.py --task edit --predictions
preds.json --benchmark_dir . --output out.json`` on exactly ``PAIRS`` and ``PREDICTIONS``
below, 2026-11-30) printed; the other expected numbers are counted by hand in the comments.
"""

from __future__ import annotations

import json

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
