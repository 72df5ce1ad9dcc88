"""The one trainer behind every recipe (``ieqa train``).

A thin loop on accelerate (device placement, mixed precision, gradient accumulation) that
runs on one process or, launched with ``torchrun`` / ``accelerate launch`` (DDP, FSDP,
DeepSpeed), on many: each process trains its slice of every micro-batch and only the main
one writes (:mod:`ieqa.train.distributed`). It runs the recipe's stages in order on one
model:
AdamW with separate learning rates for the adapter/backbone and the head, a transformers
schedule (cosine, linear, constant... with warmup), gradient accumulation and clipping,
held-out evaluation through the inference readouts (before and after each stage, and
every ``eval.every_steps``), checkpoints every ``output.save_every_steps`` that resume to
the *same* losses as an uninterrupted run, a JSONL metrics log, and export of the final
model as an evaluator checkpoint (:func:`ieqa.load_evaluator`).

Output folder::

    metrics.jsonl            one JSON object per step / evaluation
    recipe.yaml              the resolved recipe
    checkpoints/step-N/      trainable weights, optimizer, scheduler, RNG and loss state
    evaluator/               ieqa_evaluator.json + adapter/ (+ head/, or model/ for full FT)
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from ieqa.errors import IeqaError
from ieqa.progress import progress_bar
from ieqa.train.data import (
    BatchBuilder,
    TrainData,
    label_column,
    load_training_data,
    stage_examples,
)
from ieqa.train.distributed import DROPOUT_STREAM, Processes, micro_batch_seed
from ieqa.train.evaluation import build_scorer, evaluate_stage, main_metric
from ieqa.train.fit import fit_recipe_to_data
from ieqa.train.grpo import run_grpo
from ieqa.train.model import EvaluatorModel, build_model
from ieqa.train.objectives import LossState, compute_loss, new_loss_state
from ieqa.train.recipe import Recipe, StageConfig
from ieqa.train.samplers import curriculum_order, shuffled_order, stratified_order
from ieqa.train.stages import stage_template

__all__ = ["train", "TrainResult", "TrainError"]

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
TRAINABLE_FILE = "trainable.safetensors"


#: Stage runners other than the supervised loop of this module, by objective, called as
#: ``fn(run, recipe, index, stage, model, vlm, data, global_step, resumed, result)
#: -> (global_step, stopped)``.
STAGE_RUNNERS: dict[str, Callable[..., tuple[int, bool]]] = {"grpo": run_grpo}


class TrainError(IeqaError):
    """Training cannot start or resume (the message says what to change)."""


@dataclass
class TrainResult:
    """What :func:`train` produced.

    Attributes:
        output_dir: the run folder.
        evaluator_dir: the exported evaluator checkpoint (``None`` when interrupted or
            when the last stage has no scorer readout, e.g. grounding only).
        metrics: per stage, ``{"before": {...}, "after": {...}}`` held-out metrics.
        losses: per optimiser step, ``(global step, loss)``.
        interrupted: stopped early by ``stop_after``.
        children: per-dimension runs of a ``per_dimension`` recipe.
        notes: how the recipe's dimensions were fitted to the data
            (:func:`ieqa.train.fit.fit_recipe_to_data`: dimensions skipped or trained
            instead, pair ranking without ``overall``).
        main_process: this process is the run's main process (the one that logs,
            checkpoints and exports; always true on one process).
    """

    output_dir: Path
    evaluator_dir: Path | None
    metrics: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    losses: list[tuple[int, float]] = field(default_factory=list)
    interrupted: bool = False
    children: dict[str, TrainResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    main_process: bool = True


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.random.get_rng_state()}
    if torch.cuda.is_available():  # this process's device (reseeded per micro-batch anyway)
        state["cuda_device"] = torch.cuda.get_rng_state()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.random.set_rng_state(state["torch"])
    if not torch.cuda.is_available():
        return
    if "cuda_device" in state:
        torch.cuda.set_rng_state(state["cuda_device"])
    elif "cuda" in state and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])  # a checkpoint of an earlier ieqa


def _order(stage: StageConfig, examples: list[Any], samples: list[Any], epoch: int,
           seed: int) -> list[int]:
    if stage.sampler == "curriculum":
        gaps = [getattr(e, "gap", 0.0) for e in examples]
        return curriculum_order(gaps, epoch=epoch, seed=seed, **stage.sampler_args)
    if stage.sampler == "stratified":
        rows = [samples[e] if isinstance(e, int) else samples[e.a] for e in examples]
        return stratified_order([s.group_id or s.id for s in rows], [s.id for s in rows],
                                epoch=epoch, seed=seed, **stage.sampler_args)
    return shuffled_order(len(examples), epoch=epoch, seed=seed)


class _Cursor:
    """Position in the stage's epoch orders (saved in checkpoints)."""

    def __init__(self, stage: StageConfig, examples: list[Any], samples: list[Any], seed: int,
                 epoch: int = 0, pos: int = 0) -> None:
        self.stage, self.examples, self.samples, self.seed = stage, examples, samples, seed
        self.epoch, self.pos = epoch, pos
        self.order = _order(stage, examples, samples, epoch, seed)

    def take(self, n: int) -> list[Any]:
        out: list[Any] = []
        while len(out) < n:
            if self.pos >= len(self.order):
                self.epoch, self.pos = self.epoch + 1, 0
                self.order = _order(self.stage, self.examples, self.samples, self.epoch, self.seed)
                if not self.order:
                    raise TrainError(f"stage {self.stage.name!r}: the sampler gave an empty epoch")
            chunk = self.order[self.pos:self.pos + n - len(out)]
            self.pos += len(chunk)
            out += [self.examples[i] for i in chunk]
        return out


