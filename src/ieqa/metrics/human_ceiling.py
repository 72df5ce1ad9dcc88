"""Human ceiling: how well one rater agrees with the others (leave-one-out)."""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
from scipy import stats

from ieqa.metrics.checks import MetricInputError, check_choice
from ieqa.metrics.correlation import _pearson, fisher_z_mean


class HumanCeiling(NamedTuple):
    """Leave-one-out agreement: averaged ``srcc``/``plcc`` over the ``n_raters`` raters
    that could be scored; ``per_rater_*`` hold NaN for the ``n_skipped`` that could not."""

    srcc: float
    plcc: float
    per_rater_srcc: np.ndarray
    per_rater_plcc: np.ndarray
    n_raters: int
    n_skipped: int


def leave_one_out_ceiling(
    ratings: object,
    *,
    average: Literal["fisher_z", "mean"] = "fisher_z",
    min_items: int = 3,
) -> HumanCeiling:
    """Each rater against the mean of the other raters, SRCC and raw PLCC, averaged over
    raters (``"fisher_z"``, default, or arithmetic ``"mean"``).

    ``ratings`` is ``(n_items, n_raters)``; NaN marks a missing rating. For rater j the
    reference is the NaN-mean of the other raters per item, and only items that rater j
    rated *and* at least one other rater rated are used. A rater with fewer than
    ``min_items`` such items, or constant ratings or reference there, is skipped
    (``n_skipped``). Needs at least 2 raters; ±inf raises.
    """
    check_choice(average, "average", ("fisher_z", "mean"))
    try:
        r = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"ratings must be numeric: {exc}") from None
    if r.ndim != 2 or r.shape[1] < 2:
        raise MetricInputError(f"ratings must be (n_items, n_raters >= 2), got shape {r.shape}")
    if np.isinf(r).any():
        raise MetricInputError("ratings has infinite values")
    present = ~np.isnan(r)
    filled = np.where(present, r, 0.0)
    n_raters = r.shape[1]
    per_s, per_p = np.full(n_raters, np.nan), np.full(n_raters, np.nan)
    for j in range(n_raters):
        # summed afresh (not total minus own) so equal means stay exactly equal (ties)
        others_n = np.delete(present, j, axis=1).sum(axis=1)
        use = present[:, j] & (others_n > 0)
        if use.sum() < min_items:
            continue
        mine = r[use, j]
        ref = np.delete(filled, j, axis=1).sum(axis=1)[use] / others_n[use]
        if np.ptp(mine) == 0 or np.ptp(ref) == 0:
            continue
        per_s[j] = _pearson(stats.rankdata(mine), stats.rankdata(ref))
        per_p[j] = _pearson(mine, ref)
    ok = ~np.isnan(per_s)
    if not ok.any():
        raise MetricInputError("no rater could be compared with the others")
    avg = fisher_z_mean if average == "fisher_z" else (lambda v: float(np.mean(v)))
    return HumanCeiling(
        avg(per_s[ok]), avg(per_p[ok]), per_s, per_p, int(ok.sum()), int((~ok).sum())
    )
