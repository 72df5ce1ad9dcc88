"""Full-reference classical image quality metrics (numpy/scipy only).

Every function compares a reference image ``ref`` with a distorted/edited image ``dist``
of the same shape and returns a Python float. Inputs are ``H x W`` (grey) or
``H x W x 3`` (RGB) arrays, ``uint8``/``uint16``/float with values in ``[0, data_range]``,
or PIL images (read with ``np.asarray``; modes other than L/RGB/I;16/I/F are converted to
RGB first). Internally everything is rescaled to [0, 255], the range the published
constants were tuned for, so ``data_range`` only has to describe the input.

Defaults follow the official MATLAB implementations as run by IQA-PyTorch's calibration
(``ResultsCalibra``: TID2013 pairs, RGB images turned grey with MATLAB ``rgb2gray``), and
reproduce those published values:

=========  ===============  ==================  =====================================
metric     better           range               default channel / convention
=========  ===============  ==================  =====================================
psnr       higher (dB)      [0, inf]            RGB, all channels (skimage's PSNR)
ssim       higher           [-1, 1]             rgb2gray; Wang's SSIM, 'valid' window
ms_ssim    higher           [0, 1] (typically)  rgb2gray; Wang's 5-scale MS-SSIM
gmsd       **lower**        [0, ~0.35]          rgb2gray; Xue's GMSD, 2x downsampled
vif        higher           [0, 1] (>1 = gain)  rgb2gray; Sheikh's wavelet VIF (vifvec)
fsim       higher           [0, 1]              FSIMc on RGB, FSIM on grey input
=========  ===============  ==================  =====================================

``channel`` choices: ``"grey"`` = MATLAB ``rgb2gray`` (rounded to integers when the input
is integer-typed, as MATLAB does for ``uint8``), ``"y"`` = the luma of MATLAB
``rgb2ycbcr`` (the ``to_y_channel`` of IQA-PyTorch/BasicSR), ``"rgb"`` = all three channels
(PSNR and SSIM only). Grey inputs are used as they are whatever ``channel`` says.

Map variants for region-aware scores: :func:`ssim_map` (``mean(ssim_map(.., size="valid"))
== ssim(..)``) and :func:`gms_map` (``std(gms_map(..), ddof=1) == gmsd(..)``).
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import fft as sfft
from scipy import ndimage

from ieqa.scorers.classic import _filters as F

__all__ = ["psnr", "ssim", "ssim_map", "ms_ssim", "gmsd", "gms_map", "vif", "fsim"]

Channel = Literal["rgb", "y", "grey"]

_PIL_DIRECT_MODES = {"L", "RGB", "I;16", "I", "F"}


# --------------------------------------------------------------------------- inputs


def _as_array(img: Any, name: str, metric: str) -> np.ndarray:
    if hasattr(img, "mode") and hasattr(img, "convert") and not isinstance(img, np.ndarray):
        img = np.asarray(img if img.mode in _PIL_DIRECT_MODES else img.convert("RGB"))
    arr = np.asarray(img)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        raise ValueError(f"{metric}: {name} must be an HxW grey or HxWx3 RGB image, got shape "
                         f"{arr.shape}; convert it to RGB or grey first (e.g. drop an alpha channel)")
    if arr.dtype.kind not in "uif":
        raise ValueError(f"{metric}: {name} must hold numbers (uint8/uint16/float), got dtype {arr.dtype}")
    return arr


def _pair(ref: Any, dist: Any, *, data_range: float, metric: str,
          min_side: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Validated (ref, dist, integer_typed) arrays, still in the caller's units."""
    a = _as_array(ref, "ref", metric)
    b = _as_array(dist, "dist", metric)
    if a.shape != b.shape:
        raise ValueError(f"{metric}: ref and dist must have the same shape, got ref {a.shape} and "
                         f"dist {b.shape}; resize dist to the reference size first")
    if not (isinstance(data_range, numbers.Real) and not isinstance(data_range, bool)
            and math.isfinite(data_range) and data_range > 0):
        raise ValueError(f"{metric}: data_range must be a positive number (255 for 8-bit images, "
                         f"1.0 for floats in [0, 1]), got {data_range!r}")
    h, w = a.shape[:2]
    if min(h, w) < min_side:
        raise ValueError(f"{metric}: ref and dist must be at least {min_side}x{min_side} pixels, got "
                         f"{h}x{w}; use larger images (or another metric for thumbnails)")
    for name, arr in (("ref", a), ("dist", b)):
        if arr.dtype == np.uint8 and data_range >= 255:
            continue
        lo, hi = float(arr.min()), float(arr.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"{metric}: {name} contains NaN or infinite values")
        if lo < 0 or hi > data_range * (1 + 1e-6):
            raise ValueError(f"{metric}: {name} values span [{lo:g}, {hi:g}], outside [0, data_range="
                             f"{data_range:g}]; pass the right data_range or rescale the image")
    integer = a.dtype.kind in "ui" and b.dtype.kind in "ui"
    return a, b, integer


