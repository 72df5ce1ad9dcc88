"""The HTTP layer of the reward service, ``ieqa serve`` (see ``docs/howto/serve.md``).

* :mod:`ieqa.serve.app` — the FastAPI app (API v1): ``create_app`` assembles the routers of
  :mod:`ieqa.serve.routes` (health, metrics, the v1 endpoints) around one
  :class:`~ieqa.serve.service.Service` (:mod:`ieqa.serve.service`: state, limits, items);
* :mod:`ieqa.serve.batcher` — dynamic batching of concurrent requests;
* :mod:`ieqa.serve.auth`, :mod:`ieqa.serve.limits` — API keys, request and image limits;
* :mod:`ieqa.serve.images` — image fields of a request (inline, URL, server path);
* :mod:`ieqa.serve.metrics` — Prometheus metrics;
* :mod:`ieqa.serve.rayserve` — the same app as Ray Serve replicas.

The reward logic (rules, the in-process rewarder, the client, RL adapters, the JSON schema)
lives in :mod:`ieqa.rewards`; this package only puts it behind HTTP.
"""

from __future__ import annotations

import warnings
from typing import Any

_MOVED = frozenset({
    "AsyncRewardClient", "BestOfN", "LocalRewarder", "Reward", "RewardClient", "RewardRule",
    "RewardRuleError", "RewardServiceError", "Rewarder", "ServerPath", "best_of_n", "best_of_n_batch",
    "compare_group", "default_rule", "edit_reward_fn", "encode_image", "group_advantages",
    "item_result", "p_better", "trl_critique_func", "trl_reward_func"})


def __getattr__(name: str) -> Any:
    """Forward the reward names that lived here before the rewards package to :mod:`ieqa.rewards`, with a warning."""
    if name in _MOVED:
        warnings.warn(f"ieqa.serve.{name} moved to ieqa.rewards.{name}; import it from ieqa.rewards",
                      DeprecationWarning, stacklevel=2)
        import ieqa.rewards

        return getattr(ieqa.rewards, name)
    raise AttributeError(f"module 'ieqa.serve' has no attribute {name!r}")
