"""RE-Reward (ReasonEdit appendix C.2): Huber + queue ranking + queue PLCC, and the score
queues."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ieqa.errors import LossInputError
from ieqa.train.losses._checks import (
    _float_tensor,
    _nonempty,
    _real,
    _same_shape,
)
from ieqa.train.losses.regression import huber_loss

#: RE-Reward queue capacities in rows. ReasonEdit (appendix C.4, Table 7) gives the rank
#: queue and the PLCC queue sizes of their own; the numbers did not survive the extracted
#: table, so these are the defaults of a public trainer with exactly those settings
#: (rank queue 4096, rank-label margin 0.03, PLCC queue 256). A rank queue makes many pairs
#: per step (batch x queue) at the cost of staler predictions; a PLCC queue only needs
#: enough rows for a stable correlation.
RE_REWARD_RANK_QUEUE_SIZE = 4096
RE_REWARD_PLCC_QUEUE_SIZE = 256


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
