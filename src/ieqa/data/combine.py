"""Combining per-dimension scores: the one home of the weights, the formulas and their sigma.

Every place in ieqa that combines dimensions imports them from here: the scorers' overall
rules, the reward rule (:mod:`ieqa.rewards.rule`), the leaderboards
(:mod:`ieqa.bench.leaderboard`), ShapesEdit's ground truth, the published judges' and
benchmarks' readings, and training.

* :data:`REASONEDIT_WEIGHTS` — ``0.3 VQ + 0.4 IA + 0.3 CP``: ReasonEdit's released code
  and EditHF's Eq. (2) (the same weights).
* :func:`viescore` — VIEScore / EditScore's ``sqrt(SC * PQ)`` with SC = instruction
  alignment and PQ = visual quality (both already the min of their sub-scores);
  :func:`viescore_sigma` its first-order (delta-method) standard deviation.
* :func:`weighted_sum` and :func:`linear_sigma` — ``Σ w_d x_d`` and its σ for independent
  dimensions.
* ``"min"``, ``"mean"``, ``"sum"`` — EditReward's aggregations over every given dimension
  (:func:`combine_dimensions`).
* :func:`parse_weights` — the one syntax of weights, ``0.3*VQ + 0.4*IA + 0.3*CP`` (terms
  ``[weight*]dimension`` joined by ``+`` or ``-``; ``VQ=0.3,IA=0.4,CP=0.3`` is read the
  same), shared by ``--reward``, ``--by`` and ``--weights``; nothing is ``eval``-ed.
* :func:`normalise_weights` — the one normalisation rule: **non-negative weights make a
  weighted mean** (divided by their sum, so ``3*IA + 1*VQ`` is ``0.75*IA + 0.25*VQ`` and
  the result stays on the scores' scale); weights with a negative term make a difference
  and are used as written. The reward rules, the leaderboards' overall and the critique
  reward all apply it, so one set of weights gives one number wherever it is given.

:func:`overall_score` applies a named rule to one edit's scores:

:func:`aggregate_gaussian` is the same mean/sum/min for Gaussian (μ, σ) dimension scores,
on tensors: the one implementation the ``vlm-gaussian`` readout and the training losses
share.

Dimension names may be aliases (``SC``, ``PQ``, ...); ``overall`` itself is ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError, LossInputError

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["WeightsError", "normalise_weights", "parse_weights", "overall_score", "combine_dimensions", "aggregate_gaussian", "COMBINE_RULES", "AggregationRule", "SigmaAggregation",
           "OVERALL_RULES", "REASONEDIT_WEIGHTS", "RE_REWARD_WEIGHTS", "linear_sigma", "sqrt_product", "viescore", "viescore_sigma",
           "weighted_sum"]

#: How dimension means combine (EditReward Eq. 3).
AggregationRule = Literal["mean", "sum", "min"]
#: How dimension standard deviations combine (see :func:`aggregate_gaussian`).
SigmaAggregation = Literal["independent", "elementwise"]

#: ReasonEdit's released weights of its three heads (both its quality head and RE-Reward),
#: the first dimension, the second weighted most; EditHF's Eq. (2) uses the same
_RELEASED_WEIGHTS = (0.3, 0.4, 0.3)
#: ``overall = 0.3 VQ + 0.4 IA + 0.3 CP``: ReasonEdit's released code, EditHF's Eq. (2)
REASONEDIT_WEIGHTS: dict[str, float] = dict(zip(
    ("visual_quality", "instruction_alignment", "content_preservation"), _RELEASED_WEIGHTS,
    strict=True))
#: RE-Reward's released critique reward: ``0.3 logicality + 0.4 accuracy + 0.3 usefulness``
RE_REWARD_WEIGHTS: dict[str, float] = dict(zip(("logicality", "accuracy", "usefulness"),
                                               _RELEASED_WEIGHTS, strict=True))
OVERALL_RULES: tuple[str, ...] = ("viescore", "reasonedit", "min", "mean", "sum")
#: The rules that combine any set of dimensions (EditReward Eq. 3).
COMBINE_RULES: tuple[str, ...] = ("mean", "sum", "min")


class WeightsError(IeqaError, ValueError):
    """Weights that cannot be read or used (the message says how to write them)."""


_TERM = re.compile(r"\s*([+-])?\s*(?:((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*\*\s*)?"
                   r"([A-Za-z_][A-Za-z0-9_]*)\s*")
_PAIR = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_ &-]*?)\s*=\s*(\S+?)\s*")
_HOW = ("write terms '[weight*]dimension' joined by + or -, e.g. "
        "'0.4*instruction_alignment + 0.3*visual_quality + 0.3*content_preservation', or "
        "dimension=number pairs joined by commas")


def parse_weights(text: str) -> dict[str, float]:
    """The weights of ``text``, canonical dimension names in order of appearance, as
    written (not normalised: :func:`normalise_weights`). ``0.3*PQ + 0.7*SC``, ``PQ + SC``
    (weight 1) and ``- 0.1*content_preservation`` are terms; ``PQ=0.3,SC=0.7`` is the same
    weights in the ``--weights`` form.

    Raises:
        WeightsError: an empty text, a term that cannot be read (the character is named),
            a weight that is not finite, or a dimension given twice (also under two
            aliases).
        UnknownDimensionError: a name that is no dimension (the known ones are listed).

    Examples:
        >>> parse_weights("0.3*PQ + 0.4*SC + 0.3*content_preservation")
        {'visual_quality': 0.3, 'instruction_alignment': 0.4, 'content_preservation': 0.3}
        >>> parse_weights("visual_quality=1, SC=3")
        {'visual_quality': 1.0, 'instruction_alignment': 3.0}
    """
    stripped = text.strip()
    if not stripped:
        raise WeightsError(f"no weights given; {_HOW}")
    terms: list[tuple[str, float]] = []
    if "=" in stripped:
        for entry in stripped.split(","):
            if not entry.strip():  # a trailing or doubled comma
                continue
            match = _PAIR.fullmatch(entry)
            if match is None:
                raise WeightsError(f"cannot read the weights {text!r}: {entry.strip()!r} is "
                                   "not of the form dimension=number")
            try:
                terms.append((match.group(1), float(match.group(2))))
            except ValueError:
                raise WeightsError(f"cannot read the weights {text!r}: {match.group(2)!r} "
                                   f"(for {match.group(1)}) is not a number") from None
        if not terms:
            raise WeightsError(f"no weights given in {text!r}; {_HOW}")
    else:
        pos, first = 0, True
        while pos < len(text):
            match = _TERM.match(text, pos)
            if match is None or match.end() == pos or (not first and match.group(1) is None):
                raise WeightsError(f"cannot read the weights {text!r} at character {pos}: {_HOW}")
            sign = -1.0 if match.group(1) == "-" else 1.0
            weight = float(match.group(2)) if match.group(2) is not None else 1.0
            terms.append((match.group(3), sign * weight))
            pos, first = match.end(), False
    weights: dict[str, float] = {}
    for name, value in terms:
        if not math.isfinite(value):
            raise WeightsError(f"cannot read the weights {text!r}: {name}={value} is not a "
                               "finite number")
        dim = canonical_dimension(name)  # UnknownDimensionError names the known ones
        if dim in weights:
            raise WeightsError(f"cannot read the weights {text!r}: dimension {dim!r} is given "
                               f"twice (the second time as {name!r}); give each dimension once")
        weights[dim] = value
    return weights


def normalise_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """The one normalisation rule (see the module docstring): non-negative ``weights``
    divided by their sum (zero weights kept); weights with a negative term as given.

    Raises:
        WeightsError: no weights, or non-negative weights that sum to 0.

    Examples:
        >>> normalise_weights({"logicality": 1, "accuracy": 2, "usefulness": 1})
        {'logicality': 0.25, 'accuracy': 0.5, 'usefulness': 0.25}
        >>> normalise_weights({"instruction_alignment": 1.0, "content_preservation": -0.5})
        {'instruction_alignment': 1.0, 'content_preservation': -0.5}
    """
    values = {d: float(w) for d, w in weights.items()}
    if any(w < 0 for w in values.values()):
        return values
    total = sum(values.values())
    if not total > 0:
        raise WeightsError(f"the weights {values or '{}'} sum to 0; give at least one "
                           "positive weight")
    return {d: w / total for d, w in values.items()}


def weighted_sum(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``Σ w_d · scores[d]`` over ``weights``, in its order (a missing dimension is a
    KeyError: callers check first)."""
    return sum(w * scores[d] for d, w in weights.items())


