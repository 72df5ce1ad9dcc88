"""Properties of the full-reference metrics on small synthetic images (hand-checkable values,
symmetry, monotonicity, input validation, the maps)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from ieqa.scorers.classic import _filters as F
from ieqa.scorers.classic import fr

SIZE = 192  # >= 176, the smallest size MS-SSIM accepts


def _image(seed: int = 0, size: int = SIZE, rgb: bool = True) -> np.ndarray:
    """Smooth random texture plus a gradient and an edge, uint8."""
    rng = np.random.default_rng(seed)
    shape = (size, size, 3) if rgb else (size, size)
    sigma = (2.0, 2.0, 0.0) if rgb else 2.0
    x = ndimage.gaussian_filter(rng.normal(size=shape), sigma)
    x = (x - x.min()) / np.ptp(x) * 160 + 40
    x += np.linspace(-30, 30, size)[:, None] if not rgb else np.linspace(-30, 30, size)[:, None, None]
    x[: size // 2, size // 3] += 40
    return np.clip(np.round(x), 0, 255).astype(np.uint8)


def _noisy(img: np.ndarray, sigma: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(np.round(img + rng.normal(0, sigma, img.shape)), 0, 255).astype(np.uint8)


REF = _image()
DIST = _noisy(REF, 10)
GREY = _image(rgb=False)


# --------------------------------------------------------------------------- identity


def test_identical_images() -> None:
    assert fr.psnr(REF, REF) == math.inf  # MSE = 0: PSNR is documented as +inf
    assert fr.ssim(REF, REF) == pytest.approx(1.0, abs=1e-12)
    assert fr.ms_ssim(REF, REF) == pytest.approx(1.0, abs=1e-12)
    assert fr.gmsd(REF, REF) == 0.0
    assert fr.vif(REF, REF) == pytest.approx(1.0, abs=1e-9)
    assert fr.fsim(REF, REF) == pytest.approx(1.0, abs=1e-12)
    assert fr.fsim(REF, REF, chromatic=False) == pytest.approx(1.0, abs=1e-12)


def test_constant_and_anticorrelated_images() -> None:
    flat = np.full((100, 100), 128, np.uint8)
    assert fr.ssim(flat, flat) == 1.0 and fr.gmsd(flat, flat) == 0.0
    assert math.isnan(fr.vif(flat, flat))  # a constant reference carries no information
    assert math.isnan(fr.fsim(flat, flat))  # no phase congruency anywhere (0/0, as in MATLAB)
    inverted = 255 - GREY
    assert fr.ssim(GREY, inverted) < 0
    assert math.isnan(fr.ms_ssim(GREY, inverted))  # negative term ** fractional weight


def test_psnr_hand_computed() -> None:
    a = np.zeros((4, 4), np.uint8)
    b = a.copy()
    b[0, 0] = 16  # MSE = 16^2 / 16 = 16
    assert fr.psnr(a, b) == pytest.approx(20 * math.log10(255 / 4))  # 36.0896 dB
    # float images in [0, 1]: same value with data_range=1
    assert fr.psnr(a / 255.0, b / 255.0, data_range=1.0) == pytest.approx(fr.psnr(a, b))
    # RGB: the MSE runs over all 3 channels (skimage's convention), a third of the error here
    rgb_a, rgb_b = np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 3), np.uint8)
    rgb_b[0, 0, 0] = 16
    assert fr.psnr(rgb_a, rgb_b) == pytest.approx(20 * math.log10(255 / 4) + 10 * math.log10(3))


def test_psnr_channels() -> None:
    y_ref, y_dist = F.rgb_to_y(REF.astype(float), 255), F.rgb_to_y(DIST.astype(float), 255)
    mse = np.mean((y_ref - y_dist) ** 2)
    assert fr.psnr(REF, DIST, channel="y") == pytest.approx(10 * math.log10(255**2 / mse))
    g_ref = F.rgb_to_grey(REF.astype(float), integer=True)
    g_dist = F.rgb_to_grey(DIST.astype(float), integer=True)
    assert fr.psnr(REF, DIST, channel="grey") == pytest.approx(fr.psnr(g_ref, g_dist))


def test_colour_conversions() -> None:
    px = np.array([[[255, 255, 255], [0, 0, 0], [255, 0, 0]]], float)
    assert F.rgb_to_y(px, 255)[0].tolist() == pytest.approx([235.0, 16.0, 16 + 65.481])
    assert F.GREY_WEIGHTS == pytest.approx([0.2989, 0.5870, 0.1140], abs=1e-4)
    assert F.rgb_to_grey(px, integer=True)[0].tolist() == [255.0, 0.0, 76.0]  # 76.23 -> 76
    assert F.matlab_round(np.array([0.5, 1.5, 2.5, -2.5])).tolist() == [1, 2, 3, -3]


# --------------------------------------------------------------------------- symmetry, monotonicity


@pytest.mark.parametrize("metric", ["psnr", "ssim", "ms_ssim", "gmsd", "fsim"])
def test_symmetric(metric: str) -> None:
    fn = getattr(fr, metric)
    assert fn(REF, DIST) == pytest.approx(fn(DIST, REF), rel=1e-12, abs=1e-12)


def test_vif_is_not_symmetric() -> None:
    blurred = ndimage.gaussian_filter(GREY.astype(float), 2.0)
    forward, backward = fr.vif(GREY, blurred), fr.vif(blurred, GREY)
    assert forward < 0.9 and abs(forward - backward) > 0.05


@pytest.mark.parametrize("metric,direction", [("psnr", -1), ("ssim", -1), ("ms_ssim", -1),
                                              ("gmsd", 1), ("vif", -1), ("fsim", -1)])
def test_monotonic_in_noise(metric: str, direction: int) -> None:
    fn = getattr(fr, metric)
    values = [fn(REF, _noisy(REF, s)) for s in (3, 10, 30)]
    diffs = np.diff(values) * direction
    assert (diffs > 0).all(), values


def test_contrast_gain_gives_vif_above_one() -> None:
    stretched = np.clip((GREY.astype(float) - 128) * 1.2 + 128, 0, 255)
    assert fr.vif(GREY, stretched) > 1.0


# --------------------------------------------------------------------------- conventions


def test_ssim_matches_skimage_wang_settings() -> None:
    metrics = pytest.importorskip("skimage.metrics")
    a, b = GREY.astype(float), _noisy(GREY, 10).astype(float)
    expected = metrics.structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
                                             use_sample_covariance=False, data_range=255)
    assert fr.ssim(a, b) == pytest.approx(expected, abs=1e-9)


def test_data_range_and_pil_inputs() -> None:
    a, b = GREY, _noisy(GREY, 10)
    for metric in ("ssim", "ms_ssim", "gmsd", "vif", "fsim"):
        fn = getattr(fr, metric)
        base = fn(a, b)
        assert fn(a / 255.0, b / 255.0, data_range=1.0) == pytest.approx(base, rel=1e-9), metric
        assert fn(Image.fromarray(a), Image.fromarray(b)) == base, metric
    assert fr.fsim(Image.fromarray(REF), Image.fromarray(DIST)) == fr.fsim(REF, DIST)
    assert fr.ssim(REF[..., :1], DIST[..., :1]) == fr.ssim(REF[..., 0], DIST[..., 0])  # HxWx1


def test_channel_options() -> None:
    rgb = fr.ssim(REF, DIST, channel="rgb")
    per_channel = [fr.ssim(REF[..., c], DIST[..., c]) for c in range(3)]
    assert rgb == pytest.approx(np.mean(per_channel))
    assert fr.ssim(REF, DIST, channel="y") != fr.ssim(REF, DIST)
    # a grey input ignores the channel choice
    assert fr.gmsd(GREY, _noisy(GREY, 5), channel="y") == fr.gmsd(GREY, _noisy(GREY, 5))
    # FSIMc == FSIM on grey images
    assert fr.fsim(GREY, _noisy(GREY, 5)) == fr.fsim(GREY, _noisy(GREY, 5), chromatic=False)


def test_ssim_downsampling() -> None:
    big = np.kron(GREY, np.ones((3, 3), np.uint8))  # 576 x 576 -> f = round(576/256) = 2
    noisy = _noisy(big, 10)
    m = fr.ssim_map(big, noisy, downsample=True)
    assert m.shape == (288, 288)
    assert fr.ssim(big, noisy, downsample=True) == pytest.approx(
        fr.ssim_map(big, noisy, downsample=True, size="valid").mean())
    assert fr.ssim(big, noisy, downsample=True) > fr.ssim(big, noisy)  # averaging removes noise


# --------------------------------------------------------------------------- maps


def test_ssim_map_shapes_and_mean() -> None:
    h, w = 150, 170
    a, b = REF[:h, :w], DIST[:h, :w]
    same = fr.ssim_map(a, b)
    valid = fr.ssim_map(a, b, size="valid")
    assert same.shape == (h, w) and valid.shape == (h - 10, w - 10)
    assert valid.mean() == pytest.approx(fr.ssim(a, b), abs=1e-12)
    np.testing.assert_allclose(same[5:-5, 5:-5], valid, atol=1e-12)
    assert same.max() <= 1.0 + 1e-12
    assert fr.ssim_map(a, b, channel="rgb", size="valid").mean() == pytest.approx(
        fr.ssim(a, b, channel="rgb"))


def test_gms_map_shapes_and_std() -> None:
    h, w = 151, 170  # odd height: ceil(151 / 2) = 76
    a, b = REF[:h, :w], DIST[:h, :w]
    native = fr.gms_map(a, b)
    assert native.shape == (76, 85)
    assert np.std(native, ddof=1) == pytest.approx(fr.gmsd(a, b), rel=1e-12)
    assert 0 < native.min() and native.max() <= 1.0 + 1e-12
    same = fr.gms_map(a, b, size="same")
    assert same.shape == (h, w)
    assert same[0, 0] == same[1, 1] == native[0, 0] and same[-1, -1] == native[-1, -1]
    assert (fr.gms_map(a, a) == 1.0).all()


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("metric", ["psnr", "ssim", "ms_ssim", "gmsd", "vif", "fsim", "ssim_map", "gms_map"])
def test_shape_mismatch(metric: str) -> None:
    with pytest.raises(ValueError, match=r"same shape.*resize dist"):
        getattr(fr, metric)(REF, REF[:-1])


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="ref must be an HxW grey or HxWx3 RGB"):
        fr.ssim(np.zeros((32, 32, 4)), np.zeros((32, 32, 4)))
    with pytest.raises(ValueError, match="dist must be an HxW"):
        fr.psnr(np.zeros((4, 4)), np.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match=r"ms_ssim: .*at least 176x176"):
        fr.ms_ssim(REF[:100], DIST[:100])
    with pytest.raises(ValueError, match=r"vif: .*at least 72x72"):
        fr.vif(REF[:64, :64], DIST[:64, :64])
    with pytest.raises(ValueError, match=r"ssim: .*at least 11x11"):
        fr.ssim(REF[:8, :8], DIST[:8, :8])
    with pytest.raises(ValueError, match="channel must be one of"):
        fr.gmsd(REF, DIST, channel="rgb")
    with pytest.raises(ValueError, match="data_range must be a positive number"):
        fr.psnr(REF, DIST, data_range=0)
    assert fr.psnr(REF, DIST, data_range=np.float32(255)) == fr.psnr(REF, DIST)
    with pytest.raises(ValueError, match=r"outside \[0, data_range=1\]"):
        fr.ssim(REF.astype(float), DIST.astype(float), data_range=1.0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        fr.psnr(np.full((4, 4), np.nan), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="size must be"):
        fr.ssim_map(REF, DIST, size="full")


# --------------------------------------------------------------------------- MATLAB-style filtering

_NP_MODES = {"symmetric": "symmetric", "zero": "constant", "replicate": "edge"}


def _brute_correlate(img: np.ndarray, kernel: np.ndarray, padding: str | None) -> np.ndarray:
    """imfilter-style correlation by explicit windows; padding None = 'valid'."""
    kh, kw = kernel.shape
    if padding is not None:
        t, left = (kh - 1) // 2, (kw - 1) // 2  # MATLAB's kernel centre
        img = np.pad(img, ((t, kh - 1 - t), (left, kw - 1 - left)), mode=_NP_MODES[padding])
    h, w = img.shape[0] - kh + 1, img.shape[1] - kw + 1
    return np.array([[(img[i:i + kh, j:j + kw] * kernel).sum() for j in range(w)] for i in range(h)])


@pytest.mark.parametrize("k", [2, 3, 4, 11])
@pytest.mark.parametrize("padding", ["symmetric", "zero", "replicate"])
def test_correlate_separable_matches_imfilter(k: int, padding: str) -> None:
    rng = np.random.default_rng(k)
    img = rng.random((2, 13, 17))
    col, row = rng.random(k), rng.random(k)
    sym = np.r_[col[: k // 2], col[: (k + 1) // 2][::-1]]  # the folded fast path
    for c in (col, sym):
        kernel = np.outer(c, row)
        same = F.correlate_separable(img, c, row, padding=padding)
        valid = F.correlate_separable(img, c, row, output="valid")
        for n in range(2):
            np.testing.assert_allclose(same[n], _brute_correlate(img[n], kernel, padding), atol=1e-12)
            np.testing.assert_allclose(valid[n], _brute_correlate(img[n], kernel, None), atol=1e-12)
        np.testing.assert_allclose(F.correlate_same(img[0], kernel, padding=padding),
                                   _brute_correlate(img[0], kernel, padding), atol=1e-12)


@pytest.mark.parametrize("f", [2, 3, 4])
@pytest.mark.parametrize("padding", ["symmetric", "zero"])
def test_average_downsample_is_filter_then_decimate(f: int, padding: str) -> None:
    img = np.random.default_rng(f).random((13, 10))
    expected = _brute_correlate(img, np.ones((f, f)) / f**2, padding)[::f, ::f]
    np.testing.assert_allclose(F.average_downsample(img, f, padding=padding), expected, atol=1e-12)
    assert F.scale_factor(384, 512) == 2 and F.scale_factor(640, 900) == 3  # round(2.5) = 3