def _channel(img: np.ndarray, channel: str, *, integer: bool, data_range: float,
             metric: str, allowed: tuple[str, ...]) -> np.ndarray:
    """One image as float64 on the [0, 255] scale: 2-D for grey/y, H x W x 3 for rgb."""
    if channel not in allowed:
        raise ValueError(f"{metric}: channel must be one of {', '.join(map(repr, allowed))}, got {channel!r}")
    if img.ndim == 3 and channel == "grey":
        x = F.rgb_to_grey(img, integer=integer)  # matmul casts to float64 itself
    elif img.ndim == 3 and channel == "y":
        x = F.rgb_to_y(img, data_range)
    else:
        x = img.astype(np.float64)
    if data_range != 255.0:
        x = x * (255.0 / data_range)
    return x


def _prepared(ref: Any, dist: Any, *, data_range: float, channel: str, metric: str,
              allowed: tuple[str, ...], min_side: int) -> tuple[np.ndarray, np.ndarray]:
    a, b, integer = _pair(ref, dist, data_range=data_range, metric=metric, min_side=min_side)
    kw = dict(integer=integer, data_range=float(data_range), metric=metric, allowed=allowed)
    return _channel(a, channel, **kw), _channel(b, channel, **kw)


# --------------------------------------------------------------------------- PSNR


def psnr(ref: Any, dist: Any, *, data_range: float = 255.0, channel: Channel = "rgb") -> float:
    """Peak signal-to-noise ratio ``10 log10(data_range^2 / MSE)`` in dB; higher is better.

    The MSE is taken over all pixels (and all three channels for ``channel="rgb"``, the
    default, as ``skimage.metrics.peak_signal_noise_ratio`` and the official PSNR numbers
    of IQA-PyTorch's calibration). ``channel="y"`` gives the Y-channel PSNR common in
    super-resolution papers, ``"grey"`` uses MATLAB ``rgb2gray``. Identical images give
    ``math.inf`` (MSE = 0); typical values for visible distortions are 20-40 dB.
    """
    a, b, integer = _pair(ref, dist, data_range=data_range, metric="psnr", min_side=1)
    if a.ndim == 2 or channel == "rgb":
        if channel not in ("rgb", "y", "grey"):
            raise ValueError(f"psnr: channel must be one of 'rgb', 'y', 'grey', got {channel!r}")
        diff = np.subtract(a, b, dtype=np.float64).ravel()  # exact for integer inputs
        peak = float(data_range)
    else:
        kw = dict(integer=integer, data_range=float(data_range), metric="psnr", allowed=("rgb", "y", "grey"))
        diff = (_channel(a, channel, **kw) - _channel(b, channel, **kw)).ravel()
        peak = 255.0
    mse = float(np.einsum("i,i->", diff, diff)) / diff.size  # not BLAS dot: no thread start-up
    return math.inf if mse == 0.0 else 10.0 * math.log10(peak * peak / mse)


# --------------------------------------------------------------------------- SSIM family

_SSIM_WINDOW = F.gaussian_1d(11, 1.5)
_SSIM_C1 = (0.01 * 255.0) ** 2
_SSIM_C2 = (0.03 * 255.0) ** 2
_MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _ssim_cs(a: np.ndarray, b: np.ndarray, output: str = "valid") -> tuple[np.ndarray, np.ndarray]:
    """(SSIM map, contrast-structure map) of two 2-D images (or stacks) on the 255 scale,
    Gaussian 11x11 window (sigma 1.5), K = (0.01, 0.03); 'same' maps use symmetric padding."""
    stack = np.empty((5,) + a.shape)
    stack[0], stack[1] = a, b
    np.multiply(a, a, out=stack[2])
    np.multiply(b, b, out=stack[3])
    np.multiply(a, b, out=stack[4])
    g = _SSIM_WINDOW
    mu1, mu2, e11, e22, e12 = F.correlate_separable(stack, g, g, output=output)
    # in place on the filtered moments (this runs on megapixel images)
    mu12 = mu1 * mu2
    e12 -= mu12  # sigma12
    np.multiply(mu1, mu1, out=mu1)
    np.multiply(mu2, mu2, out=mu2)
    e11 -= mu1  # sigma1^2
    e22 -= mu2  # sigma2^2
    e11 += e22
    e11 += _SSIM_C2  # contrast-structure denominator
    e12 *= 2.0
    e12 += _SSIM_C2  # contrast-structure numerator
    mu1 += mu2
    mu1 += _SSIM_C1  # luminance denominator
    mu12 *= 2.0
    mu12 += _SSIM_C1  # luminance numerator
    mu12 /= mu1
    e12 /= e11  # contrast-structure map
    mu12 *= e12  # SSIM map
    return mu12, e12


