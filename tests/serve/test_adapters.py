"""The RL adapters with hand-worked values. PixelMeanScorer under the rule
``visual_quality``: reward = mean edited pixel / 51, so grey(51) -> 1, grey(102) -> 2,
grey(153) -> 3, grey(204) -> 4; content_preservation = 5 - mean |edited - source| / 51."""

from __future__ import annotations

import asyncio
import math

import httpx
import numpy as np
import pytest
import torch
from PIL import Image
from trl.trainer.utils import get_callable_name, is_async_callable

from ieqa.rewards import (
    AsyncRewardClient,
    LocalRewarder,
    RewardClient,
    best_of_n,
    best_of_n_batch,
    edit_reward_fn,
    group_advantages,
    trl_reward_func,
)

from .conftest import CritiqueLengthScorer, FakeServer, PixelMeanScorer, grey

URL = "http://127.0.0.1:8000"
NAN = float("nan")


# --------------------------------------------------------------------------- group advantages


def test_group_advantages_hand_worked() -> None:
    # a: 1, 2, 3 (mean 2, population std sqrt(2/3)); b: 10, 10 (std 0); c: one reward;
    # d: NaN and 4 (one valid reward); e: only NaN
    rewards = [1.0, 2.0, 3.0, 10.0, 10.0, 5.0, NAN, 4.0, NAN]
    groups = ["a", "a", "a", "b", "b", "c", "d", "d", "e"]
    adv, info = group_advantages(rewards, groups, eps=0.0)
    s = math.sqrt(1.5)  # 1 / sqrt(2/3)
    np.testing.assert_allclose(adv[:6], [-s, 0.0, s, 0.0, 0.0, 0.0], atol=1e-12)
    assert np.isnan(adv[6]) and adv[7] == 0.0 and np.isnan(adv[8])
    assert info == {"n_groups": 5, "n_singleton_groups": 2, "n_empty_groups": 1, "n_zero_std_groups": 1,
                    "n_nan": 2}


def test_group_advantages_eps_ddof_and_unscaled() -> None:
    rewards, groups = [1.0, 2.0, 3.0], [0, 0, 0]
    adv, _ = group_advantages(rewards, groups)  # eps = 1e-4, population std 0.8164966
    np.testing.assert_allclose(adv, [-1 / 0.8165965809, 0.0, 1 / 0.8165965809], rtol=1e-9)
    adv, _ = group_advantages(rewards, groups, eps=0.0, ddof=1)  # sample std = 1
    np.testing.assert_allclose(adv, [-1.0, 0.0, 1.0])
    adv, _ = group_advantages([2.0, 4.0, 9.0, 9.0], ["x", "x", "y", "y"], scale=False)
    np.testing.assert_allclose(adv, [-1.0, 1.0, 0.0, 0.0])


