"""Rewards in the shapes RL libraries call them, on top of any *rewarder*: an object with
:class:`~ieqa.rewards.local.LocalRewarder`'s ``score(items, dimensions=None)`` and
``compare(groups)`` — the in-process :class:`LocalRewarder` or a
:class:`~ieqa.rewards.client.RewardClient` of ``ieqa serve``.

* :func:`edit_reward_fn` — ``reward_fn(images, prompts, metadata) -> (rewards, info)``,
  the shape of Flow-GRPO's and DanceGRPO's reward functions, for image-editing policies.
* :func:`group_advantages` — GRPO's group-relative normalisation of rewards.
* :func:`best_of_n` / :func:`best_of_n_batch` — keep the best of K candidate edits.
* :func:`trl_reward_func` — a reward function for TRL's ``GRPOTrainer(reward_funcs=...)``,
  for text / VLM policies.

**Failed items.** A rewarder never makes a number up for an item it could not score (an
unreadable image, a scorer error, a rule that cannot apply): :func:`edit_reward_fn` gives
it ``NaN`` (and counts it in ``info["n_failed"]``), :func:`trl_reward_func` gives ``None``
(which TRL turns into NaN and leaves out of its sum over reward functions). An RL loop
should leave such samples out of the update: :func:`group_advantages` keeps their
advantage NaN and computes the group statistics from the other members, so
``np.nan_to_num(advantages, nan=0.0)`` (zero advantage, no policy-gradient term) or a
mask on ``np.isnan`` drops them. Do not replace a NaN reward by 0 before the normalisation:
that is a made-up score that shifts the whole group's mean.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from ieqa.rewards.rule import RewardRule
from ieqa.rewards.schema import CompareResponse, GroupResult, ScoreResponse
from ieqa.scorers.base import ScoreResult
from ieqa.scorers.critique import CRITIQUE_DIMENSIONS

__all__ = ["BestOfN", "EditRewardFn", "Rewarder", "TrlCritiqueFunction", "TrlRewardFunction", "best_of_n",
           "best_of_n_batch", "edit_reward_fn", "group_advantages", "to_image_array", "trl_critique_func",
           "trl_reward_func"]

#: metadata keys :func:`edit_reward_fn` looks in for the source image, in order
SOURCE_KEYS: tuple[str, ...] = ("source", "source_image", "ref_image", "input_image")
# keyword arguments TRL adds to every reward call that are not dataset columns
_TRL_NON_COLUMNS = frozenset({"trainer_state", "log_extra", "log_metric", "environments", "completion_ids"})


@runtime_checkable
class Rewarder(Protocol):
    """Anything with :class:`~ieqa.rewards.local.LocalRewarder`'s calls."""

    def score(self, items: Sequence[Any], dimensions: Sequence[str] | None = None) -> ScoreResponse: ...

    def compare(self, groups: Sequence[Mapping[str, Any]]) -> CompareResponse: ...


def _check_sync(rewarder: Any, what: str) -> None:
    if not callable(getattr(rewarder, "score", None)) or not callable(getattr(rewarder, "compare", None)):
        raise TypeError(f"{what} needs a rewarder with score() and compare() (LocalRewarder or "
                        f"RewardClient), got {type(rewarder).__name__}")
    if inspect.iscoroutinefunction(rewarder.score):
        raise TypeError(f"{what} calls the rewarder synchronously; pass a RewardClient or LocalRewarder, "
                        "not an AsyncRewardClient")


# --------------------------------------------------------------------------- images


