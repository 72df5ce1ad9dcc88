"""Correlation between predicted scores and human scores: SRCC, KRCC, PLCC, RMSE.

Conventions shared by every function here:

* ``pred`` and ``target`` are 1-D array-likes of equal length (at least 2 items).
* ``higher_better=False`` says ``pred`` is lower-is-better (a distance, an error): its sign
  is flipped before anything else, so a good metric correlates *positively* with ``target``.
  ``target`` is always higher-is-better.
* NaN: ``nan_policy="raise"`` (default) raises :class:`MetricInputError` naming how many
  NaNs each array holds; ``"omit"`` drops every pair with a NaN in either array. ``±inf``
  always raises.
* A constant ``pred`` or ``target`` makes a correlation undefined: that raises
  :class:`MetricInputError` (never a silent NaN).
* SRCC and KRCC use the raw predictions. PLCC and RMSE take ``fit``: ``"none"`` (raw
  scores), ``"logistic4"`` (VQEG four-parameter logistic) or ``"logistic5"`` (Sheikh et al.
  five-parameter logistic) fitted from ``pred`` to ``target`` first. Always report which.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np
from scipy import optimize, special, stats

from ieqa.metrics.checks import (
    MetricInputError,
    NanPolicy,
    as_1d_float,
    check_choice,
    check_not_constant,
    paired,
)

Fit = Literal["none", "logistic4", "logistic5"]
_FITS = ("none", "logistic4", "logistic5")
_R_CLIP = 1.0 - 1e-12


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of two non-constant float arrays, clipped to [-1, 1]."""
    xc = x - x.mean()
    yc = y - y.mean()
    denom = np.sqrt(np.dot(xc, xc) * np.dot(yc, yc))
    if denom == 0.0:
        raise MetricInputError("correlation is undefined: an input is constant")
    return float(np.clip(np.dot(xc, yc) / denom, -1.0, 1.0))


def srcc(
    pred: object,
    target: object,
    *,
    higher_better: bool = True,
    nan_policy: NanPolicy = "raise",
) -> float:
    """Spearman rank correlation in [-1, 1]: Pearson r of the average ranks (ties share
    the mean of their ranks, as :func:`scipy.stats.spearmanr`)."""
    p, t = paired(pred, target, nan_policy=nan_policy, higher_better=higher_better)
    check_not_constant(p, "pred", "SRCC")
    check_not_constant(t, "target", "SRCC")
    return _pearson(stats.rankdata(p), stats.rankdata(t))


def krcc(
    pred: object,
    target: object,
    *,
    higher_better: bool = True,
    nan_policy: NanPolicy = "raise",
) -> float:
    """Kendall rank correlation tau-b in [-1, 1] (tie-corrected; O(n log n))."""
    p, t = paired(pred, target, nan_policy=nan_policy, higher_better=higher_better)
    check_not_constant(p, "pred", "KRCC")
    check_not_constant(t, "target", "KRCC")
    return float(np.clip(stats.kendalltau(p, t, variant="b").statistic, -1.0, 1.0))


def plcc(
    pred: object,
    target: object,
    *,
    fit: Fit = "none",
    higher_better: bool = True,
    nan_policy: NanPolicy = "raise",
    maxfev: int = 10_000,
) -> float:
    """Pearson linear correlation in [-1, 1] of ``target`` with ``pred`` (``fit="none"``)
    or with the logistic curve fitted from ``pred`` to ``target`` (see :func:`fit_logistic`)."""
    check_choice(fit, "fit", _FITS)
    p, t = paired(pred, target, nan_policy=nan_policy, higher_better=higher_better)
    check_not_constant(p, "pred", "PLCC")
    check_not_constant(t, "target", "PLCC")
    if fit != "none":
        p, _ = fit_logistic(p, t, params=4 if fit == "logistic4" else 5, maxfev=maxfev)
        check_not_constant(p, f"the {fit} fit of pred", "PLCC")
    return _pearson(p, t)


def rmse(
    pred: object,
    target: object,
    *,
    fit: Fit = "none",
    higher_better: bool = True,
    nan_policy: NanPolicy = "raise",
    maxfev: int = 10_000,
) -> float:
    """Root mean squared error (``target``'s units, >= 0) of ``pred`` or of its logistic fit.

    With ``fit="none"`` ``pred`` must already be on ``target``'s scale, so
    ``higher_better=False`` is refused there (a sign flip would make the error meaningless).
    """
    check_choice(fit, "fit", _FITS)
    if fit == "none" and not higher_better:
        raise MetricInputError(
            "rmse with fit='none' compares pred to target directly; higher_better=False "
            "needs fit='logistic4' or 'logistic5' to map pred onto target's scale"
        )
    p, t = paired(pred, target, nan_policy=nan_policy, higher_better=higher_better)
    if fit != "none":
        check_not_constant(p, "pred", "a logistic fit")
        p, _ = fit_logistic(p, t, params=4 if fit == "logistic4" else 5, maxfev=maxfev)
    return float(np.sqrt(np.mean((p - t) ** 2)))