def linear_sigma(weights: Mapping[str, float], sigmas: Mapping[str, float]) -> float | None:
    """σ of ``Σ w_d x_d`` for independent ``x_d``; None unless every weighted dimension has σ."""
    if not sigmas or any(d not in sigmas for d in weights):
        return None
    return math.sqrt(sum((w * sigmas[d]) ** 2 for d, w in weights.items()))


def sqrt_product(sc: float, pq: float) -> float:
    """``sqrt(SC · PQ)`` as the released VIEScore / EditScore code computes it: a
    ``ValueError`` when the product is negative (two negative scores pass)."""
    return math.sqrt(sc * pq)


def viescore(sc: float, pq: float) -> float:
    """VIEScore's overall, ``sqrt(SC · PQ)``; NaN when either is negative (no overall)."""
    return sqrt_product(sc, pq) if sc >= 0 and pq >= 0 else math.nan


def viescore_sigma(sc: float, pq: float, sigma_sc: float, sigma_pq: float) -> float | None:
    """The first-order (delta-method) σ of :func:`viescore` for independent SC and PQ:
    ``d/dSC = PQ / (2 O)``, ``d/dPQ = SC / (2 O)``; None where ``O = 0`` (not
    differentiable)."""
    mu = viescore(sc, pq)
    if not mu > 0:
        return None
    return math.hypot(pq / (2 * mu) * sigma_sc, sc / (2 * mu) * sigma_pq)


