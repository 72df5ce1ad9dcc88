"""ShapesEdit folders (pointwise / pairwise / multi-way views) and ieqa manifests."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ieqa.data.loaders import load_benchmark, load_manifest, load_shapesedit, sniff_format
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.manifest import write_manifest, write_preferences
from ieqa.data.schema import EditSample, Preference, PreferenceLabel
from ieqa.data.shapesedit import ShapesEditConfig, generate
from ieqa.errors import IeqaError


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shapes")
    generate(out, ShapesEditConfig(n=12, k=4, seed=3, size=64, photo_fraction=0.0))
    return out


def test_shapesedit_pointwise(shapes: Path) -> None:
    assert sniff_format(shapes) == "shapesedit"
    data = load_benchmark(shapes)
    assert data.name == "shapesedit" and data.protocol == "pointwise"
    assert len(data.samples) == 12 and data.preferences == []
    assert data.meta["score_scale"] == [1, 5]
    assert data.dimensions == ["content_preservation", "instruction_alignment", "overall", "visual_quality"]
    assert data.meta["true_editor_ranking"]
    assert all(1.0 <= v <= 5.0 for s in data.samples for v in s.scores.values())


@pytest.mark.parametrize("view", ["pairwise", "multiway"])
def test_shapesedit_preference_views(shapes: Path, view: str) -> None:
    data = load_benchmark("shapesedit", root=shapes, view=view, dimension="instruction following")
    assert data.protocol == view and data.meta["preference_dimension"] == "instruction_alignment"
    assert len(data.preferences) == 3 * 6  # 3 groups of K=4 -> 6 pairs each
    for p in data.preferences:
        assert p.a.group_id == p.b.group_id == p.meta["group_id"]
        sa, sb = p.a.scores["instruction_alignment"], p.b.scores["instruction_alignment"]
        want = PreferenceLabel.TIE if abs(sa - sb) <= 1e-9 else (PreferenceLabel.A if sa > sb else PreferenceLabel.B)
        assert p.label == want
        assert ("K" in p.meta) == (view == "multiway")
    if view == "multiway":
        assert {p.meta["K"] for p in data.preferences} == {4}


def test_shapesedit_errors(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkFormatError, match="not a ShapesEdit folder"):
        load_shapesedit(tmp_path)


def _samples(tmp_path: Path) -> list[EditSample]:
    return [EditSample(id=f"s{i}", edited=tmp_path / f"e{i}.png", instruction="i", group_id="g",
                       scores={"SC": float(i), "PQ": 1.0}) for i in range(3)]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_manifest_pointwise(tmp_path: Path, suffix: str) -> None:
    path = write_manifest(_samples(tmp_path), tmp_path / f"m{suffix}")
    assert sniff_format(path) == "manifest"
    data = load_benchmark(path)
    assert data.protocol == "pointwise" and [s.id for s in data.samples] == ["s0", "s1", "s2"]
    assert data.dimensions == ["instruction_alignment", "visual_quality"]  # SC / PQ aliases
    assert load_benchmark("manifest", root=path).samples[2].scores["instruction_alignment"] == 2.0


def test_manifest_preferences_pairwise_and_multiway(tmp_path: Path) -> None:
    s = _samples(tmp_path)
    pairs = [Preference(a=a, b=b, label="b>a", dimension="prompt_following") for a, b in itertools.combinations(s, 2)]
    data = load_manifest(write_preferences(pairs, tmp_path / "p.jsonl"))
    assert data.protocol == "pairwise" and len(data.preferences) == 3 and len(data.samples) == 3
    assert data.dimensions == ["instruction_alignment"]
    multi = [p.model_copy(update={"meta": {"group_id": "g", "K": 3}}) for p in pairs]
    data = load_benchmark(write_preferences(multi, tmp_path / "q.jsonl"))
    assert data.protocol == "multiway" and data.preferences[0].meta == {"group_id": "g", "K": 3}


def test_manifest_malformed_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "edited": "a.png"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(IeqaError, match=r"bad\.jsonl, line 2"):
        load_manifest(path)
