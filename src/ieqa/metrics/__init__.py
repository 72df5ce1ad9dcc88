"""Metrics: pure functions, arrays in, floats out (torchmetrics' functional style).

* correlation — :func:`srcc`, :func:`krcc`, :func:`plcc`, :func:`rmse`, logistic fits,
  :func:`fisher_z_mean` (and :func:`tanh_of_mean`, for reproducing published numbers only)
* bootstrap — :func:`bootstrap_ci`
* preference — GenAI-Bench verdicts, pairwise / tie-calibrated / strict accuracy
* grouped — group SRCC, group pair accuracy, multi-way and full-ranking accuracy
* challenge — NTIRE 2026 IEQA final score
* human_ceiling — leave-one-out rater agreement

Accuracies are fractions in [0, 1]; correlations in [-1, 1]. Bad input raises
:class:`MetricInputError` naming the argument (never a silent NaN).
"""

from __future__ import annotations

from ieqa.metrics.bootstrap import bootstrap_ci
from ieqa.metrics.challenge import ntire_score, ntire_subset_score
from ieqa.metrics.checks import MetricInputError
from ieqa.metrics.correlation import (
    fisher_z_mean,
    fit_logistic,
    krcc,
    logistic4,
    logistic5,
    plcc,
    rmse,
    srcc,
    tanh_of_mean,
)
from ieqa.metrics.grouped import (
    GroupedResult,
    full_ranking_accuracy,
    grouped_pair_accuracy,
    grouped_pair_counts,
    grouped_srcc,
    multiway_accuracy,
    multiway_accuracy_by_k,
    strict_ranking_accuracy_released,
)
from ieqa.metrics.human_ceiling import HumanCeiling, leave_one_out_ceiling
from ieqa.metrics.preference import (
    accuracy_with_ties_released,
    genai_bench_correct,
    pairwise_accuracy,
    pairwise_accuracy_genai,
    strict_accuracy,
    tie_aware_accuracy,
    tie_calibrated_accuracy,
    tie_calibrated_accuracy_optimistic,
)

__all__ = [
    "MetricInputError",
    "GroupedResult",
    "HumanCeiling",
    "accuracy_with_ties_released",
    "bootstrap_ci",
    "fisher_z_mean",
    "fit_logistic",
    "full_ranking_accuracy",
    "genai_bench_correct",
    "grouped_pair_accuracy",
    "grouped_pair_counts",
    "grouped_srcc",
    "krcc",
    "leave_one_out_ceiling",
    "logistic4",
    "logistic5",
    "multiway_accuracy",
    "multiway_accuracy_by_k",
    "ntire_score",
    "ntire_subset_score",
    "pairwise_accuracy",
    "pairwise_accuracy_genai",
    "plcc",
    "rmse",
    "srcc",
    "strict_accuracy",
    "strict_ranking_accuracy_released",
    "tie_aware_accuracy",
    "tie_calibrated_accuracy",
    "tie_calibrated_accuracy_optimistic",
    "tanh_of_mean",
]