def overall_score(scores: Mapping[str, float], rule: str) -> float:
    """The overall score of one edit under ``rule`` (see the module docstring).

    Raises:
        IeqaError: unknown rule, a dimension the rule needs is missing, or (viescore) a
            negative sub-score.
    """
    dims = {canonical_dimension(k): float(v) for k, v in scores.items()}
    dims.pop("overall", None)
    if rule == "viescore":
        need = ("instruction_alignment", "visual_quality")
        _require(dims, need, rule)
        sc, pq = dims["instruction_alignment"], dims["visual_quality"]
        if sc < 0 or pq < 0:
            raise IeqaError(f"viescore overall needs non-negative SC and PQ, got {sc}, {pq}")
        return viescore(sc, pq)
    if rule == "reasonedit":
        _require(dims, tuple(REASONEDIT_WEIGHTS), rule)
        return weighted_sum(dims, REASONEDIT_WEIGHTS)
    if rule in COMBINE_RULES:
        if not dims:
            raise IeqaError("no dimension scores to aggregate")
        import numpy as np

        return float(combine_dimensions(np.array([list(dims.values())]), rule)[0])
    raise IeqaError(f"unknown overall rule {rule!r}; choose one of {', '.join(OVERALL_RULES)}")


def combine_dimensions(values: Any, rule: str) -> Any:
    """``[B, D]`` per-dimension scores to ``[B]``: their ``"mean"``, ``"sum"`` or ``"min"``
    over axis 1 (EditReward Eq. 3), for a numpy array or a torch tensor alike; one dimension
    passes through. The rule training aggregates head outputs and preference pairs with."""
    if rule not in COMBINE_RULES:
        raise LossInputError(f"unknown aggregation {rule!r}; choose one of "
                             f"{', '.join(COMBINE_RULES)}")
    if values.shape[1] == 1:
        return values[:, 0]
    if hasattr(values, "detach"):  # a torch tensor
        return values.sum(1) if rule == "sum" else values.min(1).values if rule == "min" else values.mean(1)
    import numpy as np

    return {"mean": np.mean, "sum": np.sum, "min": np.min}[rule](values, axis=1)