def _optimizer(recipe: Recipe, model: EvaluatorModel) -> torch.optim.Optimizer:
    head_ids = {id(p) for p in model.head.parameters()} if model.head is not None else set()
    backbone = [p for p in model.model.parameters() if p.requires_grad and id(p) not in head_ids]
    groups = []
    if backbone:
        groups.append({"params": backbone, "lr": recipe.adapter.lr or recipe.optim.lr,
                       "name": "backbone"})
    if model.head is not None:
        groups.append({"params": list(model.head.parameters()),
                       "lr": recipe.head.lr or recipe.optim.lr, "name": "head"})
    return torch.optim.AdamW(groups, weight_decay=recipe.optim.weight_decay)


def _trainable_state(model: EvaluatorModel) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().contiguous() for n, p in model.named_parameters()
            if p.requires_grad}


def _stage_steps(recipe: Recipe, stage: StageConfig, n_examples: int, processes: int = 1) -> int:
    if stage.max_steps is not None:
        return stage.max_steps
    per_step = recipe.optim.batch_size * recipe.optim.grad_accum * processes
    return max(1, math.ceil(stage.epochs * n_examples / per_step))


def _init_head_bias(model: EvaluatorModel, stage: StageConfig, samples: list[Any],
                    builder: BatchBuilder) -> None:
    """Start a regression head at the mean target (faster, steadier first steps)."""
    if model.head is None or stage.objective not in ("pointwise", "dual"):
        return
    last = model.head.net[-1]
    with torch.no_grad():
        means = [float(np.mean([builder.score(s, d) for s in samples])) for d in builder.dimensions]
        if last.out_features == len(means):
            value = torch.tensor(means, dtype=last.bias.dtype)
            if hasattr(last.bias, "device_mesh"):  # sharded (FSDP): shard it alike
                from torch.distributed.tensor import distribute_tensor

                value = distribute_tensor(value, last.bias.device_mesh, last.bias.placements)
            if getattr(last.bias, "ds_id", None) is not None:  # DeepSpeed ZeRO-3: gathered
                import deepspeed

                with deepspeed.zero.GatheredParameters([last.bias], modifier_rank=0):
                    last.bias.copy_(value.to(last.bias.device))
                return
            last.bias.copy_(value)


