"""GenAI-Bench items (JSON / Parquet with embedded images) and judge result files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ieqa.bench.genai_judge import JudgeResults, load_judge_results
from ieqa.data.loaders import load_benchmark
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.loaders.genai_bench import load_items
from ieqa.data.schema import PreferenceLabel
from ieqa.errors import IeqaError

from .conftest import png_bytes, write_json, write_jsonl

VOTES = ["leftvote", "rightvote", "tievote", "bothbad_vote"]


def _item(i: int, vote: str, images: dict[str, Path]) -> dict:
    return {
        "source_prompt": f"a photo {i}", "target_prompt": f"a red photo {i}", "instruct_prompt": f"make it red {i}",
        "source_image": "img/src.png", "left_model": "MagicBrush", "left_output_image": "img/e1.png",
        "right_model": "InstructPix2Pix", "right_output_image": "img/e2.png", "vote_type": vote,
    }


def test_items_json_fields_and_vote_mapping(tmp_path: Path, images: dict[str, Path]) -> None:
    path = write_json(tmp_path / "items.json", [_item(i, v, images) for i, v in enumerate(VOTES)])
    data = load_items(path)
    assert data.protocol == "pairwise" and data.dimensions == ["overall"]
    assert [p.label for p in data.preferences] == [
        PreferenceLabel.A, PreferenceLabel.B, PreferenceLabel.TIE, PreferenceLabel.BOTH_BAD]
    p = data.preferences[0]
    assert p.a.edited == images["e1"] and p.b.edited == images["e2"]  # a is the left output
    assert p.a.source == images["src"] == p.b.source
    assert p.a.editor == "MagicBrush" and p.b.editor == "InstructPix2Pix"
    assert p.a.instruction == "make it red 0"
    assert p.a.meta == {"source_prompt": "a photo 0", "target_prompt": "a red photo 0"}
    assert p.meta == {"idx": 0, "vote_type": "leftvote"}
    assert p.a.group_id == p.b.group_id == "0"
    assert [s.id for s in data.samples[:2]] == ["0_left", "0_right"]
    assert len(data.samples) == 8
    assert "both-bad 1" in data.summary()


def test_parquet_with_embedded_images_and_registered_name(tmp_path: Path) -> None:
    img = {"bytes": png_bytes(), "path": None}
    rows = [{**_item(i, v, {}), "source_image": img, "left_output_image": img, "right_output_image": img}
            for i, v in enumerate(VOTES)]
    folder = tmp_path / "GenAI-Bench" / "image_edition"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "test_v1-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(rows[:1]), folder / "test-00000-of-00001.parquet")
    data = load_benchmark("genai-bench", root=tmp_path / "GenAI-Bench")
    assert len(data.preferences) == 4 and data.meta["split"] == "test_v1"
    assert isinstance(data.preferences[0].a.edited, bytes)
    assert data.preferences[0].a.edited.startswith(b"\x89PNG")
    assert len(load_benchmark("genai-bench", root=tmp_path / "GenAI-Bench", split="test").preferences) == 1
    # the folder is recognised without naming the benchmark
    assert load_benchmark(tmp_path / "GenAI-Bench").name == "genai-bench"


def test_bad_vote_names_file_and_row(tmp_path: Path, images: dict[str, Path]) -> None:
    path = write_jsonl(tmp_path / "items.jsonl", [_item(0, "leftvote", images), _item(1, "leftvoted", images)])
    with pytest.raises(BenchmarkFormatError, match=r"items\.jsonl, line 2: vote_type must be one of"):
        load_items(path)
    path = write_jsonl(tmp_path / "missing.jsonl", [{k: v for k, v in _item(0, "tievote", images).items()
                                                     if k != "right_output_image"}])
    with pytest.raises(IeqaError, match=r"missing\.jsonl, line 1: missing field\(s\) \['right_output_image'\]"):
        load_items(path)


def test_registered_name_needs_root() -> None:
    with pytest.raises(BenchmarkFormatError, match="needs root="):
        load_benchmark("genai-bench")


# --------------------------------------------------------------------------- judge results


def _judge_rows() -> list[dict]:
    return [
        {"idx": 0, "instruct_prompt": "x", "response": "Verdict: [[A>B]]", "model_vote": "[[A>B]]",
         "human_vote": "leftvote", "correct": True},
        {"idx": 1, "response": "both bad: [[A=B=Bad]]", "model_vote": "[[A=B=Bad]]",
         "human_vote": "bothbad_vote", "correct": True},
        {"idx": 2, "response": "[[A=B]]", "model_vote": "[[A=B]]", "human_vote": "tievote", "correct": True},
        {"idx": 3, "response": "I cannot decide. Final: [[B>A]]", "model_vote": None,
         "human_vote": "rightvote", "correct": False},
        {"idx": 4, "response": "[[A>>B]]", "model_vote": "[[A>>B]]", "human_vote": "rightvote", "correct": False},
    ]


def test_judge_results_jsonl_null_vote_and_accuracy(tmp_path: Path) -> None:
    res = load_judge_results(write_jsonl(tmp_path / "pairwise.jsonl", _judge_rows()))
    assert isinstance(res, JudgeResults) and len(res) == 5
    r3 = res.by_idx()[3]
    assert r3.model_vote is None and r3.verdict is None and not r3.correct
    assert r3.response.endswith("[[B>A]]") and r3.meta == {"correct": False}
    assert res.verdicts() == ["A>B", "A=B=Bad", "A=B", None, "A>B"]
    assert res.human_votes == ["leftvote", "bothbad_vote", "tievote", "rightvote", "rightvote"]
    assert res.accuracy() == pytest.approx(3 / 5)  # the null verdict stays in the denominator
    assert res.accuracy(from_response=True) == pytest.approx(4 / 5)  # re-parsed: idx 3 -> B>A


def test_judge_results_json_array(tmp_path: Path) -> None:
    res = load_judge_results(write_json(tmp_path / "pairwise.json", _judge_rows()))
    assert [r.idx for r in res] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("row", "message"), [
    ({"idx": 0, "human_vote": "leftvote"}, r"line 2: a judge result needs fields"),
    ({"idx": 0, "human_vote": "left", "model_vote": None}, r"line 2: human_vote must be one of"),
    ({"idx": "0", "human_vote": "leftvote", "model_vote": None}, r"line 2: idx must be an integer"),
    ({"idx": 1, "human_vote": "leftvote", "model_vote": None}, r"line 2: idx 1 appears twice"),
    ({"idx": 0, "human_vote": "leftvote", "model_vote": 3}, r"line 2: model_vote must be a string or null"),
])
def test_judge_results_malformed(tmp_path: Path, row: dict, message: str) -> None:
    first = {"idx": 1, "human_vote": "tievote", "model_vote": "[[A=B]]"}
    path = write_jsonl(tmp_path / "judge.jsonl", [first, row])
    with pytest.raises(BenchmarkFormatError, match=r"judge\.jsonl, " + message):
        load_judge_results(path)


def test_judge_file_is_not_a_benchmark(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "pairwise.jsonl", _judge_rows())
    with pytest.raises(BenchmarkFormatError, match="load_judge_results"):
        load_benchmark(path)
