"""Where did an edit happen? ``(source, edited)`` -> change mask -> bounding box.

:func:`estimate_edit_region` compares an edited image with its source and returns an
:class:`EditRegion`: a boolean mask of the edited pixels at the source's resolution, the
tight box around it (EPAIQA's normalised centre/size ``<x, y, w, h>``,
:class:`~ieqa.data.schema.BBox`), the change map that was thresholded and whether the
change is *global* (most of the image changed: a restyle, a global brightening, a
colour cast) rather than localised.

Pipeline (numpy/scipy only, vectorised):

1. **Inputs** -> float RGB in [0, 1]. The edited image is resized to the source's size
   (bilinear with antialiasing) when sizes differ; images whose long side exceeds
   ``max_side`` are analysed at a reduced working size and the mask is scaled back up
   (nearest neighbour) to the source resolution.
2. **Photometric compensation**: a robust per-channel affine fit ``edited_c ~ a_c *
   source_c + b_c`` (trimmed least squares: refit on the ``fit_quantile`` of pixels with
   the smallest residual, 4 times; saturated edited pixels are left out of the fit and
   the prediction is clipped to [0, 1] like the edited image), so a colour cast or a
   global brightness/contrast change is not flagged as a local edit.
3. **Perceptual difference**: both images in a luma + chroma space (gamma-encoded
   BT.601 YCbCr, luma scaled to 0-100 and chroma weighted 1.5x: :data:`DIFFERENCE_SCALE`
   units), Gaussian low-pass (``smooth`` pixels), and the per-pixel Euclidean distance
   taken as the minimum over a ``(2 * search + 1)``-pixel square neighbourhood of the
   other image, in both directions (the larger of the two). Low-pass + neighbourhood
   search make the map robust to resampling, JPEG, noise and sub-pixel shifts.
   ``difference = min(1, distance / 50)``: 1.0 is a 50 % luma step or a full-scale
   chroma swing of 1/3; a recoloured object is typically 0.5-1.
4. **Threshold** (when ``threshold is None``): ``min(0.5, max(0.12, median + 8 * 1.4826
   * MAD, 0.4 * p99.5))`` on the difference map, i.e. above an absolute floor (a 6 %
   luma step), above the pair's own noise level (robust spread of the map) and above a
   fraction of the strongest change (so a weak halo around a strong edit is left out).
5. **Cleaning**: opening (3x3), closing (5x5), holes under 3 % of the image filled,
   connected components (8-connectivity) smaller than ``min_area`` of the image
   dropped, and so are components whose summed difference is under
   ``min_component_mass`` times the strongest component's (residue of artifacts).
6. **Box**: the tight box around *all* remaining components (a move changes two places,
   an over-edit may change several: the box covers every detected change).

``is_global`` is True when more than ``global_fraction`` of the image changed, either
before compensation (a cast, a brightening, a restyle) or after it (a change the affine
fit cannot explain). "Changed" for the uncompensated check means local mean colours
(block means to ~64 px, CIELAB) differing by more than Delta E76 = 4, so noise, blur and
fine JPEG texture do not count (heavy JPEG and clipped heavy noise on very dark/bright
images can). The mask still holds whatever localised change remains after compensation.

:func:`evaluate_region_iou` measures the estimate against labelled boxes/masks (e.g.
ShapesEdit) and :func:`region_iou` is the mask IoU.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from ieqa.data.images import load_image
from ieqa.data.schema import BBox, EditSample
from ieqa.errors import IeqaError

__all__ = [
    "DIFFERENCE_SCALE",
    "EditRegion",
    "RegionInputError",
    "estimate_edit_region",
    "evaluate_region_iou",
    "region_iou",
]

#: Feature-space distance (luma 0-100, chroma x150) that maps to 1.0 on the difference scale.
DIFFERENCE_SCALE = 50.0

_FLOOR = 0.12  # absolute minimum threshold on the difference scale (a 6 % luma step)
_MAD_K = 8.0  # noise threshold: median + _MAD_K * robust sigma
_PEAK_FRACTION = 0.4  # threshold >= this fraction of the 99.5th percentile of the map
_CAP = 0.5  # the adaptive threshold never exceeds this
_GLOBAL_DELTA_E = 4.0  # coarse CIELAB Delta E76 above which a block counts as changed (is_global)
_MAX_HOLE = 0.03  # holes up to this fraction of the image are filled
_FIT_PIXELS = 20_000  # pixels used (at most) by the photometric fit


class RegionInputError(IeqaError, ValueError):
    """An input to the edit-region estimator is invalid (shape, dtype, range, option)."""


@dataclass(frozen=True)
class EditRegion:
    """The estimated edit region of one (source, edited) pair.

    Attributes:
        mask: bool (H, W) at the source image's resolution; True = edited.
        bbox: tight box around ``mask`` in EPAIQA's normalised centre/size form
            (fractions of the source width/height, see :class:`~ieqa.data.schema.BBox`);
            ``None`` when nothing changed (empty mask).
        changed_fraction: ``mask.mean()``, the share of edited pixels, in [0, 1].
        difference: float32 (H, W) change map in [0, 1] after photometric compensation
            (``min(1, distance / DIFFERENCE_SCALE)``, see the module docstring), the map
            that was thresholded; at the source resolution.
        is_global: True when the change covers most of the image (more than
            ``global_fraction``, before or after compensation): a restyle, a global
            brightness change or colour cast, i.e. no localised region.
        threshold: the threshold applied to ``difference`` (given or adaptive), in [0, 1].
        global_change: share of the image, in [0, 1], whose local mean colour differs
            before photometric compensation (Delta E76 > 4 on ~64 px block means); what
            ``is_global`` compares with ``global_fraction``, together with
            ``changed_fraction``.
    """

    mask: np.ndarray
    bbox: BBox | None
    changed_fraction: float
    difference: np.ndarray
    is_global: bool
    threshold: float = 0.0
    global_change: float = 0.0


# --------------------------------------------------------------------------- inputs


def _as_rgb(img: Any, name: str) -> np.ndarray:
    """``img`` as a float32 (H, W, 3) array in [0, 1]."""
    if isinstance(img, np.ndarray):
        arr = img
        if arr.ndim == 3 and arr.shape[2] == 1:
            arr = arr[..., 0]
        if arr.ndim == 3 and arr.shape[2] == 4:
            arr = arr[..., :3]  # alpha ignored
        if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
            raise RegionInputError(
                f"{name} must be an HxW, HxWx1, HxWx3 or HxWx4 array (channels last), got shape {img.shape}"
            )
        if arr.shape[0] < 8 or arr.shape[1] < 8:
            raise RegionInputError(f"{name} is too small ({arr.shape[1]}x{arr.shape[0]}); need at least 8x8 pixels")
        if arr.dtype == np.uint8:
            out = arr.astype(np.float32) / 255.0
        elif arr.dtype == np.uint16:
            out = arr.astype(np.float32) / 65535.0
        elif np.issubdtype(arr.dtype, np.floating):
            if not np.isfinite(arr).all():
                raise RegionInputError(f"{name} contains NaN or infinite values")
            lo, hi = float(arr.min()), float(arr.max())
            if lo < -1e-3 or hi > 1.0 + 1e-3:
                raise RegionInputError(
                    f"{name}: float images must lie in [0, 1], got [{lo:g}, {hi:g}]; divide 0-255 data by 255"
                )
            out = np.clip(arr, 0.0, 1.0).astype(np.float32)
        else:
            raise RegionInputError(
                f"{name}: unsupported dtype {arr.dtype}; use uint8 (0-255), uint16 or floats in [0, 1]"
            )
        if out.ndim == 2:
            out = np.repeat(out[..., None], 3, axis=2)
        return np.ascontiguousarray(out)
    if isinstance(img, (Image.Image, str, Path, bytes)):
        return np.asarray(load_image(img), dtype=np.float32) / 255.0
    raise TypeError(f"{name} must be a PIL image, a numpy array, a path or bytes, got {type(img).__name__}")


def _resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear (antialiased when shrinking) resize of a float (H, W, C) image."""
    if img.shape[:2] == (height, width):
        return img
    chans = [
        np.asarray(Image.fromarray(np.ascontiguousarray(img[..., c], dtype=np.float32)).resize(
            (width, height), Image.Resampling.BILINEAR))  # 2-D float32 -> mode "F"
        for c in range(img.shape[2])
    ]
    return np.clip(np.stack(chans, axis=2), 0.0, 1.0).astype(np.float32)


