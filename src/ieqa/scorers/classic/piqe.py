"""PIQE, the Perception-based Image Quality Evaluator (Venkatanath et al., NCC 2015).

A weight-free no-reference metric: no model is trained or fitted. **Lower is better**; the
score lies in [0, 100] (0: no distortion found, 100: every salient block distorted, or no
salient block at all, e.g. a flat image). It follows the reference implementation (MATLAB's
``piqe``), including its details:

1. One channel in [0, 255]: MATLAB ``rgb2gray`` (or the BT.601 luma with ``channel="y"``),
   rounded to integers (``round(255 * im2double(gray))``).
2. The image is padded at the bottom/right by edge replication to a multiple of 16.
3. MSCN coefficients ``(I - mu) / (sigma + 1)`` with a 7x7 Gaussian window (sigma 7/6,
   replicate padding).
4. The MSCN map is cut into 16x16 blocks. A block is *active* (spatially salient) when its
   variance (unbiased) exceeds 0.1; only active blocks are analysed. Its variance is ``v``.
5. *Noticeable artifact* criterion: each of the four block edges (1 pixel wide) is split
   into the 11 runs of 6 consecutive pixels; the block is impaired if any run has a
   standard deviation below 0.1 (a flat edge segment next to texture: blocking, ringing,
   sudden artifacts).
6. *Noise* criterion: with ``s = sqrt(v)`` and ``r`` the ratio of the standard deviation of
   the two centre columns (8 and 9 of 16) to that of the "surround" (as in the reference,
   the surround leaves out columns 8 and 10: MATLAB deletes column 8, then column 9 of
   what remains), ``beta = |s - r| / max(s, r)``; the block is noisy if ``s > 2 beta``.
7. Score ``100 * (1 + sum over active blocks of [impaired] (1 - v) + [noisy] v) /
   (1 + number of active blocks)``.

:func:`piqe_map` also returns the three block masks of the reference (activity, noticeable
artifacts, noise), cropped to the input size.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ieqa.scorers.classic._filters import matlab_round
from ieqa.scorers.classic.niqe import _mscn, to_luma

__all__ = ["PiqeResult", "piqe", "piqe_map"]

BLOCK = 16
ACTIVITY_THRESHOLD = 0.1
IMPAIRED_THRESHOLD = 0.1
SEGMENT = 6
# the two "centre" columns and the columns the reference leaves out of the surround (0-based)
_CENTRE = np.array([7, 8])
_SURROUND = np.setdiff1d(np.arange(BLOCK), [7, 9])


class PiqeResult(NamedTuple):
    """Score and ``HxW`` boolean block masks (the reference's ActivityMask,
    NoticeableArtifactsMask and NoiseMask)."""

    score: float
    activity_mask: np.ndarray
    artifacts_mask: np.ndarray
    noise_mask: np.ndarray


def _block_stats(norm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-block variance, active, impaired and noisy flags of an MSCN map (multiple of 16)."""
    nr, nc = norm.shape[0] // BLOCK, norm.shape[1] // BLOCK
    blocks = norm.reshape(nr, BLOCK, nc, BLOCK).swapaxes(1, 2)  # (nr, nc, 16, 16)
    var = blocks.reshape(nr, nc, -1).var(axis=-1, ddof=1)
    active = var > ACTIVITY_THRESHOLD

    edges = np.stack([blocks[..., 0, :], blocks[..., :, -1], blocks[..., -1, :],
                      blocks[..., :, 0]], axis=2)                # (nr, nc, 4, 16)
    seg_std = sliding_window_view(edges, SEGMENT, axis=-1).std(axis=-1, ddof=1)
    impaired = (seg_std < IMPAIRED_THRESHOLD).any(axis=(-2, -1))

    sigma = np.sqrt(var)
    centre = blocks[..., _CENTRE].reshape(nr, nc, -1).std(axis=-1, ddof=1)
    surround = blocks[..., _SURROUND].reshape(nr, nc, -1).std(axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = centre / surround
        ratio = np.where(np.isnan(ratio), 0.0, ratio)
        beta = np.abs(sigma - ratio) / np.maximum(sigma, ratio)
        noisy = sigma > 2.0 * beta
    return var, active, impaired & active, noisy & active


def piqe_map(image: Any, *, channel: str = "grey") -> PiqeResult:
    """PIQE score and block masks of an image (see :func:`piqe`)."""
    grey = matlab_round(to_luma(image, channel))
    h, w = grey.shape
    pad = ((0, -h % BLOCK), (0, -w % BLOCK))
    if pad[0][1] or pad[1][1]:
        grey = np.pad(grey, pad, mode="edge")
    norm, _ = _mscn(grey)
    var, active, impaired, noisy = _block_stats(norm)
    dist = np.where(impaired, 1.0 - var, 0.0) + np.where(noisy, var, 0.0)
    score = 100.0 * (1.0 + float(dist.sum())) / (1.0 + int(active.sum()))

    def expand(mask: np.ndarray) -> np.ndarray:
        return np.kron(mask, np.ones((BLOCK, BLOCK), dtype=bool))[:h, :w]

    return PiqeResult(score, expand(active), expand(impaired), expand(noisy))


def piqe(image: Any, *, channel: str = "grey") -> float:
    """PIQE score of an image in [0, 100], **lower is better**.

    Args:
        image: an ``HxW`` / ``HxWx3`` ``uint8`` (0-255) or float (0-1) array, or anything
            :func:`ieqa.data.images.load_image` accepts. Any size (padded to a multiple of
            16 as the reference does).
        channel: ``"grey"`` (MATLAB ``rgb2gray``, as the reference) or ``"y"`` (BT.601 luma).

    Raises:
        ValueError: invalid input (bad shape or dtype, float values outside [0, 1]).
    """
    return piqe_map(image, channel=channel).score