# --------------------------------------------------------------------------- logistic fits


def logistic4(x: np.ndarray, b1: float, b2: float, b3: float, b4: float) -> np.ndarray:
    """VQEG four-parameter logistic: ``(b1 - b2) / (1 + exp(-(x - b3) / |b4|)) + b2``.

    ``b1``/``b2`` are the upper/lower asymptotes (swapped for a decreasing curve), ``b3``
    the midpoint, ``|b4|`` the slope scale in ``x``'s units.
    """
    x = np.asarray(x, dtype=np.float64)
    scale = abs(float(b4))
    if scale > 1e-250:
        z = (x - b3) / scale
    elif scale > 0.0:  # so steep that the division may overflow to +-inf, which is right
        with np.errstate(over="ignore"):
            z = (x - b3) / scale
    else:  # a step at b3: what the division by zero gives (+-inf, NaN at b3), without errstate
        z = np.where(x > b3, np.inf, np.where(x < b3, -np.inf, np.nan))
    return b2 + (b1 - b2) * special.expit(z)


def logistic5(x: np.ndarray, b1: float, b2: float, b3: float, b4: float, b5: float) -> np.ndarray:
    """Sheikh et al. five-parameter logistic:
    ``b1 * (0.5 - 1 / (1 + exp(b2 * (x - b3)))) + b4 * x + b5``."""
    x = np.asarray(x, dtype=np.float64)
    # 0.5 - 1 / (1 + exp(z)) == expit(z) - 0.5, evaluated without overflow.
    return b1 * (special.expit(b2 * (x - b3)) - 0.5) + b4 * x + b5


def _initial_guesses(xs: np.ndarray, ys: np.ndarray, params: int) -> list[list[float]]:
    """Starting points on standardised data (mean 0, sd 1): asymptotes at the target's
    extremes, oriented by the sign of the rank correlation, midpoint at the median."""
    rank_sign = 1.0 if _pearson(stats.rankdata(xs), stats.rankdata(ys)) >= 0 else -1.0
    lo, hi, mid = float(ys.min()), float(ys.max()), float(np.median(xs))
    if params == 4:
        top, bottom = (hi, lo) if rank_sign > 0 else (lo, hi)
        return [[top, bottom, mid, s] for s in (1.0, 0.3, 3.0)]
    amp = rank_sign * (hi - lo)
    return [[amp, k, mid, 0.0, float(ys.mean())] for k in (1.5, 4.0, 0.5)]


def _unstandardise(b: np.ndarray, params: int, mx: float, sx: float, my: float, sy: float):
    if params == 4:
        return np.array([my + sy * b[0], my + sy * b[1], mx + sx * b[2], sx * abs(b[3])])
    return np.array(
        [sy * b[0], b[1] / sx, mx + sx * b[2], sy * b[3] / sx, my + sy * (b[4] - b[3] * mx / sx)]
    )


