"""Scenes of coloured shapes over a background, and their rendering.

A :class:`World` is everything an edit can touch: a background layer (texture or photo),
a list of :class:`Shape` objects composited over it in order, and image-level
post-processing steps (global edits such as brightening). Rendering is exact and
deterministic, so the change an edit makes can be measured pixel by pixel.
Images are float32 arrays of shape (H, W, 3) with values in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image, ImageDraw
from scipy.ndimage import gaussian_filter

#: Named colours (sRGB, 0-255). Every shape in a scene has a distinct (colour, kind).
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (215, 38, 38),
    "green": (40, 165, 60),
    "blue": (40, 85, 215),
    "yellow": (240, 205, 35),
    "purple": (135, 60, 180),
    "orange": (245, 135, 25),
    "cyan": (35, 195, 205),
    "pink": (240, 120, 175),
}
KINDS: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "star")

#: Named positions (centre, as fractions of width and height).
POSITIONS: dict[str, tuple[float, float]] = {
    "top left": (0.25, 0.25),
    "top right": (0.75, 0.25),
    "bottom left": (0.25, 0.75),
    "bottom right": (0.75, 0.75),
    "centre": (0.5, 0.5),
}

#: shapes are drawn this many times larger and box-filtered down (anti-aliased edges)
SUPERSAMPLE = 4


@dataclass(frozen=True)
class Shape:
    """A filled shape. ``cx``, ``cy``, ``r`` are in pixels; ``alpha`` in [0, 1]."""

    kind: str
    color: str
    cx: float
    cy: float
    r: float
    alpha: float = 1.0
    rgb: tuple[float, float, float] | None = None  # overrides ``color`` (partial recolours)

    @property
    def name(self) -> str:
        return f"{self.color} {self.kind}"

    def fill(self) -> np.ndarray:
        rgb = self.rgb if self.rgb is not None else tuple(c / 255 for c in COLORS[self.color])
        return np.asarray(rgb, dtype=np.float32)


@dataclass(frozen=True)
class World:
    """A renderable scene: background + shapes + post-processing steps."""

    background: np.ndarray  # (H, W, 3) float32 in [0, 1]
    shapes: tuple[Shape, ...]
    post: tuple[Callable[[np.ndarray], np.ndarray], ...] = field(default=())

    @property
    def size(self) -> int:
        return int(self.background.shape[0])

    def with_shapes(self, shapes: list[Shape] | tuple[Shape, ...]) -> World:
        return replace(self, shapes=tuple(shapes))

    def with_post(self, fn: Callable[[np.ndarray], np.ndarray]) -> World:
        return replace(self, post=(*self.post, fn))

    def find(self, name: str) -> int:
        for i, s in enumerate(self.shapes):
            if s.name == name:
                return i
        raise KeyError(name)


def polygon_points(kind: str, cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    """The corners of a square, triangle, diamond or star of radius ``r`` centred on
    ``(cx, cy)``."""
    if kind == "square":
        h = r * 0.9
        return [(cx - h, cy - h), (cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h)]
    if kind == "triangle":
        return [(cx + r * math.cos(a), cy + r * math.sin(a)) for a in (-math.pi / 2, math.pi / 6, 5 * math.pi / 6)]
    if kind == "diamond":
        return [(cx, cy - r), (cx + r * 0.8, cy), (cx, cy + r), (cx - r * 0.8, cy)]
    if kind == "star":
        pts = []
        for i in range(10):
            rad = r if i % 2 == 0 else r * 0.45
            a = -math.pi / 2 + i * math.pi / 5
            pts.append((cx + rad * math.cos(a), cy + rad * math.sin(a)))
        return pts
    raise ValueError(f"unknown shape kind {kind!r}; known: {', '.join(KINDS)}")


def _coverage(shape: Shape, size: int) -> tuple[np.ndarray, tuple[slice, slice]]:
    """Anti-aliased coverage of ``shape`` within its bounding box (grown by two pixels,
    clipped to the image), and where that box lies: the only part of :func:`shape_mask`
    that can be non-zero.

    The shape is drawn ``SUPERSAMPLE`` times larger on a canvas of the box alone and box
    filtered, which gives the full canvas's pixels exactly (the box starts on a pixel, so
    each pixel averages the same supersampled block; vertices move by whole supersampled
    pixels, which float arithmetic does exactly) at a fraction of the cost: a shape covers
    a few percent of the image. ``tests/test_shapesedit.py`` checks it against
    drawing on the whole canvas."""
    s = SUPERSAMPLE
    x0, y0 = math.floor(shape.cx - shape.r) - 2, math.floor(shape.cy - shape.r) - 2
    x1, y1 = math.ceil(shape.cx + shape.r) + 3, math.ceil(shape.cy + shape.r) + 3
    if min(x0, y0) < 0 or max(x1, y1) > size:
        # a shape over the edge: the whole canvas (Pillow's polygon filling clips an edge
        # that leaves the canvas in a way that moved one pixel a level when shifted)
        x0, y0, x1, y1 = 0, 0, size, size
    box = (slice(y0, y1), slice(x0, x1))
    canvas = Image.new("L", ((x1 - x0) * s, (y1 - y0) * s), 0)
    draw = ImageDraw.Draw(canvas)
    ox, oy = x0 * s, y0 * s
    cx, cy, r = shape.cx * s, shape.cy * s, shape.r * s
    if shape.kind == "circle":
        draw.ellipse(((cx - r) - ox, (cy - r) - oy, (cx + r) - ox, (cy + r) - oy), fill=255)
    else:
        draw.polygon([(x - ox, y - oy) for x, y in polygon_points(shape.kind, cx, cy, r)], fill=255)
    small = canvas.resize((x1 - x0, y1 - y0), Image.Resampling.BOX)
    return np.asarray(small, dtype=np.float32) / 255.0, box


def shape_mask(shape: Shape, size: int) -> np.ndarray:
    """Anti-aliased coverage of ``shape`` (float32 (H, W) in [0, 1]), ignoring its alpha."""
    out = np.zeros((size, size), dtype=np.float32)
    patch, box = _coverage(shape, size)
    out[box] = patch
    return out


def render(world: World) -> np.ndarray:
    """Composite the shapes over the background, then apply the post steps."""
    img = world.background.astype(np.float32, copy=True)
    for shape in world.shapes:
        # outside its box a shape's coverage is 0, which leaves the pixels as they are
        patch, box = _coverage(shape, world.size)
        a = patch[..., None] * shape.alpha
        img[box] = img[box] * (1.0 - a) + shape.fill()[None, None, :] * a
    for fn in world.post:
        img = fn(img)
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def union_mask(shapes: list[Shape] | tuple[Shape, ...], size: int) -> np.ndarray:
    """Coverage of the union of ``shapes`` (float32 (H, W) in [0, 1])."""
    out = np.zeros((size, size), dtype=np.float32)
    for s in shapes:
        out = np.maximum(out, shape_mask(s, size))
    return out


# --------------------------------------------------------------------------- backgrounds

def _smooth_noise(rng: np.random.Generator, size: int, sigma: float) -> np.ndarray:
    field_ = gaussian_filter(rng.standard_normal((size, size)), sigma=sigma, mode="wrap")
    field_ -= field_.min()
    return field_ / max(float(field_.max()), 1e-8)


def texture_background(rng: np.random.Generator, size: int) -> tuple[np.ndarray, str]:
    """A random procedural background; returns (image, texture kind)."""
    kind = str(rng.choice(["gradient", "stripes", "checker", "clouds"]))
    c0 = rng.uniform(0.15, 0.95, 3)
    c1 = rng.uniform(0.15, 0.95, 3)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    if kind == "gradient":
        ang = rng.uniform(0, 2 * math.pi)
        t = (np.cos(ang) * xx + np.sin(ang) * yy)
        t = (t - t.min()) / max(float(t.max() - t.min()), 1e-8)
    elif kind == "stripes":
        freq = rng.uniform(3, 9)
        ang = rng.uniform(0, math.pi)
        t = 0.5 + 0.5 * np.sin(2 * math.pi * freq * (np.cos(ang) * xx + np.sin(ang) * yy))
    elif kind == "checker":
        n = int(rng.integers(4, 10))
        t = ((np.floor(xx * n) + np.floor(yy * n)) % 2).astype(np.float32)
        t = gaussian_filter(t, sigma=1.0)
    else:
        t = _smooth_noise(rng, size, sigma=size / 12)
    grain = (_smooth_noise(rng, size, sigma=1.5) - 0.5) * 0.06
    img = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None] + grain[..., None]
    return np.clip(img, 0, 1).astype(np.float32), kind
