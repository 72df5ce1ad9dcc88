"""Curation: make training data from scores — keep the best edits (:func:`curate`), pick
the best candidate per request (:func:`best_of_n`), build DPO preference pairs
(:func:`dpo_pairs`). Every function streams its input (a score file of ``ieqa score`` or
a manifest with scores) and acts on one :class:`~ieqa.scorers.reward.RewardRule`.
"""

from ieqa.curate.select import CurateResult, KeepRule, curate
from ieqa.curate.source import CurateError, ScoredRow, ScoredSource, order_key

__all__ = ["CurateError", "CurateResult", "KeepRule", "ScoredRow", "ScoredSource", "curate", "order_key"]
