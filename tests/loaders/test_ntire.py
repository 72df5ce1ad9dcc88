"""NTIRE-style MOS tables: column matching, dimension aliases, the in/out split."""

from __future__ import annotations

from pathlib import Path

import pytest

from ieqa.data.loaders import load_benchmark, load_ntire, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.loaders.ntire import mos_dimension


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


CSV = """\
source_image,edited_image,instruction,model,MOS_visual_quality,editing_fidelity,content_preservation,split
img/src.png,img/e1.png,make it red,EditorA,3.5,4.25,2,in-distribution
img/src.png,img/e2.png,make it red,EditorB,1.5,,4.75,out-of-distribution
"""


def test_columns_aliases_and_split(tmp_path: Path, images: dict[str, Path]) -> None:
    path = _write(tmp_path / "train.csv", CSV)
    assert sniff_format(path) == "ntire-xaigc"
    data = load_benchmark(path)
    assert data.protocol == "pointwise"
    assert data.dimensions == ["content_preservation", "instruction_alignment", "visual_quality"]
    a, b = data.samples
    assert a.scores == {"visual_quality": 3.5, "instruction_alignment": 4.25, "content_preservation": 2.0}
    assert b.scores == {"visual_quality": 1.5, "content_preservation": 4.75}  # empty cell: no score
    assert a.source == images["src"] and a.edited == images["e1"] and a.id == "e1"
    assert a.instruction == "make it red" and a.editor == "EditorA" and a.group_id == b.group_id
    assert (a.meta["split"], b.meta["split"]) == ("in", "out")
    assert data.meta["splits"] == {"in": 1, "out": 1}
    assert data.meta["columns"]["mos"] == {"MOS_visual_quality": "visual_quality",
                                           "editing_fidelity": "instruction_alignment",
                                           "content_preservation": "content_preservation"}


def test_mos_dimension() -> None:
    assert mos_dimension("MOS_VQ") == "visual_quality"
    assert mos_dimension("mos") == "overall"
    assert mos_dimension("Editing Fidelity MOS") == "instruction_alignment"
    assert mos_dimension("comments") is None


def test_columns_override_ood_flag_and_registered_name(tmp_path: Path) -> None:
    text = "pic;prompt;q;ood\nx/1.png;p;10;0\nx/2.png;p;20;1\n"
    _write(tmp_path / "labels" / "mos.csv", text)
    data = load_benchmark("ntire-xaigc", root=tmp_path / "labels",
                          columns={"edited": "pic", "q": "overall"}, image_root=tmp_path / "images")
    assert [s.scores for s in data.samples] == [{"overall": 10.0}, {"overall": 20.0}]
    assert [s.meta["split"] for s in data.samples] == ["in", "out"]
    assert data.samples[0].edited == tmp_path / "images" / "x" / "1.png"


def test_bad_number_names_row_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.csv", "edited,visual_quality\na.png,3\nb.png,high\n")
    with pytest.raises(BenchmarkFormatError, match=r"t\.csv, line 3: MOS column 'visual_quality' must be a number"):
        load_ntire(path)


def test_no_mos_or_no_image_column(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkFormatError, match="no MOS column"):
        load_ntire(_write(tmp_path / "a.csv", "edited,comment\na.png,ok\n"))
    with pytest.raises(BenchmarkFormatError, match="no edited-image column"):
        load_ntire(_write(tmp_path / "b.csv", "foo,visual_quality\na.png,1\n"))


def test_duplicate_ids(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.csv", "id,edited,overall\n1,a.png,1\n1,b.png,2\n")
    with pytest.raises(BenchmarkFormatError, match=r"d\.csv, line 3: id '1' appears twice"):
        load_ntire(path)