def test_group_advantages_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="one group id per reward"):
        group_advantages([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="infinite"):
        group_advantages([1.0, math.inf], ["a", "a"])
    with pytest.raises(ValueError, match="ddof"):
        group_advantages([1.0], ["a"], ddof=2)


# --------------------------------------------------------------------------- best of N


def test_best_of_n_picks_the_highest_and_reports_ties() -> None:
    candidates = [grey(102), grey(153), grey(153), grey(140), Image.fromarray(grey(51))]
    # rewards 2, 3, 3, 140/51 = 2.745..., 1
    index, pick = best_of_n(LocalRewarder(PixelMeanScorer(), rule="visual_quality"), grey(51), "brighten",
                            candidates)
    assert index == 1 and pick.index == 1 and pick.reward == 3.0
    assert pick.tied == [2]  # an exact tie, resolved to the lower position
    assert [c.reward for c in pick.group.candidates] == pytest.approx([2.0, 3.0, 3.0, 140 / 51, 1.0])
    # with a tie threshold of 0.5, candidate 3 (3 - 2.745 = 0.255) ties with the best too
    index, pick = best_of_n(LocalRewarder(PixelMeanScorer(), rule="visual_quality", tie_threshold=0.5),
                            grey(51), "brighten", candidates)
    assert index == 1 and pick.tied == [2, 3] and pick.tie_threshold == 0.5


def test_best_of_n_batch_and_all_failed(rewarder: LocalRewarder) -> None:
    picks = best_of_n_batch(rewarder, [
        {"id": "g0", "source": grey(51), "instruction": "x", "candidates": [grey(51), grey(204)]},
        {"id": "g1", "source": grey(51), "instruction": "fail", "candidates": [grey(51), grey(204)]},
        {"id": "g2", "source": grey(51), "instruction": "x", "candidates": [b"junk", grey(102)]},
    ])
    assert [i for i, _ in picks] == [1, None, 1]
    assert picks[1][1].reward is None and picks[1][1].group.ranking == []
    assert picks[2][1].group.candidates[0].error.startswith("ImageDecodeError")


def test_best_of_n_through_the_client(fake_server: FakeServer) -> None:
    with RewardClient(URL, transport=httpx.MockTransport(fake_server)) as client:
        index, pick = best_of_n(client, grey(51), "x", [grey(102), grey(204), grey(153)])
    assert index == 1 and pick.reward == 4.0 and pick.tied == []


# --------------------------------------------------------------------------- edit_reward_fn


def _tensor(img: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(img).permute(2, 0, 1).float() / 255.0  # CHW in [0, 1]


def test_reward_fn_with_a_tensor_batch_and_ref_images(rewarder: LocalRewarder) -> None:
    reward_fn = edit_reward_fn(rewarder)
    images = torch.stack([_tensor(grey(102)), _tensor(grey(204)), _tensor(grey(153))])
    images[2, 0, 5, 5] = float("nan")  # a broken output
    # Flow-GRPO's editing trainers: reward_fn(images, prompts, prompt_metadata, ref_images=..., only_strict=True)
    rewards, info = reward_fn(images, ["brighten", "fail", "brighten"], [{}, {}, {}],
                              ref_images=[Image.fromarray(grey(51))] * 3, only_strict=True)
    assert rewards.dtype == np.float64
    assert rewards[0] == 2.0 and np.isnan(rewards[1]) and np.isnan(rewards[2])
    assert info["n_failed"] == 2
    assert info["errors"][0] is None
    assert info["errors"][1] == "ValueError: asked to fail"
    assert "NaN" in info["errors"][2]
    assert info["scores"]["content_preservation"][0] == 4.0  # 5 - |102 - 51| / 51
    assert info["overall"][0] == 2.0 and not info["floored"].any()
    assert info["scorer"] == "pixel-mean" and info["reward_rule"]["rule"] == "visual_quality"


def test_reward_fn_with_numpy_pil_and_chw_inputs(rewarder: LocalRewarder) -> None:
    reward_fn = edit_reward_fn(rewarder)
    meta = [{"source": grey(51)}, {"source": grey(51)}]
    rewards, _ = reward_fn(np.stack([grey(102), grey(153)]), ["x", "x"], meta)  # (N, H, W, C) uint8
    assert rewards.tolist() == [2.0, 3.0]
    rewards, _ = reward_fn([Image.fromarray(grey(204)), Image.fromarray(grey(51))], ["x", "x"], meta)
    assert rewards.tolist() == [4.0, 1.0]
    rewards, _ = reward_fn([_tensor(grey(153)), np.moveaxis(grey(102), -1, 0)], ["x", "x"], meta)  # CHW
    assert rewards.tolist() == [3.0, 2.0]
    # metadata as columns, and the source under another key
    rewards, _ = reward_fn([grey(102)], ["x"], {"source_image": [grey(51)]})
    assert rewards.tolist() == [2.0]


def test_reward_fn_without_sources_says_where_to_put_them(rewarder: LocalRewarder) -> None:
    with pytest.raises(ValueError, match="ref_images"):
        edit_reward_fn(rewarder)([grey(102)], ["x"], [{"prompt": "x"}])
    with pytest.raises(ValueError, match="one instruction per image"):
        edit_reward_fn(rewarder)([grey(102), grey(102)], ["x"], None, ref_images=[grey(51)] * 2)


def test_reward_fn_through_the_client_matches_local(fake_server: FakeServer, rewarder: LocalRewarder) -> None:
    images = torch.stack([_tensor(grey(102)), _tensor(grey(204))])
    with RewardClient(URL, transport=httpx.MockTransport(fake_server)) as client:
        remote, _ = edit_reward_fn(client)(images, ["x", "fail"], [{"source": grey(51)}] * 2)
    local, _ = edit_reward_fn(rewarder)(images, ["x", "fail"], [{"source": grey(51)}] * 2)
    np.testing.assert_array_equal(remote, local)
    assert remote[0] == 2.0 and np.isnan(remote[1])


def test_reward_fn_then_group_advantages(rewarder: LocalRewarder) -> None:
    # two prompts, two rollouts each; one rollout fails -> its group has one valid reward
    images = [grey(102), grey(204), grey(153), grey(153)]
    prompts = ["brighten", "brighten", "fail", "darken"]
    rewards, _ = edit_reward_fn(rewarder)(images, prompts, None, ref_images=[grey(51)] * 4)
    adv, info = group_advantages(rewards, [0, 0, 1, 1], eps=0.0)
    np.testing.assert_allclose(adv[[0, 1, 3]], [-1.0, 1.0, 0.0])  # rewards 2, 4: mean 3, std 1
    assert np.isnan(adv[2]) and info["n_singleton_groups"] == 1


# --------------------------------------------------------------------------- TRL


def _trl_call(f, prompts, completions, **columns):
    """Call ``f`` the way TRL's GRPOTrainer._calculate_rewards calls a custom reward function."""
    metrics: dict[str, list[float]] = {}
    out = f(prompts=prompts, completions=completions, completion_ids=[[1, 2]] * len(completions),
            trainer_state=object(), log_extra=lambda column, values: None,
            log_metric=lambda name, value: metrics.setdefault(name, []).append(value), **columns)
    return out, metrics


def test_trl_reward_func_scores_the_completion() -> None:
    f = trl_reward_func(LocalRewarder(CritiqueLengthScorer(), rule="usefulness"), name="critique")
    assert f.__name__ == "critique" and get_callable_name(f) == "critique" and not is_async_callable(f)
    prompts = [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Critique the edit."}]}]] * 3
    completions = [[{"role": "assistant", "content": "the red square is sharp"}],  # 5 words
                   [{"role": "assistant", "content": "too short"}],                # 2 words
                   [{"role": "assistant", "content": "fine"}]]                     # its edit is unreadable
    rewards, metrics = _trl_call(f, prompts, completions, source=[grey(51)] * 3,
                                 edited=[grey(102), grey(102), b"junk"], instruction=["make it red"] * 3)
    assert rewards == [5.0, 2.0, None]
    assert metrics == {"critique/n_failed": [1.0]}


def test_trl_reward_func_with_plain_text_and_item_fn(rewarder: LocalRewarder) -> None:
    # a text policy that names a grey level; item_fn turns its answer into the edit to score
    def item_fn(prompt: str, completion: str, row: dict) -> dict:
        return {"source": row["source"], "edited": grey(int(completion)), "instruction": prompt}

    f = trl_reward_func(rewarder, item_fn=item_fn)
    rewards, _ = _trl_call(f, ["pick a grey", "pick a grey"], ["102", "204"], source=[grey(51)] * 2)
    assert rewards == [2.0, 4.0] and f.__name__ == "ieqa_reward"


def test_trl_reward_func_names_missing_columns(rewarder: LocalRewarder) -> None:
    f = trl_reward_func(rewarder)
    with pytest.raises(ValueError, match="no column.*source_column="):
        _trl_call(f, ["p"], ["c"], image=[grey(51)])


def test_trl_reward_func_async_client(fake_server: FakeServer) -> None:
    client = AsyncRewardClient(URL, transport=httpx.MockTransport(fake_server))
    f = trl_reward_func(client, completion_key=None)
    assert is_async_callable(f)
    rewards, _ = asyncio.run(_async_trl_call(f))
    assert rewards == [2.0, None]


async def _async_trl_call(f):
    out = await f(prompts=["p", "p"], completions=["a", "b"], source=[grey(51)] * 2,
                  edited=[grey(102), grey(204)], instruction=["x", "fail"])
    await f.rewarder.aclose()
    return out, None
