"""AURORA: triplets (incl. the real shared subset), pointwise and pairwise human ratings."""

from __future__ import annotations

from pathlib import Path

import pytest

from ieqa.data.loaders import load_aurora, load_benchmark, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.schema import PreferenceLabel
from shared_data import shared_data

from .conftest import write_json, write_jsonl


def test_real_aurora_subset() -> None:
    folder = shared_data() / "aurora_subset"
    if not (folder / "pairs.json").is_file():
        pytest.skip(f"shared AURORA subset not found at {folder} (set IEQA_SHARED_DATA to the shared data folder)")
    assert sniff_format(folder) == "aurora"
    data = load_benchmark(folder)
    assert data.protocol == "pointwise" and data.meta["kind"] == "triplets"
    assert len(data.samples) == 198
    assert len({s.id for s in data.samples}) == 198
    for s in data.samples:
        assert isinstance(s.source, Path) and s.source.is_file(), s.source
        assert isinstance(s.edited, Path) and s.edited.is_file(), s.edited
        assert s.source.is_relative_to(folder) and s.edited.is_relative_to(folder)
        assert s.instruction and s.editor == "ground_truth" and s.scores == {}
    assert {s.task for s in data.samples} <= {"ag", "kubric", "something", "whatsup"}
    assert load_benchmark("aurora", root=folder).samples[0].id == data.samples[0].id


def test_triplets_prompt_or_instruction(tmp_path: Path, images: dict[str, Path]) -> None:
    rows = [
        {"input": "img/src.png", "output": "img/e1.png", "prompt": "Put a cat on the seat.",
         "task": "magicbrush", "mask": "m1.png"},
        {"input": "img/src.png", "output": "img/e1.png", "instruction": "Make her close the door", "task": "ag",
         "pos": "Make her open the door"},
        {"input": "img/src.png", "output": "img/e1.png", "prompt": "again", "task": "ag"},
    ]
    data = load_aurora(write_json(tmp_path / "test.json", rows))
    a, b, c = data.samples
    assert a.instruction == "Put a cat on the seat." and a.task == "magicbrush" and a.meta == {"mask": "m1.png"}
    assert a.source == images["src"] and a.edited == images["e1"]
    assert b.instruction == "Make her close the door" and b.meta == {"pos": "Make her open the door"}
    assert b.id == "ag/e1" and c.id == "ag/e1#2"  # ids stay unique


def test_pointwise_ratings(tmp_path: Path, images: dict[str, Path]) -> None:
    rows = [{"prompt": "add snow", "input": "img/src.png", "gen": "img/e1.png", "score": 2.5,
             "model": "MagicBrush", "filename": "x1"},
            {"prompt": "add snow", "path_src": "img/src.png", "output": "img/e2.png", "score": "1", "model": "Aurora"}]
    data = load_benchmark(write_jsonl(tmp_path / "pointwise.jsonl", rows))
    assert data.name == "aurora" and data.protocol == "pointwise" and data.dimensions == ["overall"]
    s1, s2 = data.samples
    assert (s1.id, s1.scores, s1.editor, s1.edited) == ("x1", {"overall": 2.5}, "MagicBrush", images["e1"])
    assert (s2.id, s2.scores, s2.source) == ("1", {"overall": 1.0}, images["src"])
    assert s1.group_id == s2.group_id


def test_pairwise_ratings(tmp_path: Path, images: dict[str, Path]) -> None:
    rows = [
        {"prompt": "p", "path_src": "img/src.png", "path1": "img/e1.png", "path2": "img/e2.png",
         "model1_dim1_score": 2, "model2_dim1_score": 1, "model1": "A", "model2": "B"},
        {"prompt": "p", "path_src": "img/src.png", "path1": "img/e1.png", "path2": "img/e2.png", "scores": [0, 2]},
        {"prompt": "p", "path_src": "img/src.png", "path1": "img/e1.png", "path2": "img/e2.png", "scores": [1, 1]},
    ]
    data = load_benchmark(write_json(tmp_path / "pairwise.json", rows))
    assert data.protocol == "pairwise"
    assert [p.label for p in data.preferences] == [PreferenceLabel.A, PreferenceLabel.B, PreferenceLabel.TIE]
    p = data.preferences[0]
    assert p.a.edited == images["e1"] and p.b.edited == images["e2"] and p.a.source == images["src"]
    assert (p.a.editor, p.b.editor) == ("A", "B") and p.a.scores == {"overall": 2.0}
    assert len(data.samples) == 6


@pytest.mark.parametrize(("row", "message"), [
    ({"prompt": "p", "path_src": "s.png", "path1": "a.png", "path2": "b.png"}, r"a pairwise rating needs 'scores'"),
    ({"prompt": "p", "path_src": "s.png", "path1": "a.png", "path2": "b.png", "scores": [1, "x"]},
     r"score 2 must be a number"),
    ({"prompt": "p", "path_src": "s.png", "path1": "a.png", "scores": [1, 2]},
     r"missing the image path \(one of \['path2'\]\)"),
    ({"path_src": "s.png", "path1": "a.png", "path2": "b.png", "scores": [1, 2]}, r"missing the instruction"),
])
def test_malformed_pairwise(tmp_path: Path, row: dict, message: str) -> None:
    good = {"prompt": "p", "path_src": "s.png", "path1": "a.png", "path2": "b.png", "scores": [1, 2]}
    with pytest.raises(BenchmarkFormatError, match=r"pw\.json, item 2: " + message):
        load_aurora(write_json(tmp_path / "pw.json", [good, row]))


def test_folder_with_several_files_needs_file(tmp_path: Path) -> None:
    row = {"input": "a.png", "output": "b.png", "prompt": "p"}
    write_json(tmp_path / "one.json", [row])
    write_json(tmp_path / "two.json", [row])
    with pytest.raises(BenchmarkFormatError, match="pass one with file="):
        load_aurora(tmp_path)
    assert len(load_aurora(tmp_path, file="two.json").samples) == 1
