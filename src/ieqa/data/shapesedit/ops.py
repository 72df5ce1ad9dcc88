"""Edit operations: what an instruction asks for, applied to a :class:`World` at a strength.

Each operation is a :class:`EditOp` with an ``apply(world, strength)`` that returns the
edited world; strength 1 is the complete edit, 0 leaves the world unchanged, values in
between are partial edits (half a recolour, a move part of the way...). ``region``
gives the pixels the complete edit is meant to touch (``None`` for global edits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.ndimage import gaussian_filter

from ieqa.data.shapesedit.scene import (
    COLORS,
    KINDS,
    POSITIONS,
    Shape,
    World,
    shape_mask,
    union_mask,
)

Apply = Callable[[World, float], World]

LOCALISED_TASKS = ("recolor", "remove", "add", "move", "resize")
GLOBAL_TASKS = ("brightness", "blur_background", "restyle")
TASKS = LOCALISED_TASKS + GLOBAL_TASKS


@dataclass(frozen=True)
class EditOp:
    """An edit request: its task, the instruction text and how to carry it out."""

    task: str
    instruction: str
    apply: Apply
    region: Callable[[World], np.ndarray | None]  # intended (H, W) mask in [0, 1] or None
    wrong: Apply  # the same kind of edit aimed at the wrong thing (strength 1)


def _lerp(a: float, b: float, t: float) -> float:
    return a + (b - a) * t


def _free_position(world: World, r: float, rng: np.random.Generator, exclude: int | None = None) -> str | None:
    names = list(POSITIONS)
    rng.shuffle(names)
    for name in names:
        px, py = POSITIONS[name]
        cx, cy = px * world.size, py * world.size
        if all(
            math.hypot(cx - s.cx, cy - s.cy) > r + s.r + 4
            for i, s in enumerate(world.shapes) if i != exclude
        ):
            return name
    return None


def _replace_shape(world: World, idx: int, **changes) -> World:
    shapes = list(world.shapes)
    shapes[idx] = replace(shapes[idx], **changes)
    return world.with_shapes(shapes)


def _other_index(world: World, idx: int, rng: np.random.Generator) -> int:
    others = [i for i in range(len(world.shapes)) if i != idx]
    return int(rng.choice(others))


def _pick(rng: np.random.Generator, options: list[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def recolor(world: World, rng: np.random.Generator) -> EditOp:
    idx = int(rng.integers(len(world.shapes)))
    tgt = world.shapes[idx]
    used = {(s.color, s.kind) for s in world.shapes}
    new = _pick(rng, [c for c in COLORS if c != tgt.color and (c, tgt.kind) not in used])
    new_rgb = np.asarray(COLORS[new]) / 255

    def apply_to(w: World, i: int, t: float) -> World:
        old = w.shapes[i].fill()
        return _replace_shape(w, i, rgb=tuple(float(v) for v in old + (new_rgb - old) * t))

    text = _pick(rng, [
        f"Change the colour of the {tgt.name} to {new}.", f"Make the {tgt.name} {new}.",
        f"Recolour the {tgt.name} so that it is {new}.",
    ])
    return EditOp(
        "recolor", text, lambda w, t: apply_to(w, idx, t),
        lambda w: shape_mask(w.shapes[idx], w.size),
        lambda w: apply_to(w, _other_index(w, idx, rng), 1.0),
    )


def remove(world: World, rng: np.random.Generator) -> EditOp:
    idx = int(rng.integers(len(world.shapes)))
    tgt = world.shapes[idx]

    def fade(w: World, i: int, t: float) -> World:
        return _replace_shape(w, i, alpha=w.shapes[i].alpha * (1 - t))

    text = _pick(rng, [f"Remove the {tgt.name}.", f"Delete the {tgt.name} from the picture.", f"Erase the {tgt.name}."])
    return EditOp(
        "remove", text, lambda w, t: fade(w, idx, t), lambda w: shape_mask(w.shapes[idx], w.size),
        lambda w: fade(w, _other_index(w, idx, rng), 1.0),
    )


def add(world: World, rng: np.random.Generator) -> EditOp | None:
    r = float(rng.uniform(0.07, 0.12) * world.size)
    pos = _free_position(world, r, rng)
    if pos is None:
        return None
    used = {(s.color, s.kind) for s in world.shapes}
    combos = [(c, k) for c in COLORS for k in KINDS if (c, k) not in used]
    color, kind = combos[int(rng.integers(len(combos)))]
    px, py = POSITIONS[pos]
    new = Shape(kind, color, px * world.size, py * world.size, r)
    wrong_color, wrong_kind = next(
        (c, k) for c, k in combos[int(rng.integers(len(combos))):] + combos if c != color and k != kind
    )
    wrong = replace(new, kind=wrong_kind, color=wrong_color)
    text = _pick(rng, [f"Add a {color} {kind} in the {pos}.", f"Put a {color} {kind} in the {pos} of the image."])
    return EditOp(
        "add", text, lambda w, t: w.with_shapes([*w.shapes, replace(new, alpha=t)]),
        lambda w: shape_mask(new, w.size), lambda w: w.with_shapes([*w.shapes, wrong]),
    )


def move(world: World, rng: np.random.Generator) -> EditOp | None:
    idx = int(rng.integers(len(world.shapes)))
    tgt = world.shapes[idx]
    pos = _free_position(world, tgt.r, rng, exclude=idx)
    if pos is None or math.hypot(POSITIONS[pos][0] * world.size - tgt.cx, POSITIONS[pos][1] * world.size - tgt.cy) < tgt.r:
        return None
    dx, dy = POSITIONS[pos][0] * world.size, POSITIONS[pos][1] * world.size

    def shift(w: World, i: int, t: float) -> World:
        s = w.shapes[i]
        return _replace_shape(w, i, cx=_lerp(s.cx, dx, t), cy=_lerp(s.cy, dy, t))

    text = _pick(rng, [f"Move the {tgt.name} to the {pos}.", f"Place the {tgt.name} in the {pos} instead."])
    return EditOp(
        "move", text, lambda w, t: shift(w, idx, t),
        lambda w: np.maximum(shape_mask(w.shapes[idx], w.size), shape_mask(shift(w, idx, 1).shapes[idx], w.size)),
        lambda w: shift(w, _other_index(w, idx, rng), 1.0),
    )


def resize(world: World, rng: np.random.Generator) -> EditOp:
    idx = int(rng.integers(len(world.shapes)))
    tgt = world.shapes[idx]
    bigger = bool(rng.random() < 0.5)
    factor = 1.6 if bigger else 0.55

    def scale(w: World, i: int, t: float) -> World:
        return _replace_shape(w, i, r=w.shapes[i].r * _lerp(1.0, factor, t))

    word = "bigger" if bigger else "smaller"
    text = _pick(rng, [f"Make the {tgt.name} {word}.", f"Make the {tgt.name} much {word}."])
    return EditOp(
        "resize", text, lambda w, t: scale(w, idx, t),
        lambda w: np.maximum(shape_mask(w.shapes[idx], w.size), shape_mask(scale(w, idx, 1).shapes[idx], w.size)),
        lambda w: scale(w, _other_index(w, idx, rng), 1.0),
    )


def _gain(g: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda img: img * g


def brightness(world: World, rng: np.random.Generator) -> EditOp:
    brighter = bool(rng.random() < 0.5)
    full = 1.45 if brighter else 0.6
    text = _pick(rng, ["Make the image brighter.", "Brighten the whole picture."] if brighter
                 else ["Make the image darker.", "Darken the whole picture."])
    return EditOp(
        "brightness", text, lambda w, t: w.with_post(_gain(_lerp(1.0, full, t))), lambda w: None,
        lambda w: w.with_post(_gain(0.6 if brighter else 1.45)),
    )


def blur_background(world: World, rng: np.random.Generator) -> EditOp:
    def blur(w: World, t: float) -> World:
        if t <= 0:
            return w
        return replace(w, background=gaussian_filter(w.background, sigma=(4.0 * t, 4.0 * t, 0)).astype(np.float32))

    def blur_shapes(w: World) -> World:
        return w.with_post(lambda img, w=w: _blur_where(img, union_mask(w.shapes, w.size), 4.0))

    text = _pick(rng, ["Blur the background.", "Make the background out of focus, keep the shapes sharp."])
    return EditOp(
        "blur_background", text, blur, lambda w: 1.0 - union_mask(w.shapes, w.size), blur_shapes,
    )


def _blur_where(img: np.ndarray, mask: np.ndarray, sigma: float) -> np.ndarray:
    blurred = gaussian_filter(img, sigma=(sigma, sigma, 0))
    m = mask[..., None]
    return img * (1 - m) + blurred * m


def _grayscale(img: np.ndarray) -> np.ndarray:
    y = img @ np.asarray([0.299, 0.587, 0.114], dtype=np.float32)
    return np.repeat(y[..., None], 3, axis=2)


def _sepia(img: np.ndarray) -> np.ndarray:
    y = _grayscale(img)[..., :1]
    return np.clip(y * np.asarray([1.07, 0.74, 0.43], dtype=np.float32) + 0.05, 0, 1)


def _posterize(img: np.ndarray) -> np.ndarray:
    return np.round(img * 3) / 3


STYLES: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "grayscale": ("Turn the image into a black-and-white photo.", _grayscale),
    "sepia": ("Give the image an old sepia-toned look.", _sepia),
    "poster": ("Restyle the image as a flat poster with few colours.", _posterize),
}


def restyle(world: World, rng: np.random.Generator) -> EditOp:
    style = _pick(rng, list(STYLES))
    wrong_style = _pick(rng, [s for s in STYLES if s != style])
    text, fn = STYLES[style]

    def blend(f: Callable[[np.ndarray], np.ndarray], t: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda img: img * (1 - t) + f(img) * t

    return EditOp(
        "restyle", text, lambda w, t: w.with_post(blend(fn, t)), lambda w: None,
        lambda w: w.with_post(STYLES[wrong_style][1]),
    )


_BUILDERS: dict[str, Callable[[World, np.random.Generator], EditOp | None]] = {
    "recolor": recolor, "remove": remove, "add": add, "move": move, "resize": resize,
    "brightness": brightness, "blur_background": blur_background, "restyle": restyle,
}


def make_op(task: str, world: World, rng: np.random.Generator) -> EditOp | None:
    """Build an edit request of ``task`` for ``world``; None when the scene cannot host it."""
    if task not in _BUILDERS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    return _BUILDERS[task](world, rng)
