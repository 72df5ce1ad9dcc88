"""Loss functions for training IEQA evaluators (pure torch, no model code).

Every function takes float tensors, returns a differentiable scalar tensor (the mean over the
batch unless its docstring says otherwise) and raises :class:`LossInputError` (a
``ValueError``) naming the offending argument for a wrong shape, dtype or parameter.

* Token-level (DS-IEQA): :func:`token_ce_loss`, :func:`digit_distance_loss`, :func:`tdrl_loss`
* Level words (Q-Align): :func:`level_ce_loss`
* Pointwise regression (EditHF, RE-Reward): :func:`mse_loss`, :func:`huber_loss`
* Pairwise preference: :func:`bradley_terry_loss`, :func:`bt_ties_loss`
* Gaussian scores (EditReward / HPSv3): :func:`uncertainty_ranking_loss` (two forms,
  ``"nll"`` and ``"expected-bt"``), :func:`probit_ranking_loss` (Thurstone Case V),
  :func:`aggregate_gaussian`
* RE-Reward composite (ReasonEdit): :func:`plcc_loss`, :class:`ScoreQueue`,
  :func:`pairwise_ranking_loss`, :func:`re_reward_loss` (separate rank and PLCC queues)

Optional per-sample ``weight`` arguments ([B], finite, non-negative, positive sum) turn the
batch mean into the weighted mean ``Σ w_b·l_b / Σ w_b``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ieqa.errors import LossInputError
from ieqa.scorers.overall import aggregate_gaussian

__all__ = [
    "DIGIT_WEIGHTS",
    "RE_REWARD_PLCC_QUEUE_SIZE",
    "RE_REWARD_RANK_QUEUE_SIZE",
    "LossInputError",
    "ScoreQueue",
    "aggregate_gaussian",
    "bradley_terry_loss",
    "bt_ties_loss",
    "digit_distance_loss",
    "huber_loss",
    "level_ce_loss",
    "mse_loss",
    "pairwise_ranking_loss",
    "plcc_loss",
    "probit_ranking_loss",
    "re_reward_loss",
    "tdrl_loss",
    "token_ce_loss",
    "uncertainty_ranking_loss",
]

#: DS-IEQA weights 10^-t of the digits of a score written "d0.d1d2".
DIGIT_WEIGHTS: tuple[float, float, float] = (1.0, 0.1, 0.01)

Normalisation = Literal["digits", "vocab"]
TiesModel = Literal["rao-kupper", "davidson"]
UncertaintyForm = Literal["nll", "expected-bt"]

#: RE-Reward queue capacities in rows. ReasonEdit (appendix C.4, Table 7) gives the rank
#: queue and the PLCC queue sizes of their own; the numbers did not survive the extracted
#: table, so these are the defaults of a public trainer with exactly those settings
#: (rank queue 4096, rank-label margin 0.03, PLCC queue 256). A rank queue makes many pairs
#: per step (batch x queue) at the cost of staler predictions; a PLCC queue only needs
#: enough rows for a stable correlation.
RE_REWARD_RANK_QUEUE_SIZE = 4096
RE_REWARD_PLCC_QUEUE_SIZE = 256


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


# --------------------------------------------------------------------------------------------
# DS-IEQA: token cross-entropy and digit-distance regression
# --------------------------------------------------------------------------------------------


def token_ce_loss(logits: Tensor, labels: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean next-token cross-entropy over the labelled positions (nats).

    Args:
        logits: [B, T, V] float; ``logits[:, t]`` predicts ``labels[:, t]`` (the caller has
            already shifted labels against logits).
        labels: [B, T] integer token ids in ``[0, V)`` or ``ignore_index``.
        ignore_index: label value of positions that are not counted.

    Returns:
        Scalar: the mean of ``−log softmax(logits[b, t])[labels[b, t]]`` over counted positions
        (a token mean, not a per-sample mean). With no counted position, a zero that still
        has a gradient (``logits.sum() * 0``).
    """
    logits = _float_tensor(logits, "logits", 3)
    labels = _int_tensor(labels, "labels", 2)
    if labels.shape != logits.shape[:2]:
        raise LossInputError(
            f"labels must have shape [B, T] = {tuple(logits.shape[:2])} matching logits, "
            f"got {tuple(labels.shape)}"
        )
    vocab = logits.shape[-1]
    mask = labels != ignore_index
    counted = labels[mask]
    if counted.numel() == 0:
        return logits.sum() * 0
    if bool(((counted < 0) | (counted >= vocab)).any()):
        raise LossInputError(
            f"labels must be token ids in [0, {vocab}) or ignore_index={ignore_index}"
        )
    return F.cross_entropy(logits[mask], counted)