def fit_logistic(
    pred: object,
    target: object,
    *,
    params: Literal[4, 5] = 4,
    maxfev: int = 10_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Fit :func:`logistic4` (``params=4``) or :func:`logistic5` (``params=5``) from
    ``pred`` to ``target`` by least squares (:func:`scipy.optimize.curve_fit`).

    The fit runs on standardised data from a few robust starting points (at most
    ``maxfev`` evaluations each) and keeps the lowest squared error. Returns
    ``(fitted_values, betas)`` with the betas in the original units, so
    ``logistic4(pred, *betas) == fitted_values``. Needs at least ``params`` finite points
    and non-constant inputs; raises :class:`MetricInputError` otherwise or when no start
    converges (then use ``fit="none"``).
    """
    if params not in (4, 5):
        raise MetricInputError(f"params must be 4 or 5, got {params!r}")
    x = as_1d_float(pred, "pred")
    y = as_1d_float(target, "target")
    if len(x) != len(y):
        raise MetricInputError(f"length mismatch: pred={len(x)}, target={len(y)}")
    # the same data fitted again (PLCC and RMSE of one bootstrap resample, in two rows of a
    # benchmark, each over all its resamples): the same betas, keyed by a digest, so that
    # the cache stays small for a million points; the fitted values are computed again from
    # them, which gives the fit's own values bit for bit
    key = (hashlib.blake2b(x.tobytes() + b"|" + y.tobytes(), digest_size=20).digest(),
           len(x), params, maxfev)
    with _FIT_LOCK:
        cached = _FIT_CACHE.get(key)
    if cached is None:
        try:
            cached = _fit_logistic(x, y, params, maxfev)[1]
        except MetricInputError as exc:
            cached = str(exc)
        with _FIT_LOCK:
            if len(_FIT_CACHE) >= _FIT_CACHE_SIZE:
                _FIT_CACHE.pop(next(iter(_FIT_CACHE)))
            _FIT_CACHE[key] = cached
    if isinstance(cached, str):
        raise MetricInputError(cached)
    betas = cached.copy()
    return (logistic4 if params == 4 else logistic5)(x, *betas), betas


#: recent fits' betas (or their error messages) by their inputs, oldest first, at most
#: ``_FIT_CACHE_SIZE`` (about 200 bytes each): a repeat returns what the first fit returned
#: (MINPACK's fit of ill-conditioned data moves in the last digits from one call to the
#: next; the fitted curve's PLCC by up to about 2e-9). A benchmark's PLCC and RMSE rows
#: bootstrap the same resamples one row after the other, so the second row refits nothing
#: while ``n_boot`` stays below the size.
_FIT_CACHE: dict[tuple[bytes, int, int, int], np.ndarray | str] = {}
_FIT_CACHE_SIZE = 8192
_FIT_LOCK = threading.Lock()


def _fit_logistic(x: np.ndarray, y: np.ndarray, params: int,
                  maxfev: int) -> tuple[np.ndarray, np.ndarray]:
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise MetricInputError("fit_logistic needs finite pred and target (drop NaNs first)")
    if len(x) < params:
        raise MetricInputError(
            f"a {params}-parameter logistic fit needs at least {params} points, got {len(x)}"
        )
    check_not_constant(x, "pred", "a logistic fit")
    check_not_constant(y, "target", "a logistic fit")
    mx, sx, my, sy = float(x.mean()), float(x.std()), float(y.mean()), float(y.std())
    xs, ys = (x - mx) / sx, (y - my) / sy
    func: Callable[..., np.ndarray] = logistic4 if params == 4 else logistic5
    best, best_sse = None, np.inf
    for p0 in _initial_guesses(xs, ys, params):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optimize.OptimizeWarning)
                b, _ = optimize.curve_fit(func, xs, ys, p0=p0, maxfev=maxfev)
        except (RuntimeError, ValueError, FloatingPointError):
            continue
        sse = float(np.sum((func(xs, *b) - ys) ** 2))
        if np.isfinite(sse) and np.all(np.isfinite(b)) and sse < best_sse:
            best, best_sse = b, sse
    if best is None:
        raise MetricInputError(
            f"the {params}-parameter logistic fit did not converge within maxfev={maxfev}; "
            "use fit='none' (raw PLCC) or raise maxfev"
        )
    betas = _unstandardise(best, params, mx, sx, my, sy)
    fitted = func(x, *betas)
    if not np.all(np.isfinite(fitted)):
        raise MetricInputError("the logistic fit produced non-finite values; use fit='none'")
    return fitted, betas


# ------------------------------------------------------------------ averaging correlations


def _correlations(correlations: object) -> np.ndarray:
    """Validated correlations: 1-D, non-empty, no NaN, each in [-1, 1]."""
    r = as_1d_float(correlations, "correlations")
    if r.size == 0:
        raise MetricInputError("correlations is empty")
    if np.isnan(r).any():
        raise MetricInputError(f"correlations has {int(np.isnan(r).sum())} NaN values")
    if (np.abs(r) > 1.0).any():
        raise MetricInputError("correlations must lie in [-1, 1]")
    return r


def fisher_z_mean(correlations: object, weights: object | None = None) -> float:
    """Average of correlations through the Fisher z transform: ``tanh(mean(arctanh(r)))``
    (weighted when ``weights`` is given, e.g. by group size minus 3).

    Each r must lie in [-1, 1]; it is clipped to ±(1 - 1e-12) first so |r| = 1 stays finite
    (such values then weigh heavily — a group of two items always has SRCC ±1).
    Some public evaluation codebases average the raw r instead, or apply tanh to the mean
    of the raw r (:func:`tanh_of_mean`); those are different numbers, not this one.
    Result in [-1, 1].
    """
    r = _correlations(correlations)
    z = np.arctanh(np.clip(r, -_R_CLIP, _R_CLIP))
    if weights is None:
        return float(np.tanh(z.mean()))
    w = as_1d_float(weights, "weights")
    if len(w) != len(r):
        raise MetricInputError(f"length mismatch: correlations={len(r)}, weights={len(w)}")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise MetricInputError("weights must be finite, non-negative and not all zero")
    return float(np.tanh(np.dot(w, z) / w.sum()))


def tanh_of_mean(correlations: object) -> float:
    """``tanh(mean(r))``: the mean of the raw correlations passed through tanh, *without*
    the arctanh first — what TIGER-AI-Lab/EditReward's ``evaluate/eval_bench.py``
    (``evaluate_imagenhub_from_json``) and TIGER-AI-Lab/VIEScore's ``analyze_json.ipynb``
    (``average_correlation``) compute and call a Fisher-z average.

    It is **not** a Fisher-z average (that is :func:`fisher_z_mean`, ``tanh(mean(arctanh r))``);
    it exists only to reproduce published numbers (e.g. EditReward's ImagenHub column).
    Each r must lie in [-1, 1]; the result lies in [-tanh(1), tanh(1)] ≈ [-0.762, 0.762].
    """
    r = _correlations(correlations)
    return float(np.tanh(r.mean()))