def _ssim_inputs(ref: Any, dist: Any, *, data_range: float, channel: str, downsample: bool,
                 metric: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = _prepared(ref, dist, data_range=data_range, channel=channel, metric=metric,
                     allowed=("grey", "y", "rgb"), min_side=1)
    if a.ndim == 3:  # rgb: channels first, filtered as a stack
        a, b = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
    if downsample:
        f = F.scale_factor(*a.shape[-2:])
        a, b = F.average_downsample(a, f), F.average_downsample(b, f)
    if min(a.shape[-2:]) < 11:
        raise ValueError(f"{metric}: images must be at least 11x11 pixels (the SSIM window) after "
                         f"any downsampling, got {'x'.join(map(str, a.shape[-2:]))}; use larger "
                         f"images or downsample=False")
    return a, b


def ssim(ref: Any, dist: Any, *, data_range: float = 255.0, channel: Channel = "grey",
         downsample: bool = False) -> float:
    """Structural similarity (Wang et al. 2004), mean of the SSIM map; higher is better.

    Range [-1, 1], 1 for identical images. Follows Wang's MATLAB ``ssim`` with an 11x11
    Gaussian window (sigma 1.5), K1 = 0.01, K2 = 0.03, L = 255 (after rescaling
    ``data_range`` to 255) and the map restricted to positions where the window fits
    ('valid', 5 pixels lost per side). ``channel="grey"`` (default) uses MATLAB
    ``rgb2gray``, as the official calibration numbers; ``"rgb"`` averages the three
    per-channel SSIMs. ``downsample=True`` adds the automatic ``f = max(1,
    round(min(H, W) / 256))`` average-filter downsampling of the 2009 ``ssim.m``; it is off
    by default because the official numbers were computed without it. Equals
    ``skimage.metrics.structural_similarity(..., gaussian_weights=True, sigma=1.5,
    use_sample_covariance=False, data_range=255)`` on the same channel.
    """
    a, b = _ssim_inputs(ref, dist, data_range=data_range, channel=channel, downsample=downsample,
                        metric="ssim")
    return float(_ssim_cs(a, b)[0].mean())


def ssim_map(ref: Any, dist: Any, *, data_range: float = 255.0, channel: Channel = "grey",
             downsample: bool = False, size: Literal["same", "valid"] = "same") -> np.ndarray:
    """Per-pixel SSIM map (float64), same conventions as :func:`ssim`.

    ``size="same"`` (default): ``H' x W'``, the size of the compared image (``H x W``, or
    ``ceil(H / f) x ceil(W / f)`` with ``downsample=True``); the 5-pixel border uses
    symmetric padding, and its interior ``m[5:-5, 5:-5]`` is the ``"valid"`` map.
    ``size="valid"``: ``(H' - 10) x (W' - 10)``, whose mean is exactly :func:`ssim`.
    For ``channel="rgb"`` the map is the mean of the three per-channel maps.
    """
    if size not in ("same", "valid"):
        raise ValueError(f"ssim_map: size must be 'same' or 'valid', got {size!r}")
    a, b = _ssim_inputs(ref, dist, data_range=data_range, channel=channel, downsample=downsample,
                        metric="ssim_map")
    m = _ssim_cs(a, b, output=size)[0]
    return m.mean(axis=0) if m.ndim == 3 else m


def ms_ssim(ref: Any, dist: Any, *, data_range: float = 255.0,
            channel: Literal["grey", "y"] = "grey") -> float:
    """Multi-scale SSIM (Wang, Simoncelli & Bovik 2003); higher is better, 1 when identical.

    Wang's MATLAB ``msssim``: 5 scales, weights (0.0448, 0.2856, 0.3001, 0.2363, 0.1333),
    the contrast-structure term at scales 1-4 and full SSIM at scale 5 combined as a
    weighted product; between scales a 2x2 average filter (symmetric padding) and 2x
    decimation; 11x11 Gaussian window 'valid' at every scale. Needs both sides >= 176
    pixels (11 pixels at the coarsest scale). Grey via MATLAB ``rgb2gray`` by default.
    Values are in [0, 1]; NaN when a scale's mean term is negative (anti-correlated
    images), where the reference's fractional power turns complex.
    """
    a, b = _prepared(ref, dist, data_range=data_range, channel=channel, metric="ms_ssim",
                     allowed=("grey", "y"), min_side=11 * 2 ** (len(_MS_SSIM_WEIGHTS) - 1))
    value = 1.0
    last = len(_MS_SSIM_WEIGHTS) - 1
    for i, w in enumerate(_MS_SSIM_WEIGHTS):
        s, cs = _ssim_cs(a, b)
        term = float((s if i == last else cs).mean())
        if term < 0:  # a fractional power of a negative number: undefined (complex in MATLAB)
            return math.nan
        value *= term**w
        if i < last:
            a, b = F.average_downsample(np.stack([a, b]), 2, padding="symmetric")
    return float(value)


# --------------------------------------------------------------------------- GMSD

_PREWITT_X = np.array([[1.0, 0.0, -1.0]] * 3) / 3.0
_GMSD_T = 170.0


def _gms(ref: Any, dist: Any, *, data_range: float, channel: str, metric: str) -> np.ndarray:
    a, b = _prepared(ref, dist, data_range=data_range, channel=channel, metric=metric,
                     allowed=("grey", "y"), min_side=4)
    # conv2(img, ones(2)/4, 'same') then (1:2:end): 2x2 block means (zero padding past the edge)
    x = F.average_downsample(np.stack([a, b]), 2, padding="zero")
    grads = []
    for img in x:
        gx = F.correlate_same(img, _PREWITT_X, padding="zero")
        gy = F.correlate_same(img, _PREWITT_X.T, padding="zero")
        grads.append(np.hypot(gx, gy))
    g1, g2 = grads
    return (2.0 * g1 * g2 + _GMSD_T) / (g1 * g1 + g2 * g2 + _GMSD_T)


def gmsd(ref: Any, dist: Any, *, data_range: float = 255.0,
         channel: Literal["grey", "y"] = "grey") -> float:
    """Gradient magnitude similarity deviation (Xue et al. 2014); **lower is better**.

    0 for identical images, about 0.35 at most in practice. Xue's MATLAB ``GMSD``: 2x2
    average filter + 2x decimation, Prewitt gradients (kernels divided by 3, zero padding),
    similarity ``(2 g1 g2 + T) / (g1^2 + g2^2 + T)`` with T = 170 on the [0, 255] scale,
    and the score is the standard deviation (``ddof=1``, MATLAB ``std2``) of that map.
    Grey via MATLAB ``rgb2gray`` by default.
    """
    return float(np.std(_gms(ref, dist, data_range=data_range, channel=channel, metric="gmsd"), ddof=1))


def gms_map(ref: Any, dist: Any, *, data_range: float = 255.0,
            channel: Literal["grey", "y"] = "grey",
            size: Literal["native", "same"] = "native") -> np.ndarray:
    """GMSD's gradient-magnitude-similarity map (float64, 1 where gradients agree, lower
    where they differ; values in (0, 1]).

    ``size="native"`` (default): ``ceil(H / 2) x ceil(W / 2)``, the 2x-downsampled grid
    GMSD works on, so ``np.std(gms_map(r, d), ddof=1) == gmsd(r, d)`` (and its mean is the
    GMSM score). ``size="same"``: upsampled to ``H x W`` by repeating each value over its
    2x2 block (for masking at input resolution).
    """
    if size not in ("native", "same"):
        raise ValueError(f"gms_map: size must be 'native' or 'same', got {size!r}")
    m = _gms(ref, dist, data_range=data_range, channel=channel, metric="gms_map")
    if size == "same":
        h, w = _as_array(ref, "ref", "gms_map").shape[:2]
        m = np.repeat(np.repeat(m, 2, axis=0), 2, axis=1)[:h, :w]
    return m


# --------------------------------------------------------------------------- VIF
#
# Sheikh & Bovik's wavelet-domain VIF ("vifvec", IQA-PyTorch's "vif") decomposes both images
# with a 4-level, 6-orientation steerable pyramid (Simoncelli's spatial "sp5" filters) and
# uses 8 subbands: orientations 0 and 90 degrees at every level. Here the pyramid is built
# in the frequency domain from smooth analytic responses whose parameters were fitted (least
# squares) to the frequency responses of the sp5 filters:
#   * initial lowpass: separable, p(wx) p(wy) with p(w) = exp(-(|w| / 0.7065) ** 3.797)
#   * recursive lowpass (before 2x decimation, gain 2): 2 exp(-(r / 0.384) ** 3.762)
#   * oriented bands: E(r) A(theta, r), with a radial envelope
#     E(r) = 3.261 r^1.218 exp(-(r / 0.7037) ** 3.301) and an angular profile of odd harmonics
#     cos t + c3(r) cos 3t + c5(r) cos 5t, normalised over the 6 bands, whose higher
#     harmonics fade at low frequencies as they do for the 7x7 sp5 filters; c_k(r) = a (r/t)^m
#     exp(m (1 - r/t)) with (a, t, m) = (0.5457, 0.5049, 2.834) and (0.07635, 0.5389, 17.24).
# Frequencies are in units of pi rad/sample (Nyquist = 1). Decimation folds the spectrum
# (exactly a spatial 2x decimation) and the image is mirror-padded by 32 pixels to keep the
# circular FFT away from the borders. With these filters the VIF values agree with the
# reference to about 0.002 absolute (see tests/scorers/test_fr_calibration.py; at most
# ~0.006 over 105 blurred/noisy/JPEG/contrast-changed crops), not exactly.

_VIF_LEVELS = 4
_VIF_ORIENTATIONS = 6
_VIF_PAD = 32
_VIF_SIGMA_NSQ = 0.4
_VIF_BLOCK = 3
_VIF_TOL = 1e-15
# (pyramid level, 0 = finest; orientation index; window size of the distortion estimate):
# MATLAB vifvec's subbands 4, 7, 10, ..., 25 of the reversed pyramid
_VIF_SUBBANDS = ((3, 3, 3), (3, 0, 3), (2, 3, 5), (2, 0, 5), (1, 3, 9), (1, 0, 9), (0, 3, 17), (0, 0, 17))
_LO0 = (0.7065, 3.797)
_LO = (0.384, 3.762)
_ENVELOPE = (3.261, 1.218, 0.7037, 3.301)
_HARM3 = (0.5457, 0.5049, 2.834)
_HARM5 = (0.07635, 0.5389, 17.24)


def _gen_gauss(w: np.ndarray, scale: float, power: float) -> np.ndarray:
    return np.exp(-((np.abs(w) / scale) ** power))


def _harmonic(r: np.ndarray, amp: float, peak: float, m: float) -> np.ndarray:
    x = r / peak
    return amp * x**m * np.exp(m * (1.0 - x))


def _freq_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    fy = np.fft.fftfreq(h) * 2.0
    fx = np.fft.fftfreq(w) * 2.0
    return fy, fx, np.hypot(fy[:, None], fx[None, :])


@lru_cache(maxsize=4)
def _vif_filters(h: int, w: int) -> tuple[np.ndarray, list[tuple[np.ndarray, dict[int, np.ndarray]]]]:
    """(initial lowpass, per level (recursive lowpass, {orientation: band filter})) for a
    padded h x w image; band filters already include the factor making them real (odd)."""
    fy, fx, _ = _freq_grid(h, w)
    lo0 = np.outer(_gen_gauss(fy, *_LO0), _gen_gauss(fx, *_LO0))
    e0, a, s, q = _ENVELOPE
    levels = []
    orientations = sorted({o for _, o, _ in _VIF_SUBBANDS})
    for lev in range(_VIF_LEVELS):
        fy, fx, r = _freq_grid(h >> lev, w >> lev)
        theta = np.arctan2(fy[:, None], fx[None, :])
        env = e0 * r**a * np.exp(-((r / s) ** q))
        c3, c5 = _harmonic(r, *_HARM3), _harmonic(r, *_HARM5)
        norm = env / np.sqrt(_VIF_ORIENTATIONS / 2.0 * (1.0 + c3 * c3 + c5 * c5))
        bands = {}
        for o in orientations:
            t = theta - np.pi * o / _VIF_ORIENTATIONS
            bands[o] = 1j * norm * (np.cos(t) + c3 * np.cos(3 * t) + c5 * np.cos(5 * t))
        levels.append((2.0 * _gen_gauss(r, *_LO), bands))
    return lo0, levels


def _steerable_bands(img: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    h, w = img.shape
    m = 2**_VIF_LEVELS
    p = _VIF_PAD
    ph, pw = (-(h + 2 * p)) % m, (-(w + 2 * p)) % m
    x = np.pad(img, ((p, p + ph), (p, p + pw)), mode="reflect")  # whole-sample mirror
    lo0, levels = _vif_filters(*x.shape)
    spec = sfft.fft2(x) * lo0
    wanted = {(lev, o) for lev, o, _ in _VIF_SUBBANDS}
    out = {}
    for lev, (lowpass, bands) in enumerate(levels):
        off, bh, bw = p >> lev, -(-h // 2**lev), -(-w // 2**lev)
        for o, filt in bands.items():
            if (lev, o) in wanted:
                out[lev, o] = sfft.ifft2(spec * filt).real[off:off + bh, off:off + bw]
        if lev + 1 < _VIF_LEVELS:
            s = spec * lowpass
            hh, ww = s.shape
            spec = s.reshape(2, hh // 2, 2, ww // 2).sum(axis=(0, 2)) / 4.0  # 2x decimation
    return out


def _vif_subband(y: np.ndarray, yn: np.ndarray, win: int) -> tuple[float, float]:
    """(distorted, reference) information of one subband pair, as MATLAB vifvec."""
    M = _VIF_BLOCK
    nh, nw = (y.shape[0] // M) * M, (y.shape[1] // M) * M
    y, yn = y[:nh, :nw], yn[:nh, :nw]
    # distortion channel: local sums over win x win windows centred on each MxM block
    n = float(win * win)
    sums = ndimage.uniform_filter(np.stack([y, yn, y * yn, y * y, yn * yn]), size=(1, win, win),
                                  mode="mirror")[:, M // 2::M, M // 2::M] * n
    sx, sy, sxy, sxx, syy = sums
    cov = sxy - sx * sy / n
    ss_x = np.maximum(sxx - sx * sx / n, 0.0)
    ss_y = np.maximum(syy - sy * sy / n, 0.0)
    g = cov / (ss_x + _VIF_TOL)
    vv = (ss_y - g * cov) / n
    small_x = ss_x < _VIF_TOL
    g[small_x] = 0.0
    vv[small_x] = ss_y[small_x]
    small_y = ss_y < _VIF_TOL
    g[small_y] = 0.0
    vv[small_y] = 0.0
    neg = g < 0
    vv[neg] = ss_y[neg]
    g[neg] = 0.0
    vv[vv <= _VIF_TOL] = _VIF_TOL
    # reference GSM: covariance of all MxM neighbourhoods, S field on non-overlapping blocks
    vecs = sliding_window_view(y, (M, M)).reshape(-1, M * M)
    centred = vecs - vecs.mean(axis=0)
    cu = centred.T @ centred / len(vecs)
    blocks = y.reshape(nh // M, M, nw // M, M).transpose(0, 2, 1, 3).reshape(-1, M * M)
    cu_inv = np.linalg.pinv(cu, hermitian=True)  # the inverse unless the band is degenerate
    ss = ((blocks @ cu_inv) * blocks).sum(axis=1).reshape(nh // M, nw // M) / (M * M)
    lam = np.linalg.eigvalsh(cu)
    k = math.ceil((win - 1) / 2 / M)  # drop blocks touched by the borders
    g, vv, ss = (z[k:-k, k:-k] for z in (g, vv, ss))
    num = np.log2(1.0 + (g * g * ss / (vv + _VIF_SIGMA_NSQ))[..., None] * lam).sum()
    den = np.log2(1.0 + (ss / _VIF_SIGMA_NSQ)[..., None] * lam).sum()
    return float(num), float(den)


def vif(ref: Any, dist: Any, *, data_range: float = 255.0,
        channel: Literal["grey", "y"] = "grey") -> float:
    """Visual information fidelity (Sheikh & Bovik 2006), wavelet-domain version; higher
    is better.

    1 for identical images, near 0 when the distortion destroys the information, and
    above 1 for contrast-enhancing "distortions". This is ``vifvec`` (the metric
    IQA-PyTorch calls ``vif``), not the pixel-domain VIFp: Gaussian scale mixture model
    on 3x3 neighbourhoods of a 4-level, 6-orientation steerable pyramid (8 subbands,
    orientations 0 and 90 degrees), sigma_n^2 = 0.4 on the [0, 255] scale. The pyramid
    filters are analytic approximations of the sp5 filters of the reference (see the
    comment above ``_VIF_LEVELS``), so values agree with the reference to ~0.002 (at most
    ~0.006 in our checks on blurred/noisy/JPEG/contrast-changed images) rather than exactly. Not symmetric. Needs both sides >= 72 pixels. Grey via MATLAB
    ``rgb2gray`` by default. Returns NaN for a constant reference (no information).
    """
    a, b = _prepared(ref, dist, data_range=data_range, channel=channel, metric="vif",
                     allowed=("grey", "y"), min_side=72)
    bands_ref, bands_dist = _steerable_bands(a), _steerable_bands(b)
    num = den = 0.0
    for lev, o, win in _VIF_SUBBANDS:
        n, d = _vif_subband(bands_ref[lev, o], bands_dist[lev, o], win)
        num += n
        den += d
    return num / den if den > 0 else math.nan


# --------------------------------------------------------------------------- FSIM

_PC_SCALES = 4
_PC_ORIENTATIONS = 4
_PC_MIN_WAVELENGTH = 6.0
_PC_MULT = 2.0
_PC_SIGMA_ON_F = 0.55
_PC_D_THETA_ON_SIGMA = 1.2
_PC_K = 2.0
_PC_EPS = 1e-4
_SCHARR_X = np.array([[3.0, 0.0, -3.0], [10.0, 0.0, -10.0], [3.0, 0.0, -3.0]]) / 16.0
_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
_FSIM_T1, _FSIM_T2, _FSIM_T3, _FSIM_T4, _FSIM_LAMBDA = 0.85, 160.0, 200.0, 200.0, 0.03


def _kovesi_range(n: int) -> np.ndarray:
    if n % 2:
        return np.arange(-(n - 1) / 2, (n - 1) / 2 + 1) / (n - 1)
    return np.arange(-n / 2, n / 2) / n


@lru_cache(maxsize=4)
def _pc_filters(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-Gabor filters ``(orientations, scales, rows, cols)`` of Kovesi's ``phasecong2`` as
    used in FeatureSIM, the per-orientation mean squared smallest-scale filter, and the
    per-orientation noise-energy constant ``2 sum(An^2) + 4 sum(Ai Aj)`` of the filters."""
    x, y = np.meshgrid(_kovesi_range(cols), _kovesi_range(rows))
    radius = np.fft.ifftshift(np.sqrt(x * x + y * y))
    theta = np.fft.ifftshift(np.arctan2(-y, x))
    lowpass = 1.0 / (1.0 + (radius / 0.45) ** 30)  # Butterworth, cutoff 0.45, order 15
    radius[0, 0] = 1.0
    log_gabor = []
    for s in range(_PC_SCALES):
        fo = 1.0 / (_PC_MIN_WAVELENGTH * _PC_MULT**s)
        lg = np.exp(-(np.log(radius / fo) ** 2) / (2 * math.log(_PC_SIGMA_ON_F) ** 2)) * lowpass
        lg[0, 0] = 0.0
        log_gabor.append(lg)
    theta_sigma = math.pi / _PC_ORIENTATIONS / _PC_D_THETA_ON_SIGMA
    sin_t, cos_t = np.sin(theta), np.cos(theta)
    filters = np.empty((_PC_ORIENTATIONS, _PC_SCALES, rows, cols))
    for o in range(_PC_ORIENTATIONS):
        angle = o * math.pi / _PC_ORIENTATIONS
        ds = sin_t * math.cos(angle) - cos_t * math.sin(angle)
        dc = cos_t * math.cos(angle) + sin_t * math.sin(angle)
        spread = np.exp(-np.arctan2(ds, dc) ** 2 / (2 * theta_sigma**2))
        for s in range(_PC_SCALES):
            filters[o, s] = log_gabor[s] * spread
    em_n = (filters[:, 0] ** 2).sum(axis=(-2, -1))
    spatial = sfft.ifft2(filters).real * math.sqrt(rows * cols)
    sum_an2 = (spatial**2).sum(axis=(1, 2, 3))
    sum_aiaj = ((spatial.sum(axis=1) ** 2).sum(axis=(-2, -1)) - sum_an2) / 2.0
    noise_const = 2.0 * sum_an2 + 4.0 * sum_aiaj
    for arr in (filters, em_n, noise_const):
        arr.setflags(write=False)
    return filters, em_n, noise_const


def _phase_congruency(imgs: np.ndarray) -> np.ndarray:
    """Kovesi's phase congruency (``phasecong2`` of FeatureSIM) of a stack ``(n, rows, cols)``."""
    filters, em_n, noise_const = _pc_filters(*imgs.shape[-2:])
    spec = sfft.fft2(imgs)[:, None]  # (n, 1, rows, cols)
    energy_all = np.zeros(imgs.shape)
    an_all = np.zeros(imgs.shape)
    for o in range(_PC_ORIENTATIONS):
        eo = sfft.ifft2(spec * filters[o])  # (n, scales, rows, cols)
        even, odd = eo.real, eo.imag
        an = np.abs(eo)
        sum_e, sum_o = even.sum(axis=1), odd.sum(axis=1)
        x_energy = np.sqrt(sum_e**2 + sum_o**2) + _PC_EPS
        mean_e, mean_o = (sum_e / x_energy)[:, None], (sum_o / x_energy)[:, None]
        energy = (even * mean_e + odd * mean_o - np.abs(even * mean_o - odd * mean_e)).sum(axis=1)
        # noise threshold from the median smallest-scale energy (Rayleigh model)
        median_e2n = np.median((an[:, 0] ** 2).reshape(len(imgs), -1), axis=1)
        noise_power = (-median_e2n / math.log(0.5)) / em_n[o]
        tau = np.sqrt(noise_power * noise_const[o] / 2.0)
        threshold = (tau * math.sqrt(math.pi / 2) + _PC_K * math.sqrt(2 - math.pi / 2) * tau) / 1.7
        energy_all += np.maximum(energy - threshold[:, None, None], 0.0)
        an_all += an.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 only for a constant image
        return energy_all / an_all


def fsim(ref: Any, dist: Any, *, data_range: float = 255.0, chromatic: bool = True) -> float:
    """Feature similarity index (Zhang et al. 2011); higher is better, range [0, 1].

    Zhang's MATLAB ``FeatureSIM``: luminance Y (and chrominance I, Q) from the YIQ
    transform (not rounded; a grey input is its own Y), automatic downsampling by
    ``f = max(1, round(min(H, W) / 256))`` (f x f average filter with zero padding, keep
    every f-th pixel), phase congruency from 4-scale, 4-orientation log-Gabor filters
    (Kovesi's ``phasecong2``), Scharr gradient magnitude, T1 = 0.85, T2 = 160, PC-max
    pooling. ``chromatic=True`` (default) returns FSIMc, which adds the I/Q similarity
    (T3 = T4 = 200, lambda = 0.03) — the official calibration values are FSIMc of the RGB
    images; ``chromatic=False`` returns the luminance-only FSIM. Grey inputs give FSIM
    either way. Needs both sides >= 16 pixels; NaN for constant images (no phase
    congruency anywhere).
    """
    a, b, _ = _pair(ref, dist, data_range=data_range, metric="fsim", min_side=16)
    scale = 255.0 / float(data_range)
    x = np.stack([a, b]).astype(np.float64) * scale
    if x.ndim == 4:
        yiq = np.moveaxis(x @ _YIQ.T, -1, 1)  # (2, 3, H, W)
        luma, chroma = yiq[:, 0], (yiq[:, 1:] if chromatic else None)
    else:
        luma, chroma = x, None
    f = F.scale_factor(*luma.shape[-2:])
    luma = F.average_downsample(luma, f, padding="zero")
    pc1, pc2 = _phase_congruency(luma)
    grads = [np.hypot(F.correlate_same(img, _SCHARR_X), F.correlate_same(img, _SCHARR_X.T))
             for img in luma]
    g1, g2 = grads
    pc_sim = (2.0 * pc1 * pc2 + _FSIM_T1) / (pc1**2 + pc2**2 + _FSIM_T1)
    g_sim = (2.0 * g1 * g2 + _FSIM_T2) / (g1**2 + g2**2 + _FSIM_T2)
    pc_max = np.maximum(pc1, pc2)
    sim = g_sim * pc_sim * pc_max
    if chroma is not None:
        (i1, q1), (i2, q2) = F.average_downsample(chroma, f, padding="zero")
        i_sim = (2.0 * i1 * i2 + _FSIM_T3) / (i1**2 + i2**2 + _FSIM_T3)
        q_sim = (2.0 * q1 * q2 + _FSIM_T4) / (q1**2 + q2**2 + _FSIM_T4)
        iq = i_sim * q_sim
        # real part of the (possibly complex) power, as MATLAB real((ISim .* QSim) .^ lambda)
        sim = sim * np.abs(iq) ** _FSIM_LAMBDA * np.where(iq < 0, math.cos(math.pi * _FSIM_LAMBDA), 1.0)
    total = float(pc_max.sum())
    return float(sim.sum()) / total if total > 0 else math.nan
