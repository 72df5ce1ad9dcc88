"""Inter-rater reliability: ICC (Shrout & Fleiss), Kendall's W, Krippendorff's alpha.

Every function takes an ``(n_items, n_raters)`` matrix, NaN = missing rating (note that
Krippendorff writes reliability data the other way round, raters x units).

Missing values:

* **ICC** and **Kendall's W** are defined on a complete items x raters table. By default
  (``missing="drop"``) items with any missing rating are dropped *before* computing, and
  the result reports how many (``n_items_dropped``); ``missing="raise"`` refuses
  incomplete input instead. Nothing is imputed.
* **Krippendorff's alpha** handles missing values natively: an item contributes its
  pairable ratings (those of items with at least two ratings); items with fewer than two
  ratings are ignored, as in Krippendorff's definition.

A statistic that is undefined for the input (no variance, fewer than 2 items or raters)
raises :class:`~ieqa.metrics.MetricInputError` saying why; it never returns a silent NaN
from :func:`icc`, :func:`kendall_w` or :func:`krippendorff_alpha`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats

from ieqa.human.ratings import as_rating_matrix
from ieqa.metrics.checks import MetricInputError, check_choice
from ieqa.metrics.correlation import fisher_z_mean, srcc

__all__ = [
    "ICC_FORMS",
    "IccResult",
    "KendallW",
    "icc",
    "icc_table",
    "kendall_w",
    "krippendorff_alpha",
    "mean_pairwise_srcc",
]

#: The six Shrout & Fleiss (1979) forms, in their order.
ICC_FORMS: tuple[str, ...] = ("ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)", "ICC(3,k)")


def _complete(matrix: object, missing: str, what: str) -> tuple[np.ndarray, int]:
    """Rows of ``matrix`` without NaN, and how many rows were dropped."""
    check_choice(missing, "missing", ("drop", "raise"))
    m = as_rating_matrix(matrix, min_raters=2)
    incomplete = np.isnan(m).any(axis=1)
    n_drop = int(incomplete.sum())
    if n_drop and missing == "raise":
        raise MetricInputError(
            f"{what} needs every rater to rate every item: {n_drop} item(s) have missing ratings "
            "(pass missing='drop' to drop those items)"
        )
    m = m[~incomplete]
    if len(m) < 2:
        raise MetricInputError(
            f"{what} needs at least 2 items rated by every rater, got {len(m)} "
            f"({n_drop} item(s) dropped for missing ratings)"
        )
    return m, n_drop


# --------------------------------------------------------------------------- ICC

@dataclass(frozen=True)
class IccResult:
    """All six Shrout & Fleiss ICCs of one complete table, with the ANOVA mean squares.

    ``values`` maps each name in :data:`ICC_FORMS` to its value (NaN when that form's
    denominator is 0 for this table, e.g. ICC(3,1) when every rater gives one constant
    value). ICC(1,*) is the one-way random model, ICC(2,*) two-way random with absolute
    agreement, ICC(3,*) two-way mixed with consistency; ``*,1`` is a single rater's
    reliability, ``*,k`` that of the mean of the ``n_raters`` raters.
    """

    values: dict[str, float]
    bms: float
    wms: float
    jms: float
    ems: float
    n_items: int
    n_raters: int
    n_items_dropped: int

    def __getitem__(self, form: str) -> float:
        return self.values[_icc_form(form)]


def _icc_form(form: str) -> str:
    key = form.upper().replace("ICC", "").replace(" ", "").strip("()")
    name = f"ICC({key.replace('K', 'k')})"
    if name not in ICC_FORMS:
        raise MetricInputError(f"form must be one of {ICC_FORMS}, got {form!r}")
    return name


def icc_table(matrix: object, *, missing: Literal["drop", "raise"] = "drop") -> IccResult:
    """Shrout & Fleiss (1979) ICCs from an ``(n_items, n_raters)`` matrix.

    With n items (targets), k raters (judges), the two-way ANOVA mean squares are
    ``BMS`` (between items), ``WMS`` (within items), ``JMS`` (between raters) and ``EMS``
    (residual), and::

        ICC(1,1) = (BMS - WMS) / (BMS + (k-1) WMS)
        ICC(2,1) = (BMS - EMS) / (BMS + (k-1) EMS + k (JMS - EMS) / n)
        ICC(3,1) = (BMS - EMS) / (BMS + (k-1) EMS)
        ICC(1,k) = (BMS - WMS) / BMS
        ICC(2,k) = (BMS - EMS) / (BMS + (JMS - EMS) / n)
        ICC(3,k) = (BMS - EMS) / BMS

    Values lie in (-inf, 1]. Items with missing ratings are dropped (``missing="drop"``,
    counted in ``n_items_dropped``) or raise (``"raise"``). Needs >= 2 items and raters;
    raises when every rating is equal (no variance: every ICC is 0/0). Sums of squares
    within rounding error of 0 count as 0 (equal ratings such as 3.2 are equal).
    """
    m, n_drop = _complete(matrix, missing, "ICC")
    n, k = m.shape
    grand = m.mean()
    # Sums of squares below the rounding error of the sums are zeros: equal ratings such
    # as 3.2 do not sum to exactly 0 (their float mean is not 3.2), and that noise must
    # not turn 0/0 into a number.
    noise = 16 * np.finfo(np.float64).eps * m.size * float(np.abs(m).max()) ** 2

    def ss(x: float) -> float:
        return 0.0 if abs(x) <= noise else float(x)

    ss_total = ss(((m - grand) ** 2).sum())
    if ss_total == 0:
        raise MetricInputError(f"ICC is undefined: all {m.size} ratings are equal ({m.flat[0]:g})")
    ss_rows = ss(k * ((m.mean(axis=1) - grand) ** 2).sum())
    ss_cols = ss(n * ((m.mean(axis=0) - grand) ** 2).sum())
    bms = ss_rows / (n - 1)
    wms = ss(ss_total - ss_rows) / (n * (k - 1))
    jms = ss_cols / (k - 1)
    ems = ss(ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))

    def ratio(num: float, den: float) -> float:
        return float(num / den) if den != 0 else float("nan")

    values = {
        "ICC(1,1)": ratio(bms - wms, bms + (k - 1) * wms),
        "ICC(2,1)": ratio(bms - ems, bms + (k - 1) * ems + k * (jms - ems) / n),
        "ICC(3,1)": ratio(bms - ems, bms + (k - 1) * ems),
        "ICC(1,k)": ratio(bms - wms, bms),
        "ICC(2,k)": ratio(bms - ems, bms + (jms - ems) / n),
        "ICC(3,k)": ratio(bms - ems, bms),
    }
    return IccResult(values, float(bms), float(wms), float(jms), float(ems), n, k, n_drop)


def icc(matrix: object, form: str = "ICC(2,1)", *, missing: Literal["drop", "raise"] = "drop") -> float:
    """One Shrout & Fleiss ICC (see :func:`icc_table`): ``form`` is ``"ICC(2,1)"``
    (default; also written ``"2,1"``), ``"ICC(3,1)"``, ``"ICC(2,k)"`` ... Raises when the
    form is undefined for the input (its denominator is 0)."""
    name = _icc_form(form)
    table = icc_table(matrix, missing=missing)
    value = table.values[name]
    if np.isnan(value):
        raise MetricInputError(f"{name} is undefined for this matrix (its denominator is 0)")
    return value


# --------------------------------------------------------------------------- Kendall's W

class KendallW(NamedTuple):
    """Kendall's coefficient of concordance ``w`` in [0, 1] (tie-corrected), Friedman's
    ``chi2 = m (n - 1) W`` with ``n - 1`` degrees of freedom and its ``p_value``."""

    w: float
    chi2: float
    p_value: float
    n_items: int
    n_raters: int
    n_items_dropped: int


def kendall_w(matrix: object, *, missing: Literal["drop", "raise"] = "drop") -> KendallW:
    """Kendall's W: how much ``m`` raters agree on the *ranking* of ``n`` items.

    Each rater's ratings are ranked over the items (ties get average ranks);
    ``R_i`` = sum of item i's ranks, ``S = sum (R_i - mean R)^2`` and, with ties,::

        W = 12 S / (m^2 (n^3 - n) - m sum_j T_j),   T_j = sum over tie groups of (t^3 - t)

    Items with missing ratings are dropped (``missing="drop"``, counted) or raise.
    Needs >= 2 items and raters; raises when every rater gives all items the same value
    (W is 0/0).
    """
    m, n_drop = _complete(matrix, missing, "Kendall's W")
    n, n_raters = m.shape
    ranks = stats.rankdata(m, axis=0)
    rank_sums = ranks.sum(axis=1)
    s = float(((rank_sums - rank_sums.mean()) ** 2).sum())
    _, dense = np.unique(m, return_inverse=True)
    dense = dense.reshape(m.shape)
    keys = np.arange(n_raters)[None, :] * (int(dense.max()) + 1) + dense
    t = np.bincount(keys.ravel()).astype(np.float64)
    ties = float((t**3 - t).sum())
    denom = n_raters**2 * (n**3 - n) - n_raters * ties
    if denom <= 0:
        raise MetricInputError("Kendall's W is undefined: every rater gives all items the same value")
    w = 12.0 * s / denom
    chi2 = n_raters * (n - 1) * w
    return KendallW(float(w), float(chi2), float(stats.chi2.sf(chi2, n - 1)), n, n_raters, n_drop)


# --------------------------------------------------------------------------- Krippendorff

def krippendorff_alpha(
    matrix: object,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal",
    *,
    max_values: int = 5000,
) -> float:
    """Krippendorff's alpha = ``1 - D_o / D_e`` for ``(n_items, n_raters)`` data with NaN.

    Built on the coincidence matrix ``o_ck = sum_u (pairs of values c, k in unit u) /
    (m_u - 1)`` over the items ("units") with ``m_u >= 2`` ratings, value totals ``n_c`` and
    ``n = sum n_c``::

        alpha = 1 - (n - 1) sum_ck o_ck d2(c, k) / sum_ck n_c n_k d2(c, k)

    with the metric ``d2`` of ``level``: nominal ``[c != k]``; ordinal
    ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``; interval ``(c - k)^2``; ratio
    ``((c - k) / (c + k))^2`` (values must be >= 0). Nominal, ordinal and interval use
    closed forms (no values x values matrix; ordinal = interval on the mid-ranks
    ``cumsum(n)_c - n_c / 2``); ratio builds the matrix and needs at most ``max_values``
    distinct values. Result in [-1, 1] (1 = perfect agreement, 0 = chance).

    Raises when no item has two ratings or when all pairable ratings are equal
    (``D_e = 0``: alpha undefined).
    """
    check_choice(level, "level", ("nominal", "ordinal", "interval", "ratio"))
    m = as_rating_matrix(matrix, min_raters=2)
    counts_u = (~np.isnan(m)).sum(axis=1)
    m = m[counts_u >= 2]
    if len(m) == 0:
        raise MetricInputError("Krippendorff's alpha is undefined: no item has at least 2 ratings")
    present = ~np.isnan(m)
    mu = present.sum(axis=1)
    uniq, dense = np.unique(m[present], return_inverse=True)
    if len(uniq) < 2:
        raise MetricInputError(
            f"Krippendorff's alpha is undefined: all {int(present.sum())} pairable ratings are equal ({uniq[0]:g})"
        )
    rows = np.nonzero(present)[0]
    n_c = np.bincount(dense.ravel(), minlength=len(uniq)).astype(np.float64)
    n_total = n_c.sum()
    if level == "nominal":
        unit_counts = np.bincount(rows * len(uniq) + dense.ravel(), minlength=len(m) * len(uniq))
        unit_counts = unit_counts.reshape(len(m), len(uniq)).astype(np.float64)
        o_diag = (unit_counts * (unit_counts - 1) / (mu - 1)[:, None]).sum()
        observed = n_total - o_diag
        expected = n_total**2 - (n_c**2).sum()
    elif level in ("interval", "ordinal"):
        coded = uniq if level == "interval" else np.cumsum(n_c) - n_c / 2.0
        x = coded[dense.ravel()]
        unit_mean = np.bincount(rows, weights=x, minlength=len(m)) / mu
        ss_u = np.bincount(rows, weights=(x - unit_mean[rows]) ** 2, minlength=len(m))
        observed = (2.0 * mu * ss_u / (mu - 1)).sum()
        expected = 2.0 * n_total * ((x - x.mean()) ** 2).sum()
    else:
        observed, expected = _ratio_sums(uniq, dense.ravel(), rows, mu, n_c, max_values)
    if expected == 0:
        raise MetricInputError("Krippendorff's alpha is undefined: expected disagreement is 0")
    return float(1.0 - (n_total - 1) * observed / expected)


def _ratio_sums(uniq, dense, rows, mu, n_c, max_values) -> tuple[float, float]:
    if uniq[0] < 0:
        raise MetricInputError(f"level='ratio' needs non-negative values, got minimum {uniq[0]:g}")
    if len(uniq) > max_values:
        raise MetricInputError(
            f"level='ratio' builds a {len(uniq)}x{len(uniq)} matrix; max_values={max_values} "
            "(round the ratings or raise max_values)"
        )
    v = len(uniq)
    unit_counts = np.bincount(rows * v + dense, minlength=len(mu) * v).reshape(len(mu), v).astype(np.float64)
    weighted = unit_counts / (mu - 1)[:, None]
    o = unit_counts.T @ weighted - np.diag(weighted.sum(axis=0))
    s = uniq[:, None] + uniq[None, :]
    d2 = np.divide(uniq[:, None] - uniq[None, :], s, out=np.zeros((v, v)), where=s != 0) ** 2
    return float((o * d2).sum()), float((np.outer(n_c, n_c) * d2).sum())


# --------------------------------------------------------------------------- rank agreement

def mean_pairwise_srcc(matrix: object, *, min_items: int = 3) -> tuple[float, int, int]:
    """Fisher-z mean of the SRCC between every two raters on the items both rated.

    Returns ``(mean srcc, pairs used, pairs skipped)``; a pair is skipped when it shares
    fewer than ``min_items`` items or either side is constant there (SRCC undefined).
    Raises when no pair can be used.
    """
    m = as_rating_matrix(matrix, min_raters=2)
    rs: list[float] = []
    skipped = 0
    for i, j in itertools.combinations(range(m.shape[1]), 2):
        both = ~np.isnan(m[:, i]) & ~np.isnan(m[:, j])
        if both.sum() < min_items:
            skipped += 1
            continue
        try:
            rs.append(srcc(m[both, i], m[both, j]))
        except MetricInputError:
            skipped += 1
    if not rs:
        raise MetricInputError(f"no rater pair shares {min_items}+ items with varying ratings")
    return fisher_z_mean(rs), len(rs), skipped
