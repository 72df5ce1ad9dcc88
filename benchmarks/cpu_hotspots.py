"""Two CPU hot spots of the test suite and of CPU scoring, each against its reference in
the same run (equal results checked, then the speed ratio printed):

* ShapesEdit shape masks drawn on a canvas of the shape's box (``scene.shape_mask``) vs the
  same shape drawn supersampled on the whole canvas (the reference, written out here);
* the ``no_op`` flag's 3x3 median (``flags._median3``, a sorting network) vs
  ``scipy.ndimage.median_filter(a, 3)``;

    .venv/bin/python benchmarks/cpu_hotspots.py [--size 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def whole_canvas_mask(shape, size: int) -> np.ndarray:
    from ieqa.data.shapesedit.scene import _SUPERSAMPLE as s
    from ieqa.data.shapesedit.scene import _polygon

    canvas = Image.new("L", (size * s, size * s), 0)
    draw = ImageDraw.Draw(canvas)
    cx, cy, r = shape.cx * s, shape.cy * s, shape.r * s
    if shape.kind == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
    else:
        draw.polygon(_polygon(shape.kind, cx, cy, r), fill=255)
    return np.asarray(canvas.resize((size, size), Image.Resampling.BOX), dtype=np.float32) / 255.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256, help="image side, pixels")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from ieqa.data.shapesedit.scene import KINDS, Shape, shape_mask
    from ieqa.scorers.flags import _median3

    rng = np.random.default_rng(0)
    n = args.size
    shapes = [Shape(str(rng.choice(KINDS)), "red", *(float(v) for v in rng.uniform(0.2 * n, 0.8 * n, 2)),
                    float(rng.uniform(0.07, 0.13) * n)) for _ in range(200)]
    rows = []
    t_new, new = best_of(lambda: [shape_mask(s, n) for s in shapes], args.repeat)
    t_ref, ref = best_of(lambda: [whole_canvas_mask(s, n) for s in shapes], args.repeat)
    assert all(np.array_equal(a, b) for a, b in zip(new, ref, strict=True)), "masks differ"
    rows.append((f"shape mask, {n}px (200 shapes)", t_new, t_ref))

    diffs = [rng.integers(0, 40, (128, 128)).astype(np.float64) for _ in range(200)]
    t_new, new = best_of(lambda: [_median3(d) for d in diffs], args.repeat)
    t_ref, ref = best_of(lambda: [ndimage.median_filter(d, 3) for d in diffs], args.repeat)
    assert all(np.array_equal(a, b) for a, b in zip(new, ref, strict=True)), "medians differ"
    rows.append(("3x3 median, 128x128 (200)", t_new, t_ref))

    print(f"{'what':<44} {'ieqa s':>8} {'reference s':>12} {'speed-up':>9}")
    for what, a, b in rows:
        print(f"{what:<44} {a:8.3f} {b:12.3f} {b / a:8.2f}x")
    print("(equal results checked for each row; best of --repeat runs)")


if __name__ == "__main__":
    main()
