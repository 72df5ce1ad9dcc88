"""Pasted-patch artifacts: a rectangle whose content was shifted by one colour offset is
found (with its offset) and taken out; objects and whole-image casts are not patches."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from ieqa.scorers.classic.patches import pasted_patches, undo_patches


def _texture(size: int = 128, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    img = np.stack([0.3 + 0.3 * x, 0.4 + 0.2 * y, 0.5 + 0.1 * x], axis=2)
    img += ndi.gaussian_filter(rng.normal(0, 0.15, (size, size, 3)), (2, 2, 0))
    return np.clip(img, 0.05, 0.95).astype(np.float32)


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(ndi.gaussian_filter(a - b, (2, 2, 0))).max(2) > 0.04


def test_offset_rectangle_is_a_patch_and_undoing_it_keeps_real_changes() -> None:
    src = _texture()
    edt = src.copy()
    edt[30:80, 40:100] += np.array([0.12, -0.08, 0.1], np.float32)
    edt[50:60, 60:70] = (0.9, 0.9, 0.1)  # a real change inside the patch
    [(box, offset)] = pasted_patches(src, edt, _changed(src, edt))
    assert (box[0].start, box[0].stop) == pytest.approx((30, 80), abs=3)
    assert (box[1].start, box[1].stop) == pytest.approx((40, 100), abs=3)
    np.testing.assert_allclose(offset, [0.12, -0.08, 0.1], atol=0.01)
    d = np.abs(ndi.gaussian_filter(edt - src, (2, 2, 0))).max(2)
    undone, covered = undo_patches(src, ndi.gaussian_filter(edt, (2, 2, 0)), d, [(box, offset)],
                                   sigma=2.0)
    assert covered[25:85, 35:105].all() and not covered[:20].any()
    assert undone[40:45, 80:90].max() < 0.01  # the offset is gone
    assert undone[53:57, 63:67].min() > 0.3  # the real change inside the patch is not


def test_objects_and_casts_are_not_patches() -> None:
    src = _texture()
    src[30:60, 30:60] = (0.8, 0.2, 0.2)  # a plain square object
    recoloured = src.copy()
    recoloured[30:60, 30:60] = (0.2, 0.7, 0.3)
    assert pasted_patches(src, recoloured, _changed(src, recoloured)) == []
    cast = np.clip(src + np.array([0.1, 0.0, -0.1], np.float32), 0, 1)
    assert pasted_patches(src, cast, _changed(src, cast)) == []  # the whole image: not a patch
    noisy = src.copy()
    noisy[30:80, 40:100] += np.random.default_rng(1).normal(0, 0.1, (50, 60, 3)).astype(np.float32)
    assert pasted_patches(src, noisy, _changed(src, noisy)) == []  # not one offset


def test_patch_over_smooth_content_is_found_by_its_border() -> None:
    y, x = np.mgrid[0:128, 0:128] / 128
    smooth = np.stack([0.3 + 0.2 * x, 0.4 + 0.2 * y, 0.5 + 0.0 * x], axis=2).astype(np.float32)
    edt = smooth.copy()
    edt[20:70, 30:90] += 0.15
    [(box, offset)] = pasted_patches(smooth, edt, _changed(smooth, edt))
    np.testing.assert_allclose(offset, [0.15] * 3, atol=0.01)
