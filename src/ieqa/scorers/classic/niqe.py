"""NIQE, the Natural Image Quality Evaluator (Mittal, Soundararajan & Bovik, 2013).

NIQE is a "completely blind" no-reference metric: it fits a multivariate Gaussian (MVG) to
natural-scene-statistics features of the patches of an image and reports how far that fit is
from an MVG fitted once on patches of pristine (undistorted, natural) photographs. **Lower is
better**: an image whose statistics look like those of the pristine corpus scores low (about
2-5 for good photographs with the original model, about 4-7 with the shipped one); blur,
noise, compression or synthetic content push it up. The score is a distance, unbounded above.

Pipeline (the conventions of the authors' MATLAB release, which IQA-PyTorch also follows):

1. The image becomes one channel in [0, 255]: MATLAB ``rgb2gray`` by default (rounded for
   8-bit input, as MATLAB keeps the ``uint8`` class), or the BT.601 luma ``Y`` of
   ``rgb2ycbcr`` with ``channel="y"``. A 2-D (grey) input is used as is.
2. It is cropped to a whole number of ``96 x 96`` patches (top-left corner kept).
3. At each of two scales, MSCN coefficients ``(I - mu) / (sigma + 1)`` are computed with a
   ``7 x 7`` Gaussian window (sigma 7/6, replicate padding); every non-overlapping patch
   (96 x 96 at scale 1, 48 x 48 at scale 2) gives 18 features: the shape and mean scale of an
   asymmetric generalised Gaussian (AGGD) fitted to the coefficients, and shape, mean, left
   and right scale of AGGDs fitted to the products of each coefficient with its neighbour
   (circularly shifted within the patch) horizontally, vertically and along both diagonals.
   AGGD fits use the moment-matching grid search of the reference (shape in 0.2:0.001:10).
   The second scale is ``imresize(I, 0.5)``, MATLAB's bicubic resampler with antialiasing
   (:mod:`ieqa.scorers.classic._resize`).
4. The 36 features per patch are summarised by their mean (NaNs ignored) and covariance
   (patches with a NaN feature left out), and the score is
   ``sqrt((mu_p - mu)^T pinv((cov_p + cov) / 2) (mu_p - mu))``.

The pristine model is fitted the same way (:func:`fit_niqe_model`), except that only the
patches whose sharpness (mean of the local ``sigma`` over the patch) exceeds 0.75 times the
sharpest patch of the same image are kept.

Why the scores differ from the original NIQE
    The original parameter file (``modelparameters.mat``) was fitted by the authors on 125
    pristine photographs of their own collection; neither that file nor the images can be
    downloaded here, so ieqa ships a model fitted with the same procedure on the seven natural
    photographs bundled with scikit-image (``scripts/fit_niqe_model.py``; the image names are
    in ``default_niqe_model().source``). The feature extraction is the original one, but the
    reference MVG comes from a much smaller and different corpus, so absolute values are not
    comparable with published NIQE numbers: on the IQA-PyTorch calibration images (TID2013)
    they come out about 1.1-1.6 times the original ones, while the ordering of the images
    by quality agrees. To get a usable covariance from seven images, the shipped fit also
    takes the patch grids shifted by multiples of 16 pixels (``grid_stride=16``, about 1,350
    overlapping patches instead of ~40); see :func:`fit_niqe_model`. Never compare scores
    computed with different models.

Using another pristine model
    Fit one on your own pristine photographs with ``fit_niqe_model(images)`` (or run
    ``python scripts/fit_niqe_model.py --images a.png b.png ... --output my_model.npz``), save
    it with :meth:`NiqeModel.save`, and pass it (or the ``.npz`` path) as ``niqe(img,
    model=...)``. A model converted from the original MATLAB file (``mu_prisparam``,
    ``cov_prisparam``) can be used the same way: ``NiqeModel(mu, cov, source="original")``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from scipy import ndimage
from scipy.special import gammaln

from ieqa.scorers.classic._filters import gaussian_1d, matlab_round, rgb_to_grey, rgb_to_y
from ieqa.scorers.classic._resize import imresize

__all__ = ["NiqeModel", "default_niqe_model", "fit_niqe_model", "niqe", "niqe_features"]

N_FEATURES = 36
_FORMAT_VERSION = 1
_DEFAULT_MODEL = "data/niqe_pristine.npz"
_CHANNELS = ("grey", "y")

# AGGD moment-matching grid of the reference: shape in 0.2:0.001:10 and
# r(shape) = Gamma(2/s)^2 / (Gamma(1/s) Gamma(3/s)), which increases with the shape.
_SHAPES = np.arange(200, 10001, dtype=np.float64) / 1000.0
_RATIOS = np.exp(2.0 * gammaln(2.0 / _SHAPES) - gammaln(1.0 / _SHAPES) - gammaln(3.0 / _SHAPES))
_GAUSS7 = gaussian_1d(7, 7.0 / 6.0)
# circshift offsets (rows, columns) of the paired products: horizontal, vertical, 2 diagonals
_SHIFTS = ((0, 1), (1, 0), (1, 1), (1, -1))


# --------------------------------------------------------------------------- input


def to_luma(image: Any, channel: str = "grey") -> np.ndarray:
    """One float64 channel in [0, 255] of an image (shared by NIQE and PIQE).

    ``image`` is an ``HxW``, ``HxWx1`` or ``HxWx3`` array, ``uint8`` (0-255) or floating
    (0-1, kept unrounded), or anything :func:`ieqa.data.images.load_image` accepts (a path,
    bytes, a PIL image, other array dtypes or RGBA arrays), which becomes 8-bit RGB first.
    ``channel`` is ``"grey"`` (MATLAB ``rgb2gray``) or ``"y"`` (BT.601 luma, 16-235); colour
    8-bit input is rounded as MATLAB does for ``uint8``. Grey input is used as is.
    """
    if channel not in _CHANNELS:
        raise ValueError(f"channel must be one of {_CHANNELS}, got {channel!r}")
    arr = image if isinstance(image, np.ndarray) else None
    if arr is not None and arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    direct = (arr is not None and (arr.dtype == np.uint8 or np.issubdtype(arr.dtype, np.floating))
              and (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)))
    if not direct:
        from ieqa.data.images import load_image  # lazy: only for non-array references

        arr = np.asarray(load_image(image))
    if arr.size == 0:
        raise ValueError(f"empty image (shape {arr.shape})")
    integer = arr.dtype == np.uint8
    data = arr.astype(np.float64)
    if not integer:
        if not np.all(np.isfinite(data)):
            raise ValueError("image contains NaN or infinite values")
        if data.size and (data.min() < 0.0 or data.max() > 1.0):
            raise ValueError("floating-point images must lie in [0, 1]")
        data = data * 255.0
    if data.ndim == 2:
        return data
    if channel == "grey":
        return rgb_to_grey(data, integer=integer)
    y = rgb_to_y(data, 255.0)
    return matlab_round(y) if integer else y


# --------------------------------------------------------------------------- features


def _mscn(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MSCN coefficients and local sigma with the 7x7 Gaussian window (replicate padding)."""
    def blur(a: np.ndarray) -> np.ndarray:
        a = ndimage.correlate1d(a, _GAUSS7, axis=0, mode="nearest")
        return ndimage.correlate1d(a, _GAUSS7, axis=1, mode="nearest")

    mu = blur(img)
    sigma = np.sqrt(np.abs(blur(img * img) - mu * mu))
    return (img - mu) / (sigma + 1.0), sigma


