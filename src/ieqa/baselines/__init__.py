"""Baselines that published papers compare against (``pip install 'ieqa[baselines]'``).

* :mod:`ieqa.baselines.subscore_regressor` — EPAIQA's "best competitor regressor": a
  random forest from two sub-scores (e.g. harmony and local naturalness) to overall.
"""

from __future__ import annotations

from ieqa.baselines.subscore_regressor import (
    BaselineError,
    SubscoreRegressor,
    SubscoreTable,
    evaluate_predictions,
    load_subscore_table,
    run_subscore_baseline,
    split_by_group,
)

__all__ = ["BaselineError", "SubscoreRegressor", "SubscoreTable", "evaluate_predictions",
           "load_subscore_table", "run_subscore_baseline", "split_by_group"]
