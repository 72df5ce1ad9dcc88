"""BenchmarkData, the reading helpers, the registry entries and the dispatcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from ieqa.data.loaders import (
    BenchmarkData,
    load_benchmark,
    preferences_from_groups,
    sniff_format,
    supported_formats,
)
from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    first_record,
    image_ref,
    read_delimited,
    read_records,
)
from ieqa.data.schema import EditSample, PreferenceLabel
from ieqa.errors import IeqaError
from ieqa.registry import BENCHMARKS

from .conftest import png_bytes, write_json, write_jsonl

NAMES = ["aurora", "ebench", "editreward-bench", "editscore-bench", "genai-bench", "imagenhub",
         "manifest", "ntire-xaigc", "shapesedit"]


def test_registry_entries() -> None:
    assert set(NAMES) <= set(BENCHMARKS.names())
    for name in NAMES:
        entry = BENCHMARKS.get(name)
        assert entry.description and callable(entry.factory)
        assert {"pointwise", "pairwise", "multiway"} & set(entry.tags)
    assert "genai-bench" in BENCHMARKS.names("pairwise")
    assert "editreward-bench" in BENCHMARKS.names("multiway")
    assert "imagenhub" in BENCHMARKS.names("pointwise")
    assert "manifest" in supported_formats()


def test_unrecognised_file_lists_formats(tmp_path: Path) -> None:
    path = write_json(tmp_path / "odd.json", [{"foo": 1}])
    assert sniff_format(path) is None
    with pytest.raises(IeqaError, match=r"(?s)cannot tell which benchmark format.*imagenhub:.*genai-bench:.*manifest:") as err:
        load_benchmark(path)
    assert "root=" in str(err.value)
    with pytest.raises(BenchmarkFormatError, match="neither a registered benchmark"):
        load_benchmark(tmp_path / "missing.json")
    with pytest.raises(BenchmarkFormatError, match="does not exist"):
        load_benchmark("aurora", root=tmp_path / "nowhere")


def test_summary() -> None:
    s = [EditSample(id=f"s{i}", edited=Path(f"{i}.png"), group_id="g", scores={"overall": float(i % 2)})
         for i in range(3)]
    prefs = preferences_from_groups(s, "overall", multiway=True)
    data = BenchmarkData("demo", "multiway", s, prefs, ["overall"], {"score_scale": [0, 1]})
    text = data.summary()
    assert text.splitlines()[0] == "demo: multiway, 3 samples, 3 preferences"
    assert "K=3: 1" in text and "score scale: [0, 1]" in text and "tie 1" in text
    assert [p.label for p in prefs] == [PreferenceLabel.B, PreferenceLabel.TIE, PreferenceLabel.A]
    assert data.sample_by_id()["s1"] is s[1]


def test_read_records_json_jsonl_and_wrapped(tmp_path: Path) -> None:
    assert [w for w, _ in read_records(write_json(tmp_path / "a.json", [{"x": 1}, {"x": 2}]))] == ["item 1", "item 2"]
    assert [w for w, _ in read_records(write_jsonl(tmp_path / "b.jsonl", [{"x": 1}, {"x": 2}]))] == ["line 1", "line 2"]
    assert [r for _, r in read_records(write_json(tmp_path / "c.json", {"results": [{"x": 3}]}))] == [{"x": 3}]
    (tmp_path / "d.jsonl").write_text('{"x": 1}\n{"x": \n', encoding="utf-8")
    with pytest.raises(BenchmarkFormatError, match=r"d\.jsonl, line 2: not valid JSON"):
        list(read_records(tmp_path / "d.jsonl"))


def test_read_delimited_reports_ragged_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(BenchmarkFormatError, match=r"t\.csv, line 3: more cells than the 2 header columns"):
        list(read_delimited(path))


def test_image_ref_forms(tmp_path: Path) -> None:
    data = png_bytes()
    assert image_ref("a/b.png", tmp_path, "f", "row 1", "img") == tmp_path / "a" / "b.png"
    assert image_ref("/abs/b.png", tmp_path, "f", "row 1", "img") == Path("/abs/b.png")
    assert image_ref({"bytes": data, "path": "x.png"}, tmp_path, "f", "row 1", "img") == data
    assert image_ref({"bytes": None, "path": "x.png"}, tmp_path, "f", "row 1", "img") == tmp_path / "x.png"
    assert image_ref(bytearray(data), None, "f", "row 1", "img") == data
    assert image_ref("", tmp_path, "f", "row 1", "img") is None
    with pytest.raises(BenchmarkFormatError, match=r"f, row 1: img must be an image path"):
        image_ref(3.5, tmp_path, "f", "row 1", "img")


def test_sample_validation_errors_name_the_row(tmp_path: Path) -> None:
    rows = [{"key": ["", "b"], "instruction": "i", "input_image": "s.png", "output_images": ["a.png", "b.png"],
             "task_type": "extract", "dimension": "overall"}]
    with pytest.raises(BenchmarkFormatError, match=r"bench\.jsonl, line 1: id: .*non-empty"):
        load_benchmark(write_jsonl(tmp_path / "bench.jsonl", rows))


def test_first_record_reads_the_head_only_when_it_can(tmp_path: Path) -> None:
    rows = [{"x": i, "pad": "y" * 100} for i in range(200)]
    path = write_json(tmp_path / "big.json", rows)
    assert first_record(path) == rows[0]
    assert first_record(path, chunk=50) == rows[0]  # the first record is cut: falls back to a full read
    assert first_record(write_json(tmp_path / "w.json", {"results": [{"x": 1}]})) == {"x": 1}
    assert first_record(write_jsonl(tmp_path / "l.jsonl", rows[:2])) == rows[0]
    (tmp_path / "bad.json").write_text("[{oops", encoding="utf-8")
    assert first_record(tmp_path / "bad.json") is None
