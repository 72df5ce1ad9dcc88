"""Degenerate outputs: flags every scorer attaches to its results.

An editor that returns a black frame, a transparent layer, a thumbnail or the source
unchanged must not look like a good edit to whoever uses the scores as a reward or a
filter. :func:`detect_flags` looks at the decoded images and returns any of

========== =====================================================================
flag       meaning (thresholds are module constants)
========== =====================================================================
``blank``  the edited image is constant or near-constant: in every RGB channel
           the 1st-99th percentile range of a 256-px thumbnail is at most
           :data:`BLANK_RANGE` grey levels (0-255)
``transparent``  at least :data:`TRANSPARENT_FRACTION` of the edited image's pixels
           have alpha below 128 (the loader composites them over white)
``tiny``   the edited image is under :data:`MIN_SIDE` pixels on a side
``no_op``  the edited image equals the source within noise: on 128x128 box-filtered
           thumbnails, after a 3x3 median of the largest per-channel difference (so
           scattered codec noise drops out and an edited blob stays), at most
           :data:`NO_OP_FRACTION` of the pixels (16 of 16384) differ by more than
           :data:`NO_OP_LEVELS` levels. The smallest real AURORA edit changes 0.22 %
           of them; a JPEG (quality 75) re-encoding of the AURORA sources stays below
           the limit for 197 of 198 (the flag errs on the side of silence); 4:2:0
           chroma subsampling along saturated colour edges can exceed it
``unrelated``  no structure in common with the source: fewer than
           :data:`UNRELATED_SCORE` of the 64x64 thumbnail pixels lie within 16
           levels of the source's *and* the absolute correlation of the 32x32 grey
           thumbnails is below it too. On the 198 real AURORA triplets
           (``../shared/data/aurora_subset``) no ground-truth edit scores below
           0.116 on that measure; about a quarter of mismatched (source, other
           output) pairs do (the flag is deliberately conservative: a plausible edit
           of another scene is not flagged)
========== =====================================================================

``no_op`` and ``unrelated`` need the source and are not computed without one.
How a scorer uses the flags is its own rule: ``classic`` gives blank, transparent, tiny
and unrelated outputs the floor of its scale (:data:`FLOOR_FLAGS`) and keeps a
``no_op``'s preservation score (nothing was lost) while flagging it.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from ieqa.data.images import TRANSPARENT_INFO_KEY, channel_max

__all__ = ["BLANK_RANGE", "FLAGS", "FLOOR_FLAGS", "MIN_SIDE", "NO_OP_FRACTION", "NO_OP_LEVELS",
           "TRANSPARENT_FRACTION", "TRANSPARENT_INFO_KEY", "UNRELATED_SCORE", "detect_flags"]

#: every flag, in the order results list them
FLAGS = ("blank", "transparent", "tiny", "no_op", "unrelated")
#: the flags for which an output is not an edit at all (``classic`` floors them)
FLOOR_FLAGS = frozenset({"blank", "transparent", "tiny", "unrelated"})
BLANK_RANGE = 10.0
TRANSPARENT_FRACTION = 0.5
MIN_SIDE = 32
NO_OP_LEVELS = 16.0
NO_OP_FRACTION = 0.001
UNRELATED_SCORE = 0.08


def _thumb(image: Image.Image, size: int) -> np.ndarray:
    return np.asarray(image.convert("RGB").resize((size, size), Image.Resampling.BOX),
                      dtype=np.float64)


#: the 19 compare-exchanges that leave the median of 9 values at index 4 (Paeth's network,
#: as in N. Devillard's "Fast median search", 1998)
_MEDIAN9 = ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3),
            (5, 8), (4, 7), (3, 6), (1, 4), (2, 5), (4, 7), (4, 2), (6, 4), (4, 2))


def _median3(a: np.ndarray) -> np.ndarray:
    """``scipy.ndimage.median_filter(a, 3)`` of a 2-D array (its default ``reflect``
    borders, the edge pixel repeated), exactly: a median is one of the nine values, and a
    sorting network finds it with elementwise minima and maxima, ten times faster."""
    h, w = a.shape
    p = np.pad(a, 1, mode="symmetric")
    v = [p[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)]
    for i, j in _MEDIAN9:
        v[i], v[j] = np.minimum(v[i], v[j]), np.maximum(v[i], v[j])
    return v[4]


def _is_blank(image: Image.Image) -> bool:
    w, h = image.size
    scale = min(1.0, 256 / max(w, h))
    small = image.convert("RGB").resize((max(1, round(w * scale)), max(1, round(h * scale))),
                                        Image.Resampling.BOX)
    arr = np.asarray(small, dtype=np.float64).reshape(-1, 3)
    lo, hi = np.percentile(arr, [1, 99], axis=0)
    return bool(np.all(hi - lo <= BLANK_RANGE))


def _abs_corr(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    denom = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return abs(float((a * b).sum()) / denom) if denom > 0 else 0.0


def _shared_structure(source: Image.Image, edited: Image.Image) -> float:
    """The larger of the matching-pixel fraction and the grey-thumbnail |correlation|, 0-1."""
    a, b = _thumb(source, 64), _thumb(edited, 64)
    matching = float((channel_max(np.abs(a - b)) <= 16).mean())
    grey = [np.asarray(im.convert("L").resize((32, 32), Image.Resampling.BOX), dtype=np.float64)
            for im in (source, edited)]
    return max(matching, _abs_corr(*grey))


def detect_flags(source: Image.Image | None, edited: Image.Image) -> list[str]:
    """The degenerate-output flags of one edit (see the module docstring), in :data:`FLAGS`
    order; an empty list for an ordinary edit.

    Args:
        source: the decoded source image, or None (no-reference use: ``no_op`` and
            ``unrelated`` are not computed).
        edited: the decoded edited image, as :func:`ieqa.data.images.load_image` returns it
            (its ``info`` carries the transparent fraction of an image that had alpha).
    """
    found: set[str] = set()
    if min(edited.size) < MIN_SIDE:
        found.add("tiny")
    if float(edited.info.get(TRANSPARENT_INFO_KEY, 0.0)) >= TRANSPARENT_FRACTION:
        found.add("transparent")
    if _is_blank(edited):
        found.add("blank")
    if source is not None and not found & {"tiny", "blank"}:
        diff = _median3(channel_max(np.abs(_thumb(source, 128) - _thumb(edited, 128))))
        if float((diff > NO_OP_LEVELS).mean()) <= NO_OP_FRACTION:
            found.add("no_op")
        elif _shared_structure(source, edited) < UNRELATED_SCORE:
            found.add("unrelated")
    return [f for f in FLAGS if f in found]
