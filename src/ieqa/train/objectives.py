"""Stage objectives: a batch of examples -> inputs -> loss (and its logged parts).

One function per objective kind; each takes the model, the stage's
:class:`~ieqa.train.data.BatchBuilder`, the examples of one micro-batch and a
:class:`LossState` (the RE-Reward rank and PLCC queues and the sampling generator, which
checkpoints save so that a resumed run computes the same losses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ieqa.data.combine import combine_dimensions
from ieqa.train import losses as L
from ieqa.train.recipe import RecipeError, StageConfig

__all__ = ["OBJECTIVE_LOSSES", "LossState", "compute_loss", "new_loss_state"]


@dataclass
class LossState:
    """Loss-side state carried across steps (saved in checkpoints): the sampling generator
    and, for RE-Reward, the rank and PLCC queues."""

    seed: int = 0
    rank_queue: L.ScoreQueue | None = None
    plcc_queue: L.ScoreQueue | None = None
    generator: torch.Generator = field(default_factory=torch.Generator)

    def __post_init__(self) -> None:
        self.generator.manual_seed(self.seed)
        self._device_generators: dict[str, torch.Generator] = {}

    def begin_micro_batch(self, seed: int) -> None:
        """Seed the sampling generator for the next micro-batch (the trainer seeds each
        micro-batch from its place in the step, :func:`ieqa.train.distributed.micro_batch_seed`,
        so that its draws do not depend on how many processes share the step)."""
        self.generator.manual_seed(seed)
        self._device_generators = {}
        self._micro_seed = seed

    def generator_for(self, device: torch.device) -> torch.Generator:
        """The sampling generator on ``device`` (the CPU one, or one seeded alike there)."""
        if device.type == "cpu":
            return self.generator
        key = str(device)
        if key not in self._device_generators:
            gen = torch.Generator(device=device)
            gen.manual_seed(getattr(self, "_micro_seed", self.seed))
            self._device_generators[key] = gen
        return self._device_generators[key]

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state(),
                "rank_queue": _queue_state(self.rank_queue),
                "plcc_queue": _queue_state(self.plcc_queue)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`. A checkpoint written before the queues were split
        holds one ``"queue"`` that served both terms: it fills both queues (each keeps its
        newest ``size`` rows)."""
        self.generator.set_state(state["generator"])
        shared = state.get("queue")
        for queue, key in ((self.rank_queue, "rank_queue"), (self.plcc_queue, "plcc_queue")):
            saved = state.get(key, shared)
            if queue is not None and saved is not None:
                queue.load_state_dict(saved)


def _queue_state(queue: L.ScoreQueue | None) -> dict[str, Any] | None:
    return queue.state_dict() if queue is not None else None


#: RE-Reward loss_args that size the queues rather than being passed to the loss.
QUEUE_ARGS = ("rank_queue_size", "plcc_queue_size")


def new_loss_state(stage: StageConfig, seed: int) -> LossState:
    """Fresh loss state for ``stage``: RE-Reward gets its rank and PLCC queues, sized by
    ``loss_args`` ``rank_queue_size`` / ``plcc_queue_size`` (defaults
    :data:`~ieqa.train.losses.RE_REWARD_RANK_QUEUE_SIZE` and
    :data:`~ieqa.train.losses.RE_REWARD_PLCC_QUEUE_SIZE`)."""
    if stage.loss != "re-reward":
        return LossState(seed=seed)
    args = stage.loss_args
    return LossState(
        seed=seed,
        rank_queue=L.ScoreQueue(int(args.get("rank_queue_size", L.RE_REWARD_RANK_QUEUE_SIZE))),
        plcc_queue=L.ScoreQueue(int(args.get("plcc_queue_size", L.RE_REWARD_PLCC_QUEUE_SIZE))))


def _loss_kwargs(stage: StageConfig, drop: Sequence[str] = ()) -> dict[str, Any]:
    return {k: v for k, v in stage.loss_args.items() if k not in drop}


# Each loss function of the table below: (model, builder, stage, samples, examples, state)
# -> (loss, logged parts).
LossFn = Callable[[Any, Any, StageConfig, Sequence[Any], Sequence[Any], LossState],
                  tuple[torch.Tensor, dict[str, float]]]


def _text(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
          examples: Sequence[Any], state: LossState) -> tuple[torch.Tensor, dict[str, float]]:
    batch = builder.text_batch([samples[i] for i in examples])
    out = model(batch)
    labels = batch["labels"].to(out["logits"].device)
    if stage.loss == "tdrl":
        return L.tdrl_loss(out["logits"], labels, batch["digit_positions"].to(labels.device),
                           builder.digit_ids, return_parts=True, **_loss_kwargs(stage))
    loss = L.token_ce_loss(out["logits"], labels)
    return loss, {"ce": float(loss.detach())}


def _head(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
          examples: Sequence[Any]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor, dict]:
    batch = builder.head_batch([samples[i] for i in examples],
                               with_text=stage.objective == "dual")
    out = model(batch)
    return out, out["head"], batch["targets"].to(out["head"].device), batch


