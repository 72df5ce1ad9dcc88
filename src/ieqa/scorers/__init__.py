"""Scorers: everything that turns (source, edited, instruction) into per-dimension scores.

* :class:`Scorer` / :class:`ScoreResult` — the contract every scorer follows
  (:mod:`ieqa.scorers.base`).
* :func:`create_scorer` / :func:`list_scorers` / :func:`scorer_info` — the declarative
  registry (:mod:`ieqa.scorers.catalog`), in the spirit of pyiqa's ``create_metric``.
* :mod:`ieqa.scorers.classic` — weight-free full-/no-reference metrics, edit-region
  estimation and the ``classic`` composite, the default scorer.
* :mod:`ieqa.scorers.vlm` — VLM readouts (judge, levels, digits, heads, dual, pairwise).
* :mod:`ieqa.scorers.ensemble` — combining scorers (dimensions combine in
  :mod:`ieqa.data.combine`; :mod:`ieqa.scorers.overall` re-exports it).
* :mod:`ieqa.scorers.checkpoint` — trained-evaluator checkpoints
  (:func:`save_evaluator`, :func:`load_evaluator`).
* :mod:`ieqa.scorers.run` — scoring a stream of samples into a resumable output file.
"""

from ieqa.scorers.base import Scorer, ScorerError, ScoreResult, ScorerInfo
from ieqa.scorers.catalog import create_scorer, list_scorers, scorer_info
from ieqa.scorers.checkpoint import load_evaluator, save_evaluator

__all__ = ["Scorer", "ScoreResult", "ScorerInfo", "ScorerError", "create_scorer",
           "list_scorers", "load_evaluator", "save_evaluator", "scorer_info"]
