"""Token losses (DS-IEQA): token cross-entropy, the digit-distance term and TDRL; level-word
cross-entropy (Q-Align)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ieqa.errors import LossInputError
from ieqa.train.losses._checks import (
    _float_tensor,
    _int_tensor,
    _nonempty,
    _real,
)

#: DS-IEQA weights 10^-t of the digits of a score written "d0.d1d2".
DIGIT_WEIGHTS: tuple[float, float, float] = (1.0, 0.1, 0.01)

Normalisation = Literal["digits", "vocab"]


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
