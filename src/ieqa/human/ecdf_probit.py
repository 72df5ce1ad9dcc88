"""ReasonEdit score normalisation: per-rater ECDF with mid-point smoothing, then probit.

For rater ``i`` with ``N_i`` ratings, a rating ``s`` becomes the mid-point smoothed
percentile of ``s`` within that rater's own ratings::

    P_i(s) = (count_i(< s) + 0.5 * count_i(= s)) / N_i          in (0, 1)

(the raw ECDF ``count_i(<= s) / N_i`` minus half the jump at ``s``, so ordinal ties sit in
the middle of their step). An item's percentile is the mean of ``P_i`` over the raters who
rated it, and its score is ``Phi^-1`` of that mean (the standard normal quantile,
:func:`scipy.stats.norm.ppf`): a continuous, roughly normal target in z units.

Because ``P_i`` is never 0 or 1, every score is finite. A rater who gives the same value
to everything maps every rating to ``P = 0.5`` (no information, it pulls items towards
0), and so does a rater with a single rating; screen such raters first if that matters.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ieqa.human.mos import MosResult
from ieqa.human.ratings import as_rating_matrix

__all__ = ["ecdf_percentiles", "ecdf_probit", "ecdf_probit_mos"]


def ecdf_percentiles(matrix: object) -> np.ndarray:
    """Mid-point smoothed ECDF percentile of every rating within its rater's ratings.

    ``matrix`` is ``(n_items, n_raters)`` raw ratings (NaN = missing); returns the same
    shape with ``P = (count(< s) + 0.5 count(= s)) / N`` per rating, counts taken over the
    rater's (column's) own non-NaN ratings, NaN where the input is NaN. Values lie in
    ``(0, 1)``. Fully vectorised: ratings are coded densely, offset by rater, sorted
    once, and every count is two :func:`numpy.searchsorted` look-ups.
    """
    m = as_rating_matrix(matrix)
    present = ~np.isnan(m)
    out = np.full(m.shape, np.nan)
    if not present.any():
        return out
    _, dense = np.unique(m[present], return_inverse=True)
    n_unique = int(dense.max()) + 1
    cols = np.nonzero(present)[1]
    keys = cols.astype(np.int64) * n_unique + dense.ravel()
    sorted_keys = np.sort(keys)
    n_per_rater = present.sum(axis=0)
    start = np.concatenate(([0], np.cumsum(n_per_rater)[:-1]))[cols]
    below = np.searchsorted(sorted_keys, keys, side="left") - start
    upto = np.searchsorted(sorted_keys, keys, side="right") - start
    out[present] = (below + 0.5 * (upto - below)) / n_per_rater[cols]
    return out


def _mean_percentile(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = (~np.isnan(p)).sum(axis=1)
    mean = np.full(len(p), np.nan)
    np.divide(np.where(np.isnan(p), 0.0, p).sum(axis=1), n, out=mean, where=n > 0)
    return mean, n


def ecdf_probit(matrix: object) -> np.ndarray:
    """ReasonEdit item scores: ``Phi^-1(mean over raters of P_i(r_ij))``, in z units.

    ``matrix`` is ``(n_items, n_raters)``, NaN = missing (:func:`ecdf_percentiles`
    for ``P``). An item nobody rated gets NaN (see :func:`ecdf_probit_mos` for counts).
    """
    mean, _ = _mean_percentile(ecdf_percentiles(matrix))
    return stats.norm.ppf(mean)


def ecdf_probit_mos(matrix: object) -> MosResult:
    """:func:`ecdf_probit` packaged as a :class:`~ieqa.human.mos.MosResult`.

    ``mos`` is the probit score; ``values`` holds the per-rating percentiles ``P``; no
    rating or rater is dropped. ``std`` and ``ci95`` are NaN: the probit of a mean
    percentile has no per-rating spread in its own units.
    """
    m = as_rating_matrix(matrix)
    p = ecdf_percentiles(m)
    mean, n = _mean_percentile(p)
    present = ~np.isnan(m)
    nan = np.full(len(m), np.nan)
    return MosResult(
        mos=stats.norm.ppf(mean), std=nan, ci95=nan.copy(), n_ratings=n, present=present,
        kept=present.copy(), outlier=np.zeros(m.shape, dtype=bool), values=p,
        rater_outlier_fraction=np.where(present.any(axis=0), 0.0, np.nan),
        rater_rejected=np.zeros(m.shape[1], dtype=bool), rejection_reasons=(None,) * m.shape[1],
        method="ecdf-probit", scale="probit of mean ECDF percentile (z units)",
    )