def _digit_weights(weights: Sequence[float]) -> tuple[float, ...]:
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
        raise LossInputError("weights must be a non-empty sequence of numbers (one per digit)")
    return tuple(_real(w, "weights", minimum=0.0) for w in weights)


def digit_distance_loss(
    digit_logits: Tensor,
    targets: Tensor,
    *,
    weights: Sequence[float] = DIGIT_WEIGHTS,
    vocab_logsumexp: Tensor | None = None,
) -> Tensor:
    """DS-IEQA's score-regression term ``L_score`` of TDRL (digit-level expected distance).

    For a score written ``"d0.d1d2"`` the model emits one digit token per position t;
    ``L_score = mean_b Σ_t w_t Σ_k P_t(k)·|k − g_t|`` with ``w_t = 10^−t`` by default
    (:data:`DIGIT_WEIGHTS`) and ``g_t`` the ground-truth digit. Units: digit steps weighted by
    place value, so the loss is in units of the score (one step of d0 costs 1.0); each sample
    contributes at most ``9·Σ w_t``.

    Normalisation of ``P_t``:

    * ``vocab_logsumexp=None`` (default, "digits"): ``P_t = softmax`` over the ten digit logits.
    * ``vocab_logsumexp`` given ([B, n], the log-normaliser over the whole vocabulary at each
      digit position): ``P_t(k) = exp(logit_k − vocab_logsumexp)``, the literal reading of the
      paper. Then ``Σ_k P_t(k) < 1`` and the loss can be lowered simply by moving probability
      mass onto non-digit tokens without improving the digit distribution, which is why
      "digits" is the default.

    Args:
        digit_logits: [B, n, 10] float, logits of the tokens ``'0'..'9'`` at the n digit
            positions (n = ``len(weights)``, 3 by default).
        targets: [B, n] integer ground-truth digits in 0..9.
        weights: n non-negative per-digit weights.
        vocab_logsumexp: optional [B, n] float full-vocabulary log-normaliser (must be at least
            the logsumexp of the digit logits, since the vocabulary contains the digits).

    Returns:
        Scalar mean over the batch.

    Reference: DS-IEQA (token-level distance regression loss, TDRL).
    """
    w = _digit_weights(weights)
    n = len(w)
    digit_logits = _float_tensor(digit_logits, "digit_logits", 3)
    if digit_logits.shape[1:] != (n, 10):
        raise LossInputError(
            f"digit_logits must have shape [B, {n}, 10] (n = len(weights)), "
            f"got {tuple(digit_logits.shape)}"
        )
    targets = _int_tensor(targets, "targets", 2)
    if targets.shape != digit_logits.shape[:2]:
        raise LossInputError(
            f"targets must have shape {tuple(digit_logits.shape[:2])}, got {tuple(targets.shape)}"
        )
    _nonempty(digit_logits, "digit_logits")
    if bool(((targets < 0) | (targets > 9)).any()):
        raise LossInputError("targets must be digits in 0..9")
    if vocab_logsumexp is None:
        log_p = F.log_softmax(digit_logits, dim=-1)
    else:
        lse = _float_tensor(vocab_logsumexp, "vocab_logsumexp", 2)
        if lse.shape != targets.shape:
            raise LossInputError(
                f"vocab_logsumexp must have shape {tuple(targets.shape)}, got {tuple(lse.shape)}"
            )
        digit_lse = torch.logsumexp(digit_logits.detach(), dim=-1)
        tol = max(1e-4, 8 * torch.finfo(digit_logits.dtype).eps) * (1 + digit_lse.abs())
        if bool((lse.detach().to(digit_lse) < digit_lse - tol).any()):
            raise LossInputError(
                "vocab_logsumexp must be >= the logsumexp of the digit logits "
                "(it normalises over a vocabulary that contains the digits)"
            )
        log_p = digit_logits - lse.to(digit_logits.dtype).unsqueeze(-1)
    k = torch.arange(10, device=digit_logits.device, dtype=digit_logits.dtype)
    dist = (k - targets.to(digit_logits.dtype).unsqueeze(-1)).abs()  # [B, n, 10]
    per_digit = (log_p.exp() * dist).sum(dim=-1)  # [B, n]
    wt = torch.tensor(w, device=digit_logits.device, dtype=digit_logits.dtype)
    return (per_digit * wt).sum(dim=-1).mean()


