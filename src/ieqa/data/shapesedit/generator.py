"""The ShapesEdit generator: groups of K candidate edits per (source, instruction).

Everything is drawn from ``numpy.random.default_rng([seed, group_index])``, so a group is
the same whatever else is generated, and the same seed gives byte-identical images and
manifest. See :mod:`ieqa.data.shapesedit.truth` for the ground-truth formulas and
:mod:`ieqa.data.shapesedit.editors` for the simulated editors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from ieqa.data.manifest import ManifestWriter
from ieqa.data.schema import BBox, EditSample
from ieqa.data.shapesedit import artifacts as art
from ieqa.data.shapesedit.editors import DEFAULT_EDITORS, EditorProfile, over_edit
from ieqa.data.shapesedit.ops import LOCALISED_TASKS, TASKS, EditOp, make_op
from ieqa.data.shapesedit.photos import photo_background
from ieqa.data.shapesedit.scene import COLORS, KINDS, Shape, World, render, texture_background
from ieqa.data.shapesedit.truth import ground_truth, unintended_change
from ieqa.progress import progress_bar

GENERATOR_VERSION = "1"


@dataclass(frozen=True)
class ShapesEditConfig:
    """Parameters of a ShapesEdit set.

    Attributes:
        n: number of edited images (candidates) in total, >= 1. Groups hold ``k`` each;
            the last group is smaller when ``n`` is not a multiple of ``k``.
        k: candidates per (source, instruction) group, 1..len(editors); each from a
            different editor.
        seed: master seed; the same seed gives byte-identical output.
        size: image side in pixels (square images), 64..2048.
        photo_fraction: share of sources built on a real scikit-image photo (0..1).
        tasks: edit tasks to draw from (see ``ieqa.data.shapesedit.ops.TASKS``).
        editors: simulated editor profiles, best first.
        shapes: (min, max) number of shapes per source, 2..6.
    """

    n: int = 200
    k: int = 4
    seed: int = 0
    size: int = 256
    photo_fraction: float = 0.3
    tasks: tuple[str, ...] = TASKS
    editors: tuple[EditorProfile, ...] = DEFAULT_EDITORS
    shapes: tuple[int, int] = (2, 4)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if not 1 <= self.k <= len(self.editors):
            raise ValueError(f"k must be in 1..{len(self.editors)} (the number of editors), got {self.k}")
        if not 64 <= self.size <= 2048:
            raise ValueError(f"size must be in 64..2048 pixels, got {self.size}")
        if not 0.0 <= self.photo_fraction <= 1.0:
            raise ValueError(f"photo_fraction must be in [0, 1], got {self.photo_fraction}")
        unknown = set(self.tasks) - set(TASKS)
        if unknown or not self.tasks:
            raise ValueError(f"tasks must be a non-empty subset of {TASKS}; unknown: {sorted(unknown)}")
        lo, hi = self.shapes
        if not 2 <= lo <= hi <= 6:
            raise ValueError(f"shapes must satisfy 2 <= min <= max <= 6, got {self.shapes}")
        if len({e.name for e in self.editors}) != len(self.editors):
            raise ValueError("editor names must be unique")

    @property
    def n_groups(self) -> int:
        return math.ceil(self.n / self.k)


@dataclass
class SynthGroup:
    """One generated group, in memory: uint8 images plus the samples that describe them."""

    id: str
    source: np.ndarray
    edited: list[np.ndarray]
    mask: np.ndarray | None
    samples: list[EditSample] = field(default_factory=list)


def _place_shapes(rng: np.random.Generator, size: int, count: int) -> list[Shape]:
    shapes: list[Shape] = []
    combos = [(c, k) for c in COLORS for k in KINDS]
    order = rng.permutation(len(combos))
    for _ in range(400):
        if len(shapes) == count:
            break
        r = float(rng.uniform(0.07, 0.13) * size)
        cx, cy = rng.uniform(r + 2, size - r - 2, 2)
        if all(math.hypot(cx - s.cx, cy - s.cy) > r + s.r + 6 for s in shapes):
            color, kind = combos[int(order[len(shapes)])]
            shapes.append(Shape(kind, color, float(cx), float(cy), r))
    if len(shapes) < 2:  # pragma: no cover - 400 tries always place two shapes at size >= 64
        raise RuntimeError("could not place shapes")
    return shapes


def _source_world(rng: np.random.Generator, cfg: ShapesEditConfig) -> tuple[World, str]:
    if rng.random() < cfg.photo_fraction:
        bg, kind = photo_background(rng, cfg.size)
        kind = f"photo:{kind}"
    else:
        bg, kind = texture_background(rng, cfg.size)
    count = int(rng.integers(cfg.shapes[0], cfg.shapes[1] + 1))
    return World(bg, tuple(_place_shapes(rng, cfg.size, count))), kind


def _draw_op(rng: np.random.Generator, world: World, tasks: Sequence[str]) -> EditOp:
    for task in rng.permutation(np.asarray(tasks)):
        op = make_op(str(task), world, rng)
        if op is not None:
            return op
    raise RuntimeError("no task fits this scene")  # pragma: no cover - global tasks always fit


def _candidate(
    world: World, op: EditOp, editor: EditorProfile, region: np.ndarray | None, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, float], dict]:
    mode = editor.draw_mode(rng)
    strength = {"perfect": 1.0, "over_edit": 1.0, "no_op": 0.0, "wrong_target": 0.0}.get(mode)
    if strength is None:
        strength = float(rng.uniform(*editor.partial))
    intended = op.apply(world, strength)
    extra = None
    if mode == "wrong_target":
        made = op.wrong(world)
    elif mode == "over_edit":
        made, extra = over_edit(world, intended, rng)
    else:
        made = intended
    clean = render(made)
    change = unintended_change(clean, render(intended))
    meta = {"mode": mode, "strength": round(strength, 6), "over_edit": extra,
            "unintended_change": round(change, 6), "artifact": None, "artifact_severity": 0.0,
            "artifact_scope": None}
    severity = 0.0
    image = clean
    if rng.random() < editor.artifact_prob:
        kind = editor.artifacts[int(rng.integers(len(editor.artifacts)))]
        severity = float(rng.uniform(*editor.artifact_severity))
        local = region is not None and op.task in LOCALISED_TASKS and rng.random() < editor.region_artifact_prob
        image = art.APPLY[kind](clean, severity, rng, _dilate_box(region) if local else None)
        meta.update(artifact=kind, artifact_severity=round(severity, 6), artifact_scope="region" if local else "global")
    return art.to_uint8(image), ground_truth(strength, change, severity), meta


def _dilate_box(region: np.ndarray, pad: int = 6) -> np.ndarray:
    """The bounding box of ``region`` grown by ``pad`` pixels, as a 0/1 mask."""
    ys, xs = np.nonzero(region > 0.5)
    out = np.zeros_like(region)
    h, w = region.shape
    out[max(0, ys.min() - pad) : min(h, ys.max() + 1 + pad), max(0, xs.min() - pad) : min(w, xs.max() + 1 + pad)] = 1.0
    return out


def _bbox(region: np.ndarray | None) -> BBox | None:
    if region is None or not (region > 0.5).any():
        return None
    ys, xs = np.nonzero(region > 0.5)
    h, w = region.shape
    return BBox.from_xyxy(int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1, w, h)


def make_group(cfg: ShapesEditConfig, index: int) -> SynthGroup:
    """Generate group ``index`` (0-based) of the set described by ``cfg``."""
    if not 0 <= index < cfg.n_groups:
        raise IndexError(f"group index {index} outside 0..{cfg.n_groups - 1}")
    rng = np.random.default_rng([cfg.seed, index])
    world, background = _source_world(rng, cfg)
    op = _draw_op(rng, world, cfg.tasks)
    region = op.region(world)
    gid = f"g{index:06d}"
    k = min(cfg.k, cfg.n - index * cfg.k)
    editors = [cfg.editors[int(i)] for i in rng.choice(len(cfg.editors), size=k, replace=False)]
    source = art.to_uint8(render(world))
    group = SynthGroup(gid, source, [], None if region is None else (region > 0.5).astype(np.uint8) * 255)
    src_img = Image.fromarray(source)
    for ci, editor in enumerate(editors):
        img, scores, meta = _candidate(world, op, editor, region, rng)
        group.edited.append(img)
        meta.update(background=background, n_shapes=len(world.shapes), localised=op.task in LOCALISED_TASKS,
                    score_scale=[1, 5])
        group.samples.append(EditSample(
            id=f"{gid}_c{ci}", source=src_img, edited=Image.fromarray(img), instruction=op.instruction,
            task=op.task, editor=editor.name, group_id=gid, bbox=_bbox(region),
            mask=None if group.mask is None else Image.fromarray(group.mask), scores=scores, meta=meta,
        ))
    return group


def iter_groups(cfg: ShapesEditConfig) -> Iterator[SynthGroup]:
    """Yield every group of the set, in order, with images in memory."""
    for i in range(cfg.n_groups):
        yield make_group(cfg, i)


def _save_png(arr: np.ndarray, path: Path) -> None:
    Image.fromarray(arr).save(path, format="PNG", compress_level=6)


def dataset_card(cfg: ShapesEditConfig) -> dict:
    """The JSON-serialisable description written next to a generated manifest."""
    return {
        "name": "ShapesEdit",
        "generator_version": GENERATOR_VERSION,
        "config": {k: v for k, v in asdict(cfg).items() if k != "editors"},
        "score_scale": [1, 5],
        "editors": [asdict(e) for e in cfg.editors],
        "true_editor_ranking": [e.name for e in cfg.editors],
        "ground_truth": "see ieqa.data.shapesedit.truth",
    }


def generate(
    out_dir: str | Path, cfg: ShapesEditConfig = ShapesEditConfig(), *, format: str = "jsonl",
    progress: bool = False,
) -> Path:
    """Write a ShapesEdit set to ``out_dir`` and return the manifest path.

    Layout: ``images/<group>_src.png``, ``images/<group>_c<i>.png``, ``masks/<group>.png``
    (localised edits), ``manifest.jsonl`` (or ``.parquet``) and ``shapesedit.json``
    (configuration, editor profiles and the true editor ranking).
    """
    if format not in ("jsonl", "parquet"):
        raise ValueError(f"format must be 'jsonl' or 'parquet', got {format!r}")
    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "masks").mkdir(exist_ok=True)
    manifest = out / f"manifest.{format}"
    with ManifestWriter(manifest) as writer, \
            progress_bar("ShapesEdit", cfg.n, enabled=progress, unit="edits") as advance:
        for group in iter_groups(cfg):
            src = out / "images" / f"{group.id}_src.png"
            _save_png(group.source, src)
            mask = None
            if group.mask is not None:
                mask = out / "masks" / f"{group.id}.png"
                _save_png(group.mask, mask)
            for sample, img in zip(group.samples, group.edited, strict=True):
                edited = out / "images" / f"{sample.id}.png"
                _save_png(img, edited)
                writer.write(sample.model_copy(update={"source": src, "edited": edited, "mask": mask}))
                advance(1)
    (out / "shapesedit.json").write_text(json.dumps(dataset_card(cfg), indent=2, sort_keys=True) + "\n")
    return manifest
