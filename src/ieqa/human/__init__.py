"""Human labels: MOS pipelines, outlier rules, ECDF-probit, reliability, rankings to pairs.

Every function takes an ``(n_items, n_raters)`` matrix with NaN for a missing rating
(build one with :meth:`RatingTable.to_matrix`) or index/label arrays, and returns arrays
or small result records; bad input raises :class:`~ieqa.metrics.MetricInputError`
naming the argument.

* ratings — :class:`RatingTable` (long form <-> matrix; from samples or CSV/TSV)
* mos — :func:`zscore_mos` (EditHF, BT.500 screening), :func:`iqr_mos` /
  :func:`iqr_outliers` (EPAIQA), :func:`mean_opinion_score`, :func:`levels_from_scores`,
  :func:`majority_vote`
* epaiqa — :func:`epaiqa_mos` (EPAIQA's whole cleaning: conflicts, IQR outliers,
  completion removed with its overall rating, completion by vote; every removal listed)
* screening — :func:`agreement_screen` (leave-one-rater-out SRCC, works with few
  ratings per item), :func:`min_flaggable_ratings` (when BT.500's rule can flag at all),
  :func:`mos_without_raters`
* ecdf_probit — :func:`ecdf_percentiles`, :func:`ecdf_probit` (ReasonEdit)
* pairs — :func:`ranking_to_pairs`, :func:`win_count_scores`, :func:`disentangle_ties`
  (EditReward), :func:`preferences_from_samples`
* rankings — :func:`read_rankings` (the group-rankings JSONL format),
  :func:`ranking_win_counts` (EditHF's editor benchmark: rankings -> pairs -> win counts)
* reliability — :func:`icc` / :func:`icc_table` (Shrout & Fleiss), :func:`kendall_w`,
  :func:`krippendorff_alpha`, :func:`mean_pairwise_srcc`
"""

from __future__ import annotations

from ieqa.human.ecdf_probit import ecdf_percentiles, ecdf_probit, ecdf_probit_mos
from ieqa.human.epaiqa import CleanedDimension, EpaiqaResult, RemovedRating, epaiqa_mos
from ieqa.human.mos import (
    LEVEL_LABELS,
    AllRatersRejectedError,
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
from ieqa.human.rankings import (
    GroupRanking,
    RankingWins,
    parse_ranking,
    ranking_win_counts,
    read_rankings,
)
from ieqa.human.ratings import DuplicateRatingsError, RatingTable, as_rating_matrix, csv_columns
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
from ieqa.human.screening import (
    MIN_RATER_SRCC,
    MIN_SHARED_ITEMS,
    AgreementScreen,
    agreement_screen,
    max_deviation,
    min_flaggable_ratings,
    mos_without_raters,
)

__all__ = [
    "ICC_FORMS",
    "LEVEL_LABELS",
    "MIN_RATER_SRCC",
    "MIN_SHARED_ITEMS",
    "AgreementScreen",
    "AllRatersRejectedError",
    "CleanedDimension",
    "DisentangledPairs",
    "GroupRanking",
    "DuplicateRatingsError",
    "EpaiqaResult",
    "IccResult",
    "KendallW",
    "MosResult",
    "RankPairs",
    "RankingWins",
    "RatingTable",
    "RemovedRating",
    "agreement_screen",
    "as_rating_matrix",
    "csv_columns",
    "disentangle_ties",
    "ecdf_percentiles",
    "ecdf_probit",
    "ecdf_probit_mos",
    "epaiqa_mos",
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
    "max_deviation",
    "mean_opinion_score",
    "mean_pairwise_srcc",
    "min_flaggable_ratings",
    "mos_without_raters",
    "parse_ranking",
    "preferences_from_samples",
    "ranking_to_pairs",
    "ranking_win_counts",
    "read_rankings",
    "win_count_scores",
    "zscore_mos",
]