# --------------------------------------------------------------------------- colour


_RGB_TO_XYZ = np.asarray(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]],
    dtype=np.float32,
)
_WHITE = np.asarray([0.95047, 1.0, 1.08883], dtype=np.float32)


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in [0, 1] -> CIELAB (D65); L in [0, 100]."""
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = (lin @ _RGB_TO_XYZ.T) / _WHITE
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    lab = np.empty_like(f)
    lab[..., 0] = 116 * f[..., 1] - 16
    lab[..., 1] = 500 * (f[..., 0] - f[..., 1])
    lab[..., 2] = 200 * (f[..., 1] - f[..., 2])
    return lab.astype(np.float32)


_YCC = np.asarray(
    [[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]], dtype=np.float32
)
_YCC_WEIGHTS = np.asarray([100.0, 150.0, 150.0], dtype=np.float32)


def _features(rgb: np.ndarray) -> np.ndarray:
    """Gamma-encoded luma + chroma (BT.601 YCbCr) with Y in [0, 100] and Cb, Cr weighted 1.5x:
    the space the difference map is measured in (distance / 50 = difference units)."""
    return (rgb @ _YCC.T) * _YCC_WEIGHTS


def _photometric_fit(src: np.ndarray, edt: np.ndarray, quantile: float) -> tuple[np.ndarray, np.ndarray]:
    """Robust per-channel affine ``edt_c ~ a_c * src_c + b_c``; returns (a, b), each (3,).

    Trimmed least squares on a pixel subsample: every round refits on the ``quantile``
    of pixels whose (all-channel) residual is smallest. Edited values at 0 or 1 are
    left out (clipped); a small ridge pulls the gain towards 1 when a channel is flat.
    """
    h, w = src.shape[:2]
    step = max(1, int(np.ceil(np.sqrt(h * w / _FIT_PIXELS))))
    x = np.ascontiguousarray(src[::step, ::step].reshape(-1, 3).T, dtype=np.float64)  # (3, N)
    y = np.ascontiguousarray(edt[::step, ::step].reshape(-1, 3).T, dtype=np.float64)
    valid = (y > 0.5 / 255) & (y < 1 - 0.5 / 255)  # not saturated
    keep = np.ones(x.shape[1], dtype=bool)
    a, b = np.ones(3), np.zeros(3)
    n_min = max(16, int(0.02 * x.shape[1]))
    for _ in range(4):
        wgt = (valid & keep).astype(np.float64)
        n = wgt.sum(axis=1)
        if (n < n_min).any():
            break
        wx, wy = wgt * x, wgt * y
        sx, sy = wx.sum(axis=1), wy.sum(axis=1)
        sxx, sxy = (wx * x).sum(axis=1), (wx * y).sum(axis=1)
        lam = 1e-3 * n  # ridge on (a - 1)
        # normal equations of sum w (y - a x - b)^2 + lam (a - 1)^2
        det = (sxx + lam) * n - sx * sx
        a = ((sxy + lam) * n - sx * sy) / det
        b = (sy - a * sx) / n
        resid = np.abs(y - (a[:, None] * x + b[:, None]))
        resid[~valid] = 0.0
        resid = resid.max(axis=0)
        k = int(quantile * (resid.size - 1))
        keep = resid <= np.partition(resid, k)[k]
    return a.astype(np.float32), b.astype(np.float32)


def _neighbourhood_distance(a: np.ndarray, b: np.ndarray, radius: int) -> np.ndarray:
    """Per pixel p of ``a`` (channels first, (3, H, W)): min over q within ``radius``
    (Chebyshev) of the Euclidean distance ||a(p) - b(q)||."""
    _, h, w = a.shape
    pad = np.pad(b, ((0, 0), (radius, radius), (radius, radius)), mode="edge") if radius else b
    best = np.full((h, w), np.inf, dtype=np.float32)
    d = np.empty((h, w), dtype=np.float32)
    t = np.empty((h, w), dtype=np.float32)
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            d.fill(0.0)
            for c in range(a.shape[0]):
                np.subtract(a[c], pad[c, dy : dy + h, dx : dx + w], out=t)
                np.multiply(t, t, out=t)
                d += t
            np.minimum(best, d, out=best)
    return np.sqrt(best)


def _difference(a_feat: np.ndarray, b_feat: np.ndarray, smooth: float, search: int) -> np.ndarray:
    """Shift-tolerant distance map (difference units, [0, 1]) of two (H, W, 3) feature images."""
    a = np.ascontiguousarray(np.moveaxis(a_feat, 2, 0), dtype=np.float32)
    b = np.ascontiguousarray(np.moveaxis(b_feat, 2, 0), dtype=np.float32)
    if smooth > 0:
        a = ndimage.gaussian_filter(a, sigma=(0, smooth, smooth), mode="nearest")
        b = ndimage.gaussian_filter(b, sigma=(0, smooth, smooth), mode="nearest")
    d = np.maximum(_neighbourhood_distance(a, b, search), _neighbourhood_distance(b, a, search))
    return np.minimum(1.0, d / DIFFERENCE_SCALE).astype(np.float32)


def _adaptive_threshold(diff: np.ndarray) -> float:
    med = float(np.median(diff))
    mad = float(np.median(np.abs(diff - med))) * 1.4826
    peak = float(np.quantile(diff, 0.995))
    return min(_CAP, max(_FLOOR, med + _MAD_K * mad, _PEAK_FRACTION * peak))


def _coarse_difference(a_rgb: np.ndarray, b_rgb: np.ndarray) -> np.ndarray:
    """CIELAB Delta E76 between local mean colours (block means to ~64 px on the short side,
    then a 1-block Gaussian, then CIELAB): blind to noise, blur and fine JPEG texture,
    sees changes of colour or tone."""
    f = max(1, min(a_rgb.shape[:2]) // 64)
    h, w = (a_rgb.shape[0] // f) * f, (a_rgb.shape[1] // f) * f

    def pooled(x: np.ndarray) -> np.ndarray:
        x = x[:h, :w].reshape(h // f, f, w // f, f, 3).mean(axis=(1, 3))
        return _lab(ndimage.gaussian_filter(x, sigma=(1.0, 1.0, 0), mode="nearest"))

    return np.sqrt(((pooled(a_rgb) - pooled(b_rgb)) ** 2).sum(axis=2))


def _clean(mask: np.ndarray, diff: np.ndarray, min_area: float, min_component_mass: float) -> np.ndarray:
    h, w = mask.shape
    mask = ndimage.binary_opening(mask, structure=np.ones((3, 3), bool))
    # closing on an edge-padded mask, so that changes touching the border keep their edge
    padded = np.pad(mask, 2, mode="edge")
    mask = ndimage.binary_closing(padded, structure=np.ones((5, 5), bool))[2:-2, 2:-2]
    holes, n_holes = ndimage.label(ndimage.binary_fill_holes(mask) & ~mask)
    if n_holes:
        sizes = np.bincount(holes.ravel(), minlength=n_holes + 1)
        small = sizes <= _MAX_HOLE * h * w
        small[0] = False
        mask = mask | small[holes]
    labels, n = ndimage.label(mask, structure=np.ones((3, 3), bool))
    if n == 0:
        return mask
    area = np.bincount(labels.ravel(), minlength=n + 1).astype(np.float64)
    mass = np.bincount(labels.ravel(), weights=diff.ravel().astype(np.float64), minlength=n + 1)
    ok = area >= min_area * h * w
    ok[0] = False
    if ok.any():
        ok &= mass >= min_component_mass * mass[ok].max()
    return ok[labels]


def _bbox(mask: np.ndarray) -> BBox | None:
    if not mask.any():
        return None
    h, w = mask.shape
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return BBox.from_xyxy(int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1, w, h)


# --------------------------------------------------------------------------- public API


def estimate_edit_region(
    source: Any,
    edited: Any,
    *,
    threshold: float | None = None,
    min_area: float = 0.002,
    min_component_mass: float = 0.1,
    smooth: float = 1.0,
    search: int = 1,
    compensate: bool = True,
    fit_quantile: float = 0.6,
    global_fraction: float = 0.5,
    max_side: int = 512,
) -> EditRegion:
    """Estimate which pixels of ``source`` an edit changed (see the module docstring).

    Args:
        source: the image before editing: a PIL image, a path/bytes, or an HxW / HxWx3
            (HxWx1, HxWx4: alpha ignored) array, uint8 (0-255), uint16 or float in [0, 1].
        edited: the image after editing, same forms; resized to the source's size
            (bilinear, antialiased) when the sizes differ.
        threshold: cut-off on the difference map (``min(1, distance / 50)``, see the
            module docstring), in (0, 1); ``None`` picks one per pair: ``min(0.5,
            max(0.12, median + 8 * 1.4826 * MAD, 0.4 * 99.5th percentile))``.
        min_area: connected components smaller than this fraction of the image (in
            [0, 1)) are dropped.
        min_component_mass: components whose summed difference is below this fraction
            (in [0, 1]) of the strongest component's are dropped.
        smooth: Gaussian low-pass sigma in pixels (of the working image) before
            comparing, >= 0.
        search: neighbourhood radius in pixels for the shift-tolerant comparison, 0-3.
        compensate: fit and remove a global per-channel affine colour change first.
        fit_quantile: share of pixels, in (0.1, 1], kept by each trimmed fit round; the
            fit tolerates local edits covering up to about ``1 - fit_quantile`` of the image.
        global_fraction: ``is_global`` when more than this share of the image, in (0, 1],
            changed before or after compensation.
        max_side: analyse at most this many pixels along the long side (>= 32); larger
            inputs are downscaled and the mask is scaled back to the source size.

    Returns:
        An :class:`EditRegion` at the source's resolution.

    Raises:
        RegionInputError (a ``ValueError``): a bad image shape, dtype or value range, or
            an option out of range.
        TypeError: an image of an unsupported type.
    """
    if threshold is not None and not 0.0 < threshold < 1.0:
        raise RegionInputError(f"threshold must be in (0, 1) or None, got {threshold}")
    if not 0.0 <= min_area < 1.0:
        raise RegionInputError(f"min_area must be in [0, 1), got {min_area}")
    if not 0.0 <= min_component_mass <= 1.0:
        raise RegionInputError(f"min_component_mass must be in [0, 1], got {min_component_mass}")
    if not (smooth >= 0 and np.isfinite(smooth)):
        raise RegionInputError(f"smooth must be a finite number >= 0, got {smooth}")
    if int(search) != search or not 0 <= search <= 3:
        raise RegionInputError(f"search must be an integer in 0..3, got {search}")
    if not 0.1 < fit_quantile <= 1.0:
        raise RegionInputError(f"fit_quantile must be in (0.1, 1], got {fit_quantile}")
    if not 0.0 < global_fraction <= 1.0:
        raise RegionInputError(f"global_fraction must be in (0, 1], got {global_fraction}")
    if max_side < 32:
        raise RegionInputError(f"max_side must be >= 32, got {max_side}")

    src = _as_rgb(source, "source")
    edt = _as_rgb(edited, "edited")
    h, w = src.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    wh, ww = max(8, round(h * scale)), max(8, round(w * scale))
    src_w = _resize(src, wh, ww)
    edt_w = _resize(edt, wh, ww)

    src_f, edt_f = _features(src_w), _features(edt_w)
    global_change = float((_coarse_difference(src_w, edt_w) > _GLOBAL_DELTA_E).mean())
    if compensate:
        a, b = _photometric_fit(src_w, edt_w, fit_quantile)
        src_f = _features(np.clip(src_w * a + b, 0.0, 1.0))
    diff = _difference(src_f, edt_f, smooth, int(search))
    thr = _adaptive_threshold(diff) if threshold is None else float(threshold)
    mask = _clean(diff > thr, diff, min_area, min_component_mass)

    if (wh, ww) != (h, w):
        mask = np.asarray(
            Image.fromarray(mask.astype(np.uint8) * 255).resize((w, h), Image.Resampling.NEAREST)
        ) > 127
        diff = np.clip(_resize(diff[..., None], h, w)[..., 0], 0.0, 1.0)
    changed = float(mask.mean())
    return EditRegion(
        mask=mask,
        bbox=_bbox(mask),
        changed_fraction=changed,
        difference=diff.astype(np.float32, copy=False),
        is_global=bool(global_change > global_fraction or changed > global_fraction),
        threshold=thr,
        global_change=global_change,
    )


def region_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two masks of the same shape, in [0, 1].

    Non-bool arrays count non-zero as True (e.g. a 0/255 ``uint8`` mask). Two empty
    masks agree perfectly: 1.0. For boxes use :meth:`ieqa.data.schema.BBox.iou`.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise RegionInputError(f"masks differ in shape: {a.shape} vs {b.shape}")
    a, b = a.astype(bool), b.astype(bool)
    union = int(np.count_nonzero(a | b))
    if union == 0:
        return 1.0
    return int(np.count_nonzero(a & b)) / union


# --------------------------------------------------------------------------- evaluation


def _summary(values: Sequence[float]) -> dict[str, float | int]:
    return {"n": len(values), "mean": float(np.mean(values)) if values else float("nan")}


def _mask_array(ref: Any, height: int, width: int) -> np.ndarray:
    if isinstance(ref, np.ndarray):
        arr = ref if ref.ndim == 2 else ref.max(axis=2)
        m = arr > (127 if arr.dtype == np.uint8 else 0.5)
    else:  # PIL image, path or bytes; an L-mode mask becomes grey RGB
        m = np.asarray(load_image(ref)).max(axis=2) > 127
    if m.shape != (height, width):
        m = np.asarray(Image.fromarray(m.astype(np.uint8) * 255).resize((width, height), Image.Resampling.NEAREST)) > 127
    return m


def evaluate_region_iou(
    samples: Iterable[EditSample],
    *,
    modes: Sequence[str] = ("perfect", "partial"),
    **options: Any,
) -> dict[str, Any]:
    """Score :func:`estimate_edit_region` against labelled edit regions.

    A sample is *localised* when it has a source and a ``bbox`` and its
    ``meta["localised"]`` is not False; *global* when ``meta["localised"]`` is False.
    Samples whose ``meta["mode"]`` (ShapesEdit's simulated-editor mode) is not in
    ``modes`` are skipped: a no-op or wrong-target candidate did not change the labelled
    region. Samples without ``meta["mode"]`` are always used.

    Args:
        samples: edits with ``source``, ``edited`` and labels (``bbox``, optional ``mask``).
        modes: ShapesEdit modes to evaluate (default: the edit was carried out).
        **options: keyword arguments of :func:`estimate_edit_region`.

    Returns:
        A JSON-serialisable dict::

            {"n": ..., "mean_bbox_iou": ..., "median_bbox_iou": ...,
             "mean_mask_iou": ... (samples with a mask), "missed": share with no box,
             "is_global_false_positive": share of localised samples called global,
             "by_task": {task: {"n", "mean"}}, "by_artifact": {...}, "by_mode": {...},
             "global": {"n": ..., "is_global_accuracy": ..., "by_task": {...}},
             "skipped": ..., "seconds_per_pair": ...}

        ``by_artifact`` keys are ``meta["artifact"]`` plus ``/region`` or ``/global``
        (``meta["artifact_scope"]``), ``"none"`` without one. Means are NaN for empty sets.
    """
    ious: list[float] = []
    mask_ious: list[float] = []
    by_task: dict[str, list[float]] = {}
    by_artifact: dict[str, list[float]] = {}
    by_mode: dict[str, list[float]] = {}
    missed = called_global = skipped = 0
    glob: list[float] = []
    glob_task: dict[str, list[float]] = {}
    seconds = 0.0
    pairs = 0
    for s in samples:
        mode = s.meta.get("mode")
        localised = s.meta.get("localised")
        if s.source is None or (mode is not None and mode not in modes) or (localised is not False and s.bbox is None):
            skipped += 1
            continue
        t0 = time.perf_counter()
        src = load_image(s.source)
        region = estimate_edit_region(src, load_image(s.edited), **options)
        seconds += time.perf_counter() - t0
        pairs += 1
        task = s.task or "unknown"
        if localised is False:
            glob.append(float(region.is_global))
            glob_task.setdefault(task, []).append(float(region.is_global))
            continue
        iou = 0.0 if region.bbox is None else region.bbox.iou(s.bbox)
        missed += region.bbox is None
        called_global += region.is_global
        ious.append(iou)
        by_task.setdefault(task, []).append(iou)
        art = s.meta.get("artifact")
        key = "none" if art is None else f"{art}/{s.meta.get('artifact_scope') or 'global'}"
        by_artifact.setdefault(key, []).append(iou)
        by_mode.setdefault(str(mode), []).append(iou)
        if s.mask is not None:
            mask_ious.append(region_iou(region.mask, _mask_array(s.mask, *region.mask.shape)))
    n = len(ious)
    return {
        "n": n,
        "mean_bbox_iou": float(np.mean(ious)) if n else float("nan"),
        "median_bbox_iou": float(np.median(ious)) if n else float("nan"),
        "mean_mask_iou": float(np.mean(mask_ious)) if mask_ious else float("nan"),
        "missed": missed / n if n else float("nan"),
        "is_global_false_positive": called_global / n if n else float("nan"),
        "by_task": {k: _summary(v) for k, v in sorted(by_task.items())},
        "by_artifact": {k: _summary(v) for k, v in sorted(by_artifact.items())},
        "by_mode": {k: _summary(v) for k, v in sorted(by_mode.items())},
        "global": {
            "n": len(glob),
            "is_global_accuracy": float(np.mean(glob)) if glob else float("nan"),
            "by_task": {k: _summary(v) for k, v in sorted(glob_task.items())},
        },
        "skipped": skipped,
        "seconds_per_pair": seconds / pairs if pairs else float("nan"),
    }
