"""Rewards for RL and data work: the ``ieqa serve`` reward service, its client, and
in-process equivalents with the same calls (see ``docs/howto/serve.md``).

* :class:`LocalRewarder` — score and compare in-process (:mod:`ieqa.serve.core`).
* :class:`~ieqa.scorers.reward.RewardRule` — the documented rule that makes a reward.
* :mod:`ieqa.serve.schema` — the JSON contract (API v1).
"""

from __future__ import annotations

from ieqa.scorers.reward import Reward, RewardRule, RewardRuleError
from ieqa.serve.core import LocalRewarder, compare_group, default_rule, item_result, p_better

__all__ = ["LocalRewarder", "Reward", "RewardRule", "RewardRuleError", "compare_group", "default_rule",
           "item_result", "p_better"]
