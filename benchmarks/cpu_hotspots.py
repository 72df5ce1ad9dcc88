"""Two CPU hot spots of the test suite and of CPU scoring, each against its reference in
the same run (equal results checked, then the speed ratio printed):

* ShapesEdit shape masks drawn on a canvas of the shape's box (``scene.shape_mask``) vs the
  same shape drawn supersampled on the whole canvas (the reference, written out here);
* the ``no_op`` flag's 3x3 median (``flags._median3``, a sorting network) vs
  ``scipy.ndimage.median_filter(a, 3)``;
* a benchmark's PLCC and RMSE rows with logistic fits, bootstrapped (200 resamples each):
  the RMSE row reusing the PLCC row's fits (``metrics.correlation``'s fit cache) vs
  fitting them again (the cache emptied between the rows, as its old 64 entries were).

    .venv/bin/python benchmarks/cpu_hotspots.py [--size 256] [--repeat 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from metrics_scale import best_time  # benchmarks/, beside this script
from scipy import ndimage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256, help="image side, pixels")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from ieqa.data.shapesedit.scene import KINDS, Shape, shape_mask
    from ieqa.scorers.flags import _median3
    from ieqa.testing.references import whole_canvas_mask

    rng = np.random.default_rng(0)
    n = args.size
    shapes = [Shape(str(rng.choice(KINDS)), "red", *(float(v) for v in rng.uniform(0.2 * n, 0.8 * n, 2)),
                    float(rng.uniform(0.07, 0.13) * n)) for _ in range(200)]
    rows = []
    t_new, new = best_time(lambda: [shape_mask(s, n) for s in shapes], args.repeat)
    t_ref, ref = best_time(lambda: [whole_canvas_mask(s, n) for s in shapes], args.repeat)
    assert all(np.array_equal(a, b) for a, b in zip(new, ref, strict=True)), "masks differ"
    rows.append((f"shape mask, {n}px (200 shapes)", t_new, t_ref))

    diffs = [rng.integers(0, 40, (128, 128)).astype(np.float64) for _ in range(200)]
    t_new, new = best_time(lambda: [_median3(d) for d in diffs], args.repeat)
    t_ref, ref = best_time(lambda: [ndimage.median_filter(d, 3) for d in diffs], args.repeat)
    assert all(np.array_equal(a, b) for a, b in zip(new, ref, strict=True)), "medians differ"
    rows.append(("3x3 median, 128x128 (200)", t_new, t_ref))

    from ieqa.metrics import correlation
    from ieqa.metrics.bootstrap import bootstrap_ci

    x = rng.uniform(1, 5, 60)
    y = np.round(x + rng.normal(0, 0.8, x.size)).clip(1, 5)  # ratings on a 1-5 scale

    def rows_of(keep: bool) -> list[tuple[float, float, float]]:
        correlation._FIT_CACHE.clear()
        out = [bootstrap_ci(lambda p, t: correlation.plcc(p, t, fit="logistic4"), x, y,
                            n_boot=200, seed=0)]
        if not keep:
            correlation._FIT_CACHE.clear()
        out.append(bootstrap_ci(lambda p, t: correlation.rmse(p, t, fit="logistic4"), x, y,
                                n_boot=200, seed=0))
        return out

    t_new, new = best_time(lambda: rows_of(True), args.repeat)
    t_ref, ref = best_time(lambda: rows_of(False), args.repeat)
    # (MINPACK's fit of an ill-conditioned resample can move in the last digits from one
    # call to the next, so the refitted row is compared within 1e-9)
    assert np.allclose(new, ref, rtol=1e-9, atol=0), (new, ref)
    rows.append(("PLCC + RMSE rows, logistic fits, 2x200 resamples", t_new, t_ref))

    print(f"{'what':<50} {'ieqa s':>8} {'reference s':>12} {'speed-up':>9}")
    for what, a, b in rows:
        print(f"{what:<50} {a:8.3f} {b:12.3f} {b / a:8.2f}x")
    print("(equal results checked for each row; best of --repeat runs)")


if __name__ == "__main__":
    main()
