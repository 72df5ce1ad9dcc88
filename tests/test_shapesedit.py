import hashlib
import json

import numpy as np
import pytest

from ieqa.data.manifest import read_manifest
from ieqa.data.shapesedit import (
    DEFAULT_EDITORS,
    EditorProfile,
    ShapesEditConfig,
    generate,
    ground_truth,
    iter_groups,
    make_group,
)
from ieqa.data.shapesedit.truth import unintended_change
from ieqa.testing.references import whole_canvas_mask


def _tree_hashes(root):
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_output(tmp_path):
    cfg = ShapesEditConfig(n=24, k=3, seed=5, size=128, photo_fraction=0.5)
    generate(tmp_path / "a", cfg)
    generate(tmp_path / "b", cfg)
    ha, hb = _tree_hashes(tmp_path / "a"), _tree_hashes(tmp_path / "b")
    assert ha == hb and len(ha) > 24  # manifest, card, sources, candidates, masks
    generate(tmp_path / "c", ShapesEditConfig(n=24, k=3, seed=6, size=128, photo_fraction=0.5))
    assert _tree_hashes(tmp_path / "c")["manifest.jsonl"] != ha["manifest.jsonl"]


def test_groups_do_not_depend_on_set_size():
    small = ShapesEditConfig(n=8, k=4, seed=2, size=96)
    large = ShapesEditConfig(n=40, k=4, seed=2, size=96)
    g_small, g_large = make_group(small, 1), make_group(large, 1)
    assert g_small.samples[0].instruction == g_large.samples[0].instruction
    assert all(np.array_equal(a, b) for a, b in zip(g_small.edited, g_large.edited, strict=True))


def test_manifest_contents(tmp_path):
    cfg = ShapesEditConfig(n=30, k=4, seed=1, size=128)
    path = generate(tmp_path, cfg, format="parquet")
    samples = read_manifest(path)
    assert len(samples) == 30  # 8 groups, the last one of 2
    assert [len([s for s in samples if s.group_id == g]) for g in sorted({s.group_id for s in samples})][-1] == 2
    card = json.loads((tmp_path / "shapesedit.json").read_text())
    assert card["true_editor_ranking"] == [e.name for e in DEFAULT_EDITORS]
    for s in samples:
        assert s.source.is_file() and s.edited.is_file()
        assert set(s.scores) == {"visual_quality", "instruction_alignment", "content_preservation", "overall"}
        assert all(1.0 <= v <= 5.0 for v in s.scores.values())
        assert len({e for e in (x.editor for x in samples if x.group_id == s.group_id)}) == \
            len([x for x in samples if x.group_id == s.group_id])  # distinct editors in a group
        if s.meta["localised"]:
            assert s.bbox is not None and s.mask.is_file()


def _pair_config(a: EditorProfile, b: EditorProfile, n: int = 48) -> ShapesEditConfig:
    return ShapesEditConfig(n=n, k=2, seed=11, size=96, editors=(a, b))


def _by_editor(cfg):
    for g in iter_groups(cfg):
        yield g, {s.editor: (s, img) for s, img in zip(g.samples, g.edited, strict=True)}


def test_perfect_edit_beats_no_op_on_alignment():
    cfg = _pair_config(EditorProfile("perfect", {"perfect": 1}, artifact_prob=0),
                       EditorProfile("noop", {"no_op": 1}, artifact_prob=0))
    for g, c in _by_editor(cfg):
        (p, p_img), (n, n_img) = c["perfect"], c["noop"]
        assert p.scores["instruction_alignment"] == 5.0 and n.scores["instruction_alignment"] == 1.0
        assert np.array_equal(n_img, g.source)  # a no-op returns the source
        assert not np.array_equal(p_img, g.source)


def test_artifacts_lower_quality_only():
    cfg = _pair_config(EditorProfile("clean", {"perfect": 1}, artifact_prob=0),
                       EditorProfile("dirty", {"perfect": 1}, artifact_prob=1, artifact_severity=(0.3, 0.9)))
    for _, c in _by_editor(cfg):
        (cl, cl_img), (di, di_img) = c["clean"], c["dirty"]
        assert di.scores["visual_quality"] < cl.scores["visual_quality"] == 5.0
        assert di.scores["instruction_alignment"] == cl.scores["instruction_alignment"]
        assert di.scores["content_preservation"] == cl.scores["content_preservation"]
        assert np.abs(di_img.astype(int) - cl_img.astype(int)).mean() > 0.5


