"""The reward names that lived in ieqa.serve before ieqa.rewards are forwarded with a
DeprecationWarning that names the new home; nothing else is."""

from __future__ import annotations

import pytest

import ieqa.rewards
import ieqa.serve


@pytest.mark.parametrize("name", ["LocalRewarder", "RewardRule", "p_better", "trl_reward_func"])
def test_old_names_forward_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"ieqa.rewards.{name}"):
        assert getattr(ieqa.serve, name) is getattr(ieqa.rewards, name)


def test_other_names_are_not_forwarded() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        ieqa.serve.nosuch  # noqa: B018
