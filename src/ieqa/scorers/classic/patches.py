"""Pasted-patch artifacts: rectangles whose content was shifted by one colour offset.

Editors that composite or inpaint a box can leave its rectangle visible: everything in
it — objects and background alike — brighter, darker or tinted by the same amount, often
with a seam along its border. That is a visual-quality defect, not a change of content:
the objects are all still there. :func:`pasted_patches` finds such rectangles in a pair,
so that ``classic`` neither takes one for the edit nor counts it as unrequested change.

A changed region (8-connected) is a patch when all of these hold:

* it is a rectangle part of the image: it fills its bounding box (``min_fill``), which
  covers between ``min_area`` and ``max_area`` of the image (a cast over the whole
  image is a global change, not a patch);
* inside it (``inset`` px in from its outline, clear of any seam line and of the fringe
  that low-pass filtering adds around a changed object), ``edited - reference`` is
  one colour offset: over the values the offset did not push into black or white, the
  per-channel median absolute deviation from the median offset is at most
  ``max_spread`` (0-1 scale), while the offset itself is clearly non-zero;
* it is not an object: either the reference inside it is not flat (per-channel
  standard deviation of at least ``min_content``: a constant offset over varied content
  is what a recoloured object cannot produce), or the reference has no edge along the
  box border (the median step across it, the mean 6-10 px in against the mean 2-6 px
  out, is at most ``max_border_contrast``: a recoloured plain square's outline is an
  edge of the scene, a pasted box's border is not).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from ieqa.data.images import channel_max
from ieqa.scorers.classic._filters import lowpass

__all__ = ["pasted_patches", "undo_patches"]


def pasted_patches(reference: np.ndarray, edited: np.ndarray, changed: np.ndarray, *,
                   min_area: float = 0.01, max_area: float = 0.5, min_fill: float = 0.85,
                   max_spread: float = 0.025,
                   min_offset: float = 0.04, min_content: float = 0.04,
                   max_border_contrast: float = 0.05, inset: int = 7) -> list[tuple[tuple[slice, slice], np.ndarray]]:
    """The pasted patches among ``changed``: ``(box, offset)`` pairs, the box as row and
    column slices, the offset as the (3,) colour shift ``edited - reference`` inside it.

    Args:
        reference: float RGB (H, W, 3) in [0, 1], what the image should look like (the
            source, or the source with the requested global operation applied).
        edited: float RGB (H, W, 3) in [0, 1], the same size.
        changed: (H, W) bool, the pixels that changed.
        min_area, max_area: smallest and largest bounding box of a patch, as fractions
            of the image, in (0, 1].
        min_fill: smallest share of its bounding box a patch fills, in (0, 1].
        max_spread: largest median absolute deviation of the offset (per channel).
        min_offset: smallest size of the offset (largest channel), 0-1.
        min_content: per-channel standard deviation of the reference inside above which
            the content counts as varied.
        max_border_contrast: median step across the box border (max over channels, 0-1)
            below which the reference has no edge there.
        inset: pixels left out along the inside of the region for the offset and content
            statistics (the seam line, and the fringe that low-pass filtering adds around
            a changed object).
    """
    h, w = changed.shape
    labels, n = ndi.label(changed, structure=np.ones((3, 3), bool))
    found = []
    for i, sl in enumerate(ndi.find_objects(labels), start=1):
        if sl is None:
            continue
        comp = labels[sl] == i
        if not min_area * h * w <= comp.size <= max_area * h * w or comp.mean() < min_fill:
            continue
        inner = ndi.binary_erosion(comp, iterations=inset)
        if inner.sum() < 64:
            continue
        e, r = edited[sl][inner], reference[sl][inner]
        unclipped = (e > 0.02) & (e < 0.98)  # an offset saturates at black and white
        if unclipped.sum(axis=0).min() < 64:
            continue
        diff = e - r
        offset = np.array([np.median(diff[unclipped[:, c], c]) for c in range(3)])
        spread = np.array([np.median(np.abs(diff[unclipped[:, c], c] - offset[c]))
                           for c in range(3)])
        if np.abs(offset).max() < min_offset or spread.max() > max_spread:
            continue
        if (r.std(axis=0).max() < min_content
                and _border_contrast(reference, sl) > max_border_contrast):
            continue
        found.append((sl, offset.astype(np.float32)))
    return found


def _border_contrast(image: np.ndarray, box: tuple[slice, slice], outside: tuple[int, int] = (2, 6),
                     inside: tuple[int, int] = (6, 10)) -> float:
    """Median over the box border of the step across it: at each border position, the
    largest channel's difference between the mean of ``image`` from ``inside[0]`` to
    ``inside[1]`` px in and from ``outside[0]`` to ``outside[1]`` px out. (A changed
    region found on low-passed images reaches a few pixels beyond the object that changed,
    so "in" starts well inside.) Sides too close to the image border are skipped; inf when
    all are."""
    ys, xs = box
    h, w = image.shape[:2]
    (o0, o1), (i0, i1) = outside, inside
    steps = []
    if ys.start - o1 >= 0:
        steps.append(image[ys.start + i0:ys.start + i1, xs].mean(0)
                     - image[ys.start - o1:ys.start - o0, xs].mean(0))
    if ys.stop + o1 <= h:
        steps.append(image[ys.stop - i1:ys.stop - i0, xs].mean(0)
                     - image[ys.stop + o0:ys.stop + o1, xs].mean(0))
    if xs.start - o1 >= 0:
        steps.append(image[ys, xs.start + i0:xs.start + i1].mean(1)
                     - image[ys, xs.start - o1:xs.start - o0].mean(1))
    if xs.stop + o1 <= w:
        steps.append(image[ys, xs.stop - i1:xs.stop - i0].mean(1)
                     - image[ys, xs.stop + o0:xs.stop + o1].mean(1))
    if not steps:
        return float("inf")
    return float(np.median(np.concatenate([np.abs(st).max(axis=-1) for st in steps])))


def undo_patches(reference: np.ndarray, edited_lp: np.ndarray, residual: np.ndarray,
                 patches: list[tuple[tuple[slice, slice], np.ndarray]], *, sigma: float,
                 seam: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """``residual`` with each patch's colour offset taken out, and the (H, W) bool area the
    patches cover (their boxes grown by ``seam`` px).

    Inside a patch box the per-pixel change (max over channels) is measured between
    ``edited_lp`` (the edited image low-passed by ``sigma``) and ``reference`` shifted by
    the patch's offset and low-passed alike, so a real change inside the patch still
    counts; a band of ``seam`` pixels along the box border (the seam line) counts 0."""
    covered = np.zeros(residual.shape, dtype=bool)
    if not patches:
        return residual, covered
    shifted = reference.astype(np.float32, copy=True)
    inner = np.zeros(residual.shape, dtype=bool)
    for (ys, xs), offset in patches:
        shifted[ys, xs] = np.clip(shifted[ys, xs] + offset, 0.0, 1.0)
        covered[max(0, ys.start - seam):ys.stop + seam, max(0, xs.start - seam):xs.stop + seam] = True
        inner[ys.start + seam:ys.stop - seam, xs.start + seam:xs.stop - seam] = True
    corrected = channel_max(np.abs(edited_lp - lowpass(shifted, sigma)))
    out = residual.copy()
    for (ys, xs), _ in patches:
        out[ys, xs] = corrected[ys, xs]
    out[covered & ~inner] = 0.0
    return out, covered
