"""Pairwise preference losses: Bradley-Terry and Bradley-Terry with ties."""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from ieqa.errors import LossInputError
from ieqa.train.losses._checks import (
    _int_tensor,
    _log_expm1,
    _pair_inputs,
    _real,
    _weighted_mean,
)

TiesModel = Literal["rao-kupper", "davidson"]


# --------------------------------------------------------------------------------------------
# pairwise preference: Bradley–Terry and ties
# --------------------------------------------------------------------------------------------


def bradley_terry_loss(s_win: Tensor, s_lose: Tensor, weight: Tensor | None = None) -> Tensor:
    """Bradley–Terry pairwise loss ``softplus(s_lose − s_win) = −log σ(s_win − s_lose)``.

    Args:
        s_win, s_lose: [B] float scores (logit scale) of the preferred / rejected item.
        weight: optional [B] per-pair weights.

    Returns:
        Scalar (nats), mean (or weighted mean) over pairs.

    Reference: EditHF pairwise loss; Bradley & Terry (1952).
    """
    s_win, s_lose = _pair_inputs((s_win, "s_win"), (s_lose, "s_lose"))
    return _weighted_mean(F.softplus(s_lose - s_win), weight, "s_win")


def _log_theta_tensor(log_theta: float | Tensor | None, model: str, ref: Tensor) -> Tensor:
    if log_theta is None:
        # P(tie | equal scores) = 1/3 under both models: (θ−1)/(θ+1) with θ=2; ν/(2+ν) with ν=1.
        log_theta = math.log(2.0) if model == "rao-kupper" else 0.0
    if isinstance(log_theta, Tensor):
        if not log_theta.is_floating_point():
            raise LossInputError(f"log_theta must be a float tensor, got dtype {log_theta.dtype}")
        if log_theta.numel() != 1 and log_theta.shape != ref.shape:
            raise LossInputError(
                f"log_theta must be a scalar or have shape {tuple(ref.shape)}, "
                f"got {tuple(log_theta.shape)}"
            )
        lt = log_theta.to(device=ref.device, dtype=ref.dtype)
        if lt.numel() == 1:
            lt = lt.reshape(())
        if not bool(torch.isfinite(lt).all()):
            raise LossInputError("log_theta must be finite")
    else:
        lt = torch.tensor(_real(log_theta, "log_theta"), device=ref.device, dtype=ref.dtype)
    if model == "rao-kupper" and bool((lt.detach() < 0).any()):
        raise LossInputError(
            "log_theta must be >= 0 for the Rao-Kupper model (theta = exp(log_theta) >= 1)"
        )
    return lt


def bt_ties_loss(
    s_a: Tensor,
    s_b: Tensor,
    outcome: Tensor,
    *,
    log_theta: float | Tensor | None = None,
    model: TiesModel = "rao-kupper",
    weight: Tensor | None = None,
) -> Tensor:
    """Negative log-likelihood of Bradley–Terry with ties (Rao & Kupper 1967; Davidson 1970),
    as used by BTT reward models.

    With ``d = s_a − s_b`` (scores on the logit scale, ``π = e^s``):

    * ``"rao-kupper"``, ``θ = exp(log_theta) >= 1``:
      ``P(a≻b) = π_a/(π_a + θπ_b) = σ(d − log θ)``, ``P(b≻a) = σ(−d − log θ)``,
      ``P(tie) = (θ²−1)π_aπ_b / ((π_a+θπ_b)(π_b+θπ_a))
      = (θ²−1) / ((1+θe^{−d})(1+θe^{d}))``, evaluated in log space.
      ``log_theta = 0`` is plain Bradley–Terry (a tie then has infinite loss).
    * ``"davidson"``, ``ν = exp(log_theta) > 0``:
      ``P(a≻b) = π_a / (π_a + π_b + ν√(π_aπ_b))``, ``P(tie) = ν√(π_aπ_b) / (…)``,
      evaluated as ``log_softmax([d/2, −d/2, log ν])``.

    The three probabilities sum to 1 under both models.

    Args:
        s_a, s_b: [B] float scores.
        outcome: [B] integer: 0 = a preferred, 1 = b preferred, 2 = tie.
        log_theta: float, or a float tensor (scalar or [B], e.g. a learnable parameter).
            Default ``None`` picks ``log 2`` for Rao–Kupper and ``0`` (ν = 1) for Davidson,
            both giving ``P(tie) = 1/3`` for equal scores.
        model: ``"rao-kupper"`` or ``"davidson"``.
        weight: optional [B] per-pair weights.

    Returns:
        Scalar NLL (nats), mean (or weighted mean) over pairs.
    """
    if model not in ("rao-kupper", "davidson"):
        raise LossInputError(f"model must be 'rao-kupper' or 'davidson', got {model!r}")
    s_a, s_b = _pair_inputs((s_a, "s_a"), (s_b, "s_b"))
    outcome = _int_tensor(outcome, "outcome", 1)
    if outcome.shape != s_a.shape:
        raise LossInputError(
            f"outcome must have shape {tuple(s_a.shape)}, got {tuple(outcome.shape)}"
        )
    if bool(((outcome < 0) | (outcome > 2)).any()):
        raise LossInputError("outcome must be 0 (a>b), 1 (b>a) or 2 (tie)")
    lt = _log_theta_tensor(log_theta, model, s_a)
    d = s_a - s_b
    if model == "rao-kupper":
        log_a = F.logsigmoid(d - lt)
        log_b = F.logsigmoid(-d - lt)
        log_tie = _log_expm1(2 * lt) - F.softplus(lt - d) - F.softplus(lt + d)
        log_probs = torch.stack(torch.broadcast_tensors(log_a, log_b, log_tie), dim=-1)
    else:
        half = 0.5 * d
        logits = torch.stack(torch.broadcast_tensors(half, -half, lt), dim=-1)
        log_probs = F.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(-1, outcome.to(log_probs.device).unsqueeze(-1)).squeeze(-1)
    return _weighted_mean(nll, weight, "s_a")
