"""Rewards for RL and data work: the rule that makes a reward from scores, the in-process
rewarder, the client of the ``ieqa serve`` reward service (the same calls), and the adapters
RL libraries call (see ``docs/howto/rewards-rl.md`` and ``docs/howto/serve.md``). The HTTP
server itself is :mod:`ieqa.serve`.

* :class:`LocalRewarder` — score and compare in-process (:mod:`ieqa.rewards.local`).
* :class:`RewardClient` / :class:`AsyncRewardClient` — the same calls against a running
  ``ieqa serve`` (:mod:`ieqa.rewards.client`, on httpx; imported on first use).
* :func:`edit_reward_fn`, :func:`group_advantages`, :func:`best_of_n`,
  :func:`trl_reward_func` — rewards in the shapes RL libraries call them
  (:mod:`ieqa.rewards.adapters`), on either of the above.
* :class:`~ieqa.rewards.rule.RewardRule` — the documented rule that makes a reward.
* :mod:`ieqa.rewards.schema` — the JSON contract (API v1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ieqa.rewards.adapters import (
    BestOfN,
    Rewarder,
    best_of_n,
    best_of_n_batch,
    edit_reward_fn,
    group_advantages,
    trl_critique_func,
    trl_reward_func,
)
from ieqa.rewards.local import LocalRewarder, compare_group, default_rule, item_result, p_better
from ieqa.rewards.rule import Reward, RewardRule, RewardRuleError

if TYPE_CHECKING:
    from ieqa.rewards.client import (
        AsyncRewardClient,
        RewardClient,
        RewardServiceError,
        ServerPath,
        encode_image,
    )

_CLIENT_NAMES = ("AsyncRewardClient", "RewardClient", "RewardServiceError", "ServerPath", "encode_image")

__all__ = ["AsyncRewardClient", "BestOfN", "LocalRewarder", "Reward", "RewardClient", "RewardRule",
           "RewardRuleError", "RewardServiceError", "Rewarder", "ServerPath", "best_of_n", "best_of_n_batch",
           "compare_group", "default_rule", "edit_reward_fn", "encode_image", "group_advantages",
           "item_result", "p_better", "trl_critique_func", "trl_reward_func"]


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:  # httpx is imported only when a client is used
        from ieqa.rewards import client

        return getattr(client, name)
    raise AttributeError(f"module 'ieqa.rewards' has no attribute {name!r}")