def test_over_edit_lowers_preservation():
    cfg = _pair_config(EditorProfile("perfect", {"perfect": 1}, artifact_prob=0),
                       EditorProfile("over", {"over_edit": 1}, artifact_prob=0))
    over = []
    for _, c in _by_editor(cfg):
        (p, _), (o, _) = c["perfect"], c["over"]
        assert p.scores["content_preservation"] == 5.0
        assert o.scores["content_preservation"] < 5.0 and o.meta["unintended_change"] > 0
        assert o.scores["instruction_alignment"] == 5.0
        over.append(o.scores["content_preservation"])
    assert np.mean(over) < 4.0  # over-edits are visible, not marginal


def test_wrong_target_fails_alignment_and_preservation():
    cfg = _pair_config(EditorProfile("wrong", {"wrong_target": 1}, artifact_prob=0),
                       EditorProfile("perfect", {"perfect": 1}, artifact_prob=0), n=24)
    for _, c in _by_editor(cfg):
        w = c["wrong"][0]
        assert w.scores["instruction_alignment"] == 1.0 and w.scores["content_preservation"] < 5.0


def test_editor_profiles_follow_the_declared_ranking():
    cfg = ShapesEditConfig(n=480, k=6, seed=0, size=96, photo_fraction=0.2)
    means = {e.name: [] for e in DEFAULT_EDITORS}
    for g in iter_groups(cfg):
        for s in g.samples:
            means[s.editor].append(s.scores["overall"])
    ranked = sorted(means, key=lambda e: -np.mean(means[e]))
    assert ranked == [e.name for e in DEFAULT_EDITORS]


def test_ground_truth_formulas_by_hand():
    assert ground_truth(1.0, 0.0, 0.0) == {"visual_quality": 5.0, "instruction_alignment": 5.0,
                                           "content_preservation": 5.0, "overall": 5.0}
    gt = ground_truth(0.5, 0.1, 0.25)
    # alignment 1+4*.5=3; preservation 1+4/(1+1)=3; quality 1+4*.75=4; overall .3*4+.4*3+.3*3=3.3
    assert gt == pytest.approx({"visual_quality": 4.0, "instruction_alignment": 3.0,
                                "content_preservation": 3.0, "overall": 3.3})
    a = np.zeros((10, 10, 3), np.float32)
    b = a.copy()
    b[0, :, 1] = 0.6  # 10% of pixels change by more than the 0.3 saturation scale
    b[1, :, 0] = 0.15  # 10% change by half of it
    assert unintended_change(b, a) == pytest.approx(0.1 + 0.05)


def test_photo_sources_and_config_errors():
    g = make_group(ShapesEditConfig(n=4, k=2, seed=0, size=96, photo_fraction=1.0), 0)
    assert g.samples[0].meta["background"].startswith("photo:")
    with pytest.raises(ValueError, match="k must"):
        ShapesEditConfig(k=7)
    with pytest.raises(ValueError, match="photo_fraction"):
        ShapesEditConfig(photo_fraction=2)
    with pytest.raises(ValueError, match="tasks"):
        ShapesEditConfig(tasks=("teleport",))
    with pytest.raises(ValueError, match="unknown modes"):
        EditorProfile("x", {"sometimes": 1.0})


def test_shapes_drawn_in_their_box_equal_the_whole_canvas():
    """Rendering draws each shape on a canvas of its bounding box only: pixel for pixel
    what drawing it on the whole canvas gives (shapes inside the image, over its edges and
    outside it; every kind; odd sizes), and a scene composites as the whole-canvas masks
    do."""
    from ieqa.data.shapesedit.scene import KINDS, Shape, World, render, shape_mask

    rng = np.random.default_rng(11)
    shapes = []
    for _ in range(1500):
        size = int(rng.choice([16, 33, 64, 112, 256]))
        r = float(rng.uniform(0.5, size * 0.6))
        inside = rng.random() < 0.7
        lo, hi = (r, size - r) if inside and size > 2 * r else (-r, size + r)
        cx, cy = (float(v) for v in rng.uniform(lo, hi, 2))
        shapes.append((Shape(str(rng.choice(KINDS)), "red", cx, cy, r), size))
    differ = [(s, n) for s, n in shapes if not np.array_equal(shape_mask(s, n), whole_canvas_mask(s, n))]
    assert not differ, differ[:3]
    background = rng.uniform(0, 1, (64, 64, 3)).astype(np.float32)
    scene = [Shape("star", "blue", 20.3, 30.7, 9.1, alpha=0.6), Shape("circle", "red", 40.5, 22.2, 12.0),
             Shape("square", "green", 60.0, 60.0, 10.0, alpha=0.8)]  # the last over the corner
    expected = background.copy()
    for s in scene:
        a = whole_canvas_mask(s, 64)[..., None] * s.alpha
        expected = expected * (1.0 - a) + s.fill()[None, None, :] * a
    assert np.array_equal(render(World(background, tuple(scene))), np.clip(expected, 0.0, 1.0))
