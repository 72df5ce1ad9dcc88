"""Benchmarking: editor leaderboards, predictions files and standalone HTML reports.

* leaderboard — :func:`editor_leaderboard` (EditHF Table 3), :func:`compare_rankings`,
  :func:`parse_weights`, :class:`ScoreTable` / :func:`score_table`
* predictions — :func:`read_predictions` (JSONL/CSV: ``id`` + one column per dimension)
* report — :class:`HtmlReport`, :func:`scatter_plot`, :func:`bar_chart`,
  :func:`write_json`, :func:`write_csv` (plots need the ``plot`` extra)
"""

from __future__ import annotations

from ieqa.bench.errors import BenchError, PredictionsError
from ieqa.bench.leaderboard import (
    EDITHF_WEIGHTS,
    Leaderboard,
    ScoreTable,
    compare_rankings,
    editor_leaderboard,
    parse_weights,
    resolve_weights,
    score_table,
)
from ieqa.bench.predictions import is_predictions_file, read_predictions
from ieqa.report import HtmlReport, bar_chart, scatter_plot, write_csv, write_json

__all__ = [
    "BenchError", "EDITHF_WEIGHTS", "HtmlReport", "Leaderboard", "PredictionsError",
    "ScoreTable", "bar_chart", "compare_rankings", "editor_leaderboard", "is_predictions_file",
    "parse_weights", "read_predictions", "resolve_weights", "score_table", "scatter_plot",
    "write_csv", "write_json",
]