def _require(dims: Mapping[str, float], need: tuple[str, ...], rule: str) -> None:
    missing = [d for d in need if d not in dims]
    if missing:
        raise IeqaError(f"the {rule} overall needs {', '.join(missing)}")


def aggregate_gaussian(
    mu: Tensor,
    log_sigma: Tensor,
    rule: AggregationRule = "mean",
    sigma: SigmaAggregation = "independent",
) -> tuple[Tensor, Tensor]:
    """Aggregate D Gaussian dimension scores into one Gaussian per sample.

    ``rule`` combines the means (EditReward Eq. 3): ``"mean"`` ``Σ μ_d / D`` (best in
    EditReward), ``"sum"`` ``Σ μ_d``, ``"min"`` ``min_d μ_d``. ``sigma`` says how the
    standard deviations combine:

    * ``"independent"`` (default): the σ of the aggregate when the dimension scores are
      independent Gaussians — ``sqrt(Σ σ_d²) / D`` for ``mean``, ``sqrt(Σ σ_d²)`` for
      ``sum`` (both exact), and for ``min`` the σ of the dimension whose μ is smallest (the
      gradient flows to that dimension only). It keeps σ a standard deviation of the
      aggregated score, the model the paper states.
    * ``"elementwise"``: the rule applied to ``[μ, log σ]`` elementwise, as EditReward's
      released model fuses its heads: ``mean`` takes the mean of ``log σ_d`` (σ is the
      geometric mean of the σ_d), ``min`` takes the smallest ``log σ_d`` (possibly of a
      different dimension than the smallest μ); for ``sum`` the released code adds the
      variances, so ``sum`` is the same as ``"independent"``. Use it to reproduce the
      released checkpoints.

    Args:
        mu: [B, D] float means.
        log_sigma: [B, D] float log standard deviations.
        rule: ``"mean"``, ``"sum"`` or ``"min"``.
        sigma: ``"independent"`` or ``"elementwise"``.

    Returns:
        ``(mu_agg [B], log_sigma_agg [B])`` (not reduced over the batch).

    Reference: EditReward (003) §3.2 Eq. 3 and its released multi-head model.
    """
    import torch

    for name, x in (("mu", mu), ("log_sigma", log_sigma)):
        if not isinstance(x, torch.Tensor):
            raise LossInputError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise LossInputError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
        if x.ndim != 2:
            raise LossInputError(f"{name} must be 2-D, got shape {tuple(x.shape)}")
    if mu.shape != log_sigma.shape:
        raise LossInputError(f"log_sigma must have the shape of mu {tuple(mu.shape)}, got "
                             f"{tuple(log_sigma.shape)}")
    dims = mu.shape[1]
    if dims == 0:
        raise LossInputError("mu must have at least one dimension (D >= 1)")
    if rule not in ("mean", "sum", "min"):
        raise LossInputError(f"rule must be 'mean', 'sum' or 'min', got {rule!r}")
    if sigma not in ("independent", "elementwise"):
        raise LossInputError(f"sigma must be 'independent' or 'elementwise', got {sigma!r}")
    if rule == "min":
        if sigma == "elementwise":
            return mu.min(dim=1).values, log_sigma.min(dim=1).values
        idx = mu.argmin(dim=1, keepdim=True)
        return mu.gather(1, idx).squeeze(1), log_sigma.gather(1, idx).squeeze(1)
    log_sigma_sum = 0.5 * torch.logsumexp(2 * log_sigma, dim=1)  # log sqrt(Σ σ²)
    if rule == "sum":
        return mu.sum(dim=1), log_sigma_sum
    if sigma == "elementwise":
        return mu.mean(dim=1), log_sigma.mean(dim=1)
    return mu.mean(dim=1), log_sigma_sum - math.log(dims)
