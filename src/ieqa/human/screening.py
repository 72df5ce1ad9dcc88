"""Rater screening that works on small panels, and when BT.500's rule can flag anything.

**The limit of BT.500's 2-sigma rule.** Among N ratings of one item, no rating can lie
more than ``(N-1)/sqrt(N)`` sample standard deviations (ddof=1) from their mean
(``sqrt(N-1)`` population SDs, ddof=0): one rating at ``x`` and N-1 at 0 is the extreme
case. At 2 sigma (strict ``>``) the rule therefore flags nothing unless an item has at
least 6 ratings (:func:`min_flaggable_ratings`), so with 5 or fewer raters per item
:func:`~ieqa.human.zscore_mos` rejects nobody for being an outlier, whatever they rated.

**Leave-one-rater-out agreement** (:func:`agreement_screen`) works at any panel size: for
each rater, the Spearman correlation (SRCC) between their ratings and the per-item mean of
the *other* raters, over the items they rated that at least one other rater also rated
(:func:`ieqa.metrics.leave_one_out_ceiling`). A rater below ``min_srcc`` (default
:data:`MIN_RATER_SRCC` = 0.3) is rejected; raters sharing fewer than ``min_items``
(default :data:`MIN_SHARED_ITEMS` = 10) items, or whose SRCC is undefined there (constant
ratings or reference), are not judged. In simulation (true quality uniform on 1-5,
honest ratings = quality + Gaussian noise of SD 1 rounded to 1..5, five raters of which
one draws uniform random integers 1..5) the threshold 0.3 rejects the random rater in
89% of panels at 20 items and 96% at 50 items, and an honest rater in 3% (20 items) and
0.1% (50 items); noisier honest raters (noise SD 1.5) are rejected in 25% / 12%
(``benchmarks/rater_screening.py`` reproduces these and other thresholds).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ieqa.human.mos import MosResult
from ieqa.human.ratings import as_rating_matrix
from ieqa.metrics.checks import MetricInputError

__all__ = ["MIN_RATER_SRCC", "MIN_SHARED_ITEMS", "AgreementScreen", "agreement_screen",
           "compared", "comparison_text", "max_deviation", "min_flaggable_ratings", "mos_without_raters"]

#: Default threshold of :func:`agreement_screen`: leave-one-out SRCC below it rejects.
MIN_RATER_SRCC: float = 0.3
#: Default number of shared items a rater needs before :func:`agreement_screen` judges them.
MIN_SHARED_ITEMS: int = 10


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compared(value: float, op: str, threshold: float, *, digits: int = 2, style: str = "f",
             percent: bool = False) -> tuple[str, str]:
    """``value`` and ``threshold`` as texts whose printed numbers still satisfy ``value OP
    threshold``: the value gets ``digits`` decimals (``style="f"``) or significant digits
    (``style="g"``), and more until the rounding no longer hides the comparison (0.6996
    against 0.7 prints ``0.6996``, never ``0.70``); the threshold prints as short as it
    is exact (``0.7``). With ``percent`` both are shares written in percent (``90.4%``).
    When the comparison is false for the values themselves, the value prints exactly.

    Examples:
        >>> compared(0.6996, "<", 0.7)
        ('0.6996', '0.7')
        >>> compared(0.904, ">", 0.9, digits=0, percent=True)
        ('90.4%', '90%')
    """
    if op not in _OPS:
        raise ValueError(f"op must be one of {', '.join(_OPS)}, got {op!r}")
    if style not in ("f", "g"):
        raise ValueError(f"style must be 'f' or 'g', got {style!r}")
    scale, unit = (100.0, "%") if percent else (1.0, "")
    v, t = float(value) * scale, float(threshold) * scale
    t_text = f"{t:g}"
    if float(t_text) != t:
        t_text = repr(t)
    holds = _OPS[op]
    v_text = repr(v)
    if math.isfinite(v):
        for d in range(digits, digits + 16):
            text = f"{v:.{max(d, 1) if style == 'g' else d}{style}}"
            if float(text) == 0:
                text = text.lstrip("-")  # -0.00 reads as a sign the value does not have
            if holds(float(text), float(t_text)):
                v_text = text
                break
    return v_text + unit, t_text + unit


def comparison_text(value: float, op: str, threshold: float, **kw: object) -> str:
    """``"VALUE OP THRESHOLD"`` as :func:`compared` prints them, e.g. ``"0.6996 < 0.7"``."""
    v, t = compared(value, op, threshold, **kw)  # type: ignore[arg-type]
    return f"{v} {op} {t}"


def max_deviation(n: int, ddof: int = 1) -> float:
    """The largest ``|rating - mean| / sd`` any rating can have among ``n`` ratings of one
    item: ``(n-1)/sqrt(n)`` for the sample SD (``ddof=1``), ``sqrt(n-1)`` for ``ddof=0``;
    0 when the SD is undefined (``n <= ddof``)."""
    if n <= ddof:
        return 0.0
    return (n - 1) / math.sqrt(n) if ddof == 1 else math.sqrt(n - 1)


def min_flaggable_ratings(sigma: float = 2.0, ddof: int = 1) -> int:
    """The fewest ratings per item at which a rating can lie strictly more than ``sigma``
    SDs from the item mean (6 for the BT.500 default of 2 sigma, ddof=1)."""
    if not sigma > 0:
        raise MetricInputError(f"sigma must be > 0, got {sigma!r}")
    n = ddof + 1
    while max_deviation(n, ddof) <= sigma:
        n += 1
    return n


@dataclass(frozen=True)
class AgreementScreen:
    """Leave-one-rater-out agreement of every rater (:func:`agreement_screen`).

    Attributes:
        srcc: ``(n_raters,)`` SRCC in [-1, 1] with the mean of the others; NaN where the
            rater was not judged (too few shared items, or SRCC undefined).
        n_shared: ``(n_raters,)`` items the rater rated that another rater also rated.
        rejected: ``(n_raters,)`` SRCC below ``min_srcc``.
        reasons: per rater, ``None`` or ``"corr: ..."`` saying why it was rejected.
        min_srcc: the threshold used.
        min_items: the shared items needed to judge a rater.
    """

    srcc: np.ndarray
    n_shared: np.ndarray
    rejected: np.ndarray
    reasons: tuple[str | None, ...]
    min_srcc: float
    min_items: int

    @property
    def unjudged(self) -> np.ndarray:
        """Column indices of raters the rule could not judge (``srcc`` is NaN)."""
        return np.flatnonzero(np.isnan(self.srcc))


def agreement_screen(matrix: object, *, min_srcc: float = MIN_RATER_SRCC,
                     min_items: int = MIN_SHARED_ITEMS) -> AgreementScreen:
    """Reject raters whose ratings do not follow the other raters (see the module docstring).

    ``matrix`` is ``(n_items, n_raters)``, NaN = missing. ``min_srcc`` lies in [-1, 1]
    (strict ``<`` rejects); ``min_items`` >= 3.
    """
    from ieqa.metrics.human_ceiling import leave_one_out_ceiling

    if not -1 <= min_srcc <= 1:
        raise MetricInputError(f"min_srcc must be in [-1, 1], got {min_srcc!r}")
    if not (isinstance(min_items, (int, np.integer)) and min_items >= 3):
        raise MetricInputError(f"min_items must be an integer >= 3, got {min_items!r}")
    m = as_rating_matrix(matrix)
    present = ~np.isnan(m)
    others = present.sum(axis=1, keepdims=True) - present
    n_shared = (present & (others > 0)).sum(axis=0)
    srcc = np.full(m.shape[1], np.nan)
    if m.shape[1] >= 2:
        try:
            srcc = leave_one_out_ceiling(m, min_items=int(min_items)).per_rater_srcc
        except MetricInputError:  # no rater could be compared: nobody is judged
            pass
    with np.errstate(invalid="ignore"):
        rejected = srcc < min_srcc
    reasons = tuple(_corr_reason(float(srcc[j]), int(n_shared[j]), float(min_srcc)) if rejected[j] else None
                    for j in range(m.shape[1]))
    return AgreementScreen(srcc, n_shared, rejected, reasons, float(min_srcc), int(min_items))


def _corr_reason(srcc: float, n_shared: int, min_srcc: float) -> str:
    v, t = compared(srcc, "<", min_srcc, digits=3)
    return f"corr: SRCC {v} with the mean of the other raters over {n_shared} shared items < {t}"


def mos_without_raters(matrix: object, rejected: np.ndarray, reasons: tuple[str | None, ...],
                       compute: Callable[[np.ndarray], MosResult]) -> MosResult:
    """``compute`` (any MOS function) on ``matrix`` without the ``rejected`` raters'
    columns, with those raters recorded as rejected for ``reasons`` and their ratings
    counted as given and dropped (``present`` is the full matrix's)."""
    m = as_rating_matrix(matrix)
    rejected = np.asarray(rejected, dtype=bool)
    if rejected.shape != (m.shape[1],) or len(reasons) != m.shape[1]:
        raise MetricInputError(f"rejected and reasons need one entry per rater ({m.shape[1]})")
    masked = m.copy()
    masked[:, rejected] = np.nan
    res = compute(masked)
    merged = tuple(reasons[j] if rejected[j] else res.rejection_reasons[j] for j in range(m.shape[1]))
    return replace(res, present=~np.isnan(m), rater_rejected=res.rater_rejected | rejected,
                   rejection_reasons=merged)
