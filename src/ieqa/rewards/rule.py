"""Rewards: one documented rule that turns a :class:`~ieqa.scorers.base.ScoreResult` into a
number an RL loop, a curation filter or a best-of-N pick can act on.

A :class:`RewardRule` has three parts, applied in this order:

1. **The combination** (``rule``), which gives the edit's ``overall`` score:

   * ``"overall"`` — the scorer's own ``overall`` dimension (an error for a scorer that
     does not report one);
   * ``"reasonedit"`` — ``0.3 VQ + 0.4 IA + 0.3 CP`` (ReasonEdit's released weights);
   * ``"viescore"`` — ``sqrt(SC * PQ)`` (VIEScore / EditScore);
   * ``"editscore"`` — ``overall / 10``: EditScore's RL reward (its RL runs the ``editscore``
     scorer with ``num_pass=4``, whose ``overall`` is on 0-10), so the reward lies in [0, 1];
   * ``"editreward"`` — ``overall`` of the ``editreward`` scorer: EditReward's fused mu;
   * ``"min"``, ``"mean"`` — over every dimension the scorer reported except ``overall``
     (EditReward's aggregations);
   * a weighted expression over dimensions, e.g.
     ``"0.5*instruction_alignment + 0.25*visual_quality + 0.25*content_preservation"``
     (terms ``[weight*]dimension`` joined by ``+`` or ``-``; dimension aliases such as
     ``SC`` and ``PQ`` are accepted; :func:`ieqa.data.combine.parse_weights`). Nothing is
     ``eval``-ed. Non-negative weights make a weighted mean: they are divided by their sum
     (``"2*SC + 2*PQ"`` is ``"0.5*SC + 0.5*PQ"``), the one rule of
     :func:`ieqa.data.combine.normalise_weights` that the leaderboards and the critique
     reward apply too; an expression with a negative term is used as written.

2. **The uncertainty penalty** (``uncertainty_penalty`` = λ >= 0, default 0): with a scorer
   that reports a standard deviation per dimension (``vlm-gaussian``), the reward is
   ``mu - λ·sigma`` of the combination, where ``sigma`` treats the dimensions as independent
   Gaussians: ``sqrt(Σ w_d² σ_d²)`` for a weighted sum (``mean``: ``w_d = 1/D``), the σ of the
   lowest dimension for ``min``, the first-order (delta-method) σ of ``sqrt(SC·PQ)`` for
   ``viescore``, and the scorer's own σ of ``overall`` for ``overall``. With λ > 0 and a
   scorer without σ, every item is an error: a penalty cannot be silently skipped.

3. **The floor** (``floor``, default none): an edit carrying one of ``floor_flags``
   (default: every degenerate-output flag, see :mod:`ieqa.scorers.flags`) gets
   ``reward = floor`` whatever its scores, so an RL policy cannot farm reward with blank,
   transparent, tiny, unchanged or unrelated outputs. Without a floor, flags are still
   reported next to the reward.

The result of an item is a :class:`Reward`: ``overall`` (step 1), ``sigma`` (when known),
``reward`` (after steps 2 and 3), whether it was ``floored``, and ``error`` (the scorer's
error, or why the rule could not be applied; ``reward`` is then ``None`` — a failed item is
never given a made-up number). :meth:`RewardRule.describe` is the JSON description that
``ieqa serve`` reports in ``/v1/info`` and in every response.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ieqa.data.combine import (
    REASONEDIT_WEIGHTS,
    WeightsError,
    linear_sigma,
    normalise_weights,
    parse_weights,
    viescore,
    viescore_sigma,
    weighted_sum,
)
from ieqa.errors import IeqaError, UnknownDimensionError
from ieqa.scorers.base import ScoreResult
from ieqa.scorers.flags import FLAGS

__all__ = ["REWARD_RULES", "Reward", "RewardRule", "RewardRuleError", "order_key"]

#: the named combinations (anything else must be a weighted expression)
REWARD_RULES: tuple[str, ...] = ("overall", "reasonedit", "viescore", "min", "mean",
                                  "editscore", "editreward")


class RewardRuleError(IeqaError):
    """A reward rule that cannot be built (unknown name, bad expression, bad option)."""


@dataclass(frozen=True)
class Reward:
    """The reward of one edit under a :class:`RewardRule`.

    Attributes:
        id: the edit's id.
        overall: the rule's combination of the dimension scores, on the scorer's scale;
            ``None`` on error.
        sigma: standard deviation of ``overall`` (same units) when the scorer reports σ,
            else ``None``.
        reward: ``overall - λ·sigma``, or the floor for a flagged edit; ``None`` on error.
        floored: True when ``reward`` is the floor because of a flag.
        flags: the edit's degenerate-output flags.
        error: why there is no reward (the scorer's error or the rule's), else ``None``.
    """

    id: str
    overall: float | None
    sigma: float | None
    reward: float | None
    floored: bool = False
    flags: tuple[str, ...] = ()
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the fields above; ``flags`` as a list)."""
        return {"id": self.id, "overall": self.overall, "sigma": self.sigma, "reward": self.reward,
                "floored": self.floored, "flags": list(self.flags), "error": self.error}


