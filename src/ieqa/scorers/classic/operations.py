"""The requested photometric operation, fitted to an edit: what change does it explain?

For a global or background instruction (:mod:`ieqa.scorers.classic.scope`), the
requested change covers much of the image, so preservation cannot be measured outside an
edit region. Instead, :func:`explain` fits the requested operation to the pair — in the
requested direction only, at the strength that best reproduces the edited image — and
returns the image that operation would have produced. Whatever the edited image changed
beyond it is unrequested. An edit that went the other way ("brighter" asked, the image
got darker) is explained by no strength but zero, so its whole change stays unrequested.

Every fit is closed-form least squares on the unfiltered float RGB images in [0, 1],
leaving out edited pixels within 2 % of black or white (clipped); the fitted operation
is then applied to the unfiltered source and low-passed like the images it is compared
with (``sigma``), so clipping and quantisation are modelled where they happen:

===============  =============================================================================
operation        family, fitted parameters, direction
===============  =============================================================================
brighten         ``a * x + b`` on all channels alike; the mean must rise
darken           the same family; the mean must fall
contrast_up      the same family; the gain ``a`` must exceed 1
contrast_down    the same family; ``a`` must stay below 1
monochrome       ``(1 - t) * x + t * Y`` (BT.601 luma on every channel), ``t`` in [0, 1]
sepia            ``(1 - t) * x + A_c * Y + B_c``: a luma-driven tone per channel; the tone at
                 full strength must be warm (red above blue by 0.1 at mid-grey)
posterize        ``(1 - t) * x + t * Q_L(x)``, ``Q_L`` uniform quantisation to L = 2..8 levels
blur             a Gaussian blur of sigma 0.5-8 px (or none)
===============  =============================================================================

``background`` scope keeps, per pixel, the better of "unchanged" and "operation applied"
(the operation is fitted on the pixels that changed; for a blur, changes thinner than
4 sigma, the band where the blurred background bleeds around sharp objects, are left
out), but only inside changed regions that reach the image border: the background surrounds the objects, so a change confined
to regions inside the frame (the objects blurred instead of the background, another
object recoloured) stays unrequested. An edit of the background that leaves the objects
alone is fully explained, and so is one that changes nothing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import ndimage as ndi

from ieqa.data.images import channel_max
from ieqa.scorers.classic._filters import lowpass

__all__ = ["LUMA", "Explanation", "explain"]

#: BT.601 luma weights (MATLAB ``rgb2gray``), the monochrome and sepia base.
LUMA = np.asarray([0.299, 0.587, 0.114], dtype=np.float32)
_CLIP_MARGIN = 0.02
_WARM_MIN = 0.1
_BLUR_SIGMAS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
_POSTER_LEVELS = range(2, 9)


def _valid(edited: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """(H, W, 3) channel values used for fitting: not clipped in the edited image, and
    within ``weight`` (H, W) when given; every value when fewer than 16 are left."""
    ok = (edited > _CLIP_MARGIN) & (edited < 1 - _CLIP_MARGIN)
    if weight is not None:
        ok &= weight[..., None]
    return ok if ok.sum() >= 16 else np.ones(ok.shape, dtype=bool)


def _blend_strength(src: np.ndarray, target: np.ndarray, edt: np.ndarray, ok: np.ndarray) -> float:
    """Least-squares ``t`` in [0, 1] of ``edt ~ (1 - t) * src + t * target`` on ``ok``."""
    direction = (target - src)[ok]
    denom = float((direction * direction).sum())
    if denom <= 1e-12:
        return 0.0
    return float(np.clip(((edt - src)[ok] * direction).sum() / denom, 0.0, 1.0))


def _affine(src, edt, ok, op: str) -> tuple[np.ndarray | None, dict[str, Any]]:
    x, y = src[ok].ravel(), edt[ok].ravel()
    a, b = np.polyfit(x, y, 1) if np.ptp(x) > 1e-6 else (1.0, float(np.mean(y - x)))
    fitted = np.clip(a * src + b, 0.0, 1.0)
    if op in ("brighten", "darken"):
        effect = float(fitted.mean() - src.mean())
        right_way = effect > 0 if op == "brighten" else effect < 0
    else:
        right_way = a > 1 if op == "contrast_up" else a < 1
    params = {"gain": round(float(a), 4), "offset": round(float(b), 4), "applied": bool(right_way)}
    return (fitted if right_way else None), params


def _monochrome(src, edt, ok) -> tuple[np.ndarray | None, dict[str, Any]]:
    grey = np.repeat((src @ LUMA)[..., None], 3, axis=2)
    t = _blend_strength(src, grey, edt, ok)
    return (src + t * (grey - src) if t > 0 else None), {"strength": round(t, 4), "applied": t > 0}


def _sepia(src, edt, ok) -> tuple[np.ndarray | None, dict[str, Any]]:
    luma = src @ LUMA
    blocks = []
    for c in range(3):
        m = ok[..., c]
        block = np.zeros((int(m.sum()), 7))
        block[:, 0], block[:, 1 + c], block[:, 4 + c] = src[..., c][m], luma[m], 1.0
        blocks.append(block)
    rows = np.concatenate(blocks)
    target = np.concatenate([edt[..., c][ok[..., c]] for c in range(3)])
    coef = np.linalg.lstsq(rows, target, rcond=None)[0]
    keep = float(np.clip(coef[0], 0.0, 1.0))
    if keep != coef[0]:  # strength out of range: refit the tone with the clipped strength
        rest = target - keep * rows[:, 0]
        coef = np.concatenate([[keep], np.linalg.lstsq(rows[:, 1:], rest, rcond=None)[0]])
    t = 1.0 - keep
    tone, shift = coef[1:4], coef[4:7]
    warmth = float(((tone * 0.5 + shift)[0] - (tone * 0.5 + shift)[2]) / t) if t > 1e-3 else 0.0
    applied = t > 1e-3 and warmth >= _WARM_MIN
    fitted = np.clip(keep * src + luma[..., None] * tone + shift, 0.0, 1.0)
    params = {"strength": round(t, 4), "warmth": round(warmth, 4), "applied": applied}
    return (fitted if applied else None), params


def _posterize(src, edt, ok) -> tuple[np.ndarray | None, dict[str, Any]]:
    best: tuple[float, np.ndarray | None, dict[str, Any]] = (
        float(np.abs(edt - src)[ok].mean()), None, {"levels": None, "applied": False})
    for levels in _POSTER_LEVELS:
        q = np.round(src * (levels - 1)) / (levels - 1)
        t = _blend_strength(src, q, edt, ok)
        fitted = src + t * (q - src)
        err = float(np.abs(edt - fitted)[ok].mean())
        if err < best[0]:
            best = (err, fitted, {"levels": levels, "strength": round(t, 4), "applied": t > 0})
    return best[1], best[2]


class Explanation(NamedTuple):
    """What :func:`explain` found.

    Attributes:
        residual: (H, W) low-passed change the operation does not explain (max over
            channels of the absolute difference, 0-1).
        reference: (H, W, 3) the unfiltered image the requested operation explains:
            the source with the fitted operation applied where it is kept.
        params: the fitted parameters and whether the operation was applied (``applied``).
    """

    residual: np.ndarray
    reference: np.ndarray
    params: dict[str, Any]


def explain(source: np.ndarray, edited: np.ndarray, operation: str, *, sigma: float,
            background: bool = False, changed: np.ndarray | None = None,
            lowpassed: tuple[np.ndarray, np.ndarray] | None = None) -> Explanation:
    """Fit ``operation`` to the pair: what part of the change does it explain?

    Args:
        source, edited: unfiltered float RGB (H, W, 3) in [0, 1], the same size.
        operation: a key of :data:`ieqa.scorers.classic.scope.OPERATIONS`.
        sigma: Gaussian low-pass (px) applied before the per-pixel comparison, >= 0.
        background: keep, per pixel, the better of "unchanged" and "operation applied",
            inside the changed regions that touch the image border.
        changed: (H, W) bool, the pixels that changed (the fitting set and the regions
            for ``background``); ``None`` means every pixel.
        lowpassed: ``source`` and ``edited`` already low-passed by ``sigma``, when the
            caller has them.
    """
    s_lp, e_lp = lowpassed or (lowpass(source, sigma), lowpass(edited, sigma))
    unchanged = channel_max(np.abs(e_lp - s_lp))
    region = (_border_regions(np.ones(unchanged.shape, bool) if changed is None else changed)
              if background else None)

    def residual(fitted_lp: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The unexplained change, and where the operation is kept (``background``)."""
        d = channel_max(np.abs(e_lp - fitted_lp))
        if region is None:
            return d, None
        keep = region & (d < unchanged)
        return np.where(keep, d, unchanged), keep

    def reference(fitted: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
        return fitted if keep is None else np.where(keep[..., None], fitted, source)

    if operation == "blur":
        best = (float(unchanged.mean()), unchanged, None, 0.0)
        for b in _BLUR_SIGMAS:
            d, keep = residual(lowpass(source, float(np.hypot(b, sigma))))
            if float(d.mean()) < best[0]:
                best = (float(d.mean()), d, keep, b)
        _, d, keep, b = best
        if not b:
            return Explanation(unchanged, source, {"blur_sigma": 0.0, "applied": False})
        if background:  # the blurred background bleeds into a band around objects
            d = ndi.minimum_filter(d, size=2 * int(np.ceil(2 * b)) + 1)
        return Explanation(d, reference(lowpass(source, b), keep),
                           {"blur_sigma": b, "applied": True})
    ok = _valid(edited, changed if background else None)
    if operation in ("brighten", "darken", "contrast_up", "contrast_down"):
        fitted, params = _affine(source, edited, ok, operation)
    elif operation == "monochrome":
        fitted, params = _monochrome(source, edited, ok)
    elif operation == "sepia":
        fitted, params = _sepia(source, edited, ok)
    elif operation == "posterize":
        fitted, params = _posterize(source, edited, ok)
    else:
        raise ValueError(f"unknown operation {operation!r}")
    if fitted is None:
        return Explanation(unchanged, source, params)
    d, keep = residual(lowpass(fitted, sigma))
    return Explanation(d, reference(fitted, keep), params)


def _border_regions(mask: np.ndarray) -> np.ndarray:
    """The connected regions (8-connectivity) of ``mask`` that touch the image border."""
    labels, n = ndi.label(mask, structure=np.ones((3, 3), bool))
    if n == 0:
        return mask
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    return np.isin(labels, edge[edge > 0])