def to_image_array(image: Any) -> np.ndarray | Image.Image | Any:
    """One image as a policy produces it, made into a reference the rewarder takes.

    * a ``torch.Tensor``: CHW (or HWC) with floats in [0, 1] -> ``(x * 255).round()``
      clamped to 0-255 as an HxWxC ``uint8`` array (Flow-GRPO's conversion); a ``uint8``
      tensor is kept as it is; one channel becomes HxW;
    * a numpy array in CHW layout (first axis 1, 3 or 4, last axis not) -> HWC; other
      arrays (HxW, HxWxC; uint8, uint16, bool or floats in [0, 1]) unchanged;
    * anything else (a PIL image, a path, bytes): unchanged.

    Raises:
        ValueError: a tensor that is not one image (2 or 3 dimensions), or that holds NaN
            or infinite values.
    """
    if type(image).__module__.startswith("torch"):
        import torch

        if isinstance(image, torch.Tensor):
            t = image.detach().cpu()
            if t.ndim not in (2, 3):
                raise ValueError(f"a tensor image must be CHW, HWC or HW, got shape {tuple(t.shape)}; "
                                 "index a batch (images[i]) before passing it")
            if t.ndim == 3 and t.shape[0] in (1, 3, 4) and t.shape[-1] not in (1, 3, 4):
                t = t.permute(1, 2, 0)
            if t.dtype != torch.uint8:
                t = t.float()
                if not torch.isfinite(t).all():
                    raise ValueError("the tensor image holds NaN or infinite values")
                t = (t * 255).round().clamp(0, 255).to(torch.uint8)
            arr = t.numpy()
            return arr[..., 0] if arr.ndim == 3 and arr.shape[-1] == 1 else arr
    if isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[0] in (1, 3, 4) \
            and image.shape[-1] not in (1, 3, 4):
        arr = np.moveaxis(image, 0, -1)
        return arr[..., 0] if arr.shape[-1] == 1 else arr
    return image


def _batch(images: Any) -> list[Any]:
    """A batch (a 4-D tensor or array, or a sequence) as a list of single images."""
    if type(images).__module__.startswith("torch") or isinstance(images, np.ndarray):
        if images.ndim != 4:
            raise ValueError(f"a batch tensor / array must have 4 dimensions, (N, C, H, W) or (N, H, W, C), "
                             f"got shape {tuple(images.shape)}; pass a list for a single image ([image])")
        return [images[i] for i in range(images.shape[0])]
    if isinstance(images, (Image.Image, str, bytes)):
        raise ValueError("images must be a batch (a list, or an N-image tensor / array), not one image")
    return list(images)


# --------------------------------------------------------------------------- Flow-GRPO / DanceGRPO