def _token_ids(digit_token_ids: object) -> list[int]:
    if isinstance(digit_token_ids, (Tensor, np.ndarray)):
        digit_token_ids = digit_token_ids.tolist()
    if isinstance(digit_token_ids, (str, bytes)) or not isinstance(digit_token_ids, Sequence):
        raise LossInputError("digit_token_ids must be a sequence of 10 token ids")
    try:
        if any(isinstance(i, bool) for i in digit_token_ids):
            raise TypeError
        ids = [operator.index(i) for i in digit_token_ids]
    except TypeError:
        raise LossInputError(
            f"digit_token_ids must be integer token ids, got {list(digit_token_ids)!r}"
        ) from None
    if len(ids) != 10:
        raise LossInputError(f"digit_token_ids must hold 10 token ids, got {len(ids)}")
    return ids


def tdrl_loss(
    logits: Tensor,
    labels: Tensor,
    digit_positions: Tensor,
    digit_token_ids: Sequence[int] | Tensor | np.ndarray,
    *,
    score_weight: float = 1.0,
    normalisation: Normalisation = "digits",
    digit_weights: Sequence[float] = DIGIT_WEIGHTS,
    ignore_index: int = -100,
    return_parts: bool = False,
) -> Tensor | tuple[Tensor, dict[str, float]]:
    """DS-IEQA token-level distance regression loss (TDRL).

    ``L_TDRL = L_CE(non-digit tokens) + score_weight · L_score(digit positions)``, where
    ``L_CE`` is :func:`token_ce_loss` over every labelled position that is not a digit position
    (a token mean) and ``L_score`` is :func:`digit_distance_loss` on the logits of the ten digit
    tokens at the digit positions (a sample mean).

    Args:
        logits: [B, T, V] float; ``logits[:, t]`` predicts ``labels[:, t]`` (already shifted).
        labels: [B, T] integer token ids or ``ignore_index``.
        digit_positions: [B, n] integer, ``digit_positions[b, t]`` is the index into T whose
            label is the t-th digit of the score (n = ``len(digit_weights)``, 3 for "d0.d1d2").
            Labels there must be digit token ids.
        digit_token_ids: the 10 distinct token ids of ``'0'..'9'``, in that order (a sequence
            or a 1-D torch / numpy integer array).
        score_weight: non-negative weight of ``L_score``.
        normalisation: ``"digits"`` (softmax over the digit logits, default) or ``"vocab"``
            (full-vocabulary softmax, see :func:`digit_distance_loss` for why it is not the
            default).
        digit_weights: per-digit weights, default :data:`DIGIT_WEIGHTS` = 10^−t.
        ignore_index: label value of unlabelled positions (prompt, padding).
        return_parts: also return ``{"ce": float, "score": float}`` (unweighted terms).

    Returns:
        Scalar total, or ``(total, parts)`` with ``return_parts=True``.

    Reference: DS-IEQA.
    """
    logits = _float_tensor(logits, "logits", 3)
    labels = _int_tensor(labels, "labels", 2)
    batch, length, vocab = logits.shape
    if labels.shape != (batch, length):
        raise LossInputError(
            f"labels must have shape [B, T] = {(batch, length)}, got {tuple(labels.shape)}"
        )
    _nonempty(logits, "logits")
    if normalisation not in ("digits", "vocab"):
        raise LossInputError(f"normalisation must be 'digits' or 'vocab', got {normalisation!r}")
    score_weight = _real(score_weight, "score_weight", minimum=0.0)
    w = _digit_weights(digit_weights)
    n = len(w)

    ids = _token_ids(digit_token_ids)
    if len(set(ids)) != 10:
        raise LossInputError(f"digit_token_ids must be distinct, got {ids!r}")
    if any(i < 0 or i >= vocab for i in ids):
        raise LossInputError(f"digit_token_ids must lie in [0, V={vocab}), got {ids!r}")
    if ignore_index in ids:
        raise LossInputError(f"ignore_index={ignore_index} must not be a digit token id")

    pos = _int_tensor(digit_positions, "digit_positions", 2)
    if pos.shape != (batch, n):
        raise LossInputError(
            f"digit_positions must have shape [B, n] = {(batch, n)} "
            f"(n = len(digit_weights)), got {tuple(pos.shape)}"
        )
    pos = pos.to(labels.device)
    if bool(((pos < 0) | (pos >= length)).any()):
        raise LossInputError(f"digit_positions must be indices in [0, T={length})")
    if n > 1 and bool((pos.sort(dim=1).values.diff(dim=1) == 0).any()):
        raise LossInputError("digit_positions must be distinct within each sample")

    id_t = torch.tensor(ids, device=labels.device, dtype=torch.long)
    at_digits = labels.gather(1, pos)  # [B, n]
    match = at_digits.unsqueeze(-1) == id_t  # [B, n, 10]
    if not bool(match.any(dim=-1).all()):
        raise LossInputError(
            "labels at digit_positions must be digit token ids (digit_token_ids); "
            f"got {at_digits.tolist()}"
        )
    targets = (match.long() * torch.arange(10, device=labels.device)).sum(dim=-1)

    ce_labels = labels.scatter(1, pos, ignore_index)
    ce = token_ce_loss(logits, ce_labels, ignore_index=ignore_index)

    gather_idx = pos.to(logits.device).unsqueeze(-1).expand(batch, n, vocab)
    at = logits.gather(1, gather_idx)  # [B, n, V]
    digit_logits = at.index_select(-1, id_t.to(logits.device))  # [B, n, 10]
    lse = torch.logsumexp(at, dim=-1) if normalisation == "vocab" else None
    score = digit_distance_loss(
        digit_logits, targets.to(logits.device), weights=w, vocab_logsumexp=lse
    )
    total = ce + score_weight * score
    if return_parts:
        return total, {"ce": float(ce.detach()), "score": float(score.detach())}
    return total