class _Run:
    """The run folder and its one writer: only the main process logs and draws progress."""

    def __init__(self, recipe: Recipe, out: Path, on_log: Callable[[dict[str, Any]], None] | None,
                 progress: bool, procs: Processes) -> None:
        self.recipe, self.out, self.on_log, self.procs = recipe, out, on_log, procs
        self.progress = progress and procs.is_main
        self.log_path = out / "metrics.jsonl"
        self.wrapped: Any = None  # the model as accelerate prepared it (the last stage's)

    def log(self, record: dict[str, Any]) -> None:
        if not self.procs.is_main:
            return
        with self.log_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        if self.recipe.output.report_to and "global_step" in record:
            scalars = tracker_scalars(record)
            if scalars:
                self.procs.accelerator.log(scalars, step=int(record["global_step"]))
        if self.on_log is not None:
            self.on_log(record)

    def truncate_log(self, global_step: int) -> None:
        if not self.procs.is_main or not self.log_path.exists():
            return
        keep = [line for line in self.log_path.read_text().splitlines()
                if line and json.loads(line).get("global_step", 0) <= global_step]
        self.log_path.write_text("".join(line + "\n" for line in keep))


#: the tracker tag group of each kind of log record
_TAG_GROUP = {"step": "train", "before": "eval", "eval": "eval", "after": "eval",
              "setup": "setup"}


def tracker_scalars(record: dict[str, Any]) -> dict[str, float]:
    """The numbers of one ``metrics.jsonl`` record as tracker scalars, tagged
    ``STAGE/train/NAME`` (steps), ``STAGE/eval/NAME`` (held-out evaluations before, during
    and after a stage) or ``STAGE/setup/NAME``; a record of another kind gives none."""
    group = _TAG_GROUP.get(str(record.get("event")))
    if group is None:
        return {}
    skip = {"global_step", "stage_step"}
    return {f"{record.get('stage', 'run')}/{group}/{k}": float(v) for k, v in record.items()
            if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool)}


def _start_tracking(recipe: Recipe, out: Path, procs: Processes) -> None:
    """Start the recipe's trackers on the main process (TensorBoard under
    ``out/tracking/``), with the recipe's settings as the run's configuration."""
    import importlib.util

    missing = [t for t in recipe.output.report_to
               if importlib.util.find_spec(t) is None]
    if missing:
        raise TrainError(f"output.report_to names {missing} but the package is not installed: "
                         f"pip install 'ieqa[track]' (tensorboard) or pip install wandb, or run "
                         "with --report-to none")
    procs.accelerator.init_trackers(out.name or "ieqa",
                                    config=_flat(recipe.model_dump(mode="json")))


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b": scalar}`` of a nested recipe dump (lists and None written as JSON text)."""
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    value = tree if isinstance(tree, (int, float, str, bool)) else json.dumps(tree)
    return {prefix[:-1]: value}


def _process_file(folder: Path, rank: int) -> Path:
    return folder / f"process-{rank}.pt"


def _save_checkpoint(run: _Run, model: EvaluatorModel, optimizer: Any, scheduler: Any,
                     state: dict[str, Any], per_process: dict[str, Any]) -> Path:
    """Write ``checkpoints/step-N``: the main process writes the weights, optimiser,
    scheduler and its own RNG and loss state (``state.pt``); every other process its RNG
    and loss state (``process-R.pt``)."""
    from safetensors.torch import save_file

    procs = run.procs
    folder = run.out / CHECKPOINTS / f"step-{state['global_step']}"
    if procs.is_main:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("process-*.pt"):  # of an earlier run with more processes
            stale.unlink()
    procs.barrier()
    if procs.is_main:
        save_file(_trainable_state(model), str(folder / TRAINABLE_FILE))
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "rng": _rng_state(), **state, **per_process}, folder / "state.pt")
        (folder / "trainer_state.json").write_text(json.dumps(state, indent=2) + "\n")
        existing = sorted((run.out / CHECKPOINTS).glob("step-*"),
                          key=lambda p: int(p.name.split("-")[1]))
        for old in existing[:-run.recipe.output.keep_checkpoints]:
            shutil.rmtree(old)
    else:
        torch.save({"rng": _rng_state(), **per_process}, _process_file(folder, procs.rank))
    procs.barrier()
    return folder


