"""EditScore's EditReward-Bench: preferred-first pairs, task types, dimension aliases."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ieqa.data.loaders import load_benchmark, load_editscore_bench, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.schema import PreferenceLabel

from .conftest import png_bytes, write_jsonl


def _rows() -> list[dict]:
    base = {"instruction": "make the car red", "input_image": "img/src.png",
            "output_images": ["img/e1.png", "img/e2.png"], "task_type": "color_alter"}
    return [
        {**base, "key": ["k1", "k2"], "dimension": "prompt_following"},
        {**base, "key": ["k1", "k2"], "dimension": "consistency"},
        {**base, "key": ["k2", "k1"], "output_images": ["img/e2.png", "img/e1.png"], "dimension": "overall",
         "task_type": "subject-add"},
    ]


def test_jsonl_rows_dimensions_and_labels(tmp_path: Path, images: dict[str, Path]) -> None:
    path = write_jsonl(tmp_path / "bench.jsonl", _rows())
    assert sniff_format(path) == "editscore-bench"
    data = load_benchmark(path)
    assert data.protocol == "pairwise"
    assert [p.dimension for p in data.preferences] == [
        "instruction_alignment", "content_preservation", "overall"]
    assert data.dimensions == ["content_preservation", "instruction_alignment", "overall"]
    assert all(p.label == PreferenceLabel.A for p in data.preferences)  # preferred output first
    p = data.preferences[0]
    assert p.a.id == "k1" and p.a.edited == images["e1"] and p.b.edited == images["e2"]
    assert p.a.source == images["src"] and p.a.instruction == "make the car red" and p.a.task == "color_alter"
    assert p.meta == {"task_type": "color_alter", "key": ["k1", "k2"], "dimension_name": "prompt_following"}
    third = data.preferences[2]
    assert third.a.id == "k2" and third.a.edited == images["e2"]
    assert len(data.samples) == 2  # outputs are deduplicated by key
    assert data.meta["task_types"] == {"color_alter": 2, "subject-add": 1}


def test_dimension_filter_takes_aliases(tmp_path: Path, images: dict[str, Path]) -> None:
    path = write_jsonl(tmp_path / "bench.jsonl", _rows())
    data = load_editscore_bench(path, dimensions=["prompt_following"])
    assert [p.dimension for p in data.preferences] == ["instruction_alignment"]


def test_arrow_file_with_embedded_images(tmp_path: Path) -> None:
    img = lambda c: {"bytes": png_bytes((c, 0, 0)), "path": None}  # noqa: E731
    table = pa.Table.from_pylist([{
        "key": ["a1", "a2"], "instruction": "remove the dog", "input_image": img(0),
        "output_images": [img(1), img(2)], "task_type": "subject-remove", "dimension": "overall",
    }])
    folder = tmp_path / "EditReward-Bench" / "train"
    folder.mkdir(parents=True)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = load_benchmark("editscore-bench", root=tmp_path / "EditReward-Bench")
    p = data.preferences[0]
    assert isinstance(p.a.edited, bytes) and p.a.edited != p.b.edited
    assert p.dimension == "overall" and p.meta["task_type"] == "subject-remove"


@pytest.mark.parametrize(("change", "message"), [
    ({"dimension": "sharpness"}, r"unknown dimension 'sharpness'"),
    ({"key": ["only-one"]}, r"key must hold two ids"),
    ({"output_images": ["img/e1.png"]}, r"output_images must hold two images"),
    ({"task_type": None}, r"missing field\(s\) \['task_type'\]"),
])
def test_malformed_rows(tmp_path: Path, change: dict, message: str) -> None:
    rows = _rows()
    rows[1] = {**rows[1], **change}
    with pytest.raises(BenchmarkFormatError, match=r"bench\.jsonl, line 2: " + message):
        load_editscore_bench(write_jsonl(tmp_path / "bench.jsonl", rows))
