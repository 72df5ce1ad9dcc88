"""Slow, plain reference implementations that ieqa's fast paths are checked against, bit
for bit (in tests/ and in the speed comparisons of benchmarks/cpu_hotspots.py)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from ieqa.data.shapesedit.scene import SUPERSAMPLE, Shape, polygon_points

__all__ = ["whole_canvas_mask"]


def whole_canvas_mask(shape: Shape, size: int) -> np.ndarray:
    """A ShapesEdit shape's coverage (``(size, size)`` floats in [0, 1]) drawn supersampled
    on the whole canvas and box-filtered down: how ``scene.shape_mask`` drew it before it
    drew on the shape's own box (the same pixels; tests/test_shapesedit.py)."""
    s = SUPERSAMPLE
    canvas = Image.new("L", (size * s, size * s), 0)
    draw = ImageDraw.Draw(canvas)
    cx, cy, r = shape.cx * s, shape.cy * s, shape.r * s
    if shape.kind == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
    else:
        draw.polygon(polygon_points(shape.kind, cx, cy, r), fill=255)
    return np.asarray(canvas.resize((size, size), Image.Resampling.BOX), dtype=np.float32) / 255.0
