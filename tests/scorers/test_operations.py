"""Fitting the requested photometric operation (``classic`` preservation for global and
background instructions): each operation explains its own edit, at the strength used, and
nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from ieqa.scorers.classic.operations import LUMA, explain

SIGMA = 2.0


def _scene(size: int = 96, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A colourful textured background with two flat objects, and the objects' mask."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    bg = np.stack([0.3 + 0.4 * x, 0.5 + 0.2 * np.sin(6 * y), 0.6 - 0.3 * x * y], axis=2)
    bg += ndi.gaussian_filter(rng.normal(0, 0.08, (size, size, 3)), (1.5, 1.5, 0))
    objects = np.zeros((size, size), bool)
    objects[15:40, 20:45] = True
    objects[55:85, 50:80] = True
    img = bg.copy()
    img[15:40, 20:45] = (0.85, 0.2, 0.15)
    img[55:85, 50:80] = (0.1, 0.25, 0.75)
    return np.clip(img, 0, 1).astype(np.float32), objects


def _unexplained(src, edt, op, **kw) -> tuple[float, dict]:
    ex = explain(src, edt, op, sigma=SIGMA, **kw)
    assert ex.residual.shape == src.shape[:2] and ex.reference.shape == src.shape
    return float(ex.residual.mean()), ex.params


def test_brightness_in_the_requested_direction_is_explained() -> None:
    src, _ = _scene()
    brighter = np.clip(src * 1.3, 0, 1)
    err, params = _unexplained(src, brighter, "brighten")
    assert err < 0.003 and params["applied"] and params["gain"] == pytest.approx(1.3, abs=0.02)
    # the same image when darkening was asked: nothing explained, the whole change remains
    err_wrong, params_wrong = _unexplained(src, brighter, "darken")
    assert not params_wrong["applied"]
    assert err_wrong == pytest.approx(np.abs(ndi.gaussian_filter(brighter - src, (SIGMA, SIGMA, 0))).max(2).mean(), rel=0.05)
    assert err_wrong > 10 * err


def test_contrast_direction() -> None:
    src, _ = _scene()
    stronger = np.clip((src - 0.5) * 1.4 + 0.5, 0, 1)
    assert _unexplained(src, stronger, "contrast_up")[0] < 0.005
    assert not _unexplained(src, stronger, "contrast_down")[1]["applied"]


def test_colour_cast_on_top_of_a_brightening_is_not_explained() -> None:
    src, _ = _scene()
    edt = np.clip(src * 1.2 + np.array([0.12, 0.0, -0.08], np.float32), 0, 1)
    err, params = _unexplained(src, edt, "brighten")
    assert params["applied"] and err > 0.04  # one gain on all channels cannot tint


def test_monochrome_strength_and_sepia_needs_warmth() -> None:
    src, _ = _scene()
    grey = np.repeat((src @ LUMA)[..., None], 3, axis=2)
    half = src + 0.6 * (grey - src)
    err, params = _unexplained(src, half, "monochrome")
    assert err < 0.002 and params["strength"] == pytest.approx(0.6, abs=0.01)
    # a neutral grey image is not the warm tone "sepia" asks for
    assert not _unexplained(src, grey, "sepia")[1]["applied"]
    sepia = np.clip(grey[..., :1] * np.array([1.07, 0.74, 0.43], np.float32) + 0.05, 0, 1)
    err_sepia, p_sepia = _unexplained(src, sepia, "sepia")
    assert err_sepia < 0.005 and p_sepia["applied"] and p_sepia["warmth"] > 0.2


def test_posterize_finds_the_levels() -> None:
    src, _ = _scene()
    poster = np.round(src * 3) / 3
    err, params = _unexplained(src, poster, "posterize")
    assert params["levels"] == 4 and params["strength"] == pytest.approx(1.0, abs=0.02)
    assert err < 0.002


def test_background_blur_keeps_objects_and_catches_the_wrong_target() -> None:
    src, objects = _scene(seed=1)
    blurred = ndi.gaussian_filter(src, (3, 3, 0))
    right = np.where(objects[..., None], src, blurred)  # background blurred, objects sharp
    wrong = np.where(objects[..., None], blurred, src)  # the objects blurred instead
    err_right, params = _unexplained(src, right, "blur", background=True,
                                     changed=np.ones(objects.shape, bool))
    assert params["applied"] and params["blur_sigma"] == pytest.approx(3.0, abs=1.0)
    assert err_right < 0.003
    changed_wrong = np.abs(wrong - src).max(2) > 0.02
    err_wrong, _ = _unexplained(src, wrong, "blur", background=True, changed=changed_wrong)
    assert err_wrong > 5 * err_right
    # a whole-image blur is explained by the global operation
    assert _unexplained(src, blurred, "blur")[0] < 0.002


def test_unchanged_image_is_fully_explained_and_unknown_operations_raise() -> None:
    src, _ = _scene()
    for op in ("brighten", "monochrome", "sepia", "posterize", "blur"):
        assert _unexplained(src, src.copy(), op)[0] < 1e-6
    with pytest.raises(ValueError, match="unknown operation"):
        explain(src, src, "solarize", sigma=SIGMA)