def _parse_expression(text: str) -> dict[str, float]:
    """The weights of an expression rule, normalised by the one rule of
    :func:`ieqa.data.combine.normalise_weights`."""
    if not text.strip():
        raise RewardRuleError("empty reward rule; give a name "
                              f"({', '.join(REWARD_RULES)}) or an expression like "
                              "'0.5*instruction_alignment + 0.5*visual_quality'")
    try:
        return normalise_weights(parse_weights(text))
    except UnknownDimensionError as exc:
        raise RewardRuleError(f"reward rule {text!r} is neither a rule name "
                              f"({', '.join(REWARD_RULES)}) nor an expression over known "
                              f"dimensions: {exc}") from None
    except WeightsError as exc:
        raise RewardRuleError(f"reward rule: {exc}") from None


class RewardRule:
    """A reward rule (see the module docstring).

    Args:
        rule: a name in :data:`REWARD_RULES` or a weighted expression over dimensions.
        uncertainty_penalty: λ >= 0 in ``mu - λ·sigma`` (0: no penalty).
        floor: the reward of an edit with a flag in ``floor_flags`` (``None``: no floor).
        floor_flags: which flags trigger the floor (default: all of
            :data:`ieqa.scorers.flags.FLAGS`).

    Raises:
        RewardRuleError: unknown name, unreadable expression, negative λ, non-finite
            floor, or an unknown flag.

    Examples:
        >>> from ieqa.scorers.base import ScoreResult
        >>> rule = RewardRule("0.5*instruction_alignment + 0.5*visual_quality")
        >>> rule(ScoreResult(id="e1", scores={"instruction_alignment": 4, "visual_quality": 2})).reward
        3.0
    """

    def __init__(self, rule: str = "overall", *, uncertainty_penalty: float = 0.0,
                 floor: float | None = None, floor_flags: Iterable[str] | None = None) -> None:
        if not isinstance(rule, str):
            raise RewardRuleError(f"rule must be a string, got {type(rule).__name__}")
        self.rule = rule.strip()
        self.weights: dict[str, float] | None = None
        if self.rule == "reasonedit":
            self.weights = dict(REASONEDIT_WEIGHTS)
        elif self.rule not in REWARD_RULES:
            self.weights = _parse_expression(self.rule)
        lam = float(uncertainty_penalty)
        if not math.isfinite(lam) or lam < 0:
            raise RewardRuleError(f"uncertainty_penalty must be a finite number >= 0, got {uncertainty_penalty!r}")
        self.uncertainty_penalty = lam
        if floor is not None and not math.isfinite(float(floor)):
            raise RewardRuleError(f"floor must be a finite number or None, got {floor!r}")
        self.floor = None if floor is None else float(floor)
        flags = tuple(FLAGS) if floor_flags is None else tuple(floor_flags)
        unknown = [f for f in flags if f not in FLAGS]
        if unknown:
            raise RewardRuleError(f"unknown flag(s) {unknown} in floor_flags; choose from {list(FLAGS)}")
        self.floor_flags = flags

    def missing(self, dimensions: Iterable[str]) -> list[str]:
        """The dimensions this rule needs that a scorer reporting ``dimensions`` lacks
        (``min`` and ``mean`` take whatever it reports), so that a server can refuse the
        pair before it starts instead of failing every item."""
        have = set(dimensions)
        if self.rule in ("overall", "editscore", "editreward"):
            need = ["overall"]
        elif self.weights is not None:
            need = list(self.weights)
        elif self.rule == "viescore":
            need = ["instruction_alignment", "visual_quality"]
        else:
            need = []
        return [d for d in need if d not in have]

    # ------------------------------------------------------------------ description
    def describe(self) -> dict[str, Any]:
        """JSON description: ``rule``, ``weights`` (for weighted rules), ``formula``,
        ``uncertainty_penalty``, ``floor``, ``floor_flags``."""
        return {"rule": self.rule, "weights": self.weights, "formula": self.formula(),
                "uncertainty_penalty": self.uncertainty_penalty, "floor": self.floor,
                "floor_flags": list(self.floor_flags)}

    def formula(self) -> str:
        """The rule as one readable line, e.g. ``0.3*visual_quality + ... - 0.5*sigma``."""
        if self.weights is not None:
            base = " + ".join(f"{w:g}*{d}" for d, w in self.weights.items()).replace("+ -", "- ")
        else:
            base = {"overall": "overall", "viescore": "sqrt(instruction_alignment*visual_quality)",
                    "min": "min over dimensions", "mean": "mean over dimensions",
                    "editscore": "overall/10 (EditScore's RL reward)",
                    "editreward": "overall (EditReward's fused mu)"}[self.rule]
        if self.uncertainty_penalty:
            base = f"({base}) - {self.uncertainty_penalty:g}*sigma"
        if self.floor is not None:
            base += f"; {self.floor:g} when flagged {'/'.join(self.floor_flags)}"
        return base

    def __repr__(self) -> str:
        return f"RewardRule({self.formula()!r})"

    # ------------------------------------------------------------------ application
    def __call__(self, result: ScoreResult) -> Reward:
        """The :class:`Reward` of one score result (never raises for a bad item)."""
        flags = tuple(result.flags)
        if result.error is not None:
            return Reward(result.id, None, None, None, flags=flags, error=result.error)
        try:
            overall, sigma = self._combine(result.scores, result.sigma)
        except RewardRuleError as exc:
            return Reward(result.id, None, None, None, flags=flags, error=f"reward rule: {exc}")
        if self.uncertainty_penalty and sigma is None:
            return Reward(result.id, overall, None, None, flags=flags,
                          error="reward rule: an uncertainty penalty needs a scorer that reports "
                                "sigma (e.g. vlm-gaussian); use uncertainty_penalty=0 with this scorer")
        reward = overall - self.uncertainty_penalty * sigma if self.uncertainty_penalty else overall
        floored = self.floor is not None and any(f in self.floor_flags for f in flags)
        if floored:
            reward = self.floor
        return Reward(result.id, overall, sigma, float(reward), floored=floored, flags=flags)

    def rewards(self, results: Sequence[ScoreResult]) -> list[Reward]:
        """:meth:`__call__` for each result, in order."""
        return [self(r) for r in results]

    def _combine(self, scores: Mapping[str, float],
                 sigmas: Mapping[str, float]) -> tuple[float, float | None]:
        dims = {d: v for d, v in scores.items() if d != "overall"}
        if self.rule in ("overall", "editscore", "editreward"):
            if "overall" not in scores:
                raise RewardRuleError(
                    "the scorer reports no 'overall'; choose a rule that combines its dimensions "
                    f"({', '.join(sorted(dims))}), e.g. 'mean' or 'reasonedit'")
            scale = 0.1 if self.rule == "editscore" else 1.0
            sigma = sigmas.get("overall")
            return scores["overall"] * scale, None if sigma is None else sigma * scale
        if self.weights is not None:
            missing = [d for d in self.weights if d not in scores]
            if missing:
                raise RewardRuleError(f"no score for {', '.join(missing)} (the scorer reported "
                                      f"{', '.join(sorted(scores)) or 'nothing'})")
            return weighted_sum(scores, self.weights), linear_sigma(self.weights, sigmas)
        if not dims:
            raise RewardRuleError("no dimension scores to combine")
        if self.rule == "mean":
            weights = {d: 1.0 / len(dims) for d in dims}
            return weighted_sum(dims, weights), linear_sigma(weights, sigmas)
        if self.rule == "min":
            low = min(dims, key=lambda d: dims[d])
            return dims[low], sigmas.get(low)
        # viescore
        for need in ("instruction_alignment", "visual_quality"):
            if need not in dims:
                raise RewardRuleError(f"the viescore rule needs {need} (the scorer reported "
                                      f"{', '.join(sorted(dims))})")
        sc, pq = dims["instruction_alignment"], dims["visual_quality"]
        if sc < 0 or pq < 0:
            raise RewardRuleError(f"the viescore rule needs non-negative SC and PQ, got {sc}, {pq}")
        mu = viescore(sc, pq)
        if "instruction_alignment" in sigmas and "visual_quality" in sigmas:
            return mu, viescore_sigma(sc, pq, sigmas["instruction_alignment"],
                                      sigmas["visual_quality"])
        return mu, None


def order_key(reward: float, sigma: float | None, tiebreak: str | int) -> tuple[float, float, str | int]:
    """The sort key of the one best-first order ieqa uses wherever it ranks or picks by reward
    (``/v1/compare`` rankings, best-of-N, curation, DPO pairs): reward high first, then sigma
    low first (unknown sigma last), then ``tiebreak`` ascending (an id, or a position within
    a group). Sorting ascending by this key puts the best first."""
    return (-reward, math.inf if sigma is None else sigma, tiebreak)