def _closest_shape(rhat: np.ndarray) -> np.ndarray:
    """Grid shape whose ratio is nearest to ``rhat`` (first on ties; 0.2 for NaN, as MATLAB's
    ``min`` returns the first index when everything is NaN)."""
    pos = np.searchsorted(_RATIOS, np.nan_to_num(rhat, nan=-np.inf))
    lo = np.clip(pos - 1, 0, len(_RATIOS) - 1)
    hi = np.clip(pos, 0, len(_RATIOS) - 1)
    with np.errstate(invalid="ignore"):
        pick_hi = (_RATIOS[hi] - rhat) ** 2 < (_RATIOS[lo] - rhat) ** 2
    idx = np.where(pick_hi, hi, lo)
    idx = np.where(np.isnan(rhat), 0, idx)
    return _SHAPES[idx]


def aggd_fit(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit an asymmetric generalised Gaussian to each row of ``samples`` (2-D; a 1-D array
    is one row) by the moment matching of the NIQE/BRISQUE reference code.

    Returns ``(shape, left_scale, right_scale)`` arrays (one value per row); a row without
    negative (positive) values has a NaN left (right) scale.
    """
    x = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    x2 = x * x
    neg, pos = x < 0, x > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        left = np.sqrt((x2 * neg).sum(axis=1) / neg.sum(axis=1))
        right = np.sqrt((x2 * pos).sum(axis=1) / pos.sum(axis=1))
        g = left / right
        rhat = np.abs(x).mean(axis=1) ** 2 / x2.mean(axis=1)
        rnorm = rhat * (g ** 3 + 1.0) * (g + 1.0) / (g * g + 1.0) ** 2
    shape = _closest_shape(rnorm)
    k = np.exp(0.5 * (gammaln(1.0 / shape) - gammaln(3.0 / shape)))
    return shape, left * k, right * k


def _patch_features(mscn: np.ndarray, size: int) -> np.ndarray:
    """The 18 features of every non-overlapping ``size x size`` patch, row-major order."""
    h, w = mscn.shape
    nr, nc = h // size, w // size
    blocks = mscn[: nr * size, : nc * size].reshape(nr, size, nc, size).swapaxes(1, 2)
    blocks = blocks.reshape(nr * nc, size, size)
    n = blocks.shape[0]
    shape, bl, br = aggd_fit(blocks.reshape(n, -1))
    cols = [shape, (bl + br) / 2.0]
    for shift in _SHIFTS:
        pairs = (blocks * np.roll(blocks, shift, axis=(1, 2))).reshape(n, -1)
        shape, bl, br = aggd_fit(pairs)
        mean = (br - bl) * np.exp(gammaln(2.0 / shape) - gammaln(1.0 / shape))
        cols += [shape, mean, bl, br]
    return np.stack(cols, axis=1)


def _check_size(img: np.ndarray, patch_size: int) -> None:
    h, w = img.shape
    if h < patch_size or w < patch_size:
        raise ValueError(f"NIQE needs an image of at least {patch_size}x{patch_size} pixels "
                         f"(one {patch_size}x{patch_size} patch); got {w}x{h} (width x height)")


def niqe_features(image: Any, *, patch_size: int = 96,
                  channel: str = "grey") -> tuple[np.ndarray, np.ndarray]:
    """The ``(n_patches, 36)`` NIQE features of an image and the ``(n_patches,)`` sharpness
    of each patch (mean local sigma at scale 1), patches in row-major order.

    Raises:
        ValueError: the image is smaller than one patch, or ``patch_size`` is not an even
            positive integer.
    """
    _check_patch_size(patch_size)
    img = to_luma(image, channel)
    _check_size(img, patch_size)
    return _luma_features(img, patch_size)


def _check_patch_size(patch_size: int) -> None:
    if isinstance(patch_size, bool) or not isinstance(patch_size, (int, np.integer)) \
            or patch_size < 2 or patch_size % 2:
        raise ValueError(f"patch_size must be an even integer >= 2, got {patch_size!r}")


def _luma_features(img: np.ndarray, patch_size: int) -> tuple[np.ndarray, np.ndarray]:
    h, w = img.shape
    nr, nc = h // patch_size, w // patch_size
    img = img[: nr * patch_size, : nc * patch_size]
    mscn, sigma = _mscn(img)
    feats1 = _patch_features(mscn, patch_size)
    sharp = sigma.reshape(nr, patch_size, nc, patch_size).mean(axis=(1, 3)).ravel()
    mscn2, _ = _mscn(imresize(img, 0.5))
    feats2 = _patch_features(mscn2, patch_size // 2)
    return np.concatenate([feats1, feats2], axis=1), sharp


def _mvg(feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MATLAB ``nanmean`` (per column) and ``nancov`` (rows with a NaN removed; zeros when
    fewer than two complete rows remain)."""
    valid = ~np.isnan(feats)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(valid, feats, 0.0).sum(axis=0) / valid.sum(axis=0)
    complete = feats[~np.isnan(feats).any(axis=1)]
    if complete.shape[0] < 2:
        cov = np.zeros((feats.shape[1], feats.shape[1]))
    else:
        cov = np.cov(complete, rowvar=False)
    return mu, cov


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, eq=False)
class NiqeModel:
    """A pristine NIQE model: the MVG of pristine patch features.

    Attributes:
        mu: ``(36,)`` mean feature vector.
        cov: ``(36, 36)`` feature covariance.
        source: where the model comes from (corpus, image names, procedure).
        patch_size: patch size the features were computed with (96 in the original).
        sharpness_threshold: patch selection threshold of the fit (0.75 in the original).
        n_patches: number of pristine patches the model was fitted on (0 if unknown).
    """

    mu: np.ndarray
    cov: np.ndarray
    source: str = ""
    patch_size: int = 96
    sharpness_threshold: float = 0.75
    n_patches: int = 0

    def __post_init__(self) -> None:
        mu = np.array(self.mu, dtype=np.float64).reshape(-1)
        cov = np.array(self.cov, dtype=np.float64)
        if mu.shape != (N_FEATURES,) or cov.shape != (N_FEATURES, N_FEATURES):
            raise ValueError(f"a NIQE model needs mu of shape ({N_FEATURES},) and cov of shape "
                             f"({N_FEATURES}, {N_FEATURES}); got {mu.shape} and {cov.shape}")
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(cov))):
            raise ValueError("NIQE model parameters must be finite")
        mu.setflags(write=False)
        cov.setflags(write=False)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "cov", cov)
        object.__setattr__(self, "patch_size", int(self.patch_size))
        object.__setattr__(self, "sharpness_threshold", float(self.sharpness_threshold))
        object.__setattr__(self, "n_patches", int(self.n_patches))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to an ``.npz`` file (no pickled objects)."""
        with open(path, "wb") as fh:
            np.savez(fh, mu=self.mu, cov=self.cov, source=np.array(self.source),
                     patch_size=np.array(self.patch_size),
                     sharpness_threshold=np.array(self.sharpness_threshold),
                     n_patches=np.array(self.n_patches),
                     format_version=np.array(_FORMAT_VERSION))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NiqeModel:
        """Read a model written by :meth:`save` (only ``mu`` and ``cov`` are required)."""
        with np.load(path, allow_pickle=False) as data:
            missing = {"mu", "cov"} - set(data.files)
            if missing:
                raise ValueError(f"{os.fspath(path)} is not a NIQE model: missing {sorted(missing)}")
            return cls(
                mu=data["mu"], cov=data["cov"],
                source=str(data["source"]) if "source" in data.files else "",
                patch_size=int(data["patch_size"]) if "patch_size" in data.files else 96,
                sharpness_threshold=(float(data["sharpness_threshold"])
                                     if "sharpness_threshold" in data.files else 0.75),
                n_patches=int(data["n_patches"]) if "n_patches" in data.files else 0,
            )


@functools.lru_cache(maxsize=1)
def default_niqe_model() -> NiqeModel:
    """The pristine model shipped with ieqa (fitted on scikit-image's natural photographs by
    ``scripts/fit_niqe_model.py``; see the module docstring). Loaded once and cached."""
    ref = resources.files("ieqa.scorers.classic").joinpath(_DEFAULT_MODEL)
    with resources.as_file(ref) as path:
        return NiqeModel.load(path)


def fit_niqe_model(images: Iterable[Any], *, patch_size: int = 96,
                   sharpness_threshold: float = 0.75, grid_stride: int | None = None,
                   channel: str = "grey", source: str | None = None) -> NiqeModel:
    """Fit a pristine NIQE model on undistorted natural images.

    Every image contributes its patches sharper than ``sharpness_threshold`` times its
    sharpest patch (sharpness: mean local sigma over the patch, as in the reference code);
    the model is the mean and covariance of their 36 features.

    Args:
        images: pristine images (anything :func:`niqe` accepts), each at least
            ``patch_size x patch_size``.
        patch_size: patch size (96 in the original; the model remembers it).
        sharpness_threshold: relative sharpness threshold in [0, 1).
        grid_stride: ``None`` (the original procedure) cuts each image into one grid of
            non-overlapping patches from its top-left corner. An integer ``s`` (dividing
            ``patch_size``) also uses the grids shifted by every ``(dy, dx)`` in
            ``range(0, patch_size, s)``, each grid selected by sharpness on its own: more,
            overlapping patches from the same images, which steadies the covariance when
            the pristine corpus is small (the shipped model uses 16).
        channel: ``"grey"`` or ``"y"``, as for :func:`niqe`.
        source: description stored in the model (default: image and patch counts).

    Raises:
        ValueError: an image is too small, or fewer than two usable patches were found.
    """
    _check_patch_size(patch_size)
    if not 0.0 <= sharpness_threshold < 1.0:
        raise ValueError(f"sharpness_threshold must be in [0, 1), got {sharpness_threshold}")
    if grid_stride is None:
        offsets = [(0, 0)]
    else:
        if grid_stride < 1 or patch_size % grid_stride or grid_stride % 2:
            raise ValueError(f"grid_stride must be an even divisor of patch_size "
                             f"({patch_size}), got {grid_stride}")
        steps = range(0, patch_size, grid_stride)
        offsets = [(dy, dx) for dy in steps for dx in steps]
    kept = []
    n_images = 0
    for image in images:
        img = to_luma(image, channel)
        _check_size(img, patch_size)
        n_images += 1
        for dy, dx in offsets:
            sub = img[dy:, dx:]
            if sub.shape[0] < patch_size or sub.shape[1] < patch_size:
                continue
            feats, sharp = _luma_features(sub, patch_size)
            kept.append(feats[sharp > sharpness_threshold * sharp.max()])
    if not kept:
        raise ValueError("fit_niqe_model needs at least one image")
    feats = np.concatenate(kept, axis=0)
    n_complete = int((~np.isnan(feats).any(axis=1)).sum())
    if n_complete < 2:
        raise ValueError(f"only {n_complete} usable pristine patch(es) found; need at least 2")
    mu, cov = _mvg(feats)
    if source is None:
        source = (f"fit_niqe_model on {n_images} image(s), {feats.shape[0]} patches "
                  f"({patch_size}x{patch_size}, sharpness > {sharpness_threshold} x max, "
                  f"grid stride {grid_stride})")
    return NiqeModel(mu, cov, source=source, patch_size=patch_size,
                     sharpness_threshold=sharpness_threshold, n_patches=feats.shape[0])


# --------------------------------------------------------------------------- score


def niqe(image: Any, *, model: NiqeModel | str | os.PathLike[str] | None = None,
         channel: str = "grey") -> float:
    """NIQE score of an image: distance to the pristine model, **lower is better**.

    Args:
        image: an ``HxW`` / ``HxWx3`` ``uint8`` (0-255) or float (0-1) array, or anything
            :func:`ieqa.data.images.load_image` accepts; at least 96 x 96 pixels (the
            model's patch size). Only whole patches from the top-left corner are used.
        model: a :class:`NiqeModel`, a path to one saved as ``.npz``, or ``None`` for
            :func:`default_niqe_model` (scores are comparable only under the same model).
        channel: ``"grey"`` (MATLAB ``rgb2gray``, as the reference) or ``"y"`` (BT.601 luma).

    Returns:
        The score (>= 0; NaN only if a feature is undefined for every patch, e.g. for a
        perfectly flat image).

    Raises:
        ValueError: the image is smaller than one patch, or invalid input.
    """
    if model is None:
        model = default_niqe_model()
    elif not isinstance(model, NiqeModel):
        model = NiqeModel.load(model)
    feats, _ = niqe_features(image, patch_size=model.patch_size, channel=channel)
    mu, cov = _mvg(feats)
    diff = model.mu - mu
    if np.isnan(diff).any():
        return float("nan")
    pooled = (model.cov + cov) / 2.0
    inv = np.linalg.pinv(pooled, rcond=N_FEATURES * np.finfo(np.float64).eps)
    return float(np.sqrt(max(float(diff @ inv @ diff), 0.0)))
