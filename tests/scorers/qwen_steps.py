"""Steps of the released Qwen-VL pipelines, written out here (not ieqa's code), that several
parity tests repeat: ``qwen_vl_utils``' resize and a random test image."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image


def qwen_vl_utils_resize(image: Image.Image, factor: int = 28, low: int = 4 * 28 * 28,
                         high: int = 16384 * 28 * 28) -> Image.Image:
    """qwen_vl_utils' resizing, written out: nearest grid sides, scaled into the budget."""
    w, h = image.size
    hb, wb = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if hb * wb > high:
        beta = math.sqrt(h * w / high)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < low:
        beta = math.sqrt(low / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return image.resize((wb, hb), Image.Resampling.BICUBIC)


def random_image(seed: int, size: tuple[int, int]) -> Image.Image:
    """A random RGB image of ``size`` (width, height)."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