# --------------------------------------------------------------------------------------------
# Q-Align level words
# --------------------------------------------------------------------------------------------


def level_ce_loss(level_logits: Tensor, targets: Tensor, *, label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy restricted to the five level-word logits (Q-Align style), in nats.

    Args:
        level_logits: [B, 5] float, the logits of the five level words at the answer position.
            The column order is the caller's choice (e.g. bad, poor, fair, good, excellent).
        targets: [B] integer in 0..4, indexing the same column order as ``level_logits``.
        label_smoothing: in [0, 1], as in :func:`torch.nn.functional.cross_entropy`.

    Returns:
        Scalar mean over the batch.

    Reference: Q-Align (Wu et al. 2024), softmax over the level words only.
    """
    level_logits = _float_tensor(level_logits, "level_logits", 2)
    if level_logits.shape[1] != 5:
        raise LossInputError(
            f"level_logits must have shape [B, 5], got {tuple(level_logits.shape)}"
        )
    targets = _int_tensor(targets, "targets", 1)
    if targets.shape[0] != level_logits.shape[0]:
        raise LossInputError(
            f"targets must have shape [B] = ({level_logits.shape[0]},), got {tuple(targets.shape)}"
        )
    _nonempty(level_logits, "level_logits")
    if bool(((targets < 0) | (targets > 4)).any()):
        raise LossInputError("targets must be level indices in 0..4")
    smoothing = _real(label_smoothing, "label_smoothing", minimum=0.0)
    if smoothing > 1.0:
        raise LossInputError(f"label_smoothing must be in [0, 1], got {smoothing}")
    return F.cross_entropy(level_logits, targets, label_smoothing=smoothing)


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


# --------------------------------------------------------------------------------------------
# RE-Reward (ReasonEdit appendix C.2): Huber + queue ranking + queue PLCC
# --------------------------------------------------------------------------------------------


def _plcc_columns(pred: Tensor, target: Tensor, eps: float) -> Tensor:
    """Pearson correlation of each column of [N, D] ``pred`` vs ``target`` -> [D]."""
    pc = pred - pred.mean(dim=0, keepdim=True)
    tc = target - target.mean(dim=0, keepdim=True)
    cov = (pc * tc).sum(dim=0)
    return cov / torch.sqrt(((pc * pc).sum(dim=0) + eps) * ((tc * tc).sum(dim=0) + eps))


def plcc_loss(pred: Tensor, target: Tensor, *, eps: float = 1e-8) -> Tensor:
    """``1 − PLCC(pred, target)``, in [0, 2]; 0 for a perfect positive linear relation.

    ``r = Σ p̃·t̃ / sqrt((Σ p̃² + eps)(Σ t̃² + eps))`` with centred ``p̃, t̃``; ``eps`` keeps the
    value and gradient finite when either side is constant (then ``r = 0``).

    Args:
        pred, target: [N] float, N >= 2.
        eps: > 0 guard added to both sums of squares (squared score units).

    Returns:
        Scalar (not a batch mean: the correlation is over all N items).

    Reference: RE-Reward (ReasonEdit appendix C.2) PLCC term.
    """
    pred = _float_tensor(pred, "pred", 1)
    target = _float_tensor(target, "target", 1)
    _same_shape(pred, "pred", target, "target")
    if pred.shape[0] < 2:
        raise LossInputError(
            f"pred must have at least 2 items for a correlation, got {pred.shape[0]}"
        )
    eps = _real(eps, "eps", minimum=0.0, strict=True)
    r = _plcc_columns(pred.unsqueeze(1), target.to(pred.dtype).unsqueeze(1), eps)
    return 1 - r.squeeze(0)


class ScoreQueue:
    """FIFO memory of past (pred, target) score rows for queue-based ranking / PLCC losses.

    Rows are stored detached (no gradient reaches past batches). ``size`` is the capacity in
    rows; ``size=0`` disables the queue (pushes are ignored). The stored rows follow the dtype
    and device of the latest push. Save :meth:`state_dict` with the training checkpoint and
    :meth:`load_state_dict` on resume.

    Reference: RE-Reward (ReasonEdit appendix C.2).
    """

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise LossInputError(f"size must be an integer >= 0, got {size!r}")
        self.size = size
        self._pred: Tensor | None = None
        self._target: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self._pred is None else int(self._pred.shape[0])

    def __repr__(self) -> str:
        dims = None if self._pred is None else int(self._pred.shape[1])
        return f"ScoreQueue(size={self.size}, len={len(self)}, dims={dims})"

    @property
    def dims(self) -> int | None:
        """Number of score dimensions D of the stored rows (``None`` before the first push)."""
        return None if self._pred is None else int(self._pred.shape[1])

    def clear(self) -> None:
        """Drop every stored row."""
        self._pred = None
        self._target = None

    def push(self, pred: Tensor, target: Tensor) -> None:
        """Append [B, D] ``pred`` / ``target`` rows (detached), keeping the newest ``size``."""
        pred = _float_tensor(pred, "pred", 2)
        target = _float_tensor(target, "target", 2)
        _same_shape(pred, "pred", target, "target")
        if self._pred is not None and pred.shape[1] != self._pred.shape[1]:
            raise LossInputError(
                f"pred must have {self._pred.shape[1]} columns like the queued rows, "
                f"got shape {tuple(pred.shape)}"
            )
        if self.size == 0:
            return
        p = pred.detach()
        t = target.detach().to(p.dtype)
        if self._pred is not None and self._target is not None:
            p = torch.cat([self._pred.to(p), p])
            t = torch.cat([self._target.to(t), t])
        self._pred = p[-self.size :].clone()
        self._target = t[-self.size :].clone()

    def tensors(self) -> tuple[Tensor, Tensor]:
        """``(pred [M, D], target [M, D])``, oldest row first (M = 0 when empty)."""
        if self._pred is None or self._target is None:
            return torch.empty(0, 0), torch.empty(0, 0)
        return self._pred, self._target

    def state_dict(self) -> dict[str, Any]:
        """``{"size", "pred", "target"}`` with CPU copies of the rows."""
        pred, target = self.tensors()
        return {"size": self.size, "pred": pred.cpu().clone(), "target": target.cpu().clone()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore rows from :meth:`state_dict`. The capacity stays ``self.size``: when the
        saved queue holds more rows, only the newest ``self.size`` are kept."""
        if not isinstance(state, Mapping) or not {"pred", "target"} <= set(state):
            raise LossInputError("state must be a mapping with 'pred' and 'target' entries")
        pred = _float_tensor(state["pred"], "state['pred']", 2)
        target = _float_tensor(state["target"], "state['target']", 2)
        _same_shape(pred, "state['pred']", target, "state['target']")
        if pred.shape[0] == 0 or self.size == 0:
            self.clear()
            return
        self._pred = pred[-self.size :].detach().clone()
        self._target = target[-self.size :].detach().to(self._pred.dtype).clone()


def pairwise_ranking_loss(
    pred: Tensor,
    target: Tensor,
    *,
    queue_pred: Tensor | None = None,
    queue_target: Tensor | None = None,
    margin: float = 0.0,
) -> Tensor:
    """Pairwise softplus ranking loss over batch pairs and batch-vs-queue pairs.

    Pairs: every unordered pair ``i < j`` of the batch, plus every ``(i, q)`` with i in the
    batch and q in the queue. A pair counts when ``|t_i − t_j| > margin`` and contributes
    ``softplus(−sign(t_i − t_j)·(p_i − p_j))`` (the Bradley–Terry loss of the pair ordered by
    target). Queue predictions are treated as constants (detached).

    Args:
        pred, target: [B] float predictions and ground-truth scores of the batch.
        queue_pred, queue_target: optional [M] float rows from past batches (both or neither).
        margin: >= 0, minimal target gap of a counted pair (score units).

    Returns:
        Scalar mean over counted pairs (nats); a zero that still has a gradient when no pair
        counts.

    Reference: RE-Reward (ReasonEdit appendix C.2) ranking term.
    """
    pred = _float_tensor(pred, "pred", 1)
    target = _float_tensor(target, "target", 1)
    _same_shape(pred, "pred", target, "target")
    _nonempty(pred, "pred")
    margin = _real(margin, "margin", minimum=0.0)
    target = target.to(pred.dtype)
    idx = torch.triu_indices(pred.shape[0], pred.shape[0], offset=1, device=pred.device)
    dp = [pred[idx[0]] - pred[idx[1]]]
    dt = [target[idx[0]] - target[idx[1]]]
    if (queue_pred is None) != (queue_target is None):
        raise LossInputError("queue_pred and queue_target must be given together")
    if queue_pred is not None and queue_target is not None:
        qp = _float_tensor(queue_pred, "queue_pred", 1)
        qt = _float_tensor(queue_target, "queue_target", 1)
        _same_shape(qp, "queue_pred", qt, "queue_target")
        qp = qp.detach().to(pred)
        qt = qt.detach().to(pred)
        dp.append((pred.unsqueeze(1) - qp.unsqueeze(0)).reshape(-1))
        dt.append((target.unsqueeze(1) - qt.unsqueeze(0)).reshape(-1))
    diff_p = torch.cat(dp)
    diff_t = torch.cat(dt)
    keep = diff_t.abs() > margin
    if not bool(keep.any()):
        return pred.sum() * 0
    return F.softplus(-torch.sign(diff_t[keep]) * diff_p[keep]).mean()


def _queue_rows(queue: ScoreQueue | None, name: str, like: Tensor) -> tuple[Tensor, Tensor] | None:
    """The rows of ``queue`` as constants on ``like``'s device and dtype (``None`` if empty)."""
    if queue is None:
        return None
    if not isinstance(queue, ScoreQueue):
        raise LossInputError(f"{name} must be a ScoreQueue or None, got {type(queue).__name__}")
    if len(queue) == 0:
        return None
    if queue.dims != like.shape[1]:
        raise LossInputError(
            f"{name} holds rows with {queue.dims} dimensions, pred has {like.shape[1]}"
        )
    qp, qt = queue.tensors()
    return qp.detach().to(like), qt.detach().to(like)


def re_reward_loss(
    pred: Tensor,
    target: Tensor,
    *,
    rank_queue: ScoreQueue | None = None,
    plcc_queue: ScoreQueue | None = None,
    huber_weight: float = 1.0,
    rank_weight: float = 1.0,
    plcc_weight: float = 1.0,
    delta: float = 1.0,
    margin: float = 0.0,
    return_parts: bool = False,
) -> Tensor | tuple[Tensor, dict[str, float]]:
    """RE-Reward composite loss (ReasonEdit appendix C.2).

    ``huber_weight·Huber(pred, target)
    + rank_weight·mean_d pairwise_ranking(batch vs batch + rank_queue)
    + plcc_weight·mean_d (1 − PLCC(batch ∪ plcc_queue))``, per score dimension d.

    The ranking term and the PLCC term read separate queues, each with its own capacity
    (ReasonEdit Table 7 sizes them separately; ieqa's recipe defaults are
    :data:`RE_REWARD_RANK_QUEUE_SIZE` and :data:`RE_REWARD_PLCC_QUEUE_SIZE`). Queue rows are
    constants (detached). The batch is pushed into each queue after the loss is computed, so
    a batch never meets itself in a queue; passing one queue object as both pushes it once.
    When the batch plus the PLCC queue hold fewer than two rows, the PLCC term is a zero
    with a gradient.

    Args:
        pred, target: [B, D] float predicted and ground-truth scores (D dimensions).
        rank_queue: optional :class:`ScoreQueue` of past rows for the ranking term (same D,
            updated in place).
        plcc_queue: optional :class:`ScoreQueue` of past rows for the PLCC term (same D,
            updated in place).
        huber_weight, rank_weight, plcc_weight: non-negative term weights.
        delta: Huber switch point (> 0, score units).
        margin: minimal target gap of a ranked pair (>= 0, score units).
        return_parts: also return ``{"huber", "rank", "plcc"}`` (unweighted terms, floats).

    Returns:
        Scalar total, or ``(total, parts)`` with ``return_parts=True``.
    """
    pred = _float_tensor(pred, "pred", 2)
    target = _float_tensor(target, "target", 2)
    _same_shape(pred, "pred", target, "target")
    _nonempty(pred, "pred")
    dims = pred.shape[1]
    if dims == 0:
        raise LossInputError("pred must have at least one score dimension (D >= 1)")
    w_huber = _real(huber_weight, "huber_weight", minimum=0.0)
    w_rank = _real(rank_weight, "rank_weight", minimum=0.0)
    w_plcc = _real(plcc_weight, "plcc_weight", minimum=0.0)
    ranked = _queue_rows(rank_queue, "rank_queue", pred)
    correlated = _queue_rows(plcc_queue, "plcc_queue", pred)
    target = target.to(pred.dtype)

    huber = huber_loss(pred, target, delta=delta)

    rank = torch.stack(
        [
            pairwise_ranking_loss(
                pred[:, d],
                target[:, d],
                queue_pred=None if ranked is None else ranked[0][:, d],
                queue_target=None if ranked is None else ranked[1][:, d],
                margin=margin,
            )
            for d in range(dims)
        ]
    ).mean()

    all_pred = pred if correlated is None else torch.cat([pred, correlated[0]])
    all_target = target if correlated is None else torch.cat([target, correlated[1]])
    if all_pred.shape[0] >= 2:
        plcc = (1 - _plcc_columns(all_pred, all_target, 1e-8)).mean()
    else:
        plcc = pred.sum() * 0

    total = w_huber * huber + w_rank * rank + w_plcc * plcc
    for queue in {id(q): q for q in (rank_queue, plcc_queue) if q is not None}.values():
        queue.push(pred, target)
    if return_parts:
        parts = {
            "huber": float(huber.detach()),
            "rank": float(rank.detach()),
            "plcc": float(plcc.detach()),
        }
        return total, parts
    return total
