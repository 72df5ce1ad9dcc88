"""ImagenHub rater TSVs: '[SC, PQ]' parsing, sqrt(SC*PQ) per rater, mean over raters."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ieqa.data.loaders import load_benchmark, load_imagenhub, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.loaders.imagenhub import parse_cell

# rater -> rows (uid, MagicBrush cell, SDEdit cell); spacing varies as in the public files
RATERS = {
    1: [("sample_1_1.jpg", "[1, 1]", "[0,0.5]"), ("sample_2_1.jpg", "[0.5, 1]", "[0 , 0]")],
    2: [("sample_1_1.jpg", "[1,0.5]", "[0.5, 0.5]"), ("sample_2_1.jpg", "[0, 1]", "[1 , 1]")],
    3: [("sample_1_1.jpg", "[0.5, 0.5]", "[0, 1]"), ("sample_2_1.jpg", "[1, 1]", "")],
}


def _write(folder: Path, task: str = "Text-Guided_IE", raters: dict = RATERS) -> Path:
    d = folder / task
    d.mkdir(parents=True, exist_ok=True)
    for r, rows in raters.items():
        lines = ["uid\tMagicBrush\tSDEdit"] + ["\t".join(row) for row in rows]
        (d / f"{task}_rater{r}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_parse_cell() -> None:
    assert parse_cell("[0.5, 1]", "f", "line 2", "m") == (0.5, 1.0)
    assert parse_cell(" [1 , 0] ", "f", "line 2", "m") == (1.0, 0.0)
    assert parse_cell("", "f", "line 2", "m") is None
    assert parse_cell("nan", "f", "line 2", "m") is None


def test_scores_by_hand(tmp_path: Path) -> None:
    data = load_imagenhub(_write(tmp_path))
    assert data.protocol == "pointwise" and data.meta["score_scale"] == [0.0, 1.0]
    by_id = data.sample_by_id()
    s = by_id["Text-Guided_IE/MagicBrush/sample_1_1.jpg"]
    # raters: [1,1], [1,0.5], [0.5,0.5]
    assert s.scores["instruction_alignment"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert s.scores["visual_quality"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert s.scores["overall"] == pytest.approx((math.sqrt(1) + math.sqrt(0.5) + math.sqrt(0.25)) / 3)
    assert len(s.ratings) == 9
    r2 = [r for r in s.ratings if r.rater == "rater2"]
    assert {r.dimension: r.value for r in r2} == pytest.approx(
        {"instruction_alignment": 1.0, "visual_quality": 0.5, "overall": math.sqrt(0.5)})
    assert s.editor == "MagicBrush" and s.task == "Text-Guided_IE"
    assert s.group_id == "Text-Guided_IE/sample_1_1.jpg" == by_id["Text-Guided_IE/SDEdit/sample_1_1.jpg"].group_id
    # an empty cell: that rater is left out of the mean
    t = by_id["Text-Guided_IE/SDEdit/sample_2_1.jpg"]
    assert t.meta["n_raters"] == 2
    assert t.scores["overall"] == pytest.approx((0 + 1) / 2)
    assert data.meta["raters"] == {"Text-Guided_IE": ["rater1", "rater2", "rater3"]}


def test_image_root_and_task_selection(tmp_path: Path) -> None:
    _write(tmp_path)
    _write(tmp_path, task="Text-To-Image")
    data = load_imagenhub(tmp_path, image_root=tmp_path / "results" / "ImagenHub_{task}")
    assert data.meta["tasks"] == ["Text-Guided_IE"]  # editing tasks only by default
    s = data.sample_by_id()["Text-Guided_IE/MagicBrush/sample_1_1.jpg"]
    assert s.edited == tmp_path / "results" / "ImagenHub_Text-Guided_IE" / "MagicBrush" / "sample_1_1.jpg"
    assert s.source == tmp_path / "results" / "ImagenHub_Text-Guided_IE" / "input" / "sample_1_1.jpg"
    both = load_imagenhub(tmp_path, task=["Text-Guided_IE", "Text-To-Image"])
    assert len(both.samples) == 8
    with pytest.raises(BenchmarkFormatError, match="no rater files for task"):
        load_imagenhub(tmp_path, task="Mask-Guided_IE")


def test_one_file_loads_its_sibling_raters_and_sniffs(tmp_path: Path) -> None:
    _write(tmp_path)
    one = tmp_path / "Text-Guided_IE" / "Text-Guided_IE_rater2.tsv"
    assert sniff_format(one) == "imagenhub" and sniff_format(tmp_path) == "imagenhub"
    data = load_benchmark(one)
    assert len(data.samples) == 4 and data.samples[0].meta["n_raters"] in (2, 3)
    assert len(load_benchmark("imagenhub", root=tmp_path).samples) == 4


@pytest.mark.parametrize(("cell", "message"), [
    ("[0.7, 1]", r"column 'SDEdit': SC=0\.7 is not one of 0, 0\.5, 1"),
    ("[1, 2]", r"column 'SDEdit': PQ=2 is not one of"),
    ("0.5, 1", r"column 'SDEdit': expected '\[SC, PQ\]'"),
    ("[1, 1, 1]", r"column 'SDEdit': expected '\[SC, PQ\]'"),
])
def test_malformed_cells_name_file_row_and_column(tmp_path: Path, cell: str, message: str) -> None:
    raters = {1: [("sample_1_1.jpg", "[1, 1]", "[1, 1]"), ("sample_2_1.jpg", "[1, 1]", cell)]}
    _write(tmp_path, raters=raters)
    with pytest.raises(BenchmarkFormatError, match=r"Text-Guided_IE_rater1\.tsv, line 3: " + message):
        load_imagenhub(tmp_path)


def test_missing_uid_column(tmp_path: Path) -> None:
    d = tmp_path / "T_IE"
    d.mkdir()
    (d / "T_IE_rater1.tsv").write_text("id\tM\nx.jpg\t[1, 1]\n", encoding="utf-8")
    with pytest.raises(BenchmarkFormatError, match=r"T_IE_rater1\.tsv, line 2: the first column must be 'uid'"):
        load_imagenhub(tmp_path)
