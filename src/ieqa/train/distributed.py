"""The processes of one training run: data parallel on accelerate, one writer.

``ieqa train`` runs unchanged on one process or on many (``torchrun``, ``accelerate
launch``; DDP, FSDP). :class:`Processes` is what the trainer asks of them:

* **Sharding.** Every micro-step the trainer takes ``batch_size x processes`` examples
  from the run's one cursor (the same on every process) and each process trains on its
  ``batch_size`` slice (:meth:`Processes.shard`); accelerate averages the gradients. So a
  step of ``P`` processes with ``grad_accum = a`` sees the same micro-batches as one
  process with ``grad_accum = a x P`` and the same ``batch_size``, and takes the same
  optimiser step (up to the order of float sums): the global batch is
  ``batch_size x grad_accum x processes``.
* **Randomness that does not depend on the process count.** The sampling generator of a
  loss (EditReward's Monte Carlo pairs) and torch's global generator (dropout in LoRA
  adapters and heads) are seeded per micro-batch from ``(seed, step, micro-batch index in
  the global order)`` (:func:`micro_batch_seed`), so micro-batch ``k`` draws the same
  numbers whichever process computes it, and a resumed run the same as an uninterrupted
  one.
* **Evaluation.** Held-out samples are dealt round-robin to the processes, scored there and
  gathered back in order (:meth:`Processes.map`); under FSDP every process scores all of
  them (a sharded model's forward passes are collective and must run in lockstep).
* **One writer.** Only the main process logs, prints, saves checkpoints and exports;
  :meth:`Processes.barrier` keeps the others in step.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

__all__ = ["DROPOUT_STREAM", "LOSS_STREAM", "Processes", "end_processes", "micro_batch_seed"]

T = TypeVar("T")
R = TypeVar("R")


#: the random streams of a micro-batch: a loss's own draws, and torch's global generator
#: (dropout in the adapters and the head)
LOSS_STREAM, DROPOUT_STREAM = 0, 1


def micro_batch_seed(seed: int, step: int, index: int, stream: int = LOSS_STREAM) -> int:
    """The seed of random ``stream`` for micro-batch ``index`` (in the global order of the
    step's micro-batches) of optimiser step ``step``: the same on any number of
    processes."""
    return int(np.random.SeedSequence([seed, step, index, stream]).generate_state(
        1, np.uint64)[0] % (2**63 - 1))


@dataclass
class Processes:
    """The run's processes, seen from one of them.

    Attributes:
        accelerator: the run's ``accelerate.Accelerator``.
        rank: this process's index (0 is the main process, the one writer).
        size: the number of processes.
        fsdp: the model is sharded (FSDP): forward passes are collective.
    """

    accelerator: Any
    rank: int = 0
    size: int = 1
    fsdp: bool = False
    deepspeed: bool = False
    #: accelerate's name of the setup when the run started (``NO``, ``MULTI_CPU``,
    #: ``MULTI_GPU``, ``FSDP``, ``DEEPSPEED``...); kept, because another trainer in the
    #: process (TRL's) resets accelerate's shared state while it sets itself up
    kind: str = "NO"

    @classmethod
    def start(cls, **kwargs: Any) -> Processes:
        """The accelerator of this run (``accelerate.Accelerator(**kwargs)``, on the CPU when
        there is no GPU) and this process's place in it."""
        from accelerate import Accelerator, DistributedType
        from accelerate.utils import DistributedDataParallelKwargs

        # a trainable parameter that a stage's loss does not reach (the LM head under a
        # head-only objective) must not stall DDP's gradient reduction
        handlers = [DistributedDataParallelKwargs(find_unused_parameters=True)]
        accelerator = Accelerator(cpu=not torch.cuda.is_available(), kwargs_handlers=handlers,
                                  **kwargs)
        if (accelerator.distributed_type == DistributedType.MULTI_CPU
                and os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"):
            _fsdp_on_cpu(accelerator)
        kind = accelerator.distributed_type
        return cls(accelerator, accelerator.process_index, accelerator.num_processes,
                   kind == DistributedType.FSDP, kind == DistributedType.DEEPSPEED,
                   str(kind).split(".")[-1])

    @property
    def sharded(self) -> bool:
        """The weights are split across the processes (FSDP, DeepSpeed ZeRO-3): every
        forward pass is collective, so all processes run the same ones in step."""
        if self.fsdp:
            return True
        if self.deepspeed:
            plugin = self.accelerator.state.deepspeed_plugin
            return int(plugin.deepspeed_config.get("zero_optimization", {}).get("stage", 0)) == 3
        return False

    def before_prepare(self, *, batch_size: int, grad_accum: int,
                       max_grad_norm: float | None) -> None:
        """Settle what a stage's ``prepare`` reads: accelerate's accumulation count (another
        trainer in the same process, TRL's, may have changed the shared state) and, under
        DeepSpeed, the config's ``auto`` batch and clipping values (there is no prepared
        dataloader to read them from)."""
        from accelerate.state import GradientState
        from accelerate.utils import GradientAccumulationPlugin

        if self.accelerator.gradient_accumulation_steps != grad_accum:
            GradientState(GradientAccumulationPlugin(num_steps=grad_accum))
        if self.deepspeed:
            config = self.accelerator.state.deepspeed_plugin.deepspeed_config
            settled = {"train_micro_batch_size_per_gpu": batch_size,
                       "gradient_accumulation_steps": grad_accum,
                       "train_batch_size": batch_size * grad_accum * self.size,
                       "gradient_clipping": max_grad_norm or 0.0}
            for key, value in settled.items():
                if config.get(key, "auto") == "auto":
                    config[key] = value
                elif config[key] != value:
                    from ieqa.errors import IeqaError

                    raise IeqaError(f"the DeepSpeed config sets {key} = {config[key]!r} but the "
                                    f"recipe means {value!r}; write \"auto\" there (the recipe's "
                                    "optim settings decide it)")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, chunk: Sequence[T], batch_size: int) -> list[T]:
        """This process's ``batch_size`` slice of a global micro-batch of
        ``batch_size x size`` examples."""
        return list(chunk[self.rank * batch_size:(self.rank + 1) * batch_size])

    def unsharded(self, wrapped: Any) -> contextlib.AbstractContextManager[None]:
        """Under FSDP, the model's own (root) parameters gathered for the duration: the
        scorers call the backbone and the head directly, past the root's hooks (each
        sharded layer still gathers its weights itself, collectively)."""
        if not self.sharded:
            return contextlib.nullcontext()
        if not hasattr(wrapped, "unshard"):  # DeepSpeed ZeRO-3: every module gathers its own
            from ieqa.backends.transformers_vlm import without_inference_mode

            return without_inference_mode()

        @contextlib.contextmanager
        def gathered() -> Any:
            # the root initialises FSDP for every sharded layer under it on its first
            # forward; a layer called first on its own would claim to be a root
            from torch.distributed.fsdp._fully_shard._fsdp_state import (
                _get_module_fsdp_state,
            )

            from ieqa.backends.transformers_vlm import without_inference_mode

            _get_module_fsdp_state(wrapped)._lazy_init()
            wrapped.unshard()
            try:
                with without_inference_mode():
                    yield
            finally:
                wrapped.reshard()

        return gathered()

    def full_state_dict(self, wrapped: Any) -> dict[str, torch.Tensor] | None:
        """The whole model's state dict on the main process (``None`` elsewhere); under FSDP
        gathered from the shards (every process must call this)."""
        if self.deepspeed:  # ZeRO-3 gathers (stage3_gather_16bit_weights_on_model_save)
            state = self.accelerator.get_state_dict(wrapped)
            return state if self.is_main else None
        if self.fsdp:
            full: dict[str, torch.Tensor] = {}
            for name, value in wrapped.state_dict().items():  # the same order everywhere
                if hasattr(value, "full_tensor"):  # a DTensor shard: gathered collectively
                    value = value.full_tensor()
                if self.is_main:
                    full[name] = value.detach().cpu().clone()
            return full if self.is_main else None
        model = self.accelerator.unwrap_model(wrapped)
        return model.state_dict() if self.is_main else None

    def unpartitioned_loading(self) -> contextlib.AbstractContextManager[None]:
        """Load a model on this process alone, whole: under DeepSpeed, transformers would
        otherwise build it under ZeRO-3's collective partitioning (the export's copy is
        built on the main process only)."""
        if not self.deepspeed:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def plain() -> Any:
            from transformers.integrations.deepspeed import unset_hf_deepspeed_config

            unset_hf_deepspeed_config()
            try:
                yield
            finally:
                self.accelerator.state.deepspeed_plugin.set_deepspeed_weakref()

        return plain()

    def barrier(self) -> None:
        """Wait for every process (no-op on one)."""
        if self.size > 1:
            self.accelerator.wait_for_everyone()

    def mean(self, values: Sequence[float]) -> list[float]:
        """The mean over the processes of each value (the values themselves on one)."""
        if self.size == 1:
            return [float(v) for v in values]
        t = torch.tensor([float(v) for v in values], dtype=torch.float64,
                         device=self.accelerator.device)
        return self.accelerator.reduce(t, reduction="mean").cpu().tolist()

    def gather(self, value: T) -> list[T]:
        """Every process's ``value``, in rank order (picklable objects)."""
        if self.size == 1:
            return [value]
        from accelerate.utils import gather_object

        return list(gather_object([value]))

    def map(self, fn: Callable[[list[T]], Sequence[R]], items: Sequence[T]) -> list[R]:
        """``fn(items)`` computed across the processes: item ``i`` on process
        ``i % size``, the results gathered back in the order of ``items`` on every process.
        Under FSDP (collective forward passes) every process computes ``fn(items)``."""
        items = list(items)
        if self.size == 1 or self.sharded:
            return list(fn(items))
        mine = items[self.rank::self.size]
        results = list(fn(mine)) if mine else []
        if len(results) != len(mine):
            raise RuntimeError(f"expected {len(mine)} results, got {len(results)}")
        parts = self.gather(results)
        out: list[Any] = [None] * len(items)
        for rank, part in enumerate(parts):
            out[rank::self.size] = part
        return out


def _fsdp_on_cpu(accelerator: Any) -> None:
    """Turn on FSDP (accelerate's plugin, from the launch config) for CPU processes.

    accelerate (1.15) reads ``distributed_type: FSDP`` only for accelerators and runs CPU
    processes as plain ``MULTI_CPU``; FSDP2 itself shards over gloo. Switching the shared
    state here lets a CPU run exercise the same FSDP path as a GPU one."""
    from accelerate import DistributedType
    from accelerate.utils import FullyShardedDataParallelPlugin

    state = accelerator.state
    state.fsdp_plugin = FullyShardedDataParallelPlugin()
    state.distributed_type = DistributedType.FSDP


def end_processes() -> None:
    """End the run's process group, once every process got here (no-op on one process):
    what a launched script does last. A process left to exit with its group alive can
    be aborted by torch's communication threads as the interpreter shuts down ("terminate
    called without an active exception", seen after FSDP runs on gloo)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
