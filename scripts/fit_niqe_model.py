#!/usr/bin/env python
"""Fit the pristine NIQE model that ieqa ships (or one of your own).

By default the model is fitted on the natural photographs bundled with scikit-image
(``skimage.data``; they are part of the installed package, so this works offline) and written
to ``src/ieqa/scorers/classic/data/niqe_pristine.npz``::

    python scripts/fit_niqe_model.py
    python scripts/fit_niqe_model.py --images my_pristine/*.png --output my_model.npz

Chosen images (see :data:`SKIMAGE_PHOTOS`): undistorted natural photographs, in colour or
grey. Left out: synthetic or rendered images (``checkerboard``, ``colorwheel``, ``logo``,
``shepp_logan_phantom``, ``binary_blobs``, ``horse``), text and documents (``text``,
``page``), microscopy, medical and astronomy images (``cell``, ``cells3d``, ``kidney``,
``lily``, ``skin``, ``immunohistochemistry``, ``human_mitosis``, ``retina``,
``microaneurysms``, ``palisades_of_vogt``, ``hubble_deep_field``, ...), deliberately degraded
or very noisy/low-contrast images (``clock`` is motion-blurred, ``moon`` is a low-contrast
processed scan, ``coins`` a grainy historical scan), the tiny ``lfw_subset`` faces, and the
single-texture close-ups ``brick``, ``grass`` and ``gravel``: they are clean photographs but
not scenes, texture fills every patch so they would supply most of the selected patches, and
with them the model ranked the IQA-PyTorch calibration images less like the original NIQE
(Spearman 0.6-0.7 instead of 0.9-1.0). Images that scikit-image would have to download are
never used.

The fit is deterministic (no randomness; fixed image order) and follows the reference
procedure (96x96 patches, keep the patches sharper than 0.75 times the sharpest one), except
that with seven photographs one grid of non-overlapping patches gives only ~40 patches for a
36x36 covariance. The shipped model therefore uses ``--grid-stride 16``: the patch grid is
also shifted by every multiple of 16 pixels (36 grids, each selected by sharpness on its own),
about 1,350 overlapping patches; ``--grid-stride 0`` gives the original single grid.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = REPO / "src" / "ieqa" / "scorers" / "classic" / "data" / "niqe_pristine.npz"

#: skimage.data photographs used for the shipped model (name -> note)
SKIMAGE_PHOTOS: dict[str, str] = {
    "astronaut": "colour portrait (NASA), 512x512",
    "camera": "grey outdoor scene (photographer), 512x512",
    "chelsea": "colour close-up of a cat, 451x300",
    "coffee": "colour still life, 600x400",
    "rocket": "colour night scene with launch pad, 640x427",
    "motorcycle_left": "colour indoor scene, left view of stereo_motorcycle, 741x500",
    "motorcycle_right": "colour indoor scene, right view of stereo_motorcycle, 741x500",
}


def load_skimage_photo(name: str) -> np.ndarray:
    """One of :data:`SKIMAGE_PHOTOS` as a uint8 array (HxW or HxWx3)."""
    from skimage import data

    if name in ("motorcycle_left", "motorcycle_right"):
        left, right, _ = data.stereo_motorcycle()
        return left if name == "motorcycle_left" else right
    return getattr(data, name)()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", nargs="+", type=Path, default=None,
                        help="fit on these pristine image files instead of the skimage photos")
    parser.add_argument("--skimage", nargs="+", default=list(SKIMAGE_PHOTOS),
                        choices=list(SKIMAGE_PHOTOS), metavar="NAME",
                        help=f"skimage.data photos to use (default: all of {', '.join(SKIMAGE_PHOTOS)})")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help=f"where to write the .npz model (default: {DEFAULT_OUTPUT.relative_to(REPO)})")
    parser.add_argument("--patch-size", type=int, default=96)
    parser.add_argument("--sharpness-threshold", type=float, default=0.75)
    parser.add_argument("--grid-stride", type=int, default=16,
                        help="also shift the patch grid by multiples of this many pixels "
                             "(0: the original single grid; default 16)")
    parser.add_argument("--channel", choices=("grey", "y"), default="grey")
    args = parser.parse_args(argv)

    from ieqa.scorers.classic.niqe import fit_niqe_model

    if args.images:
        names = [str(p) for p in args.images]
        images = list(args.images)
        corpus = "image files"
    else:
        names = list(args.skimage)
        images = [load_skimage_photo(n) for n in names]
        import skimage

        corpus = f"scikit-image {skimage.__version__} skimage.data photographs"
    stride = args.grid_stride or None
    model = fit_niqe_model(images, patch_size=args.patch_size,
                           sharpness_threshold=args.sharpness_threshold, grid_stride=stride,
                           channel=args.channel)
    source = (f"ieqa NIQE pristine model fitted by scripts/fit_niqe_model.py on {len(names)} "
              f"{corpus}: {', '.join(names)}; {model.n_patches} patches of "
              f"{args.patch_size}x{args.patch_size} with sharpness > {args.sharpness_threshold} "
              f"x max per patch grid, patch grids shifted by multiples of {stride or args.patch_size} "
              f"pixels; channel {args.channel} (MATLAB rgb2gray for 'grey')")
    model = dataclasses.replace(model, source=source)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.output)
    print(f"wrote {args.output} ({model.n_patches} patches)")
    print(source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
