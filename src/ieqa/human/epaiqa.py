"""EPAIQA's cleaning of raw ratings, as one pipeline (:func:`epaiqa_mos`).

EPAIQA (seed paper 001, Sec. 3.1) rates every edit on four dimensions: overall editing
quality (1-5), harmony (1-5), local naturalness (1-5) and prompt completion (levels 1-3:
not followed, partly followed, fully followed), then cleans the ratings:

1. **Conflicts** ("discarding ratings that don't meet the experimental criteria, such as
   the conflicting prompt completion scores and overall editing quality scores"). The
   paper's instructions limit the overall rating to 1-2 when the prompt is not fully
   followed, so ieqa reads a rater's prompt completion below ``full_completion`` (3)
   together with an overall rating above ``max_overall_if_incomplete`` (2) on the same
   edit as a conflict, and removes both ratings. The paper names the criterion but not
   the rule; this is ieqa's reading of it (``conflicts=False`` turns it off).
2. **IQR outliers** on overall, harmony and local naturalness, per edit: a rating outside
   ``[Q1 - k IQR, Q3 + k IQR]`` of that edit's ratings (:func:`~ieqa.human.iqr_outliers`;
   k = 1.5, Tukey's fences: the paper does not give k). Overall is judged without the
   ratings removed in step 1.
3. **Prompt completion follows overall**: "If an overall quality rating in one sample is
   excluded, its corresponding prompt completion score is also removed."
4. **Scores**: the mean of the remaining ratings for overall, harmony and naturalness; the
   prompt-completion level by a simple vote (:func:`~ieqa.human.majority_vote`) over the
   remaining completion ratings.

Step 3 changes the level: when the raters whose overall rating was an outlier also gave
a low completion, voting on all completion ratings and voting on the kept ones differ
(``tests/human/test_epaiqa.py`` works one such edit by hand: 2 by the paper's rule, 1 by
voting on every rating).

Every removed rating is returned as a :class:`RemovedRating` (dimension, item, rater,
value, reason); nothing is dropped without being listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from ieqa.data.dimensions import HARMONY, LOCAL_NATURALNESS, OVERALL, PROMPT_COMPLETION
from ieqa.human.mos import MosResult, _result, iqr_mos, majority_vote
from ieqa.human.ratings import Duplicates, RatingTable
from ieqa.metrics.checks import MetricInputError, check_choice

__all__ = ["EPAIQA_DIMENSIONS", "REMOVAL_REASONS", "CleanedDimension", "EpaiqaResult", "RemovedRating",
           "epaiqa_mos"]

#: The dimensions EPAIQA's cleaning handles, in report order.
EPAIQA_DIMENSIONS: tuple[str, ...] = (OVERALL, HARMONY, LOCAL_NATURALNESS, PROMPT_COMPLETION)
#: Why a rating was removed (``RemovedRating.reason``) -> what that means.
REMOVAL_REASONS: dict[str, str] = {
    "conflict": "prompt completion below full with an overall rating above the incomplete-edit cap "
                "(both of the rater's ratings removed)",
    "iqr": "outside the edit's IQR fences [Q1 - k IQR, Q3 + k IQR]",
    "overall_removed": "the rater's overall rating of this edit was removed",
}


@dataclass(frozen=True)
class RemovedRating:
    """One rating the cleaning removed.

    Attributes:
        dimension: canonical dimension of the rating.
        item: the edit (item id).
        rater: the rater id.
        value: the rating as given.
        reason: a key of :data:`REMOVAL_REASONS` (``"conflict"``, ``"iqr"``,
            ``"overall_removed"``).
    """

    dimension: str
    item: str
    rater: str
    value: float
    reason: str


@dataclass(frozen=True)
class CleanedDimension:
    """One dimension after cleaning.

    Attributes:
        items: ``(n_items,)`` item ids (rows of ``matrix``), in order of first appearance.
        raters: ``(n_raters,)`` rater ids (columns).
        matrix: ``(n_items, n_raters)`` the raw ratings, NaN = none.
        result: the per-item score and what was kept. For overall, harmony and local
            naturalness ``result.mos`` is the mean of the kept ratings (rating scale,
            ``method="epaiqa"``); for prompt completion it is the voted level
            (``method="epaiqa-vote"``; ``std``/``ci95`` are NaN, a vote has no spread).
            ``result.outlier`` marks the ratings removed by step 2 (IQR) for the three
            scored dimensions and by step 3 (overall removed) for prompt completion;
            ``present & ~kept`` is everything removed.
    """

    items: np.ndarray
    raters: np.ndarray
    matrix: np.ndarray
    result: MosResult


@dataclass(frozen=True)
class EpaiqaResult:
    """What :func:`epaiqa_mos` computed and removed.

    Attributes:
        dimensions: canonical dimension -> :class:`CleanedDimension`, for the EPAIQA
            dimensions the ratings hold (overall always), in :data:`EPAIQA_DIMENSIONS` order.
        removed: every removed rating, by dimension (that order), then item, then rater.
        tied_votes: ids of the items whose prompt-completion vote was tied among two or
            more levels (``tie_break`` chose the level).
        params: the settings used (k, conflicts, full_completion,
            max_overall_if_incomplete, tie_break).
    """

    dimensions: dict[str, CleanedDimension]
    removed: tuple[RemovedRating, ...]
    tied_votes: tuple[str, ...] = ()
    params: dict = field(default_factory=dict)

    def removed_counts(self) -> dict[str, dict[str, int]]:
        """Dimension -> reason -> number of removed ratings (only non-zero counts)."""
        out: dict[str, dict[str, int]] = {}
        for (dim, reason), n in Counter((r.dimension, r.reason) for r in self.removed).items():
            out.setdefault(dim, {})[reason] = n
        return out

    def scores(self, dimension: str) -> dict[str, float]:
        """Item -> score on ``dimension`` (NaN where every rating was removed)."""
        d = self.dimensions[dimension]
        return {str(i): float(v) for i, v in zip(d.items, d.result.mos, strict=True)}


def _aligned(src_items: np.ndarray, src_raters: np.ndarray, m: np.ndarray,
             items: np.ndarray, raters: np.ndarray, fill: object) -> np.ndarray:
    """``m`` (rows ``src_items``, columns ``src_raters``) on the grid ``items`` x ``raters``;
    ``fill`` where the source has no such item or rater."""
    row = {v: k for k, v in enumerate(src_items.tolist())}
    col = {v: k for k, v in enumerate(src_raters.tolist())}
    ii = np.asarray([row.get(v, -1) for v in items.tolist()], dtype=np.int64)
    jj = np.asarray([col.get(v, -1) for v in raters.tolist()], dtype=np.int64)
    out = np.full((len(items), len(raters)), fill, dtype=m.dtype)
    found = (ii >= 0)[:, None] & (jj >= 0)[None, :]
    out[found] = m[np.ix_(np.maximum(ii, 0), np.maximum(jj, 0))][found]
    return out


def _removed(dim: str, d: CleanedDimension, reason_of: np.ndarray) -> list[RemovedRating]:
    """The removed ratings of ``d``; ``reason_of`` is an (n_items, n_raters) str array."""
    gone = d.result.present & ~d.result.kept
    return [RemovedRating(dim, str(d.items[i]), str(d.raters[j]), float(d.matrix[i, j]), str(reason_of[i, j]))
            for i, j in zip(*np.nonzero(gone), strict=True)]


def _vote_ties(kept_values: np.ndarray) -> np.ndarray:
    """Rows whose most frequent value (NaN ignored) is shared by two or more values."""
    levels = np.unique(kept_values[~np.isnan(kept_values)])
    counts = (kept_values[:, :, None] == levels[None, None, :]).sum(axis=1)
    if levels.size < 2:
        return np.zeros(len(kept_values), dtype=bool)
    return (counts == counts.max(axis=1, keepdims=True)).sum(axis=1) > 1


def epaiqa_mos(
    table: RatingTable,
    *,
    k: float = 1.5,
    conflicts: bool = True,
    full_completion: float = 3.0,
    max_overall_if_incomplete: float = 2.0,
    tie_break: Literal["lower", "higher", "median"] = "lower",
    duplicates: Duplicates = "raise",
) -> EpaiqaResult:
    """EPAIQA's cleaning (see the module docstring): conflicts, IQR outliers on overall,
    harmony and local naturalness, prompt completion removed with its rater's overall
    rating, then means and a vote.

    Args:
        table: the ratings. It must hold ``overall`` ratings and may hold ``harmony``,
            ``local_naturalness`` and ``prompt_completion`` (any alias); any other
            dimension raises (clean it with :func:`~ieqa.human.iqr_mos`).
        k: IQR fence multiplier, >= 0 (1.5: Tukey's fences).
        conflicts: apply step 1. Needs completion levels no higher than
            ``full_completion``.
        full_completion: the completion level meaning "fully followed" (3 in EPAIQA).
        max_overall_if_incomplete: the highest overall rating allowed when the prompt is
            not fully followed (2 in EPAIQA's 1-5 scale).
        tie_break: how a tied completion vote is settled (see
            :func:`~ieqa.human.majority_vote`); tied items are listed in
            :attr:`EpaiqaResult.tied_votes`.
        duplicates: a rater who rated an item twice on one dimension (see
            :meth:`RatingTable.to_matrix`).

    Returns:
        :class:`EpaiqaResult` with the per-dimension scores and every removed rating.
    """
    if not k >= 0:
        raise MetricInputError(f"k must be >= 0, got {k!r}")
    check_choice(tie_break, "tie_break", ("lower", "higher", "median"))
    present_dims = table.dimensions
    others = [d for d in present_dims if d not in EPAIQA_DIMENSIONS]
    if others:
        raise MetricInputError(
            f"EPAIQA's cleaning covers {', '.join(EPAIQA_DIMENSIONS)}; the ratings also hold {others}: "
            "clean those with the IQR method (ieqa mos --method iqr) in a run of their own")
    if OVERALL not in present_dims:
        raise MetricInputError(
            f"EPAIQA's cleaning needs overall ratings (a rater's completion rating is removed with their "
            f"overall one); the ratings hold only {present_dims}: clean them with --method iqr instead")
    grids = {d: table.to_matrix(d, duplicates=duplicates) for d in EPAIQA_DIMENSIONS if d in present_dims}
    o_items, o_raters, o = grids[OVERALL]
    conflict_o = np.zeros(o.shape, dtype=bool)
    if PROMPT_COMPLETION in grids:
        p_items, p_raters, p = grids[PROMPT_COMPLETION]
        if conflicts and np.nanmax(p) > full_completion:
            raise MetricInputError(
                f"prompt-completion levels go up to {np.nanmax(p):g}, above full_completion={full_completion:g}: "
                "EPAIQA's levels are 1 (not followed), 2 (partly), 3 (fully); map the ratings to those "
                "levels, or turn the conflict rule off (conflicts=False, ieqa mos --conflicts keep)")
        if conflicts:
            o_on_p = _aligned(o_items, o_raters, o, p_items, p_raters, np.nan)
            with np.errstate(invalid="ignore"):
                conflict_p = (p < full_completion) & (o_on_p > max_overall_if_incomplete)
            conflict_o = _aligned(p_items, p_raters, conflict_p, o_items, o_raters, False)

    cleaned: dict[str, CleanedDimension] = {}
    removed: list[RemovedRating] = []
    params = {"k": k, "conflicts": conflicts, "full_completion": full_completion,
              "max_overall_if_incomplete": max_overall_if_incomplete, "tie_break": tie_break}
    for dim in (OVERALL, HARMONY, LOCAL_NATURALNESS):
        if dim not in grids:
            continue
        items, raters, m = grids[dim]
        drop = conflict_o if dim == OVERALL else np.zeros(m.shape, dtype=bool)
        res = iqr_mos(np.where(drop, np.nan, m), k=k)
        res = replace(res, present=~np.isnan(m), method="epaiqa", params=params)
        cleaned[dim] = CleanedDimension(items, raters, m, res)
        removed += _removed(dim, cleaned[dim], np.where(drop, "conflict", "iqr"))

    tied: tuple[str, ...] = ()
    if PROMPT_COMPLETION in grids:
        p_items, p_raters, p = grids[PROMPT_COMPLETION]
        overall = cleaned[OVERALL].result
        o_conflict = _aligned(o_items, o_raters, conflict_o, p_items, p_raters, False)
        o_outlier = _aligned(o_items, o_raters, overall.outlier, p_items, p_raters, False)
        present = ~np.isnan(p)
        kept = present & ~o_conflict & ~o_outlier
        votes = np.where(kept, p, np.nan)
        level = np.full(len(p_items), np.nan)
        has_vote = kept.any(axis=1)
        if has_vote.any():
            level[has_vote] = majority_vote(votes[has_vote], tie_break=tie_break)
        res = _result(p, p, kept, o_outlier & present, np.zeros(p.shape[1], dtype=bool), [None] * p.shape[1],
                      method="epaiqa-vote", scale="level (vote)", params=params)
        nan = np.full(len(p_items), np.nan)
        res = replace(res, mos=level, std=nan, ci95=nan.copy())
        cleaned[PROMPT_COMPLETION] = CleanedDimension(p_items, p_raters, p, res)
        removed += _removed(PROMPT_COMPLETION, cleaned[PROMPT_COMPLETION],
                            np.where(o_conflict, "conflict", "overall_removed"))
        tied = tuple(str(x) for x in p_items[_vote_ties(votes) & has_vote])
    return EpaiqaResult(cleaned, tuple(removed), tied, params)
