"""Human labels: MOS pipelines, outlier rules, ECDF-probit, reliability, rankings to pairs.

Every function takes an ``(n_items, n_raters)`` matrix with NaN for a missing rating
(build one with :meth:`RatingTable.to_matrix`) or index/label arrays, and returns arrays
or small result records; bad input raises :class:`~ieqa.metrics.MetricInputError`
naming the argument.

* ratings — :class:`RatingTable` (long form <-> matrix; from samples or CSV/TSV)
* mos — :func:`zscore_mos` (EditHF, BT.500 screening), :func:`iqr_mos` /
  :func:`iqr_outliers` (EPAIQA), :func:`mean_opinion_score`, :func:`levels_from_scores`,
  :func:`majority_vote`
* ecdf_probit — :func:`ecdf_percentiles`, :func:`ecdf_probit` (ReasonEdit)
* pairs — :func:`ranking_to_pairs`, :func:`win_count_scores`, :func:`disentangle_ties`
  (EditReward), :func:`preferences_from_samples`
* reliability — :func:`icc` / :func:`icc_table` (Shrout & Fleiss), :func:`kendall_w`,
  :func:`krippendorff_alpha`, :func:`mean_pairwise_srcc`
"""

from __future__ import annotations

from ieqa.human.ecdf_probit import ecdf_percentiles, ecdf_probit, ecdf_probit_mos
from ieqa.human.mos import (
    LEVEL_LABELS,
    MosResult,
    iqr_mos,
    iqr_outliers,
    level_indices,
    levels_from_scores,
    majority_vote,
    mean_opinion_score,
    zscore_mos,
)
from ieqa.human.pairs import (
    DisentangledPairs,
    RankPairs,
    disentangle_ties,
    label_codes,
    preferences_from_samples,
    ranking_to_pairs,
    win_count_scores,
)
from ieqa.human.ratings import RatingTable, as_rating_matrix, csv_columns
from ieqa.human.reliability import (
    ICC_FORMS,
    IccResult,
    KendallW,
    icc,
    icc_table,
    kendall_w,
    krippendorff_alpha,
    mean_pairwise_srcc,
)

__all__ = [
    "ICC_FORMS",
    "LEVEL_LABELS",
    "DisentangledPairs",
    "IccResult",
    "KendallW",
    "MosResult",
    "RankPairs",
    "RatingTable",
    "as_rating_matrix",
    "csv_columns",
    "disentangle_ties",
    "ecdf_percentiles",
    "ecdf_probit",
    "ecdf_probit_mos",
    "icc",
    "icc_table",
    "iqr_mos",
    "iqr_outliers",
    "kendall_w",
    "krippendorff_alpha",
    "label_codes",
    "level_indices",
    "levels_from_scores",
    "majority_vote",
    "mean_opinion_score",
    "mean_pairwise_srcc",
    "preferences_from_samples",
    "ranking_to_pairs",
    "win_count_scores",
    "zscore_mos",
]
