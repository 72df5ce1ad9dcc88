"""Visual artifacts a simulated editor can leave: noise, blur, JPEG blocking, seams.

Each artifact takes a float image (H, W, 3) in [0, 1], a severity in (0, 1] and an
optional region mask, and returns the degraded image. Severity maps to the artifact's
parameter linearly (documented per function); the ground-truth visual quality of an
edit is ``1 - severity`` (see :mod:`ieqa.data.shapesedit.truth`).
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter

ARTIFACTS = ("noise", "blur", "jpeg", "seam")


def _within(img: np.ndarray, degraded: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    if mask is None:
        return degraded
    m = mask[..., None]
    return img * (1 - m) + degraded * m


def noise(img: np.ndarray, severity: float, rng: np.random.Generator, mask: np.ndarray | None = None) -> np.ndarray:
    """Gaussian noise with standard deviation 0.02 + 0.16 * severity (image range 0-1)."""
    sigma = 0.02 + 0.16 * severity
    return _within(img, img + rng.normal(0.0, sigma, img.shape).astype(np.float32), mask)


def blur(img: np.ndarray, severity: float, rng: np.random.Generator, mask: np.ndarray | None = None) -> np.ndarray:
    """Gaussian blur with sigma 0.6 + 3.4 * severity pixels."""
    sigma = 0.6 + 3.4 * severity
    return _within(img, gaussian_filter(img, sigma=(sigma, sigma, 0)), mask)


def jpeg(img: np.ndarray, severity: float, rng: np.random.Generator, mask: np.ndarray | None = None) -> np.ndarray:
    """JPEG re-encoding at quality round(40 - 38 * severity) (2..40), 4:2:0 subsampling."""
    quality = int(round(40 - 38 * severity))
    buf = io.BytesIO()
    Image.fromarray(to_uint8(img)).save(buf, format="JPEG", quality=quality, subsampling=2)
    buf.seek(0)
    decoded = np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255.0
    return _within(img, decoded, mask)


def seam(img: np.ndarray, severity: float, rng: np.random.Generator, mask: np.ndarray | None = None) -> np.ndarray:
    """A pasted-patch look: a rectangle (the region's bounding box, or a random one) is
    offset in colour by 0.06 + 0.24 * severity and outlined by a 2-pixel dark seam."""
    h, w = img.shape[:2]
    if mask is not None and mask.max() > 0.5:
        ys, xs = np.nonzero(mask > 0.5)
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    else:
        bh, bw = int(rng.integers(h // 4, h // 2)), int(rng.integers(w // 4, w // 2))
        y0, x0 = int(rng.integers(0, h - bh)), int(rng.integers(0, w - bw))
        y1, x1 = y0 + bh, x0 + bw
    y0, x0 = max(0, y0 - 3), max(0, x0 - 3)
    y1, x1 = min(h, y1 + 3), min(w, x1 + 3)
    out = img.copy()
    offset = (0.06 + 0.24 * severity) * rng.choice([-1.0, 1.0], size=3).astype(np.float32)
    out[y0:y1, x0:x1] += offset
    dark = 1.0 - 0.6 * severity
    for sl in (np.s_[y0:y0 + 2, x0:x1], np.s_[y1 - 2:y1, x0:x1], np.s_[y0:y1, x0:x0 + 2], np.s_[y0:y1, x1 - 2:x1]):
        out[sl] *= dark
    return out


APPLY: dict[str, Callable[..., np.ndarray]] = {"noise": noise, "blur": blur, "jpeg": jpeg, "seam": seam}


def to_uint8(img: np.ndarray) -> np.ndarray:
    """Float image in [0, 1] -> uint8 (rounded, clipped)."""
    return np.clip(np.round(img * 255.0), 0, 255).astype(np.uint8)
