"""Pointwise regression losses (EditHF, RE-Reward): MSE and Huber."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from ieqa.train.losses._checks import (
    _float_tensor,
    _nonempty,
    _real,
    _same_shape,
    _weighted_mean,
)

# --------------------------------------------------------------------------------------------
# pointwise regression
# --------------------------------------------------------------------------------------------


def _regression_inputs(pred: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    pred = _float_tensor(pred, "pred", (1, 2))
    target = _float_tensor(target, "target", (1, 2))
    _same_shape(pred, "pred", target, "target")
    _nonempty(pred, "pred")
    return pred, target.to(pred.dtype)


def _per_sample(elementwise: Tensor) -> Tensor:
    return elementwise.mean(dim=1) if elementwise.ndim == 2 else elementwise


def mse_loss(pred: Tensor, target: Tensor, weight: Tensor | None = None) -> Tensor:
    """Mean squared error (squared score units).

    Args:
        pred, target: [B] or [B, D] float of the same shape (D score dimensions).
        weight: optional [B] per-sample weights; the squared error is averaged over D first,
            then ``Σ w·l / Σ w`` over the batch.

    Returns:
        Scalar.

    Reference: EditHF pointwise MSE.
    """
    pred, target = _regression_inputs(pred, target)
    per = _per_sample(F.mse_loss(pred, target, reduction="none"))
    return _weighted_mean(per, weight, "pred")


def huber_loss(
    pred: Tensor, target: Tensor, *, delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """Huber loss: ``0.5·e²`` for ``|e| < delta``, else ``delta·(|e| − 0.5·delta)``.

    Args:
        pred, target: [B] or [B, D] float of the same shape.
        delta: > 0, the switch point, in score units.
        weight: optional [B] per-sample weights (averaged over D first, then weighted mean).

    Returns:
        Scalar.

    Reference: RE-Reward (ReasonEdit) pointwise term.
    """
    pred, target = _regression_inputs(pred, target)
    delta = _real(delta, "delta", minimum=0.0, strict=True)
    per = _per_sample(F.huber_loss(pred, target, reduction="none", delta=delta))
    return _weighted_mean(per, weight, "pred")
