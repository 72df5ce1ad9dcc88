"""What a reward request computes, shared by ``ieqa serve``, :class:`LocalRewarder` and
the RL adapters: score results -> :class:`~ieqa.rewards.schema.ItemResult` under a
:class:`~ieqa.rewards.rule.RewardRule`, and a group's candidates -> preference
probabilities (:func:`compare_group`).

:class:`LocalRewarder` is the in-process twin of :class:`ieqa.rewards.RewardClient`: the same
``score`` / ``compare`` calls returning the same response models, without a server (items
may then hold any image reference :func:`ieqa.data.images.load_image` accepts: paths, PIL
images, arrays, encoded bytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.special import expit

from ieqa.data.dimensions import canonical_dimension
from ieqa.rewards.rule import Reward, RewardRule, order_key
from ieqa.rewards.schema import (
    CompareResponse,
    CritiqueResponse,
    CritiqueResult,
    GroupResult,
    ItemResult,
    ScoreResponse,
)
from ieqa.scorers.base import SampleLike, Scorer, ScoreResult
from ieqa.scorers.critique import CRITIQUE_DIMENSIONS

__all__ = ["LocalRewarder", "compare_group", "compare_response", "critique_capable",
           "critique_item", "critique_response", "critique_weights", "default_rule",
           "group_items", "item_result", "p_better", "score_response"]


_SQRT_2PI = math.sqrt(2 * math.pi)


def p_better(delta: float, sigma: float | None = None) -> float:
    """P(first is better) for a reward difference ``delta`` (first minus second).

    With ``sigma`` (the standard deviation of the difference, >= 0): ``E[sigmoid(z)]`` for
    ``z ~ N(delta, sigma²)`` (EditReward / HPSv3, the paper's Eq. 4 probability), integrated
    adaptively over the standard normal with a breakpoint where ``z = 0`` (agrees with a
    30-digit mpmath integral to 1e-15 for |delta| <= 20, 0.01 <= sigma <= 50). Without
    (or with sigma 0): ``sigmoid(delta)`` (Bradley-Terry). Returns a probability in [0, 1].
    """
    if sigma is not None and (sigma < 0 or not math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma}")
    if not sigma:
        return float(expit(delta))
    from scipy import integrate

    def integrand(x: float) -> float:
        return float(expit(delta + sigma * x)) * math.exp(-0.5 * x * x) / _SQRT_2PI

    step = -delta / sigma
    points = [step] if -40.0 < step < 40.0 else None
    value = integrate.quad(integrand, -40.0, 40.0, points=points, limit=200,
                           epsabs=1e-12, epsrel=1e-10)[0]
    return float(min(1.0, max(0.0, value)))


def item_result(result: ScoreResult, reward: Reward,
                dimensions: Sequence[str] | None = None) -> ItemResult:
    """The API's view of one scored item.

    Args:
        result: the scorer's result.
        reward: ``rule(result)``.
        dimensions: keep only these dimensions' scores and σ (canonical names or aliases);
            ``None`` keeps all.
    """
    scores, sigma, unavailable = result.scores, result.sigma, result.unavailable
    if dimensions is not None:
        keep = {canonical_dimension(d) for d in dimensions}
        scores = {d: v for d, v in scores.items() if d in keep}
        sigma = {d: v for d, v in sigma.items() if d in keep}
        unavailable = {d: v for d, v in unavailable.items() if d in keep}
    return ItemResult(id=result.id, scores=scores, sigma=sigma or None, unavailable=unavailable,
                      overall=reward.overall, reward=reward.reward, floored=reward.floored,
                      flags=list(result.flags), error=reward.error)


def compare_group(group_id: str, candidates: Sequence[ItemResult], sigmas: Sequence[float | None],
                  tie_threshold: float = 0.0) -> GroupResult:
    """Preferences among one group's scored candidates (see :class:`GroupResult`).

    Args:
        group_id: echoed back.
        candidates: the candidates' item results, in request order.
        sigmas: each candidate's reward σ (``None`` when the scorer has none; 0 for a
            floored candidate, whose reward is a constant).
        tie_threshold: ``|r_i - r_j| <= tie_threshold`` is a tie (>= 0, reward units).
    """
    k = len(candidates)
    rewards = [c.reward for c in candidates]
    matrix: list[list[float | None]] = [[None] * k for _ in range(k)]
    ties: list[list[int]] = []
    for i in range(k):
        for j in range(k):
            ri, rj = rewards[i], rewards[j]
            if ri is None or rj is None:
                continue
            if i == j:
                matrix[i][j] = 0.5
                continue
            si, sj = sigmas[i], sigmas[j]
            sigma = math.hypot(si, sj) if si is not None and sj is not None else None
            matrix[i][j] = p_better(ri - rj, sigma)
            if i < j and abs(ri - rj) <= tie_threshold:
                ties.append([i, j])
    ranking = sorted((i for i in range(k) if rewards[i] is not None),
                     key=lambda i: order_key(rewards[i], sigmas[i], i))
    return GroupResult(id=group_id, candidates=list(candidates), preference=matrix,
                       ranking=ranking, ties=ties)


def _reward_sigma(reward: Reward) -> float | None:
    if reward.floored:
        return 0.0
    return reward.sigma


def score_response(results: Sequence[ScoreResult], rewards: Sequence[Reward], *, scorer: str,
                   rule: RewardRule, dimensions: Sequence[str] | None = None) -> ScoreResponse:
    """The :class:`ScoreResponse` of scored items (one result and reward each, in order)."""
    out = [item_result(r, w, dimensions) for r, w in zip(results, rewards, strict=True)]
    return ScoreResponse(results=out, n_ok=sum(o.reward is not None for o in out),
                         n_failed=sum(o.reward is None for o in out), scorer=scorer,
                         reward_rule=rule.describe())


def group_items(group_id: str, source: Any, instruction: str,
                candidates: Sequence[Any]) -> list[dict[str, Any]]:
    """One group's candidates as score items: ids ``"<group_id>/<k>"``, the group's source,
    instruction and ``group_id`` (so a batch keeps them together)."""
    return [{"id": f"{group_id}/{c}", "source": source, "edited": cand, "instruction": instruction,
             "group_id": group_id} for c, cand in enumerate(candidates)]


def compare_response(spans: Sequence[tuple[str, int, int]], results: Sequence[ScoreResult],
                     rewards: Sequence[Reward], *, scorer: str, rule: RewardRule,
                     tie_threshold: float) -> CompareResponse:
    """The :class:`CompareResponse` of scored groups.

    Args:
        spans: ``(group_id, start, stop)`` of each group's candidates in ``results``.
        results, rewards: every candidate's score result and reward, groups one after the other.
        scorer: the scorer's name; rule: the reward rule;
        tie_threshold: see :func:`compare_group`.
    """
    out = []
    for gid, start, stop in spans:
        items = [item_result(r, w) for r, w in zip(results[start:stop], rewards[start:stop], strict=True)]
        out.append(compare_group(gid, items, [_reward_sigma(w) for w in rewards[start:stop]],
                                 tie_threshold))
    return CompareResponse(results=out, scorer=scorer, reward_rule=rule.describe(),
                           tie_threshold=tie_threshold)


def critique_capable(scorer: Scorer) -> str | None:
    """None when ``scorer`` judges critiques (it outputs logicality, accuracy and
    usefulness), else why it cannot (the message of a refused ``/v1/critique``)."""
    if all(d in scorer.dimensions for d in CRITIQUE_DIMENSIONS):
        return None
    return (f"the scorer {scorer.name!r} does not judge critiques (it outputs "
            f"{', '.join(scorer.dimensions)}); serve a critique scorer: `ieqa serve --scorer "
            "critique --checkpoint DIR` with a checkpoint of the re-reward recipe")


def critique_weights(scorer: Scorer) -> dict[str, float]:
    """The reward weights of a critique scorer (its ``weights``, else the defaults)."""
    from ieqa.scorers.critique import DEFAULT_WEIGHTS

    return dict(getattr(scorer, "weights", None) or DEFAULT_WEIGHTS)


def critique_item(ident: str, source: Any, edited: Any, instruction: str,
                  critique: str) -> dict[str, Any]:
    """A score item carrying its critique in ``meta["critique"]`` (the critique scorer's
    convention)."""
    return {"id": ident, "source": source, "edited": edited, "instruction": instruction,
            "meta": {"critique": critique}}


def critique_response(results: Sequence[ScoreResult], *, scorer: str,
                      weights: Mapping[str, float]) -> CritiqueResponse:
    """The :class:`CritiqueResponse` of judged critiques: each result's three scores and
    their weighted reward (an item missing one of them is an error)."""
    from ieqa.scorers.critique import weighted_reward

    out = []
    for r in results:
        error, reward = r.error, None
        if error is None:
            try:
                reward = weighted_reward(r.scores, weights)
            except Exception as exc:  # noqa: BLE001 - that item's error, by contract
                error = str(exc)
        ok = error is None
        out.append(CritiqueResult(id=r.id, **{d: r.scores.get(d) if ok else None for d in CRITIQUE_DIMENSIONS},
                                  reward=reward, flags=list(r.flags), error=error))
    n_ok = sum(o.error is None for o in out)
    return CritiqueResponse(results=out, n_ok=n_ok, n_failed=len(out) - n_ok, scorer=scorer,
                            weights=dict(weights))


class LocalRewarder:
    """Rewards in-process, with the calls and answers of :class:`ieqa.rewards.RewardClient`.

    Args:
        scorer: a scorer instance, or a registry name built with ``scorer_options``.
        rule: the reward rule (a :class:`RewardRule` or its rule string; default
            ``"overall"`` when the scorer reports ``overall``, else ``"mean"``).
        tie_threshold: reward difference at or below which two candidates tie (>= 0).
        scorer_options: keyword arguments for :func:`ieqa.create_scorer` when ``scorer`` is
            a name.

    Examples:
        >>> from ieqa.rewards import LocalRewarder
        >>> rewarder = LocalRewarder("classic", rule="mean")
        >>> rewarder.rule.formula()
        'mean over dimensions'
    """

    def __init__(self, scorer: Scorer | str, rule: RewardRule | str | None = None, *,
                 tie_threshold: float = 0.0, **scorer_options: Any) -> None:
        if isinstance(scorer, str):
            from ieqa.scorers.catalog import create_scorer

            scorer = create_scorer(scorer, **scorer_options)
        elif scorer_options:
            raise TypeError("scorer options are only accepted with a scorer name, not an instance")
        self.scorer = scorer
        self.rule = default_rule(scorer) if rule is None else (
            rule if isinstance(rule, RewardRule) else RewardRule(rule))
        if not math.isfinite(tie_threshold) or tie_threshold < 0:
            raise ValueError(f"tie_threshold must be a finite number >= 0, got {tie_threshold}")
        self.tie_threshold = float(tie_threshold)

    def _score(self, items: Sequence[SampleLike]) -> tuple[list[ScoreResult], list[Reward]]:
        results = self.scorer.score(items)
        return results, self.rule.rewards(results)

    def score(self, items: Sequence[SampleLike],
              dimensions: Sequence[str] | None = None) -> ScoreResponse:
        """Score edits (EditSamples, ``(source, edited[, instruction])`` tuples or dicts).

        Returns the :class:`ScoreResponse` the server would: one result per item, in order;
        a failed item has ``error`` set and the others are unaffected.
        """
        results, rewards = self._score(items)
        return score_response(results, rewards, scorer=self.scorer.name, rule=self.rule,
                              dimensions=dimensions)

    def critique(self, items: Sequence[Mapping[str, Any]]) -> CritiqueResponse:
        """Judge critiques (RE-Reward), as ``POST /v1/critique`` does.

        Args:
            items: dicts with ``source``, ``edited`` (image references), ``instruction`` and
                ``critique`` (text), optionally ``id`` (default: the item's position).

        Raises:
            ValueError: the scorer does not judge critiques, or an item lacks a field.
        """
        why = critique_capable(self.scorer)
        if why is not None:
            raise ValueError(why)
        flat = []
        for i, item in enumerate(items):
            missing = [k for k in ("source", "edited", "instruction", "critique") if k not in item]
            if missing:
                raise ValueError(f"critique item {i} lacks {', '.join(missing)}")
            ident = str(item.get("id") if item.get("id") is not None else i)
            flat.append(critique_item(ident, item["source"], item["edited"], item["instruction"],
                                      item["critique"]))
        return critique_response(self.scorer.score(flat), scorer=self.scorer.name,
                                 weights=critique_weights(self.scorer))

    def compare(self, groups: Sequence[Mapping[str, Any]]) -> CompareResponse:
        """Preferences among each group's candidates.

        Args:
            groups: dicts with ``source``, ``instruction`` and ``candidates`` (K >= 2 image
                references), optionally ``id`` (default: the group's position).
        """
        flat: list[dict[str, Any]] = []
        spans: list[tuple[str, int, int]] = []
        for g, group in enumerate(groups):
            gid = str(group.get("id") if group.get("id") is not None else g)
            cands = list(group["candidates"])
            if len(cands) < 2:
                raise ValueError(f"group {gid!r} has {len(cands)} candidate(s); a comparison needs at least 2")
            start = len(flat)
            flat.extend(group_items(gid, group["source"], group.get("instruction", ""), cands))
            spans.append((gid, start, len(flat)))
        results, rewards = self._score(flat)
        return compare_response(spans, results, rewards, scorer=self.scorer.name, rule=self.rule,
                                tie_threshold=self.tie_threshold)


def default_rule(scorer: Scorer) -> RewardRule:
    """``overall`` when the scorer reports an overall dimension, else ``mean``."""
    return RewardRule("overall" if "overall" in scorer.dimensions else "mean")
