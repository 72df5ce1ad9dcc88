"""Cheap no-reference measures of the usual edit artifacts, on grey images in [0, 1].

Each function looks at one image (or a crop) alone:

* :func:`noise_sigma` — Gaussian noise level (Immerkaer 1996): the mean absolute response
  to a 3x3 mask that cancels locally linear signal, ``sigma = sqrt(pi/2) * mean|r| / 6``.
  Unit: grey levels on the 0-1 scale.
* :func:`detail_energy` — mean squared high-pass detail ``x - G_1(x)`` (Gaussian,
  sigma 1 px); falls with blur, rises with noise. Unit: squared grey levels.
* :func:`blockiness` — how much stronger the steps across the 8-pixel grid of a JPEG are
  than steps elsewhere (1 for an image without blocking).

The ``classic`` scorer compares these on the edited image with the same measures on the
source, which is the natural baseline for that scene (see
:mod:`ieqa.scorers.classic.composite`).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from ieqa.scorers.classic._filters import rgb_to_grey

__all__ = ["blockiness", "detail_energy", "grey", "noise_sigma"]

_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def grey(image: np.ndarray) -> np.ndarray:
    """``float32`` grey image in [0, 1] from ``HxWx3``/``HxW`` ``uint8`` (0-255) or float (0-1)."""
    a = np.asarray(image)
    scale = 255.0 if a.dtype == np.uint8 else 1.0
    a = a.astype(np.float32) / scale
    if a.ndim == 3:
        a = rgb_to_grey(a[..., :3], integer=False).astype(np.float32)
    if a.ndim != 2:
        raise ValueError(f"image must be HxW or HxWx3, got shape {np.shape(image)}")
    return a


def _check(g: np.ndarray, min_side: int, what: str) -> None:
    if g.ndim != 2 or min(g.shape) < min_side:
        raise ValueError(f"{what} needs a grey image of at least {min_side}x{min_side} pixels, "
                         f"got shape {g.shape}")


def noise_sigma(g: np.ndarray) -> float:
    """Noise standard deviation of grey image ``g`` (0-1 scale), Immerkaer's estimator."""
    _check(g, 3, "noise_sigma")
    r = ndi.correlate(g, _IMMERKAER, mode="reflect")[1:-1, 1:-1]
    return float(np.sqrt(np.pi / 2.0) * np.abs(r).mean() / 6.0)


def detail_energy(g: np.ndarray) -> float:
    """Mean squared high-pass detail of ``g`` (difference from a sigma-1 Gaussian blur)."""
    _check(g, 3, "detail_energy")
    d = g - ndi.gaussian_filter(g, 1.0, mode="reflect")
    return float(np.mean(d * d))


def blockiness(g: np.ndarray, origin: tuple[int, int] = (0, 0)) -> float:
    """Mean step across the 8-pixel grid divided by the mean step anywhere (horizontal and
    vertical averaged); about 1 without JPEG blocking, larger with it.

    ``origin`` is the ``(row, column)`` of ``g``'s top-left pixel in the full image when
    ``g`` is a crop, so the grid stays aligned with the image's 8x8 blocks.
    """
    _check(g, 16, "blockiness")
    dx = np.abs(np.diff(g, axis=1))
    dy = np.abs(np.diff(g, axis=0))
    eps = 1e-6
    # the step between columns c and c+1 crosses a block edge when (origin + c) % 8 == 7
    bx = dx[:, (7 - origin[1]) % 8::8].mean() / (dx.mean() + eps)
    by = dy[(7 - origin[0]) % 8::8, :].mean() / (dy.mean() + eps)
    return float((bx + by) / 2.0)
