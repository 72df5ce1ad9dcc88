"""Mean opinion scores from an items x raters matrix, and the rules that clean them.

* :func:`zscore_mos` — EditHF (after ITU-R BT.500): screen outlier ratings and raters,
  z-score each rater, rescale to [0, 100], average per item.
* :func:`iqr_mos` / :func:`iqr_outliers` — EPAIQA: drop ratings outside
  ``[Q1 - k IQR, Q3 + k IQR]`` of their item, average the rest.
* :func:`mean_opinion_score` — the plain mean, no normalisation.
* :func:`levels_from_scores` — EditHF's five textual levels (bad ... excellent).
* :func:`majority_vote` — EPAIQA's vote over ordinal levels (prompt completion).

Every matrix is ``(n_items, n_raters)`` with NaN for a missing rating; the MOS functions
return a :class:`MosResult` that records what was dropped and why.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats

from ieqa.data.dimensions import LEVEL_WORDS
from ieqa.human.ratings import as_rating_matrix
from ieqa.metrics.checks import MetricInputError, check_choice

__all__ = [
    "LEVEL_LABELS",
    "AllRatersRejectedError",
    "MosResult",
    "iqr_mos",
    "iqr_outliers",
    "level_indices",
    "levels_from_scores",
    "majority_vote",
    "mean_opinion_score",
    "zscore_mos",
]

#: EditHF / Q-Align quality levels, lowest first.
#: The five level labels, worst first (:data:`ieqa.data.dimensions.LEVEL_WORDS`).
LEVEL_LABELS: tuple[str, ...] = LEVEL_WORDS

Rescale = Literal["100(z+3)/6", "minmax", "none"]


class AllRatersRejectedError(MetricInputError):
    """Screening rejected every rater, so no MOS is left.

    Attributes:
        reasons: per rater column, why it was rejected (``None`` for a rater with no
            rating).
    """

    def __init__(self, reasons: tuple[str | None, ...]) -> None:
        self.reasons = reasons
        why = "; ".join(f"rater column {j}: {r}" for j, r in enumerate(reasons) if r)
        super().__init__(f"matrix: no rating is left after screening (every rater was rejected: {why}); "
                         "screen='none' keeps every rater")


@dataclass(frozen=True)
class MosResult:
    """Per-item MOS and an account of the screening that produced it.

    Attributes:
        mos: ``(n_items,)`` mean of the kept (normalised) ratings; NaN where an item has
            no kept rating (``n_ratings == 0``).
        std: ``(n_items,)`` sample standard deviation (ddof=1) of the kept ratings, in the
            units of ``mos``; NaN when fewer than 2.
        ci95: ``(n_items,)`` half-width of the 95% confidence interval of the mean,
            ``t(0.975, n-1) * std / sqrt(n)`` (Student t; NaN when n < 2).
        n_ratings: ``(n_items,)`` number of ratings averaged.
        present: ``(n_items, n_raters)`` the input had a rating there.
        kept: ``(n_items, n_raters)`` the rating was used.
        outlier: ``(n_items, n_raters)`` the rating was flagged by the outlier rule.
        values: ``(n_items, n_raters)`` the per-rating values that were averaged
            (e.g. rescaled z-scores), NaN where not kept.
        rater_outlier_fraction: ``(n_raters,)`` flagged / given ratings (NaN for a rater
            with no rating).
        rater_rejected: ``(n_raters,)`` every rating of the rater was dropped.
        rejection_reasons: per rater, ``None`` or why it was rejected.
        method: the procedure, e.g. ``"zscore"``.
        scale: what the numbers mean, e.g. ``"0-100 (rescaled z)"``.
        n_clipped: ratings clipped into the output range by the rescaling.
    """

    mos: np.ndarray
    std: np.ndarray
    ci95: np.ndarray
    n_ratings: np.ndarray
    present: np.ndarray
    kept: np.ndarray
    outlier: np.ndarray
    values: np.ndarray
    rater_outlier_fraction: np.ndarray
    rater_rejected: np.ndarray
    rejection_reasons: tuple[str | None, ...]
    method: str
    scale: str
    n_clipped: int = 0
    params: dict = field(default_factory=dict)

    @property
    def n_input_ratings(self) -> int:
        return int(self.present.sum())

    @property
    def n_dropped(self) -> int:
        """Ratings given but not used (outliers and the ratings of rejected raters)."""
        return int(self.present.sum() - self.kept.sum())

    @property
    def n_outliers(self) -> int:
        """Ratings flagged by the outlier rule (whether or not their rater was rejected)."""
        return int(self.outlier.sum())

    @property
    def rejected_raters(self) -> np.ndarray:
        """Column indices of the rejected raters."""
        return np.flatnonzero(self.rater_rejected)

    @property
    def items_without_ratings(self) -> np.ndarray:
        """Row indices of items left with no rating (their ``mos`` is NaN)."""
        return np.flatnonzero(self.n_ratings == 0)


# --------------------------------------------------------------------------- summaries

def _item_stats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """NaN-aware per-row ``(mean, std ddof=1, ci95 half-width, n)``; no warnings."""
    n = (~np.isnan(values)).sum(axis=1)
    filled = np.where(np.isnan(values), 0.0, values)
    mean = np.full(len(values), np.nan)
    np.divide(filled.sum(axis=1), n, out=mean, where=n > 0)
    dev = np.where(np.isnan(values), 0.0, values - mean[:, None])
    std = np.full(len(values), np.nan)
    np.sqrt(np.divide((dev**2).sum(axis=1), n - 1, out=std, where=n > 1), out=std, where=n > 1)
    ci = np.full(len(values), np.nan)
    many = n > 1
    ci[many] = stats.t.ppf(0.975, n[many] - 1) * std[many] / np.sqrt(n[many])
    return mean, std, ci, n


def _result(m, values, kept, outlier, rejected, reasons, *, method, scale, n_clipped=0, params=None):
    present = ~np.isnan(m)
    values = np.where(kept, values, np.nan)
    mos, std, ci, n = _item_stats(values)
    given = present.sum(axis=0)
    frac = np.full(m.shape[1], np.nan)
    np.divide(outlier.sum(axis=0), given, out=frac, where=given > 0)
    return MosResult(
        mos=mos, std=std, ci95=ci, n_ratings=n, present=present, kept=kept, outlier=outlier,
        values=values, rater_outlier_fraction=frac, rater_rejected=rejected,
        rejection_reasons=tuple(reasons), method=method, scale=scale, n_clipped=int(n_clipped),
        params=dict(params or {}),
    )


def mean_opinion_score(matrix: object) -> MosResult:
    """Plain MOS: the mean of each item's ratings (NaN = missing), raw scale, nothing dropped.

    ``matrix`` is ``(n_items, n_raters)``. Items with no rating get ``mos`` NaN and
    ``n_ratings`` 0.
    """
    m = as_rating_matrix(matrix)
    present = ~np.isnan(m)
    none = np.zeros(m.shape, dtype=bool)
    return _result(m, m, present, none, np.zeros(m.shape[1], dtype=bool), [None] * m.shape[1],
                   method="mean", scale="raw")


# --------------------------------------------------------------------------- EditHF / BT.500

def _rater_moments(values: np.ndarray, ddof: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN-aware per-column ``(mean, std, n)``; std NaN when n <= ddof."""
    n = (~np.isnan(values)).sum(axis=0)
    filled = np.where(np.isnan(values), 0.0, values)
    mu = np.full(values.shape[1], np.nan)
    np.divide(filled.sum(axis=0), n, out=mu, where=n > 0)
    dev = np.where(np.isnan(values), 0.0, values - mu)
    sd = np.full(values.shape[1], np.nan)
    ok = n > ddof
    sd[ok] = np.sqrt((dev[:, ok] ** 2).sum(axis=0) / (n[ok] - ddof))
    return mu, sd, n


