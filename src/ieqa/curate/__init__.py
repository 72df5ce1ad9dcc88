"""Curation: make training data from scores — keep the best edits (:func:`curate`), pick
the best candidate per request (:func:`best_of_n`), build DPO preference pairs
(:func:`dpo_pairs`). Every function streams its input (a score file of ``ieqa score`` or
a manifest with scores) and acts on one :class:`~ieqa.rewards.rule.RewardRule`.
"""

from ieqa.curate.dpo import DpoPair, DpoResult, build_pairs, dpo_pairs, pair_agreement
from ieqa.curate.groups import BestOfNResult, best_of_n, scan_groups
from ieqa.curate.select import CurateResult, KeepRule, curate
from ieqa.curate.source import CurateError, ScoredRow, ScoredSource, order_key

__all__ = ["BestOfNResult", "CurateError", "CurateResult", "DpoPair", "DpoResult", "KeepRule",
           "ScoredRow", "ScoredSource", "best_of_n", "build_pairs", "curate", "dpo_pairs", "order_key",
           "pair_agreement", "scan_groups"]