class EditRewardFn:
    """The callable :func:`edit_reward_fn` returns (see there)."""

    def __init__(self, rewarder: Rewarder, *, source_keys: Sequence[str] = SOURCE_KEYS,
                 dimensions: Sequence[str] | None = None) -> None:
        _check_sync(rewarder, "edit_reward_fn")
        if isinstance(source_keys, str):
            source_keys = (source_keys,)
        self.rewarder = rewarder
        self.source_keys = tuple(source_keys)
        self.dimensions = None if dimensions is None else list(dimensions)
        self.__name__ = "ieqa_edit_reward"

    def _source(self, metadata: Any, i: int, n: int) -> Any:
        if isinstance(metadata, Mapping):  # column-major: {"source": [...], ...}
            for key in self.source_keys:
                col = metadata.get(key)
                if col is not None and not isinstance(col, (str, bytes)) and len(col) == n:
                    return col[i]
            found = list(metadata)
        else:
            row = metadata[i] if metadata is not None and len(metadata) == n else None
            if isinstance(row, Mapping):
                for key in self.source_keys:
                    if row.get(key) is not None:
                        return row[key]
            found = list(row) if isinstance(row, Mapping) else type(row).__name__
        raise ValueError(
            f"no source image for sample {i}: metadata has {found}, none of the keys "
            f"{list(self.source_keys)}; pass the sources as ref_images=[...] (Flow-GRPO's editing "
            "trainers do), or put them in each sample's metadata under 'source' (or choose the "
            "key with edit_reward_fn(..., source_keys=...))")

    def __call__(self, images: Any, prompts: Sequence[str], metadata: Any = None,
                 ref_images: Any = None, **_ignored: Any) -> tuple[np.ndarray, dict[str, Any]]:
        edited = _batch(images)
        n = len(edited)
        if isinstance(prompts, str) or len(prompts) != n:
            raise ValueError(f"got {n} images and {1 if isinstance(prompts, str) else len(prompts)} "
                             "prompts; pass one instruction per image")
        if ref_images is not None:
            sources = _batch(ref_images)
            if len(sources) != n:
                raise ValueError(f"got {n} images and {len(sources)} ref_images; pass one source per image")
        else:
            sources = [self._source(metadata, i, n) for i in range(n)]
        items: list[dict[str, Any]] = []
        sent: list[int] = []
        errors: list[str | None] = [None] * n
        for i in range(n):
            try:
                src, out = to_image_array(sources[i]), to_image_array(edited[i])
            except ValueError as exc:
                errors[i] = f"not scored: {exc}"
                continue
            items.append({"id": str(i), "source": src, "edited": out, "instruction": str(prompts[i])})
            sent.append(i)
        response = self.rewarder.score(items, self.dimensions) if items else None
        rewards = np.full(n, np.nan, dtype=np.float64)
        overall = np.full(n, np.nan, dtype=np.float64)
        floored = np.zeros(n, dtype=bool)
        flags: list[list[str]] = [[] for _ in range(n)]
        per_dim: dict[str, np.ndarray] = {}
        if response is not None:
            for i, res in zip(sent, response.results, strict=True):
                if res.reward is not None:
                    rewards[i] = res.reward
                if res.overall is not None:
                    overall[i] = res.overall
                floored[i] = res.floored
                flags[i] = list(res.flags)
                errors[i] = res.error if res.reward is None else None
                if res.reward is None and errors[i] is None:
                    errors[i] = "no reward"
                for dim, value in res.scores.items():
                    per_dim.setdefault(dim, np.full(n, np.nan, dtype=np.float64))[i] = value
        info = {"scores": per_dim, "overall": overall, "floored": floored, "flags": flags, "errors": errors,
                "n_failed": int(np.isnan(rewards).sum()),
                "scorer": response.scorer if response is not None else None,
                "reward_rule": response.reward_rule if response is not None else None}
        return rewards, info


def edit_reward_fn(rewarder: Rewarder, *, source_keys: Sequence[str] | str = SOURCE_KEYS,
                   dimensions: Sequence[str] | None = None) -> EditRewardFn:
    """A reward function for image-editing RL, in Flow-GRPO / DanceGRPO's shape.

    The returned callable is ``reward_fn(images, prompts, metadata, ref_images=None,
    **ignored) -> (rewards, info)``:

    * ``images``: the policy's edited images — a tensor ``(N, C, H, W)`` with floats in
      [0, 1] (what Flow-GRPO's pipelines return), a numpy array ``(N, H, W, C)``, or a list
      of PIL images, HWC ``uint8`` arrays or CHW tensors (see :func:`to_image_array`);
    * ``prompts``: the N editing instructions;
    * the source images: ``ref_images`` when given (Flow-GRPO's Kontext / Qwen-Image-Edit
      trainers call ``reward_fn(images, prompts, prompt_metadata, ref_images=input_images,
      only_strict=True)``), else each sample's ``metadata[i]`` dict under the first of
      ``source_keys`` present (``metadata`` may also be a dict of columns);
    * other keywords (Flow-GRPO's ``only_strict``) are accepted and ignored.

    Returns:
        ``rewards``: float64 array of N rewards under the rewarder's reward rule (units:
        the scorer's scale, see ``/v1/info``), ``NaN`` for an item that could not be scored;
        ``info``: ``scores`` (dimension -> N-array, NaN where missing), ``overall``
        (N-array), ``floored`` (bool N-array), ``flags`` and ``errors`` (lists of N),
        ``n_failed``, ``scorer`` and ``reward_rule``.

    Raises:
        ValueError: lengths that disagree, or a sample without a source image.
        TypeError: a rewarder without ``score``, or an async one.

    See the module docstring for how an RL loop should treat NaN rewards.
    """
    return EditRewardFn(rewarder, source_keys=source_keys, dimensions=dimensions)