def latest_checkpoint(out: Path) -> Path | None:
    """The newest ``checkpoints/step-N`` of a run folder, or ``None``."""
    found = sorted((out / CHECKPOINTS).glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    return found[-1] if found else None


def _export(recipe: Recipe, stage: StageConfig, model: EvaluatorModel, vlm: Any, template: Any,
            folder: Path) -> Path | None:
    from ieqa.scorers.checkpoint import save_evaluator

    scorer = build_scorer(recipe, stage, vlm, model.head, template)
    if folder.exists():
        shutil.rmtree(folder)
    if scorer is None:  # grounding only: ship the adapter
        if recipe.adapter.kind == "lora":
            model.model.save_pretrained(str(folder / "adapter"))
        return None
    base_model, adapter = recipe.model.name, None
    if recipe.adapter.kind == "lora":
        adapter = model.model
    elif recipe.adapter.kind == "full":
        target = str(folder / "model")
        vlm.model.save_pretrained(target)
        vlm.processor.tokenizer.save_pretrained(target)  # with the chat template
        vlm.processor.image_processor.save_pretrained(target)
        base_model = target  # recorded relative to the checkpoint (model_reference)
    return save_evaluator(scorer, folder, adapter=adapter, base_model=base_model, overwrite=True)


def train(recipe: Recipe, *, output_dir: str | Path | None = None,
          resume: str | Path | bool | None = None, stop_after: int | None = None,
          on_log: Callable[[dict[str, Any]], None] | None = None,
          progress: bool = True) -> TrainResult:
    """Run ``recipe``.

    Args:
        recipe: a validated :class:`~ieqa.train.recipe.Recipe` (:func:`load_recipe`).
        output_dir: run folder (default ``recipe.output.dir``).
        resume: ``True`` resumes from the newest checkpoint in the run folder, a path from
            that checkpoint; ``None``/``False`` starts fresh (an existing metrics log in
            the folder is replaced).
        stop_after: stop (after saving a checkpoint) once this many optimiser steps have
            run in total — for tests and time-boxed jobs.
        on_log: called with every log record (steps and evaluations).
        progress: draw a progress bar per stage.
    """
    out = Path(output_dir) if output_dir is not None else recipe.output_dir()
    if recipe.per_dimension:
        main = Processes.start().is_main
        recipe, notes = _fit(recipe, load_training_data(recipe.data, recipe.optim.seed),
                             on_log if main else None)
        result = TrainResult(out, None, notes=notes, main_process=main)
        for dim in recipe.stages[0].dimensions:
            sub = recipe.model_copy(deep=True)
            sub.per_dimension = False
            sub.stages[0].dimensions = [dim]
            child = train(sub, output_dir=out / dim, resume=resume, stop_after=stop_after,
                          on_log=on_log, progress=progress)
            result.children[dim] = child
            result.metrics.update({f"{dim}/{k}": v for k, v in child.metrics.items()})
            result.interrupted |= child.interrupted
        return result
    out.mkdir(parents=True, exist_ok=True)
    procs = Processes.start(log_with=list(recipe.output.report_to) or None,
                            project_dir=str(out / "tracking"),
                            gradient_accumulation_steps=recipe.optim.grad_accum)
    run = _Run(recipe, out, on_log, progress, procs)
    checkpoint = None
    if resume:
        checkpoint = Path(resume) if not isinstance(resume, bool) else latest_checkpoint(out)
        if checkpoint is None or not (checkpoint / "state.pt").exists():
            raise TrainError(f"no checkpoint to resume from in {out / CHECKPOINTS}; run without "
                             "--resume to start fresh")
    elif run.log_path.exists() and procs.is_main:
        run.log_path.unlink()
    procs.barrier()
    _seed_everything(recipe.optim.seed)
    data = load_training_data(recipe.data, recipe.optim.seed)
    recipe, notes = _fit(recipe, data, on_log if procs.is_main else None)
    run.recipe = recipe
    if recipe.output.report_to:
        _start_tracking(recipe, out, procs)
    if procs.is_main:
        (out / "recipe.yaml").write_text(yaml.safe_dump(recipe.model_dump(mode="json"),
                                                        sort_keys=False))
    model, vlm = build_model(recipe)
    saved = _load_checkpoint(model, checkpoint, procs) if checkpoint is not None else None
    if saved is not None:
        _check_global_batch(recipe, saved, procs, checkpoint)
        run.truncate_log(saved["global_step"])
    result = TrainResult(out, None, notes=notes, main_process=procs.is_main)
    global_step = saved["global_step"] if saved else 0
    for index, stage in enumerate(recipe.stages):
        if saved and index < saved["stage_index"]:
            continue
        resumed = saved if saved and index == saved["stage_index"] else None
        global_step, stopped = _run_stage(run, recipe, index, stage, model, vlm, data,
                                          global_step, resumed, stop_after, result)
        if stopped:
            result.interrupted = True
            _end_tracking(run)
            return result
    last = recipe.stages[-1]
    exported = None
    if procs.sharded:  # the shards gathered into an unsharded copy on the main process
        full = procs.full_state_dict(run.wrapped)
        if procs.is_main:
            with procs.unpartitioned_loading():
                model, vlm = build_model(recipe)
            model.load_state_dict(full)
    if procs.is_main:
        exported = _export(recipe, last, model, vlm, stage_template(last), out / "evaluator")
    result.evaluator_dir = procs.gather(exported)[0]
    _end_tracking(run)
    return result


def _end_tracking(run: _Run) -> None:
    """Close the trackers (not ``accelerator.end_training()``: it also ends the process
    group, which the next run of the same processes, e.g. another dimension, still needs)."""
    for tracker in run.procs.accelerator.trackers:
        tracker.finish()


def _fit(recipe: Recipe, data: TrainData, on_log: Callable[[dict[str, Any]], None] | None
         ) -> tuple[Recipe, list[str]]:
    """The recipe fitted to the data's dimensions; each note is logged and passed to
    ``on_log`` as ``{"event": "note", "message": ...}``."""
    fitted, notes = fit_recipe_to_data(recipe, [*data.train, *data.eval],
                                       has_preferences=bool(data.train_preferences))
    for note in notes:
        log.info("%s", note)
        if on_log is not None:
            on_log({"event": "note", "message": note})
    return fitted, notes


def global_batch(recipe: Recipe, processes: int) -> int:
    """Examples per optimiser step: ``batch_size x grad_accum x processes``."""
    return recipe.optim.batch_size * recipe.optim.grad_accum * processes


def _check_global_batch(recipe: Recipe, saved: dict[str, Any], procs: Processes,
                        checkpoint: Path) -> None:
    """A run resumes with the global batch it was written with (the cursor counts examples,
    the schedule steps)."""
    then = saved.get("global_batch")
    now = global_batch(recipe, procs.size)
    if then is None or then == now:
        return
    bs = recipe.optim.batch_size
    if then % procs.size:
        counts = [n for n in range(1, then + 1) if then % n == 0]
        hint = (f"{procs.size} processes cannot share it; launch a number of processes that "
                f"divides {then} ({', '.join(map(str, counts))})")
    elif then % (bs * procs.size) == 0:
        hint = f"--set optim.grad_accum={then // (bs * procs.size)}"
    else:
        hint = (f"--set optim.batch_size=B --set optim.grad_accum=A with B x A = "
                f"{then // procs.size}")
    raise TrainError(f"checkpoint {checkpoint} was written with a global batch of {then} "
                     f"({saved.get('processes', '?')} processes); this run has {now} "
                     f"(batch_size {bs} x grad_accum {recipe.optim.grad_accum} x {procs.size} "
                     f"processes). Resume with the same global batch: {hint}")


def _load_checkpoint(model: EvaluatorModel, checkpoint: Path, procs: Processes) -> dict[str, Any]:
    from safetensors.torch import load_file

    weights = load_file(str(checkpoint / TRAINABLE_FILE))
    params = dict(model.named_parameters())
    missing = [n for n, p in params.items() if p.requires_grad and n not in weights]
    unknown = [n for n in weights if n not in params]
    if missing or unknown:
        raise TrainError(f"checkpoint {checkpoint} does not match this recipe's model "
                         f"(missing {missing[:3]}, unexpected {unknown[:3]}); resume with the "
                         "recipe that wrote it")
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))
    saved = torch.load(checkpoint / "state.pt", weights_only=False)
    own = _process_file(checkpoint, procs.rank)
    if procs.rank > 0 and own.exists():  # this process's RNG and loss state
        saved.update(torch.load(own, weights_only=False))
    return saved