def _sigma_outliers(values: np.ndarray, sigma: float, ddof: int) -> np.ndarray:
    """Ratings farther than ``sigma`` item standard deviations from their item mean."""
    mean, sd, n = _rater_moments(values.T, ddof)  # per item (rows of ``values``)
    with np.errstate(invalid="ignore"):
        far = np.abs(values - mean[:, None]) > sigma * sd[:, None]
    return far & ~np.isnan(values) & (n > ddof)[:, None]


def _zscore(values: np.ndarray, ddof: int, on_constant: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Per-rater z-scores of ``values`` (NaN = unused). Raters whose std is 0 or
    undefined are returned as ``bad`` with a reason (``"reject"``), get z = 0 for every
    rating (``"zero"``, not ``bad``), or raise (``"raise"``)."""
    mu, sd, n = _rater_moments(values, ddof)
    bad = (n > 0) & ~(sd > 0)
    reasons: list[str | None] = [None] * values.shape[1]
    for j in np.flatnonzero(bad):
        why = (f"zero variance: all {int(n[j])} kept ratings = {values[~np.isnan(values[:, j]), j][0]:g}"
               if n[j] > ddof else f"zero variance: only {int(n[j])} kept rating(s), standard deviation undefined")
        if on_constant == "raise":
            raise MetricInputError(f"matrix: rater column {j} cannot be z-scored: {why}")
        reasons[j] = why
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (values - mu) / sd
    if on_constant == "zero":
        z[:, bad] = np.where(np.isnan(values[:, bad]), np.nan, 0.0)
        return z, np.zeros_like(bad), [None] * values.shape[1]
    z[:, bad] = np.nan
    return z, bad, reasons


def _rescale(z: np.ndarray, rescale: str) -> tuple[np.ndarray, int, str]:
    if rescale == "none":
        return z, 0, "z-score"
    if rescale == "minmax":
        lo, hi = np.nanmin(z), np.nanmax(z)
        if not hi > lo:
            raise MetricInputError("rescale='minmax' is undefined: every kept z-score is equal")
        return 100.0 * (z - lo) / (hi - lo), 0, "0-100 (min-max rescaled z)"
    scaled = 100.0 * (z + 3.0) / 6.0
    n_clipped = int(((scaled < 0) | (scaled > 100)).sum())
    return np.clip(scaled, 0.0, 100.0), n_clipped, "0-100 (rescaled z, 100(z+3)/6)"


def zscore_mos(
    matrix: object,
    *,
    screen: Literal["bt500", "none"] = "bt500",
    outlier_sigma: float = 2.0,
    max_outlier_fraction: float = 0.05,
    rescale: Rescale = "100(z+3)/6",
    screen_on: Literal["raw", "z"] = "raw",
    ddof: int = 1,
    on_constant_rater: Literal["auto", "reject", "zero", "raise"] = "auto",
) -> MosResult:
    """EditHF MOS: BT.500-style screening, per-rater z-scores rescaled to [0, 100], mean.

    ``matrix`` is ``(n_items, n_raters)`` raw ratings, NaN = missing. Steps (one pass,
    not iterated):

    1. **Screening** (``screen="bt500"``): a rating is an *outlier* when it lies more than
       ``outlier_sigma`` (default 2) standard deviations (ddof=``ddof``) from its item's
       mean over all raters (strict ``>``; items with ``<= ddof`` ratings flag nothing).
       With ``screen_on="raw"`` (default, the paper's order) this is judged on the raw
       ratings; with ``"z"`` on the per-rater z-scores of all ratings. A rater whose
       outlier fraction (outliers / ratings given) exceeds ``max_outlier_fraction``
       (default 0.05, strict ``>``) is rejected with all their ratings; outlier ratings of
       the other raters are dropped too. Note that with N ratings per item no rating
       can lie beyond ``(N-1)/sqrt(N)`` sample standard deviations of the item mean, so
       the 2-sigma rule flags nothing unless an item has at least 6 ratings.
    2. **z-scores** per kept rater from their kept ratings:
       ``z_ij = (r_ij - mu_i) / sigma_i`` (sigma with ``ddof``). A rater whose kept
       ratings have zero (or undefined) variance cannot be z-scored: rejected with the
       reason recorded (``on_constant_rater="reject"``), kept with z = 0 for each of
       their ratings (``"zero"``: they rated every item alike, i.e. at their own mean;
       50 after the default rescale), or :class:`MetricInputError` (``"raise"``).
       ``"auto"`` (default) is ``"reject"`` with ``screen="bt500"`` and ``"zero"`` with
       ``screen="none"``, so that ``screen="none"`` never rejects a rater.
    3. **Rescale**: ``"100(z+3)/6"`` (default) maps z = -3..3 to 0..100; ratings beyond
       |z| = 3 are clipped to 0 or 100 (counted in ``n_clipped``) so every value, MOS,
       std and CI lies on the 0-100 scale. ``"minmax"`` maps the smallest/largest kept z
       to 0/100; ``"none"`` keeps z.
    4. **MOS** per item = mean of its kept rescaled ratings; ``std`` / ``ci95`` / ``n_ratings``
       as in :class:`MosResult`.

    Raises :class:`MetricInputError` when an argument is out of range, and
    :class:`AllRatersRejectedError` (with every rater's reason) when no rater is left.
    """
    check_choice(screen, "screen", ("bt500", "none"))
    check_choice(rescale, "rescale", ("100(z+3)/6", "minmax", "none"))
    check_choice(screen_on, "screen_on", ("raw", "z"))
    check_choice(ddof, "ddof", (0, 1))
    check_choice(on_constant_rater, "on_constant_rater", ("auto", "reject", "zero", "raise"))
    if on_constant_rater == "auto":
        on_constant_rater = "reject" if screen == "bt500" else "zero"
    if not outlier_sigma > 0:
        raise MetricInputError(f"outlier_sigma must be > 0, got {outlier_sigma!r}")
    if not 0 <= max_outlier_fraction <= 1:
        raise MetricInputError(f"max_outlier_fraction must be in [0, 1], got {max_outlier_fraction!r}")
    m = as_rating_matrix(matrix)
    present = ~np.isnan(m)
    n_raters = m.shape[1]
    reasons: list[str | None] = [None] * n_raters
    outlier = np.zeros(m.shape, dtype=bool)
    if screen == "bt500":
        basis = m if screen_on == "raw" else _zscore(m, ddof, "reject")[0]
        outlier = _sigma_outliers(basis, outlier_sigma, ddof)
    given = present.sum(axis=0)
    frac = np.divide(outlier.sum(axis=0), given, out=np.zeros(n_raters), where=given > 0)
    rejected = frac > max_outlier_fraction
    for j in np.flatnonzero(rejected):
        reasons[j] = (f"bt500: {int(outlier[:, j].sum())} of {int(given[j])} ratings ({frac[j]:.1%}) beyond "
                      f"{outlier_sigma:g} sigma of the item mean > {max_outlier_fraction:.1%}")
    kept = present & ~outlier & ~rejected[None, :]
    z, constant, why = _zscore(np.where(kept, m, np.nan), ddof, on_constant_rater)
    for j in np.flatnonzero(constant):
        reasons[j] = why[j]
    rejected = rejected | constant
    kept &= ~rejected[None, :]
    if not kept.any():
        raise AllRatersRejectedError(tuple(reasons))
    scaled, n_clipped, scale = _rescale(np.where(kept, z, np.nan), rescale)
    return _result(m, scaled, kept, outlier, rejected, reasons, method="zscore", scale=scale,
                   n_clipped=n_clipped,
                   params={"screen": screen, "outlier_sigma": outlier_sigma, "screen_on": screen_on,
                           "max_outlier_fraction": max_outlier_fraction, "rescale": rescale, "ddof": ddof})


# --------------------------------------------------------------------------- EPAIQA / IQR

def iqr_outliers(values: object, k: float = 1.5, *, axis: int = -1) -> np.ndarray:
    """Boolean mask of values outside ``[Q1 - k*IQR, Q3 + k*IQR]`` along ``axis``.

    ``IQR = Q3 - Q1``, quartiles by linear interpolation (numpy's default, Hyndman-Fan
    type 7) over the non-NaN values of each slice. The fences are inclusive (a value
    equal to a fence is kept). NaN entries are never outliers; a slice with no value
    flags nothing. For an items x raters matrix use the default ``axis=-1`` (per item,
    as EPAIQA). ``k`` must be >= 0.
    """
    if not k >= 0:
        raise MetricInputError(f"k must be >= 0, got {k!r}")
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"values must be numeric: {exc}") from None
    if x.ndim == 0:
        raise MetricInputError("values must be at least 1-D")
    if np.isinf(x).any():
        raise MetricInputError(f"values has {int(np.isinf(x).sum())} infinite entries")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices -> NaN fences
        q1, q3 = np.nanpercentile(x, [25.0, 75.0], axis=axis, keepdims=True)
    iqr = q3 - q1
    with np.errstate(invalid="ignore"):
        out = (x < q1 - k * iqr) | (x > q3 + k * iqr)
    return out & ~np.isnan(x)


def iqr_mos(matrix: object, k: float = 1.5) -> MosResult:
    """EPAIQA MOS: per item, drop ratings outside ``[Q1 - k IQR, Q3 + k IQR]`` of that
    item's ratings (:func:`iqr_outliers`), then average the rest (raw scale).

    Raters are never rejected as a whole; ``rater_outlier_fraction`` still reports how
    often each rater was outside the fences.
    """
    m = as_rating_matrix(matrix)
    outlier = iqr_outliers(m, k, axis=1)
    kept = ~np.isnan(m) & ~outlier
    return _result(m, m, kept, outlier, np.zeros(m.shape[1], dtype=bool), [None] * m.shape[1],
                   method="iqr", scale="raw", params={"k": k})


# --------------------------------------------------------------------------- levels

def level_indices(
    scores: object, n_levels: int = 5, *, lo: float | None = None, hi: float | None = None
) -> np.ndarray:
    """Level index 0..n_levels-1 of each score: ``[lo, hi]`` cut into ``n_levels`` equal bins.

    ``lo``/``hi`` default to the min/max of ``scores``. Bins are left-closed,
    ``[e_k, e_{k+1})``, except the top one which is closed, so a score exactly on an
    inner edge goes to the **upper** bin and ``hi`` itself goes to the top bin. Scores
    outside ``[lo, hi]`` raise. NaN raises; ``lo == hi`` (e.g. constant scores) raises:
    the bins are undefined.
    """
    if not (isinstance(n_levels, (int, np.integer)) and n_levels >= 2):
        raise MetricInputError(f"n_levels must be an integer >= 2, got {n_levels!r}")
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"scores must be numeric: {exc}") from None
    if s.ndim != 1 or s.size == 0:
        raise MetricInputError(f"scores must be a non-empty 1-D array, got shape {s.shape}")
    if not np.isfinite(s).all():
        raise MetricInputError(f"scores has {int((~np.isfinite(s)).sum())} NaN/infinite values")
    lo = float(s.min()) if lo is None else float(lo)
    hi = float(s.max()) if hi is None else float(hi)
    if not hi > lo:
        raise MetricInputError(f"levels are undefined: the score range [lo={lo:g}, hi={hi:g}] is empty")
    if s.min() < lo or s.max() > hi:
        raise MetricInputError(f"scores lie outside [lo={lo:g}, hi={hi:g}]: [{s.min():g}, {s.max():g}]")
    edges = np.linspace(lo, hi, n_levels + 1)
    return np.searchsorted(edges[1:-1], s, side="right")


def levels_from_scores(
    scores: object,
    n_levels: int = 5,
    labels: Sequence[str] = LEVEL_LABELS,
    *,
    lo: float | None = None,
    hi: float | None = None,
) -> np.ndarray:
    """EditHF textual levels: the label of each score's bin (see :func:`level_indices`).

    With the defaults the range ``[min, max]`` of ``scores`` is split into 5 equal bins
    named bad, poor, fair, good, excellent (lowest first); the maximum is ``excellent``
    and a score on an inner edge takes the upper level. ``labels`` must have
    ``n_levels`` entries. Returns a string array.
    """
    if len(labels) != n_levels:
        raise MetricInputError(f"labels has {len(labels)} entries but n_levels={n_levels}")
    return np.asarray(labels, dtype=str)[level_indices(scores, n_levels, lo=lo, hi=hi)]


# --------------------------------------------------------------------------- voting

def _is_missing(x: object) -> bool:
    return x is None or (isinstance(x, (float, np.floating)) and np.isnan(x))


def _level_codes(arr: np.ndarray, order: Sequence[object] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(levels lowest first, code matrix with -1 = missing)``."""
    if arr.dtype.kind in "fiub":
        x = arr if arr.dtype.kind in "iub" else arr.astype(np.float64)
        missing = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=bool)
        vals = x[~missing]
    else:
        flat = arr.ravel()
        missing = np.fromiter((_is_missing(v) for v in flat), dtype=bool, count=flat.size).reshape(arr.shape)
        vals = arr[~missing]
    if order is None:
        if arr.dtype.kind not in "fiub":
            raise MetricInputError("order must list the levels lowest first when labels are not numbers")
        levels = np.unique(vals)
        codes = np.searchsorted(levels, np.where(missing, levels[0] if levels.size else 0, x))
    else:
        levels = np.asarray(list(order), dtype=object)
        lookup = {v: i for i, v in enumerate(order)}
        if len(lookup) != len(levels):
            raise MetricInputError(f"order has repeated levels: {list(order)}")
        unknown = sorted({str(v) for v in vals.tolist() if v not in lookup})
        if unknown:
            raise MetricInputError(f"labels_matrix holds values not in order: {unknown[:10]}")
        flat = arr.ravel()
        codes = np.fromiter((-1 if m else lookup[v] for v, m in zip(flat.tolist(), missing.ravel(), strict=True)),
                            dtype=np.int64, count=flat.size).reshape(arr.shape)
    return levels, np.where(missing, -1, codes)


def majority_vote(
    labels_matrix: object,
    tie_break: Literal["lower", "higher", "median"] = "lower",
    *,
    order: Sequence[object] | None = None,
) -> np.ndarray:
    """EPAIQA voting: each item's most frequent ordinal level among its raters.

    ``labels_matrix`` is ``(n_items, n_raters)``: numbers (NaN = no vote) or any labels
    (``None``/NaN = no vote) with ``order`` listing the levels lowest first (required
    for non-numeric labels). When several levels share the top count, ``tie_break``
    picks the ``"lower"`` one (conservative, default), the ``"higher"`` one, or the
    ``"median"`` of the tied levels (the lower middle one when their number is even).
    An item with no vote raises :class:`MetricInputError` naming it. Returns one level
    per item (same kind as the input labels).
    """
    check_choice(tie_break, "tie_break", ("lower", "higher", "median"))
    arr = np.asarray(labels_matrix, dtype=object if order is not None else None)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise MetricInputError(f"labels_matrix must be 2-D (n_items, n_raters), got shape {arr.shape}")
    levels, codes = _level_codes(arr, order)
    n_items, n_levels = arr.shape[0], max(len(levels), 1)
    rows = np.repeat(np.arange(n_items), arr.shape[1])
    valid = codes.ravel() >= 0
    counts = np.bincount(rows[valid] * n_levels + codes.ravel()[valid],
                         minlength=n_items * n_levels).reshape(n_items, n_levels)
    empty = np.flatnonzero(counts.sum(axis=1) == 0)
    if empty.size:
        raise MetricInputError(f"labels_matrix: {empty.size} item(s) have no vote, e.g. rows {empty[:5].tolist()}")
    tied = counts == counts.max(axis=1, keepdims=True)
    if tie_break == "lower":
        pick = tied.argmax(axis=1)
    elif tie_break == "higher":
        pick = n_levels - 1 - tied[:, ::-1].argmax(axis=1)
    else:
        n_tied = tied.sum(axis=1)
        nth = (n_tied - 1) // 2  # 0-based index of the (lower) middle tied level
        cum = np.cumsum(tied, axis=1)
        pick = (cum <= nth[:, None]).sum(axis=1)
    return levels[pick]
