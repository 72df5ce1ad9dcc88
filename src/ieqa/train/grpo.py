"""The ``grpo`` stage: ReasonEdit stage 2 on TRL's ``GRPOTrainer``.

The dual-head model's text side (the critique) is trained with GRPO: for each prompt
(source, edited, instruction rendered with the stage's template, exactly as the scorers
render it) TRL samples ``num_generations`` critiques, a critique scorer rewards each
(weighted logicality / accuracy / usefulness through a reward rule), and the policy
moves towards the critiques that beat their group's mean, held near the reference policy
by the KL term ``beta``. The reward goes through :func:`ieqa.rewards.trl_reward_func`, so an
in-process scorer (:class:`~ieqa.rewards.LocalRewarder`) and an ``ieqa serve`` URL
(:class:`~ieqa.rewards.RewardClient`) are one code path.

**The TRL hook.** :func:`trainer_class` (built on first use) subclasses ``GRPOTrainer`` and overrides
``compute_loss`` (the ``transformers.Trainer`` override point that ``GRPOTrainer`` itself
implements) to add ``aux_huber_weight * Huber(head(prefill), MOS)`` on a batch of training
samples that have MOS, drawn alongside each GRPO micro-batch; and ``log`` to forward
TRL's metrics (``reward``, ``reward_std``, ``kl``, ...) plus ``aux_huber`` to the run's
``metrics.jsonl``. TRL's generation, advantage and loss code runs unchanged.

**LoRA and the reference policy.** With ``adapter.kind: full`` or ``none`` the stage adds
its own LoRA (``grpo.lora_r``, ``lora_alpha``, ``lora_targets``) on top of the current
weights, so TRL's reference policy (the adapter disabled) is the model as the previous
stage left it (ReasonEdit: the SFT model); the adapter is merged into the weights after
the stage. With ``adapter.kind: lora`` GRPO trains the recipe's adapter, and the
reference policy is the base model without it.

**The head.** The regression head trains only through the auxiliary Huber term (its
parameters join TRL's optimiser, learning rate ``head.lr``); its held-out SRCC is
evaluated before and after the stage, and every ``eval.every_steps``.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from ieqa.errors import IeqaError
from ieqa.train.recipe import GRPOSettings, Recipe, RewardSource, StageConfig

if TYPE_CHECKING:
    from ieqa.data.schema import EditSample

__all__ = ["GRPOStageError", "build_rewarder", "reward_function", "grpo_prompt",
           "run_grpo", "run_grpo_stage", "trainer_class"]

log = logging.getLogger(__name__)

class GRPOStageError(IeqaError):
    """A ``grpo`` stage cannot run (the message says what to change)."""


def _import(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise GRPOStageError(f"reward.scorer {spec!r}: cannot import it ({exc}); give a "
                             "registered scorer name (ieqa list scorers) or module:Class") from exc


def build_rewarder(source: RewardSource) -> Any:
    """The rewarder of ``source``: a :class:`~ieqa.rewards.LocalRewarder` around the scorer
    (with ``source.weights`` as the reward rule), or a :class:`~ieqa.rewards.RewardClient`
    to ``source.url`` (its ``critique`` method; :func:`reward_function` applies the
    weights to the scores the server returns)."""
    from ieqa.rewards import LocalRewarder

    if source.url is not None:
        from ieqa.rewards import RewardClient

        return RewardClient(source.url)
    name = str(source.scorer)
    if ":" in name:
        scorer = _import(name)(**source.options)
    else:
        from ieqa.scorers import create_scorer

        scorer = create_scorer(name, **source.options)
    missing = sorted(set(source.weights) - set(scorer.dimensions))
    if missing:
        raise GRPOStageError(f"reward.weights name {missing}, which scorer {name!r} does not "
                             f"report (it reports {list(scorer.dimensions)})")
    return LocalRewarder(scorer, rule=source.rule())


def reward_function(source: RewardSource, rewarder: Any = None) -> Callable[..., list[Any]]:
    """A TRL reward function over the stage's dataset rows.

    In-process (``source.scorer``): :func:`ieqa.rewards.trl_reward_func`; each score item is
    the sample (its source and edited image: a path, or the image from TRL's ``images``
    column) with its ``meta`` (the ground truth a programmatic judge reads) and the
    completion in ``meta["completion"]``; the reward is ``source.weights`` over the scorer's
    logicality, accuracy and usefulness.

    At a URL (``source.url``): :func:`ieqa.rewards.trl_critique_func`; each completion is
    sent as a critique to the server's ``POST /v1/critique`` (``ieqa serve --scorer
    critique``), and ``source.weights`` are applied to the three scores it returns, so the
    reward is the same rule as in-process. The ground truth stays on this side: a judge
    that needs it (``shapesedit-judge``) runs in-process only.
    """
    from ieqa.rewards import trl_critique_func, trl_reward_func

    def image(row: dict[str, Any], role: str) -> Any:
        if row[role] is not None:
            return row[role]
        slot = row[f"{role}_slot"]
        return row["images"][slot] if slot is not None and slot >= 0 else None

    def item(prompt: str, completion: str, row: dict[str, Any]) -> dict[str, Any]:
        meta = {**json.loads(row["truth"]), "completion": completion, "prompt": prompt}
        return {"id": row["sample_id"], "source": image(row, "source"),
                "edited": image(row, "edited"), "instruction": row["instruction"],
                "meta": meta}

    rewarder = rewarder if rewarder is not None else build_rewarder(source)
    if source.url is not None:
        return trl_critique_func(rewarder, rule=source.rule(), item_fn=item,
                                 name="critique_reward")
    return trl_reward_func(rewarder, item_fn=item, name="critique_reward")


def grpo_prompt(template: Any, sample: EditSample) -> tuple[list[dict[str, Any]], list[Any]]:
    """``sample``'s prompt as a TRL conversational prompt and its images (TRL's ``images``
    column fills the ``{"type": "image"}`` placeholders in order): the messages the
    scorers render (:func:`~ieqa.scorers.vlm.base.render_sample`)."""
    from ieqa.scorers.vlm.base import render_sample

    prompt = render_sample(template, sample)
    if prompt.answer_prefix:
        raise GRPOStageError(f"template {template.name!r} has an answer_prefix, which TRL "
                             "cannot append to a conversational prompt; use a critique "
                             "template without one (reasonedit-critique)")
    return prompt.messages(), list(prompt.images)


def _path(value: Any) -> str | None:
    """A file reference as a string; ``None`` for in-memory images (taken from the row's
    ``images`` instead)."""
    from pathlib import Path

    return str(value) if isinstance(value, (str, Path)) else None


def _dataset(template: Any, samples: Sequence[EditSample]) -> Any:
    from datasets import Dataset

    slots = list(template.images)
    rows = []
    for s in samples:
        messages, images = grpo_prompt(template, s)
        rows.append({"prompt": messages, "images": images, "sample_id": s.id,
                     "source": _path(s.source), "edited": _path(s.edited),
                     "source_slot": slots.index("source") if "source" in slots else -1,
                     "edited_slot": slots.index("edited") if "edited" in slots else -1,
                     "instruction": s.instruction, "truth": json.dumps(s.meta, default=str)})
    return Dataset.from_list(rows)


@functools.cache
def trainer_class() -> type:
    """TRL's ``GRPOTrainer`` with ieqa's hook (the auxiliary Huber term on the head), built
    once on first use so that TRL is imported only by a grpo stage."""
    from trl import GRPOTrainer

    class _Trainer(GRPOTrainer):  # type: ignore[misc]
        """``GRPOTrainer`` plus the auxiliary Huber loss (``compute_loss``) and log
        forwarding (``log``); see :mod:`ieqa.train.grpo`."""

        def __init__(self, *args: Any, aux_loss: Callable[[], torch.Tensor | None],
                     aux_weight: float, on_log: Callable[[dict[str, Any]], None],
                     **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._aux_loss, self._aux_weight, self._on_log = aux_loss, aux_weight, on_log
            self._aux_values: list[float] = []

        def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> torch.Tensor:
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if self._aux_weight > 0 and model.training:
                aux = self._aux_loss()
                if aux is not None:
                    self._aux_values.append(float(aux.detach()))
                    loss = loss + self._aux_weight * aux.to(loss.device)
            return loss

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if self._aux_values:
                logs["aux_huber"] = sum(self._aux_values) / len(self._aux_values)
                self._aux_values = []
            super().log(logs, start_time)
            self._on_log(dict(logs))

    return _Trainer


def run_grpo_stage(run: Any, recipe: Recipe, index: int, stage: StageConfig, model: Any,
                   vlm: Any, data: Any, global_step: int, result: Any,
                   evaluate_head: Callable[[str, int, int], dict[str, float]],
                   ) -> int:
    """Run ``stage`` (objective ``grpo``) on ``model``; returns the new global step.

    ``run`` logs records, ``evaluate_head(when, global_step, stage_step)`` computes and
    logs the head's held-out metrics. Called by :func:`ieqa.train.train`.
    """
    try:
        from trl import GRPOConfig
    except ImportError as exc:
        raise GRPOStageError(f"a grpo stage needs TRL, one of ieqa's dependencies: pip install "
                             f"'trl>=1.0' ({exc})"
                             ) from exc
    from ieqa.train import objectives
    from ieqa.train.data import BatchBuilder, label_column
    from ieqa.train.stages import stage_template

    settings: GRPOSettings = stage.grpo  # type: ignore[assignment]
    template = stage_template(stage)
    samples = list(data.train)
    if not samples:
        raise GRPOStageError(f"stage {stage.name!r}: no training samples")
    reward = reward_function(settings.reward)
    dataset = _dataset(template, samples)

    # the MOS batches of the auxiliary Huber term, through the dual objective's head loss
    head_stage = stage.model_copy(update={"objective": "dual", "loss": "ce+huber",
                                          "grpo": None, "head_weight": 1.0,
                                          "loss_args": {"delta": settings.huber_delta}})
    builder = BatchBuilder(vlm, head_stage, template, data.scale, recipe.data.explanation_key,
                           cache_mb=recipe.data.cache_mb, ranges=data.ranges)
    with_mos = [i for i, s in enumerate(samples)
                if all(label_column(stage, d) in s.scores for d in stage.dimensions)]
    if settings.aux_huber_weight > 0 and model.head is not None and not with_mos:
        log.warning("stage %s: no training sample has MOS for %s; the auxiliary Huber loss "
                    "is off", stage.name, stage.dimensions)
    # each process draws its own auxiliary batches (process 0 those of a single process)
    procs = run.procs
    generator = torch.Generator().manual_seed(recipe.optim.seed + 1000 * index
                                              + 7919 * procs.rank)
    aux_bs = settings.aux_batch_size or recipe.optim.batch_size

    policy, merge_after = _policy(recipe, settings, model)

    def aux_loss() -> torch.Tensor | None:
        if model.head is None or not with_mos:
            return None
        pick = torch.randint(len(with_mos), (aux_bs,), generator=generator).tolist()
        batch = builder.head_batch([samples[with_mos[i]] for i in pick])
        out = model(batch)
        pred, target = out["head"], batch["targets"].to(out["head"].device)
        return objectives.L.huber_loss(pred, target, delta=settings.huber_delta)

    lr = settings.learning_rate or recipe.adapter.lr or recipe.optim.lr
    params = [p for p in policy.parameters() if p.requires_grad]
    groups = [{"params": params, "lr": lr}]
    head_ids = set()
    if model.head is not None:
        head_ids = {id(p) for p in model.head.parameters()}
        groups[0]["params"] = [p for p in params if id(p) not in head_ids]
        groups.append({"params": list(model.head.parameters()),
                       "lr": recipe.head.lr or recipe.optim.lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=recipe.optim.weight_decay)

    # every process takes prompts_per_step prompts a step
    steps = stage.max_steps or max(1, math.ceil(stage.epochs * len(samples)
                                                / (settings.prompts_per_step * procs.size)))
    G = settings.num_generations
    args = {"output_dir": str(run.out / "grpo" / stage.name), "max_steps": steps,
            "per_device_train_batch_size": G * settings.prompts_per_step,
            "gradient_accumulation_steps": 1, "num_generations": G, "beta": settings.beta,
            "learning_rate": lr, "lr_scheduler_type": "constant", "warmup_steps": 0,
            "max_completion_length": settings.max_completion_length,
            "temperature": settings.temperature, "logging_steps": 1, "save_strategy": "no",
            "report_to": list(recipe.output.report_to) or "none", "seed": recipe.optim.seed, "remove_unused_columns": False,
            "use_cpu": not torch.cuda.is_available(), "bf16": False, "fp16": False,
            "max_grad_norm": recipe.optim.max_grad_norm or 0.0,
            "disable_tqdm": not run.progress, **settings.trl_args}
    try:
        config = GRPOConfig(**args)
    except (TypeError, ValueError) as exc:
        raise GRPOStageError(f"stage {stage.name!r}: TRL rejects the GRPO settings: {exc}"
                             ) from exc
    state = {"step": 0}
    every = recipe.eval.every_steps

    def forward(logs: dict[str, Any]) -> None:
        if "train_runtime" in logs:  # TRL's end-of-training summary
            return
        state["step"] += 1
        record = {"stage": stage.name, "global_step": global_step + state["step"],
                  "stage_step": state["step"], "event": "step", **logs}
        run.log(record)
        result.losses.append((global_step + state["step"], float(logs.get("loss", 0.0))))
        if every and state["step"] % every == 0 and state["step"] < steps:
            evaluate_head("eval", global_step + state["step"], state["step"])
            model.train()

    trainer = trainer_class()(model=policy, reward_funcs=[reward], args=config,
                              train_dataset=dataset, processing_class=vlm.processor,
                              optimizers=(optimizer, None), aux_loss=aux_loss,
                              aux_weight=settings.aux_huber_weight, on_log=forward)
    # TRL's batch: completions per process per micro-batch, over every process
    per_process, accum = config.per_device_train_batch_size, config.gradient_accumulation_steps
    run.log({"stage": stage.name, "global_step": global_step, "stage_step": 0,
             "event": "setup", "processes": run.procs.size, "distributed": run.procs.kind,
             "batch_size": per_process, "grad_accum": accum,
             "global_batch": per_process * accum * run.procs.size, "steps": steps})
    if not run.progress:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    # TRL wraps the policy for data parallelism, not the head: its gradients are averaged
    # over the processes here, as DDP averages the policy's
    handles = _average_gradients(model.head, procs.size) if model.head is not None else []
    model.train()
    try:
        trainer.train()
    finally:
        for handle in handles:
            handle.remove()
    model.eval()
    if merge_after:
        merged = policy.merge_and_unload()
        model.model = merged
        vlm.model = merged
    return global_step + steps


def _average_gradients(module: Any, processes: int) -> list[Any]:
    """Hooks that replace each gradient of ``module``'s parameters by its mean over the
    ``processes`` (none on one process); remove them when done."""
    if processes <= 1:
        return []
    import torch.distributed as dist

    def mean(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad / processes

    return [p.register_hook(mean) for p in module.parameters() if p.requires_grad]


def _policy(recipe: Recipe, settings: GRPOSettings, model: Any) -> tuple[Any, bool]:
    """The module TRL trains, and whether to merge its LoRA after the stage."""
    if recipe.adapter.kind == "lora":
        return model.model, False
    from peft import LoraConfig, get_peft_model

    from ieqa.train.model import _lora_targets

    for p in model.model.parameters():
        p.requires_grad_(False)
    config = LoraConfig(r=settings.lora_r, lora_alpha=settings.lora_alpha, lora_dropout=0.0,
                        target_modules=_lora_targets(settings.lora_targets))
    policy = get_peft_model(model.model, config)
    model.model = policy
    return policy, True


def run_grpo(run: Any, recipe: Recipe, index: int, stage: StageConfig, model: Any,
             vlm: Any, data: Any, global_step: int, resumed: dict[str, Any] | None,
             result: Any) -> tuple[int, bool]:
    """A ``grpo`` stage (:mod:`ieqa.train.grpo`): TRL runs the loop; the head's held-out
    metrics are evaluated here before and after."""
    from ieqa.train.data import label_column
    from ieqa.train.evaluation import evaluate_stage, main_metric
    from ieqa.train.stages import stage_template

    if resumed is not None:
        raise GRPOStageError(f"stage {stage.name!r}: a grpo stage cannot resume mid-stage; "
                             "resume from a checkpoint of an earlier stage, or start fresh")
    template = stage_template(stage)
    eval_samples = list(data.eval)
    metrics = result.metrics.setdefault(stage.name, {})

    def evaluate(when: str, at: int, stage_step: int) -> dict[str, float]:
        model.eval()
        values: dict[str, float] = {}
        if model.head is not None:
            values = evaluate_stage(recipe, stage, vlm, model.head, template, eval_samples,
                                    label_of=lambda s, d: s.scores[label_column(stage, d)])
        run.log({"stage": stage.name, "global_step": at, "stage_step": stage_step,
                 "event": when, "metric": main_metric(stage), **values})
        return values

    metrics["before"] = evaluate("before", global_step, 0)
    global_step = run_grpo_stage(run, recipe, index, stage, model, vlm, data, global_step,
                                 result, evaluate)
    metrics["after"] = evaluate("after", global_step, stage.max_steps or 0)
    model.eval()
    return global_step, False
