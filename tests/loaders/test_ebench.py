"""EBench-18K / LMM4Edit: query/response/images records in three dimension split files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ieqa.data.loaders import load_benchmark, load_ebench, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError

from .conftest import write_jsonl

PHRASES = {"v": "visual quality", "e": "editing correspondence", "c": "attribute preservation"}
PREFIX = "/mnt/data/authors/editing_all"


def _record(dim: str, score: str, model: str = "model00", name: str = "H_00_04", ins: str = "Add a fish") -> dict:
    phrase = PHRASES[dim]
    return {
        "query": f"With the image editing prompt [{ins}], the source image <image> is edited to generate the "
                 f"target image <image>. Please rate the {phrase} of the target image on a scale of 0-100. "
                 f"Higher score means better {phrase}. Just reply a sentence in the following format: "
                 "[The quality score is XX.XX (a number with two decimal)]",
        "response": f"The quality score is {score}",
        "images": [f"{PREFIX}/sourceimg_h/{model}/{name}.jpg", f"{PREFIX}/targetimg_h/{model}/{name}.jpg"],
    }


def _write_splits(folder: Path) -> Path:
    write_jsonl(folder / "test_v.json", [_record("v", "34.49"), _record("v", "41.7", model="model01")])
    write_jsonl(folder / "test_e.json", [_record("e", "75.47"), _record("e", "33.19", model="model01")])
    write_jsonl(folder / "test_c.json", [_record("c", "48.95")])
    write_jsonl(folder / "train_v.json", [_record("v", "99", name="H_09_09")])
    write_jsonl(folder / "test_yn.json", [{"query": "Is it good?", "response": "Yes", "images": ["a", "b"]}])
    return folder


def test_splits_merge_into_samples(tmp_path: Path) -> None:
    root = _write_splits(tmp_path / "ebench")
    assert sniff_format(root) == "ebench"
    data = load_benchmark("ebench", root=root)
    assert data.protocol == "pointwise" and data.meta["score_scale"] == [0.0, 100.0]
    assert data.dimensions == ["content_preservation", "instruction_alignment", "visual_quality"]
    by_id = data.sample_by_id()
    assert sorted(by_id) == ["model00/H_00_04", "model01/H_00_04"]  # train_ and _yn files skipped
    s = by_id["model00/H_00_04"]
    assert s.scores == {"visual_quality": 34.49, "instruction_alignment": 75.47, "content_preservation": 48.95}
    assert s.instruction == "Add a fish" and s.editor == "model00"
    assert s.edited == Path(f"{PREFIX}/targetimg_h/model00/H_00_04.jpg")
    assert s.group_id == by_id["model01/H_00_04"].group_id
    assert by_id["model01/H_00_04"].scores == {"visual_quality": 41.7, "instruction_alignment": 33.19}
    assert sorted(data.meta["splits"]) == ["test_c.json", "test_e.json", "test_v.json"]


def test_other_split_and_image_remap(tmp_path: Path) -> None:
    root = _write_splits(tmp_path / "ebench")
    data = load_ebench(root, split="train", image_remap={PREFIX: str(tmp_path / "imgs")})
    s = data.samples[0]
    assert s.id == "model00/H_09_09" and s.scores == {"visual_quality": 99.0}
    assert s.source == tmp_path / "imgs" / "sourceimg_h" / "model00" / "H_09_09.jpg"


def test_single_file(tmp_path: Path) -> None:
    data = load_benchmark(write_jsonl(tmp_path / "mine.jsonl", [_record("c", "50")]))
    assert data.samples[0].scores == {"content_preservation": 50.0}


@pytest.mark.parametrize(("change", "message"), [
    ({"response": "Quality: good"}, r"response must read 'The quality score is XX\.XX'"),
    ({"images": ["only.jpg"]}, r"images must be \[source, edited\]"),
    ({"query": "Please rate the sharpness of the target image"}, r"unknown dimension 'sharpness'"),
    ({"response": None}, r"missing field\(s\) \['response'\]"),
])
def test_malformed_records(tmp_path: Path, change: dict, message: str) -> None:
    path = write_jsonl(tmp_path / "test_v.json", [_record("v", "1"), {**_record("v", "2", name="H_1"), **change}])
    with pytest.raises(BenchmarkFormatError, match=r"test_v\.json, line 2: " + message):
        load_ebench(path)


def test_duplicate_score(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "test_v.json", [_record("v", "1"), _record("v", "2")])
    with pytest.raises(BenchmarkFormatError, match=r"line 2: edit 'model00/H_00_04' already has a visual_quality"):
        load_ebench(path)
