"""Real photographs from scikit-image's bundled sample data, used as source backgrounds."""

from __future__ import annotations

from functools import cache

import numpy as np
from PIL import Image

from ieqa.errors import IeqaError

#: scikit-image sample images shipped inside its wheel (no download needed).
PHOTO_NAMES: tuple[str, ...] = (
    "astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry",
    "retina", "colorwheel", "camera", "moon", "brick", "grass", "gravel", "coins", "clock",
)


@cache
def _photo(name: str) -> np.ndarray:
    try:
        import skimage.data
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise IeqaError(
            "photo sources need scikit-image: pip install 'ieqa[synth]', "
            "or generate with photo_fraction=0"
        ) from exc
    arr = np.asarray(getattr(skimage.data, name)())
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    return np.ascontiguousarray(arr[..., :3].astype(np.uint8))


def photo_background(rng: np.random.Generator, size: int) -> tuple[np.ndarray, str]:
    """A random square crop of a sample photo resized to ``size``; returns (image, name)."""
    name = str(rng.choice(PHOTO_NAMES))
    arr = _photo(name)
    h, w = arr.shape[:2]
    side = int(min(h, w) * rng.uniform(0.6, 1.0))
    y0 = int(rng.integers(0, h - side + 1))
    x0 = int(rng.integers(0, w - side + 1))
    crop = Image.fromarray(arr[y0 : y0 + side, x0 : x0 + side]).resize((size, size), Image.Resampling.LANCZOS)
    return np.asarray(crop, dtype=np.float32) / 255.0, name
