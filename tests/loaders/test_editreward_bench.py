"""EditReward-Bench (TIGER): comparison rows grouped into K = 2, 3, 4 multi-way groups."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ieqa.data.loaders import load_benchmark, load_editreward_bench, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.schema import PreferenceLabel

from .conftest import png_bytes, write_json, write_jsonl

A, B, TIE = PreferenceLabel.A, PreferenceLabel.B, PreferenceLabel.TIE


def _row(rid: str, subset: str, ct: str, ranking: str, colors: tuple[int, int] = (1, 2)) -> dict:
    return {
        "id": rid, "instruction": f"edit {rid.split('_')[0]}", "dataset": subset,
        "source_image": {"bytes": png_bytes((0, 0, 0)), "path": None},
        "candidate_1": {"bytes": png_bytes((colors[0], 0, 0)), "path": None},
        "candidate_2": {"bytes": png_bytes((colors[1], 0, 0)), "path": None},
        "ranking": ranking, "comparison_type": ct, "score_1": 6.0, "score_2": 4.5,
        "model_1": f"model{ct[0]}", "model_2": f"model{ct[-1]}",
    }


ROWS_2 = [_row("g2a_0", "2pair", "AvsB", "A>B"), _row("g2b_0", "2pair", "AvsB", "A=B")]
# K=3: true order C > A > B
ROWS_3 = [_row("g3_0", "3pair", "AvsB", "A>B"), _row("g3_1", "3pair", "AvsC", "C>A"),
          _row("g3_2", "3pair", "BvsC", "C>B")]
# K=4: true order D > B > A > C
ROWS_4 = [_row(f"g4_{i}", "4pair", ct, r) for i, (ct, r) in enumerate(
    [("AvsB", "B>A"), ("AvsC", "A>C"), ("AvsD", "D>A"), ("BvsC", "B>C"), ("BvsD", "D>B"), ("CvsD", "D>C")])]


def _write_hub_layout(root: Path) -> Path:
    for name, rows in (("2pair", ROWS_2), ("3pair", ROWS_3), ("4pair", ROWS_4)):
        (root / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), root / name / "train-00000-of-00001.parquet")
    return root


def test_hub_layout_groups_and_labels(tmp_path: Path) -> None:
    root = _write_hub_layout(tmp_path / "EditReward-Bench")
    assert sniff_format(root) == "editreward-bench"
    data = load_benchmark("editreward-bench", root=root)
    assert data.protocol == "multiway" and data.dimensions == ["overall"]
    assert len(data.preferences) == 2 + 3 + 6
    assert len(data.samples) == 2 + 2 + 3 + 4  # one sample per (group, letter)
    by_group: dict[str, list] = {}
    for p in data.preferences:
        by_group.setdefault(p.meta["group_id"], []).append(p)
    assert {g: (len(ps), ps[0].meta["K"]) for g, ps in by_group.items()} == {
        "g2a": (1, 2), "g2b": (1, 2), "g3": (3, 3), "g4": (6, 4)}
    assert [p.label for p in by_group["g3"]] == [A, B, B]  # A>B; AvsC "C>A"; BvsC "C>B"
    assert [p.label for p in by_group["g4"]] == [B, A, B, A, B, B]
    assert by_group["g2b"][0].label == TIE
    p = by_group["g3"][1]
    assert p.a.id == "g3_A" and p.b.id == "g3_C"  # a = candidate_1 = the first letter
    assert p.meta["comparison_type"] == "AvsC" and p.meta["ranking"] == "C>A"
    assert p.a.editor == "modelA" and p.b.editor == "modelC"
    assert p.a.meta["human_score"] == 6.0 and p.a.meta["letter"] == "A"
    assert isinstance(p.a.edited, bytes) and isinstance(p.a.source, bytes)
    assert p.a.instruction == "edit g3" and p.a.group_id == "g3"
    assert "K=4: 1" in data.summary()


def test_subsets(tmp_path: Path) -> None:
    root = _write_hub_layout(tmp_path / "bench")
    data = load_editreward_bench(root, subsets=("3pair", "4pair"))
    assert {p.meta["K"] for p in data.preferences} == {3, 4}


def test_jsonl_rows_with_paths(tmp_path: Path, images: dict[str, Path]) -> None:
    rows = [{"id": "x_0", "instruction": "add a hat", "source_image": "img/src.png",
             "candidate_1": "img/e1.png", "candidate_2": "img/e2.png", "ranking": "B>A"}]
    data = load_benchmark(write_jsonl(tmp_path / "rows.jsonl", rows))
    p = data.preferences[0]
    assert p.label == B and p.a.edited == images["e1"] and p.a.source == images["src"]
    assert p.meta["K"] == 2 and p.meta["group_id"] == "x"


def test_group_records_layout(tmp_path: Path, images: dict[str, Path]) -> None:
    recs = [
        {"prompt": "make it red", "path_src": "img/src.png", "paths_generated": ["img/e1.png", "img/e2.png", "img/src.png"],
         "human_vote": {"ranking": "C>A>B"}},
        {"prompt": "tie", "path_src": "img/src.png", "paths_generated": ["img/e1.png", "img/e2.png"],
         "human_vote": {"ranking": "A=B=Bad"}},
    ]
    data = load_editreward_bench(write_json(tmp_path / "EditReward_Bench_3pair.json", recs))
    g0 = [p for p in data.preferences if p.meta["group_id"] == "g0"]
    assert [(p.a.meta["letter"], p.b.meta["letter"], p.label) for p in g0] == [
        ("A", "B", A), ("A", "C", B), ("B", "C", B)]
    assert all(p.meta["K"] == 3 for p in g0)
    g1 = [p for p in data.preferences if p.meta["group_id"] == "g1"]
    assert g1[0].label == PreferenceLabel.BOTH_BAD and g1[0].meta["K"] == 2


@pytest.mark.parametrize(("change", "message"), [
    ({"ranking": "A>>B?"}, r"ranking must look like"),
    ({"ranking": "A>C"}, r"ranking 'A>C' does not compare the candidates A \(candidate_1\) and B"),
    ({"comparison_type": "A-B"}, r"comparison_type must look like 'AvsC'"),
    ({"candidate_2": None}, r"missing field\(s\) \['candidate_2'\]"),
])
def test_malformed_rows(tmp_path: Path, images: dict[str, Path], change: dict, message: str) -> None:
    good = {"id": "x_0", "instruction": "i", "candidate_1": "img/e1.png", "candidate_2": "img/e2.png",
            "ranking": "A>B", "comparison_type": "AvsB"}
    path = write_jsonl(tmp_path / "rows.jsonl", [good, {**good, "id": "x_1", **change}])
    with pytest.raises(BenchmarkFormatError, match=r"rows\.jsonl, line 2: " + message):
        load_editreward_bench(path)


def test_bad_group_ranking(tmp_path: Path) -> None:
    recs = [{"prompt": "p", "path_src": "s.png", "paths_generated": ["a.png", "b.png", "c.png"],
             "human_vote": {"ranking": "A>B"}}]
    with pytest.raises(BenchmarkFormatError, match=r"g\.json, item 1: ranking 'A>B' must order all of ABC"):
        load_editreward_bench(write_json(tmp_path / "g.json", recs))
