"""MATLAB ``imresize`` (bicubic, with antialiasing) for 2-D float arrays. Private helper.

NIQE's reference code builds its second scale with ``imresize(im, 0.5)``, whose defaults are
bicubic interpolation with antialiasing on. This module reproduces that resampler, so that
second-scale features follow the reference rather than some other downsampler:

* the cubic convolution kernel of Keys (1981) with ``a = -0.5``;
* when shrinking (``scale < 1``) the kernel is stretched by ``1 / scale`` and scaled by
  ``scale`` (the antialiasing low-pass), so it spans ``4 / scale`` input pixels;
* output pixel ``x`` (1-based) is centred on input coordinate
  ``u = x / scale + 0.5 * (1 - 1 / scale)``;
* the weights of each output pixel are normalised to sum to one;
* out-of-range taps are mirrored half-sample symmetrically (``... 2 1 | 1 2 ... n | n n-1 ...``);
* the output size is ``ceil(scale * size)``.

For ``scale = 0.5`` an interior output pixel is the dot product of 8 consecutive input pixels
with ``[-3, -9, 29, 111, 111, 29, -9, -3] / 256``. Each dimension is resampled by a dense
``(out, in)`` weight matrix, so an image is resized with two matrix products; values are not
clipped or rounded (MATLAB keeps ``double`` input as is).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["imresize"]


def _cubic(x: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution kernel with a = -0.5 (MATLAB's ``cubic``)."""
    ax = np.abs(x)
    ax2 = ax * ax
    ax3 = ax2 * ax
    near = (1.5 * ax3 - 2.5 * ax2 + 1.0) * (ax <= 1.0)
    far = (-0.5 * ax3 + 2.5 * ax2 - 4.0 * ax + 2.0) * ((ax > 1.0) & (ax <= 2.0))
    return near + far


def resize_weights(in_length: int, out_length: int, scale: float,
                   antialiasing: bool = True) -> np.ndarray:
    """The dense ``(out_length, in_length)`` matrix of MATLAB's bicubic ``imresize`` along one
    dimension (rows sum to one)."""
    kernel_width = 4.0
    if scale < 1.0 and antialiasing:
        def kernel(x: np.ndarray) -> np.ndarray:
            return scale * _cubic(scale * x)

        kernel_width /= scale
    else:
        kernel = _cubic
    x = np.arange(1, out_length + 1, dtype=np.float64)
    u = x / scale + 0.5 * (1.0 - 1.0 / scale)
    left = np.floor(u - kernel_width / 2.0)
    taps = int(math.ceil(kernel_width)) + 2
    idx = left[:, None] + np.arange(taps)[None, :]          # 1-based input positions
    w = kernel(u[:, None] - idx)
    w /= w.sum(axis=1, keepdims=True)
    # half-sample symmetric mirroring of out-of-range taps (MATLAB: aux = [1:n, n:-1:1])
    period = 2 * in_length
    k = np.mod(idx.astype(np.int64) - 1, period)
    src = np.where(k < in_length, k, period - 1 - k)         # 0-based
    mat = np.zeros((out_length, in_length))
    rows = np.broadcast_to(np.arange(out_length)[:, None], src.shape)
    np.add.at(mat, (rows, src), w)
    return mat


def imresize(img: np.ndarray, scale: float) -> np.ndarray:
    """MATLAB ``imresize(img, scale)`` (bicubic, antialiasing on) of a 2-D array, as float64.

    Raises:
        ValueError: ``img`` is not 2-D or ``scale`` is not positive.
    """
    img = np.asarray(img, dtype=np.float64)
    if img.ndim != 2:
        raise ValueError(f"imresize expects a 2-D array, got shape {img.shape}")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    h, w = img.shape
    out_h, out_w = math.ceil(scale * h), math.ceil(scale * w)
    rows = resize_weights(h, out_h, scale)
    cols = resize_weights(w, out_w, scale)
    return rows @ img @ cols.T
