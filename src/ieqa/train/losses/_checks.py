"""Argument checks shared by the loss families (private to :mod:`ieqa.train.losses`)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ieqa.errors import LossInputError

# --------------------------------------------------------------------------------------------
# validation helpers (private)
# --------------------------------------------------------------------------------------------


def _ndim_text(ndims: tuple[int, ...]) -> str:
    return " or ".join(f"{n}-D" for n in ndims)


def _float_tensor(x: object, name: str, ndim: int | tuple[int, ...]) -> Tensor:
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if not isinstance(x, Tensor):
        raise LossInputError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise LossInputError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim not in ndims:
        raise LossInputError(f"{name} must be {_ndim_text(ndims)}, got shape {tuple(x.shape)}")
    return x


def _int_tensor(x: object, name: str, ndim: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise LossInputError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise LossInputError(f"{name} must be an integer tensor, got dtype {x.dtype}")
    if x.ndim != ndim:
        raise LossInputError(f"{name} must be {ndim}-D, got shape {tuple(x.shape)}")
    return x.long()


def _same_shape(a: Tensor, a_name: str, b: Tensor, b_name: str) -> None:
    if a.shape != b.shape:
        raise LossInputError(
            f"{b_name} must have the shape of {a_name} {tuple(a.shape)}, got {tuple(b.shape)}"
        )


def _nonempty(x: Tensor, name: str) -> None:
    if x.shape[0] == 0:
        raise LossInputError(f"{name} has an empty batch (shape {tuple(x.shape)})")


def _real(value: object, name: str, *, minimum: float | None = None, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LossInputError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise LossInputError(f"{name} must be finite, got {out}")
    if minimum is not None and (out <= minimum if strict else out < minimum):
        raise LossInputError(f"{name} must be {'>' if strict else '>='} {minimum}, got {out}")
    return out


def _weighted_mean(per_sample: Tensor, weight: Tensor | None, batch_name: str) -> Tensor:
    """Mean of ``per_sample`` [B] over the batch, or ``Σ w·l / Σ w`` with ``weight`` [B]."""
    _nonempty(per_sample, batch_name)
    if weight is None:
        return per_sample.mean()
    w = _float_tensor(weight, "weight", 1)
    if w.shape != per_sample.shape:
        raise LossInputError(
            f"weight must have shape {tuple(per_sample.shape)} (one per sample), "
            f"got {tuple(w.shape)}"
        )
    w = w.to(device=per_sample.device, dtype=per_sample.dtype)
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise LossInputError("weight must be finite and non-negative")
    total = w.sum()
    if not bool(total > 0):
        raise LossInputError("weight must have a positive sum")
    return (w * per_sample).sum() / total


def _pair_inputs(*named: tuple[Tensor, str]) -> list[Tensor]:
    """Validate a group of 1-D float tensors of one shape [B] (B >= 1)."""
    out = [_float_tensor(x, name, 1) for x, name in named]
    first, first_name = out[0], named[0][1]
    for x, (_, name) in zip(out[1:], named[1:], strict=True):
        _same_shape(first, first_name, x, name)
    _nonempty(first, first_name)
    return out


def _log_expm1(x: Tensor) -> Tensor:
    """``log(e^x − 1)`` for ``x >= 0`` (−inf at 0), stable and with finite gradients elsewhere."""
    positive = x > 0
    safe = torch.where(positive, x, torch.ones_like(x))
    value = safe + torch.log(-torch.expm1(-safe))
    return torch.where(positive, value, torch.full_like(x, -math.inf))