def _run_stage(run: _Run, recipe: Recipe, index: int, stage: StageConfig, model: EvaluatorModel,
               vlm: Any, data: TrainData, global_step: int, resumed: dict[str, Any] | None,
               stop_after: int | None, result: TrainResult) -> tuple[int, bool]:
    from transformers import get_scheduler

    runner = STAGE_RUNNERS.get(stage.objective)
    if runner is not None:
        return runner(run, recipe, index, stage, model, vlm, data, global_step, resumed, result)
    template = stage_template(stage)
    key = recipe.data.explanation_key
    builder = BatchBuilder(vlm, stage, template, data.scale, key,
                           cache_mb=recipe.data.cache_mb, ranges=data.ranges)
    needs_bbox = "crop" in template.images
    examples = stage_examples(stage, data, explanation_key=key, needs_bbox=needs_bbox)
    eval_pairs = (stage_examples(stage, data, explanation_key=key, split="eval")
                  if stage.objective == "pairwise" else [])
    eval_samples = [s for s in data.eval if s.bbox is not None or not needs_bbox]
    procs = run.procs
    total = _stage_steps(recipe, stage, len(examples), procs.size)
    seed = recipe.optim.seed + 1000 * index
    if resumed is None:
        _init_head_bias(model, stage, data.train, builder)
    optimizer = _optimizer(recipe, model)
    scheduler = get_scheduler(recipe.optim.scheduler, optimizer,
                              num_warmup_steps=math.ceil(recipe.optim.warmup_ratio * total),
                              num_training_steps=total)
    loss_state: LossState = new_loss_state(stage, seed)
    cursor = _Cursor(stage, examples, data.train, seed)
    step = 0
    if resumed is not None:
        optimizer.load_state_dict(resumed["optimizer"])
        scheduler.load_state_dict(resumed["scheduler"])
        loss_state.load_state_dict(resumed["loss_state"])
        cursor = _Cursor(stage, examples, data.train, seed, *resumed["cursor"])
        step = resumed["stage_step"]
        _set_rng_state(resumed["rng"])
    if (procs.fsdp or procs.deepspeed) and (recipe.output.save_every_steps
                                            or stop_after is not None or resumed is not None):
        raise TrainError(f"checkpoints of a {procs.kind} run are not written or resumed yet "
                         "(the optimiser state is sharded): run it without "
                         "output.save_every_steps, --stop-after and --resume, or checkpoint and "
                         "resume under DDP (accelerate launch --multi_gpu / torchrun)")
    accelerator = procs.accelerator
    procs.before_prepare(batch_size=recipe.optim.batch_size, grad_accum=recipe.optim.grad_accum,
                         max_grad_norm=recipe.optim.max_grad_norm)
    wrapped, optimizer = accelerator.prepare(model, optimizer)
    run.wrapped = wrapped
    bs, accum = recipe.optim.batch_size, recipe.optim.grad_accum
    run.log({"stage": stage.name, "global_step": global_step, "stage_step": step,
             "event": "setup", "processes": procs.size,
             "distributed": procs.kind,
             "batch_size": bs, "grad_accum": accum,
             "global_batch": global_batch(recipe, procs.size), "steps": total})

    def evaluate(when: str) -> dict[str, float]:
        model.eval()

        def labels(sample: Any, dim: str) -> float:
            return sample.scores[label_column(stage, dim)]

        with procs.unsharded(wrapped):
            metrics = evaluate_stage(recipe, stage, vlm, model.head, template, eval_samples,
                                     eval_pairs, label_of=labels, map_items=procs.map)
        run.log({"stage": stage.name, "global_step": global_step, "stage_step": step,
                 "event": when, "metric": main_metric(stage), **metrics})
        model.train()
        return metrics

    metrics = result.metrics.setdefault(stage.name, {})
    if resumed is None:
        metrics["before"] = evaluate("before")
    model.train()
    with progress_bar(f"train {stage.name}", total - step, enabled=run.progress,
                      unit="steps") as advance:
        while step < total:
            optimizer.zero_grad(set_to_none=True)
            total_loss, parts_sum = 0.0, {}
            for micro in range(accum):
                chunk = procs.shard(cursor.take(bs * procs.size), bs)
                place = micro * procs.size + procs.rank  # in the global order of the step
                loss_state.begin_micro_batch(micro_batch_seed(seed, global_step + 1, place))
                torch.manual_seed(micro_batch_seed(seed, global_step + 1, place, DROPOUT_STREAM))
                # accelerate divides the loss by grad_accum and reduces the gradients
                # across the processes on the step's last micro-batch only
                with accelerator.accumulate(wrapped):
                    loss, parts = compute_loss(wrapped, builder, stage, data.train, chunk,
                                               loss_state)
                    accelerator.backward(loss)
                total_loss += float(loss.detach()) / accum
                for k, v in parts.items():
                    parts_sum[k] = parts_sum.get(k, 0.0) + v / accum
            # the step's loss over the global batch (the mean of the processes' means)
            names = sorted(parts_sum)
            total_loss, *means = procs.mean([total_loss, *(parts_sum[k] for k in names)])
            parts_sum = dict(zip(names, means, strict=True))
            if recipe.optim.max_grad_norm:
                accelerator.clip_grad_norm_(wrapped.parameters(), recipe.optim.max_grad_norm)
            optimizer.step()
            scheduler.step()
            step += 1
            global_step += 1
            advance(1, status=f"loss {total_loss:.4g}")
            result.losses.append((global_step, total_loss))
            run.log({"stage": stage.name, "global_step": global_step, "stage_step": step,
                     "event": "step", "loss": total_loss, "lr": scheduler.get_last_lr()[0],
                     "epoch": cursor.epoch, **parts_sum})
            every = recipe.eval.every_steps
            if every and step % every == 0 and step < total:
                evaluate("eval")
            save = recipe.output.save_every_steps
            stopping = stop_after is not None and global_step >= stop_after and step < total
            if (save and step % save == 0) or stopping:
                _save_checkpoint(run, model, optimizer, scheduler, {
                    "global_step": global_step, "stage_index": index, "stage_step": step,
                    "cursor": [cursor.epoch, cursor.pos], "processes": procs.size,
                    "global_batch": global_batch(recipe, procs.size)},
                    {"loss_state": loss_state.state_dict()})
            if stopping:
                return global_step, True
    metrics["after"] = evaluate("after")
    model.eval()
    return global_step, False