def _dual(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
          examples: Sequence[Any], state: LossState) -> tuple[torch.Tensor, dict[str, float]]:
    out, pred, target, batch = _head(model, builder, stage, samples, examples)
    huber = L.huber_loss(pred, target, delta=float(stage.loss_args.get("delta", 1.0)))
    parts = {"huber": float(huber.detach())}
    total = stage.head_weight * huber
    if "logits" in out:
        ce = L.token_ce_loss(out["logits"], batch["labels"].to(pred.device))
        parts["ce"] = float(ce.detach())
        total = total + stage.text_weight * ce
    return total, parts


def _pointwise(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
               examples: Sequence[Any], state: LossState) -> tuple[torch.Tensor, dict[str, float]]:
    _, pred, target, _ = _head(model, builder, stage, samples, examples)
    if stage.loss == "re-reward":
        return L.re_reward_loss(pred, target, rank_queue=state.rank_queue,
                                plcc_queue=state.plcc_queue, return_parts=True,
                                **_loss_kwargs(stage, drop=QUEUE_ARGS))
    if stage.loss == "mse":
        loss = L.mse_loss(pred, target)
    else:
        loss = L.huber_loss(pred, target, **_loss_kwargs(stage))
    return loss, {stage.loss: float(loss.detach())}


def _pairs(model: Any, builder: Any, samples: Sequence[Any], examples: Sequence[Any]
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch = builder.pair_batch(samples, examples)
    head = model(batch)["head"]
    return head, batch["outcome"].to(head.device), batch["weight"].to(head.device)


def _pairwise_gaussian(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
                       examples: Sequence[Any], state: LossState
                       ) -> tuple[torch.Tensor, dict[str, float]]:
    head, outcome, weight = _pairs(model, builder, samples, examples)
    n = len(examples)
    d = head.shape[1] // 2
    mu, log_sigma = head.view(2 * n, d, 2).unbind(-1)
    mu, log_sigma = L.aggregate_gaussian(mu, log_sigma, stage.aggregation,
                                         stage.sigma_aggregation)
    a_wins = outcome == 0
    win = torch.where(a_wins, torch.arange(n, device=head.device),
                      torch.arange(n, 2 * n, device=head.device))
    lose = torch.where(a_wins, torch.arange(n, 2 * n, device=head.device),
                       torch.arange(n, device=head.device))
    args = (mu[win], log_sigma[win], mu[lose], log_sigma[lose])
    if stage.loss == "probit":
        loss = L.probit_ranking_loss(*args, weight=weight)
    else:
        loss = L.uncertainty_ranking_loss(*args, weight=weight,
                                          generator=state.generator_for(head.device),
                                          **_loss_kwargs(stage))
    return loss, {stage.loss: float(loss.detach())}


def _pairwise_scores(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
                     examples: Sequence[Any], state: LossState
                     ) -> tuple[torch.Tensor, dict[str, float]]:
    head, outcome, weight = _pairs(model, builder, samples, examples)
    n = len(examples)
    scores = combine_dimensions(head, stage.aggregation)
    s_a, s_b = scores[:n], scores[n:]
    if stage.loss == "bt-ties":
        loss = L.bt_ties_loss(s_a, s_b, outcome, weight=weight, **_loss_kwargs(stage))
    else:
        a_wins = outcome == 0
        loss = L.bradley_terry_loss(torch.where(a_wins, s_a, s_b), torch.where(a_wins, s_b, s_a),
                                    weight=weight)
    return loss, {stage.loss: float(loss.detach())}


#: The objective x loss table: every (objective, loss) pair a recipe may name, and the
#: function that computes it (``grpo`` stages run through :mod:`ieqa.train.grpo`).
OBJECTIVE_LOSSES: dict[tuple[str, str], LossFn] = {
    ("text", "ce"): _text, ("text", "tdrl"): _text,
    ("dual", "ce+huber"): _dual,
    ("pointwise", "mse"): _pointwise, ("pointwise", "huber"): _pointwise,
    ("pointwise", "re-reward"): _pointwise,
    ("pairwise", "bt"): _pairwise_scores, ("pairwise", "bt-ties"): _pairwise_scores,
    ("pairwise", "uncertainty"): _pairwise_gaussian, ("pairwise", "probit"): _pairwise_gaussian,
}


def compute_loss(model: Any, builder: Any, stage: StageConfig, samples: Sequence[Any],
                 examples: Sequence[Any], state: LossState) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss of one micro-batch of ``examples`` (sample indices or pairs into ``samples``),
    by :data:`OBJECTIVE_LOSSES`."""
    fn = OBJECTIVE_LOSSES.get((stage.objective, stage.loss))
    if fn is None:
        known = ", ".join(f"{o}/{loss}" for o, loss in OBJECTIVE_LOSSES)
        raise RecipeError(f"stage {stage.name!r}: no loss for objective {stage.objective!r} with "
                         f"loss {stage.loss!r}; known: {known}")
    return fn(model, builder, stage, samples, examples, state)
