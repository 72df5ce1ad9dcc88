"""Private image-filtering helpers for the classical metrics, following MATLAB conventions.

The reference implementations of SSIM, MS-SSIM, GMSD, VIF and FSIM are MATLAB scripts, so
the helpers here reproduce the MATLAB behaviour they rely on:

* ``rgb2gray`` (0.2989 R + 0.5870 G + 0.1140 B, rounded back to integers for integer input,
  as MATLAB keeps the class of a ``uint8`` image) and the ``rgb2ycbcr`` luma (BT.601
  "studio swing" Y, in [16, 235] for 8-bit data, as used across the IQA literature);
* ``imfilter``/``filter2``/``conv2``-style correlation with ``'symmetric'``, ``'replicate'``
  or zero padding and ``'same'``/``'valid'`` output, separable where the kernel allows it;
* average-filter downsampling (filter with ``ones(f)/f^2``, then keep ``(1:f:end, 1:f:end)``).

Filtering acts on the last two axes, so a stack of images (``... x H x W``) is filtered in
one call. Everything is float64.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

# MATLAB's rgb2gray weights: the first row of inv(NTSC/YIQ matrix) = 0.298936, 0.587043, 0.114021
GREY_WEIGHTS = np.linalg.inv(
    np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.106, 1.703]])
)[0]
# BT.601 luma of rgb2ycbcr for RGB in [0, 1]: Y = 16/255 + (65.481 R + 128.553 G + 24.966 B)/255
Y_WEIGHTS = np.array([65.481, 128.553, 24.966]) / 255.0
Y_OFFSET = 16.0 / 255.0

_NDIMAGE_MODES = {"symmetric": "reflect", "replicate": "nearest", "zero": "constant"}
_PAD_MODES = {"symmetric": "symmetric", "replicate": "edge", "zero": "constant"}


def matlab_round(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (MATLAB ``round``), unlike numpy's round-half-to-even."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def rgb_to_grey(img: np.ndarray, *, integer: bool) -> np.ndarray:
    """MATLAB ``rgb2gray`` of an ``H x W x 3`` array; ``integer=True`` rounds the result as
    MATLAB does for integer-typed (e.g. ``uint8``) images."""
    grey = img @ GREY_WEIGHTS
    return np.floor(grey + 0.5, out=grey) if integer else grey  # non-negative: MATLAB round


def rgb_to_y(img: np.ndarray, data_range: float) -> np.ndarray:
    """Luma of MATLAB ``rgb2ycbcr`` for ``H x W x 3`` data in [0, data_range], in the same
    units (so Y lies in [16, 235] * data_range / 255); not rounded."""
    return (img @ Y_WEIGHTS / data_range + Y_OFFSET) * data_range


def gaussian_1d(size: int, sigma: float) -> np.ndarray:
    """Normalised 1-D Gaussian; ``np.outer(g, g)`` equals ``fspecial('gaussian', size, sigma)``."""
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-(x * x) / (2.0 * sigma * sigma))
    return g / g.sum()


def _origin(k: int) -> int:
    # ndimage centres a length-k kernel at k // 2, MATLAB at (k - 1) // 2: shift even kernels
    return (k - 1) // 2 - k // 2


def correlate_separable(img: np.ndarray, col: np.ndarray, row: np.ndarray, *,
                        padding: str = "symmetric", output: str = "same") -> np.ndarray:
    """Correlate the last two axes of ``img`` with ``np.outer(col, row)`` (no kernel flip,
    as MATLAB ``imfilter``/``filter2``).

    ``padding``: ``'symmetric'`` (mirror including the edge pixel), ``'replicate'`` or
    ``'zero'``. ``output='same'`` keeps the size, the kernel origin at index
    ``(k - 1) // 2`` as in MATLAB (also for even k); ``'valid'`` keeps only the positions
    where the kernel lies inside the image, so each side shrinks by ``k - 1``.
    """
    kh, kw = len(col), len(row)
    if output == "valid":
        h, w = img.shape[-2] - kh + 1, img.shape[-1] - kw + 1
        if h < 1 or w < 1:
            raise ValueError(f"image of size {img.shape[-2:]} is smaller than the {kh}x{kw} filter")
        # output j of a centred ndimage filter sees img[j - k//2 : j - k//2 + k]
        out = ndimage.correlate1d(img, row, axis=-1, mode="constant")[..., kw // 2: kw // 2 + w]
        return _correlate_rows_valid(out, col)
    if output != "same":
        raise ValueError(f"output must be 'same' or 'valid', got {output!r}")
    out = ndimage.correlate1d(img, row, axis=-1, mode=_NDIMAGE_MODES[padding], origin=_origin(kw))
    before = (kh - 1) // 2
    pad = [(0, 0)] * (img.ndim - 2) + [(before, kh - 1 - before), (0, 0)]
    return _correlate_rows_valid(np.pad(out, pad, mode=_PAD_MODES[padding]), col)


def _correlate_rows_valid(x: np.ndarray, col: np.ndarray, block: int = 32) -> np.ndarray:
    """'valid' correlation along axis -2, as shifted-row multiply-adds over blocks of
    ``block`` rows of one image at a time, which stay in cache: faster than
    ``ndimage.correlate1d(axis=-2)`` on large images, whose column-wise access strides
    through memory."""
    col = np.asarray(col, dtype=np.float64)
    k = len(col)
    rows, width = x.shape[-2:]
    h = rows - k + 1
    flat = x.reshape(-1, rows, width)
    out = np.empty((flat.shape[0], h, width))
    tmp = np.empty((min(block, h), width))
    half = k // 2
    symmetric = bool(np.array_equal(col, col[::-1]))
    for src, dst in zip(flat, out, strict=True):
        for i in range(0, h, block):
            m = min(block, h - i)
            acc, t = dst[i:i + m], tmp[:m]
            if symmetric:  # fold the mirrored taps: half the multiplications
                if k % 2:
                    np.multiply(src[i + half:i + half + m], col[half], out=acc)
                else:
                    acc.fill(0.0)
                for j in range(half):
                    np.add(src[i + j:i + j + m], src[i + k - 1 - j:i + k - 1 - j + m], out=t)
                    t *= col[j]
                    acc += t
            else:
                np.multiply(src[i:i + m], col[0], out=acc)
                for j in range(1, k):
                    np.multiply(src[i + j:i + j + m], col[j], out=t)
                    acc += t
    return out.reshape(x.shape[:-2] + (h, width))


def correlate_same(img: np.ndarray, kernel: np.ndarray, *, padding: str = "zero") -> np.ndarray:
    """Correlate a 2-D image with a small 2-D kernel, ``'same'`` size, MATLAB kernel centre."""
    origin = (_origin(kernel.shape[0]), _origin(kernel.shape[1]))
    return ndimage.correlate(img, kernel, mode=_NDIMAGE_MODES[padding], origin=origin)


def average_downsample(img: np.ndarray, f: int, *, padding: str = "symmetric") -> np.ndarray:
    """``imfilter(img, ones(f)/f^2, padding, 'same')(1:f:end, 1:f:end)`` on the last two axes.

    The kept windows do not overlap, so this is a mean over ``f x f`` blocks starting at
    ``-(f - 1) // 2`` (blocks leaving the image see the padding). Output size
    ``ceil(H / f) x ceil(W / f)``. ``padding='zero'`` gives MATLAB's ``conv2(..., 'same')``.
    """
    if f <= 1:
        return img
    h, w = img.shape[-2:]
    before = (f - 1) // 2
    oh, ow = -(-h // f), -(-w // f)
    after_h, after_w = max(oh * f - h - before, 0), max(ow * f - w - before, 0)
    if before or after_h or after_w:
        pad = [(0, 0)] * (img.ndim - 2) + [(before, after_h), (before, after_w)]
        img = np.pad(img, pad, mode=_PAD_MODES[padding])
    img = img[..., : oh * f, : ow * f]
    return img.reshape(*img.shape[:-2], oh, f, ow, f).mean(axis=(-3, -1))


def scale_factor(h: int, w: int, target: int = 256) -> int:
    """``max(1, round(min(H, W) / target))`` with MATLAB rounding (the automatic
    downsampling factor of Wang's ``ssim.m`` and Zhang's ``FeatureSIM.m``)."""
    return max(1, int(np.floor(min(h, w) / target + 0.5)))


def lowpass(img: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian low-pass of an (H, W) or (H, W, C) image over its two spatial axes
    (``sigma`` in pixels, scipy's reflect borders); ``sigma <= 0`` returns ``img``."""
    if sigma <= 0:
        return img
    return ndimage.gaussian_filter(img, (sigma, sigma) + (0,) * (img.ndim - 2))
