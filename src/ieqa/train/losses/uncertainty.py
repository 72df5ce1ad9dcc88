"""Gaussian-score ranking losses (EditReward / HPSv3): the uncertainty-aware ranking loss
and the Thurstone Case V probit loss."""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from ieqa.errors import LossInputError
from ieqa.train.losses._checks import (
    _pair_inputs,
    _weighted_mean,
)

UncertaintyForm = Literal["nll", "expected-bt"]


# --------------------------------------------------------------------------------------------
# Gaussian scores: EditReward / HPSv3 uncertainty-aware ranking
# --------------------------------------------------------------------------------------------


def _gaussian_pair(
    mu_win: Tensor, log_sigma_win: Tensor, mu_lose: Tensor, log_sigma_lose: Tensor
) -> tuple[Tensor, Tensor]:
    """Mean ``μ_w − μ_l`` and std ``sqrt(σ_w² + σ_l²)`` of the score difference."""
    mu_w, ls_w, mu_l, ls_l = _pair_inputs(
        (mu_win, "mu_win"),
        (log_sigma_win, "log_sigma_win"),
        (mu_lose, "mu_lose"),
        (log_sigma_lose, "log_sigma_lose"),
    )
    scale = torch.exp(0.5 * torch.logaddexp(2 * ls_w, 2 * ls_l))
    return mu_w - mu_l, scale


def uncertainty_ranking_loss(
    mu_win: Tensor,
    log_sigma_win: Tensor,
    mu_lose: Tensor,
    log_sigma_lose: Tensor,
    *,
    form: UncertaintyForm = "nll",
    n_samples: int = 1000,
    generator: torch.Generator | None = None,
    weight: Tensor | None = None,
) -> Tensor:
    """Uncertainty-aware ranking loss with Gaussian scores, estimated by sampling.

    Scores are independent Gaussians ``N(μ, σ²)`` with ``σ = exp(log_sigma)``. For a pair with
    the first item preferred, ``z ~ N(μ_w − μ_l, σ_w² + σ_l²)`` and the Bradley–Terry
    probability of the preference given ``z`` is ``sigmoid(z)``. Two losses are built on it:

    * ``form="nll"`` (default): ``−log P`` with ``P = E[sigmoid(z)]``, the negative
      log-likelihood of the observed preference with the score uncertainty integrated out.
      This is Eq. 4 of EditReward and the HPSv3 loss it follows.
    * ``form="expected-bt"``: ``E[−log sigmoid(z)] = E[softplus(−z)]``, the Bradley–Terry
      loss averaged over score draws. This is what EditReward's released trainer computes
      (its ``uncertainty`` loss type); use it to reproduce the released checkpoints.

    By Jensen's inequality ``expected-bt >= nll`` for every pair. They also differ in what
    σ learns: ``softplus(−z)`` is convex, so ``expected-bt`` grows with σ for *every* pair
    and pushes σ down everywhere, while under ``nll`` a larger σ lowers the loss of a pair
    whose means are in the wrong order, so σ can grow where the data disagree with the means.
    That, and being the paper's definition, is why ``"nll"`` is the default.

    Both are estimated from the same ``n_samples`` reparametrised draws
    ``z = (μ_w − μ_l) + sqrt(σ_w² + σ_l²)·ε``, ``ε ~ N(0, 1)`` of shape [B, n_samples] from
    ``generator`` (gradients reach μ and log σ; a seeded generator makes the loss
    deterministic). ``nll`` averages ``sigmoid(z)`` in log space
    (``log n − logsumexp(logsigmoid(z))``), so it stays finite when every draw is far in a
    tail. :func:`probit_ranking_loss` is a third, different likelihood, not a closed form of
    either.

    Args:
        mu_win, log_sigma_win, mu_lose, log_sigma_lose: [B] float.
        form: ``"nll"`` or ``"expected-bt"`` (see above).
        n_samples: number of draws per pair (>= 1); EditReward's released code uses 1000.
        generator: source of ε (must live on the inputs' device); ``None`` uses the global RNG.
        weight: optional [B] per-pair weights.

    Returns:
        Scalar (nats), mean (or weighted mean) over pairs.

    Reference: EditReward (003) §3.2 Eq. 4 / HPSv3 (``"nll"``); EditReward's released trainer
    (``"expected-bt"``).
    """
    if form not in ("nll", "expected-bt"):
        raise LossInputError(f"form must be 'nll' or 'expected-bt', got {form!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise LossInputError(f"n_samples must be an integer >= 1, got {n_samples!r}")
    diff, scale = _gaussian_pair(mu_win, log_sigma_win, mu_lose, log_sigma_lose)
    eps = torch.randn(
        (diff.shape[0], n_samples), generator=generator, device=diff.device, dtype=diff.dtype
    )
    z = diff.unsqueeze(-1) + scale.unsqueeze(-1) * eps
    if form == "expected-bt":
        per_pair = F.softplus(-z).mean(dim=-1)
    else:
        per_pair = math.log(n_samples) - torch.logsumexp(F.logsigmoid(z), dim=-1)
    return _weighted_mean(per_pair, weight, "mu_win")


def probit_ranking_loss(
    mu_win: Tensor,
    log_sigma_win: Tensor,
    mu_lose: Tensor,
    log_sigma_lose: Tensor,
    *,
    weight: Tensor | None = None,
) -> Tensor:
    """Thurstone Case V ranking loss ``−log Φ((μ_w − μ_l) / sqrt(σ_w² + σ_l²))``.

    ``Φ(·)`` is the exact probability ``P(s_w > s_l)`` that the preferred item's Gaussian
    score draw exceeds the other's, for independent scores ``s ~ N(μ, σ²)``; the loss is the
    negative log of it (Thurstone's comparative judgement with per-item variances), computed
    with :func:`torch.special.log_ndtr` (stable far in the tails).

    It is *not* a closed form of :func:`uncertainty_ranking_loss`: both of those forms put
    a logistic (Bradley–Terry) link on the score difference ``z`` and average over ``z``
    (``−log E[sigmoid(z)]`` or ``E[−log sigmoid(z)]``); this one has no logistic link, the
    comparison of the two draws *is* the outcome. All three agree only in the ordering they
    reward.

    Args:
        mu_win, log_sigma_win, mu_lose, log_sigma_lose: [B] float, ``σ = exp(log_sigma)``.
        weight: optional [B] per-pair weights.

    Returns:
        Scalar (nats), mean (or weighted mean) over pairs.

    Reference: Thurstone (1927) Case V; an alternative likelihood for the Gaussian scores of
    EditReward / HPSv3.
    """
    diff, scale = _gaussian_pair(mu_win, log_sigma_win, mu_lose, log_sigma_lose)
    return _weighted_mean(-torch.special.log_ndtr(diff / scale), weight, "mu_win")