# --------------------------------------------------------------------------- GRPO advantages


def group_advantages(rewards: Sequence[float] | np.ndarray, group_ids: Sequence[Hashable], *,
                     eps: float = 1e-4, scale: bool = True, ddof: int = 0) -> tuple[np.ndarray, dict[str, int]]:
    """GRPO's group-relative advantages: ``(r - mean_g) / (std_g + eps)`` within each group.

    A group is all samples sharing a ``group_id`` (in GRPO: the K rollouts of one prompt /
    one source + instruction). NaN rewards (failed items) are left out of their group's
    mean and std and keep a NaN advantage; a group with a single valid reward has no
    relative signal and gets advantage 0 (counted in ``n_singleton_groups``).

    Args:
        rewards: N rewards (NaN for failed items).
        group_ids: N hashable group labels (prompt strings, ints, ...).
        eps: added to the std (>= 0), so a group of equal rewards gets 0, not 0/0.
        scale: divide by ``std_g + eps`` (GRPO); ``False`` only subtracts the mean
            (Dr. GRPO's unscaled form).
        ddof: delta degrees of freedom of the std: 0 (population std; Flow-GRPO's
            ``np.std``) or 1 (sample std; TRL's and DanceGRPO's ``torch.std``).

    Returns:
        ``(advantages, info)``: a float64 N-array, and counts ``n_groups``,
        ``n_singleton_groups`` (one valid reward: advantage 0), ``n_empty_groups`` (no valid
        reward), ``n_zero_std_groups`` (two or more equal rewards: advantages 0, no
        learning signal) and ``n_nan`` (NaN rewards).

    Examples:
        >>> adv, info = group_advantages([1.0, 3.0, 5.0, 2.0], ["a", "a", "b", "b"])
        >>> adv.round(4).tolist(), info["n_groups"]
        ([-0.9999, 0.9999, 0.9999, -0.9999], 2)
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"rewards must be one-dimensional, got shape {r.shape}")
    if len(group_ids) != len(r):
        raise ValueError(f"got {len(r)} rewards and {len(group_ids)} group ids; pass one group id per reward")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std), got {ddof!r}")
    if np.isinf(r).any():
        raise ValueError("rewards hold infinite values; a reward must be finite, or NaN for a failed item")
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    adv = np.full(len(r), np.nan, dtype=np.float64)
    info = {"n_groups": len(members), "n_singleton_groups": 0, "n_empty_groups": 0,
            "n_zero_std_groups": 0, "n_nan": int(np.isnan(r).sum())}
    for idx in members.values():
        idx_arr = np.asarray(idx)
        valid = idx_arr[~np.isnan(r[idx_arr])]
        if len(valid) == 0:
            info["n_empty_groups"] += 1
            continue
        if len(valid) == 1:
            info["n_singleton_groups"] += 1
            adv[valid] = 0.0
            continue
        values = r[valid]
        centred = values - values.mean()
        std = float(values.std(ddof=ddof))
        if std == 0.0:  # all equal: no relative signal (and no 0/0 when eps is 0)
            info["n_zero_std_groups"] += 1
            adv[valid] = 0.0
        else:
            adv[valid] = centred / (std + eps) if scale else centred
    return adv, info


# --------------------------------------------------------------------------- best of N


@dataclass(frozen=True)
class BestOfN:
    """The pick among one group's candidates.

    Attributes:
        index: the best candidate's position in the order of
            :func:`ieqa.rewards.rule.order_key` (highest reward; among exactly equal
            rewards the lowest sigma, then the lowest position), ``None`` when every
            candidate failed.
        reward: its reward (``None`` when ``index`` is).
        tied: the other candidates whose reward is within ``tie_threshold`` of the best
            (exact ties included), ascending: the pick among them is the rule's, not the
            scorer's.
        tie_threshold: the rewarder's tie threshold (reward units, >= 0).
        group: the group's :class:`~ieqa.rewards.schema.GroupResult` (every candidate's
            scores and reward, the preference matrix, the ranking).
        scorer: the scorer's name.
        reward_rule: the reward rule's description.
    """

    index: int | None
    reward: float | None
    tied: list[int]
    tie_threshold: float
    group: GroupResult
    scorer: str
    reward_rule: dict[str, Any] = field(default_factory=dict)


def _pick(group: GroupResult, response: CompareResponse) -> BestOfN:
    rewards = [c.reward for c in group.candidates]
    valid = [i for i, r in enumerate(rewards) if r is not None]
    if not valid:
        return BestOfN(None, None, [], response.tie_threshold, group, response.scorer, response.reward_rule)
    best = group.ranking[0]  # the one best-first order (ieqa.rewards.rule.order_key)
    top = rewards[best]
    assert top is not None
    tied = [i for i in valid if i != best and abs(top - rewards[i]) <= response.tie_threshold]  # type: ignore[operator]
    return BestOfN(best, top, tied, response.tie_threshold, group, response.scorer, response.reward_rule)


def best_of_n(rewarder: Rewarder, source: Any, instruction: str,
              candidates: Sequence[Any]) -> tuple[int | None, BestOfN]:
    """The best of K >= 2 candidate edits of one source under one instruction.

    Args:
        rewarder: a :class:`LocalRewarder` or :class:`RewardClient`.
        source: the source image (any reference the rewarder takes).
        instruction: the editing instruction.
        candidates: the K candidate edited images.

    Returns:
        ``(best_index, result)``: the position of the candidate with the highest reward
        (exact ties: the lower sigma, then the lowest position; ``result.tied`` lists the candidates within the
        rewarder's tie threshold of it), ``None`` when every candidate failed; ``result`` is
        a :class:`BestOfN` with every candidate's scores.
    """
    return best_of_n_batch(rewarder, [{"source": source, "instruction": instruction,
                                       "candidates": list(candidates)}])[0]


def best_of_n_batch(rewarder: Rewarder, groups: Sequence[Mapping[str, Any]]) -> list[tuple[int | None, BestOfN]]:
    """:func:`best_of_n` for many groups in one ``compare`` call.

    Args:
        groups: dicts with ``source``, ``instruction``, ``candidates`` and optionally ``id``.

    Returns:
        One ``(best_index, BestOfN)`` per group, in order.
    """
    _check_sync(rewarder, "best_of_n")
    response = rewarder.compare(groups)
    if len(response.results) != len(groups):
        raise RuntimeError(f"the rewarder answered {len(response.results)} groups for {len(groups)}")
    picks = [_pick(g, response) for g in response.results]
    return [(p.index, p) for p in picks]


# --------------------------------------------------------------------------- TRL


def _text(message: Any) -> str:
    """The text of a TRL prompt or completion: a string, or a conversation (list of
    ``{"role", "content"}``; content a string or a list of ``{"type": "text", "text"}``
    blocks), whose last message is taken."""
    if isinstance(message, str):
        return message
    if isinstance(message, Sequence) and message and isinstance(message[-1], Mapping):
        content = message[-1].get("content", "")
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    raise TypeError(f"cannot read text from a {type(message).__name__}; TRL passes strings or "
                    "conversations (lists of {'role', 'content'} dicts)")


class TrlRewardFunction:
    """The callable :func:`trl_reward_func` returns: ``f(prompts, completions, **kwargs)
    -> list[float | None]``, named by ``__name__`` (TRL logs ``rewards/<name>``)."""

    _method, _factory = "score", "trl_reward_func"

    def __init__(self, rewarder: Rewarder, *, source_column: str = "source", edited_column: str = "edited",
                 instruction_column: str | None = "instruction", completion_key: str | None = "completion",
                 item_fn: Callable[[str, str, dict[str, Any]], Mapping[str, Any]] | None = None,
                 dimensions: Sequence[str] | None = None, name: str = "ieqa_reward") -> None:
        if not callable(getattr(rewarder, self._method, None)):
            raise TypeError(f"{self._factory} needs a rewarder with {self._method}() (RewardClient or "
                            f"LocalRewarder), got {type(rewarder).__name__}")
        if not name or not name.isidentifier():
            raise ValueError(f"name must be a Python identifier (TRL logs rewards/<name>), got {name!r}")
        self.rewarder = rewarder
        self.source_column, self.edited_column = source_column, edited_column
        self.instruction_column, self.completion_key = instruction_column, completion_key
        self.item_fn = item_fn
        self.dimensions = None if dimensions is None else list(dimensions)
        self.__name__ = name

    def _items(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: Mapping[str, Any]) -> list[dict]:
        n = len(completions)
        if len(prompts) != n:
            raise ValueError(f"got {len(prompts)} prompts and {n} completions; TRL passes one prompt per completion")
        columns = {k: v for k, v in kwargs.items() if k not in _TRL_NON_COLUMNS
                   and isinstance(v, Sequence) and not isinstance(v, (str, bytes)) and len(v) == n}
        items = []
        for i in range(n):
            row = {k: v[i] for k, v in columns.items()}
            prompt, completion = _text(prompts[i]), _text(completions[i])
            if self.item_fn is not None:
                item = dict(self.item_fn(prompt, completion, row))
            else:
                missing = [c for c in (self.source_column, self.edited_column) if c not in row]
                if missing:
                    raise ValueError(f"the dataset has no column(s) {missing} (columns: {sorted(columns)}); "
                                     "pass source_column= / edited_column=, or item_fn= to build the items")
                instruction = row.get(self.instruction_column) if self.instruction_column else None
                item = {"source": row[self.source_column], "edited": row[self.edited_column],
                        "instruction": instruction if instruction is not None else prompt}
                if self.completion_key is not None:
                    item["meta"] = {self.completion_key: completion, "prompt": prompt}
            item.setdefault("id", str(i))
            items.append(item)
        return items

    def _finish(self, response: ScoreResponse, kwargs: Mapping[str, Any]) -> list[float | None]:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            log_metric(f"{self.__name__}/n_failed", float(response.n_failed))
        return [r.reward for r in response.results]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        return self._finish(self.rewarder.score(self._items(prompts, completions, kwargs), self.dimensions), kwargs)


class AsyncTrlRewardFunction(TrlRewardFunction):
    """:class:`TrlRewardFunction` on an :class:`~ieqa.rewards.client.AsyncRewardClient`:
    TRL awaits it (it runs async reward functions concurrently)."""

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],  # type: ignore[override]
                       **kwargs: Any) -> list[float | None]:
        response = await self.rewarder.score(self._items(prompts, completions, kwargs), self.dimensions)
        return self._finish(response, kwargs)


class TrlCritiqueFunction(TrlRewardFunction):
    """The callable :func:`trl_critique_func` returns: each completion judged as a critique
    through ``rewarder.critique`` (``POST /v1/critique`` on a :class:`RewardClient`)."""

    _method, _factory = "critique", "trl_critique_func"

    def __init__(self, rewarder: Any, *, rule: str | None = None, **kwargs: Any) -> None:
        super().__init__(rewarder, **kwargs)
        self.rule = RewardRule(rule) if rule is not None else None

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        items = self._items(prompts, completions, kwargs)
        critiques = []
        for item in items:
            text = (item.get("meta") or {}).get(self.completion_key or "completion")
            critiques.append({"id": item["id"], "source": item["source"], "edited": item["edited"],
                              "instruction": item.get("instruction") or "", "critique": text or " "})
        response = self.rewarder.critique(critiques)
        rewards: list[float | None] = []
        for r in response.results:
            if r.error is not None or self.rule is None:
                rewards.append(r.reward if r.error is None else None)
                continue
            scores = {d: float(getattr(r, d)) for d in CRITIQUE_DIMENSIONS}
            rewards.append(self.rule(ScoreResult(id=r.id, scores=scores, flags=list(r.flags))).reward)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            log_metric(f"{self.__name__}/n_failed", float(sum(x is None for x in rewards)))
        return rewards


def trl_critique_func(rewarder: Any, *, rule: str | None = None, instruction_column: str | None = "instruction",
                      item_fn: Callable[[str, str, dict[str, Any]], Mapping[str, Any]] | None = None,
                      source_column: str = "source", edited_column: str = "edited",
                      name: str = "critique_reward") -> TrlCritiqueFunction:
    """A reward function for TRL's ``GRPOTrainer`` that judges each completion as a critique
    of the edit in its row (ReasonEdit stage 2 with RE-Reward at a URL).

    Each completion becomes one critique item (``source``, ``edited``, ``instruction`` from
    the row as in :func:`trl_reward_func`, the completion as ``critique``), judged by
    ``rewarder.critique`` — :meth:`RewardClient.critique` sends them to ``POST /v1/critique``
    of an ``ieqa serve --scorer critique`` server; :meth:`LocalRewarder.critique` judges
    in-process. The reward is the server's weighted reward, or, with ``rule`` (a reward-rule
    expression over ``logicality``, ``accuracy`` and ``usefulness`` such as
    ``"0.25*logicality + 0.5*accuracy + 0.25*usefulness"``), that rule applied to the three
    returned scores, exactly as in-process. An unjudged critique is ``None`` (TRL: NaN) and
    counted in ``<name>/n_failed``.
    """
    return TrlCritiqueFunction(rewarder, rule=rule, source_column=source_column, edited_column=edited_column,
                               instruction_column=instruction_column, completion_key="completion",
                               item_fn=item_fn, name=name)


def trl_reward_func(rewarder: Rewarder, *, source_column: str = "source", edited_column: str = "edited",
                    instruction_column: str | None = "instruction", completion_key: str | None = "completion",
                    item_fn: Callable[[str, str, dict[str, Any]], Mapping[str, Any]] | None = None,
                    dimensions: Sequence[str] | None = None, name: str = "ieqa_reward") -> TrlRewardFunction:
    """A reward function for TRL's ``GRPOTrainer(reward_funcs=[...])``.

    TRL calls it as ``f(prompts=..., completions=..., completion_ids=..., trainer_state=...,
    log_extra=..., log_metric=..., **columns)``, the dataset's other columns as lists of
    one value per completion; it returns one reward per completion (units: the scorer's
    scale) and ``None`` for a completion that could not be scored (TRL reads it as NaN and
    leaves it out of the sum over reward functions). It logs ``<name>/n_failed`` through
    TRL's ``log_metric``.

    Each completion becomes one score item: ``source`` and ``edited`` from the dataset
    columns ``source_column`` / ``edited_column`` (images any rewarder reference takes),
    ``instruction`` from ``instruction_column`` (or the prompt's text), and the completion's
    text in ``meta[completion_key]`` (with the prompt in ``meta["prompt"]``) for scorers that
    judge text written about the edit, such as a critique scorer. Prompts and completions
    may be strings or conversations. ``item_fn(prompt_text, completion_text, row) -> item``
    replaces this mapping.

    ``meta`` is read in-process only (:class:`LocalRewarder`): API v1 does not carry it, so
    a :class:`RewardClient` refuses such items rather than score without the completion.

    Returns:
        A :class:`TrlRewardFunction` with ``__name__ == name`` (an
        :class:`AsyncTrlRewardFunction`, awaited by TRL, when the rewarder's ``score`` is
        async).
    """
    cls = AsyncTrlRewardFunction if inspect.iscoroutinefunction(getattr(rewarder, "score", None)) \
        else TrlRewardFunction
    return cls(rewarder, source_column=source_column, edited_column=edited_column,
               instruction_column=instruction_column, completion_key=completion_key, item_fn=item_fn,
               dimensions=dimensions, name=name)
