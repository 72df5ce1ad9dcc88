"""Rules that combine per-dimension scores into ``overall``.

* ``"viescore"`` — VIEScore / EditScore: ``sqrt(SC * PQ)`` with SC = instruction
  alignment and PQ = visual quality (both already the min of their sub-scores).
* ``"reasonedit"`` — ReasonEdit's released code: ``0.3 VQ + 0.4 IA + 0.3 CP``.
* ``"min"``, ``"mean"``, ``"sum"`` — EditReward's aggregations over every given dimension.

:func:`aggregate_gaussian` is the same mean/sum/min for Gaussian (μ, σ) dimension scores,
on tensors: the one implementation the ``vlm-gaussian`` readout and the training losses
share.

Dimension names may be aliases (``SC``, ``PQ``, ...); ``overall`` itself is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError, LossInputError

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["overall_score", "combine_dimensions", "aggregate_gaussian", "COMBINE_RULES", "AggregationRule", "SigmaAggregation",
           "OVERALL_RULES", "REASONEDIT_WEIGHTS"]

#: How dimension means combine (EditReward Eq. 3).
AggregationRule = Literal["mean", "sum", "min"]
#: How dimension standard deviations combine (see :func:`aggregate_gaussian`).
SigmaAggregation = Literal["independent", "elementwise"]

REASONEDIT_WEIGHTS: dict[str, float] = {"visual_quality": 0.3, "instruction_alignment": 0.4,
                                        "content_preservation": 0.3}
OVERALL_RULES: tuple[str, ...] = ("viescore", "reasonedit", "min", "mean", "sum")
#: The rules that combine any set of dimensions (EditReward Eq. 3).
COMBINE_RULES: tuple[str, ...] = ("mean", "sum", "min")


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
        return math.sqrt(sc * pq)
    if rule == "reasonedit":
        _require(dims, tuple(REASONEDIT_WEIGHTS), rule)
        return sum(w * dims[d] for d, w in REASONEDIT_WEIGHTS.items())
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
