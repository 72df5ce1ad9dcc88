"""Launch configurations for training on several GPUs or machines (``ieqa launch-config``).

Each is an ``accelerate launch --config_file`` file for the recipes' 7B settings; the
DeepSpeed ones come with the DeepSpeed JSON they point to. Values that the recipe decides
(micro-batch, accumulation, clipping) are ``"auto"`` in the DeepSpeed JSON and filled from
the recipe's ``optim`` when training starts (:meth:`ieqa.train.distributed.Processes.before_prepare`),
so one file serves every recipe.

* ``ddp`` — data parallel, one full copy of the model per GPU: LoRA on a 7B backbone
  (bf16 weights ~15 GB, adapters and their optimiser state small) fits one 40-80 GB GPU.
* ``fsdp-lora`` — FSDP2, each decoder layer sharded, the frozen base too: a 7B LoRA run
  on 24 GB GPUs, or larger micro-batches.
* ``fsdp-full`` — FSDP2 for full fine-tuning (``adapter.kind: full``): bf16 weights,
  fp32 AdamW state (~4 x 8 bytes per parameter) sharded over the GPUs; 7B on 8 x 80 GB.
  Turn on ``model.gradient_checkpointing`` in the recipe as well.
* ``zero2`` — DeepSpeed ZeRO-2 (optimiser state and gradients sharded).
* ``zero3`` — DeepSpeed ZeRO-3 (weights sharded too; the export gathers them:
  ``stage3_gather_16bit_weights_on_model_save``).

Several machines: give ``machines``, ``machine_rank`` (0 on the main machine) and
``main_ip``/``main_port`` (the main machine's address, reachable from the others), and run
the same ``accelerate launch`` on every machine with its own ``--machine_rank``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ieqa.errors import IeqaError

__all__ = ["LAUNCH_CONFIGS", "LaunchConfigError", "deepspeed_json", "launch_config",
           "validate_deepspeed", "write_launch_config"]


class LaunchConfigError(IeqaError):
    """A launch configuration that does not exist or cannot be written."""


_FSDP = {"fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
         "fsdp_reshard_after_forward": True, "fsdp_state_dict_type": "FULL_STATE_DICT",
         "fsdp_cpu_ram_efficient_loading": False, "fsdp_offload_params": False}

#: name -> (what it is for, the accelerate settings that make it)
LAUNCH_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "ddp": ("data parallel: a full model copy per GPU (LoRA on 7B, 40-80 GB GPUs)",
            {"distributed_type": "MULTI_GPU"}),
    "fsdp-lora": ("FSDP2, layers sharded, LoRA (7B on 24 GB GPUs)",
                  {"distributed_type": "FSDP", "fsdp_config": {**_FSDP}}),
    "fsdp-full": ("FSDP2, full fine-tuning with activation checkpointing (7B on 8 x 80 GB)",
                  {"distributed_type": "FSDP",
                   "fsdp_config": {**_FSDP, "fsdp_activation_checkpointing": True}}),
    "zero2": ("DeepSpeed ZeRO-2: optimiser state and gradients sharded",
              {"distributed_type": "DEEPSPEED"}),
    "zero3": ("DeepSpeed ZeRO-3: weights sharded too, gathered at export",
              {"distributed_type": "DEEPSPEED"}),
}


def deepspeed_json(stage: int) -> dict[str, Any]:
    """The DeepSpeed config of ZeRO ``stage`` (2 or 3); ``"auto"`` values come from the
    recipe at the start of training."""
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True}
    if stage == 3:  # bucket sizes: DeepSpeed's defaults
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    return {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto", "gradient_clipping": "auto",
            "bf16": {"enabled": "auto"}, "zero_optimization": zero}


def launch_config(name: str, *, processes: int = 8, machines: int = 1, machine_rank: int = 0,
                  main_ip: str | None = None, main_port: int = 29500,
                  mixed_precision: str = "bf16") -> dict[str, Any]:
    """The accelerate config ``name`` (:data:`LAUNCH_CONFIGS`) for ``processes`` processes in
    all (GPUs over all machines). DeepSpeed configs name their JSON as
    ``deepspeed_config_file: NAME.deepspeed.json`` (written beside it by
    :func:`write_launch_config`)."""
    if name not in LAUNCH_CONFIGS:
        raise LaunchConfigError(f"no launch config {name!r}; known: {', '.join(LAUNCH_CONFIGS)}")
    if processes < 1 or machines < 1 or not 0 <= machine_rank < machines:
        raise LaunchConfigError(f"need processes >= 1, machines >= 1 and 0 <= machine_rank < "
                                f"machines; got {processes}, {machines}, {machine_rank}")
    if processes % machines:
        raise LaunchConfigError(f"{processes} processes do not split evenly over {machines} "
                                "machines; give a multiple (GPUs per machine x machines)")
    if machines > 1 and not main_ip:
        raise LaunchConfigError("several machines need main_ip: the main machine's address "
                                "(--main-ip), reachable from the others")
    config: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE",
                              **LAUNCH_CONFIGS[name][1], "num_machines": machines,
                              "num_processes": processes, "machine_rank": machine_rank,
                              "main_training_function": "main", "rdzv_backend": "static",
                              "same_network": True, "use_cpu": False}
    if main_ip:
        config.update({"main_process_ip": main_ip, "main_process_port": main_port})
    if config["distributed_type"] == "DEEPSPEED":
        # mixed precision then lives in the JSON ("bf16": {"enabled": "auto"})
        config["deepspeed_config"] = {"deepspeed_config_file": f"{name}.deepspeed.json"}
    else:
        config["mixed_precision"] = mixed_precision
    return json.loads(json.dumps(config))  # fresh, plain containers


def write_launch_config(name: str, path: str | Path, **kwargs: Any) -> list[Path]:
    """Write :func:`launch_config` to ``path`` (YAML), and for DeepSpeed its JSON beside it
    (the YAML then names it by absolute path). Returns the files written."""
    path = Path(path)
    config = launch_config(name, **kwargs)
    written = []
    path.parent.mkdir(parents=True, exist_ok=True)
    if "deepspeed_config" in config:
        stage = 3 if name == "zero3" else 2
        ds = path.with_name(f"{path.stem}.deepspeed.json")
        ds.write_text(json.dumps(deepspeed_json(stage), indent=2) + "\n")
        config["deepspeed_config"]["deepspeed_config_file"] = str(ds.resolve())
        written.append(ds)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return [path, *written]


def validate_deepspeed(config: dict[str, Any], *, batch_size: int = 2, grad_accum: int = 1,
                       max_grad_norm: float = 1.0) -> Any:
    """Check a DeepSpeed JSON against DeepSpeed's own schema (``deepspeed.runtime.config.
    DeepSpeedConfig``, which needs the ``deepspeed`` package), after filling its ``"auto"``
    values as training does, for one process (DeepSpeed's world size without a process
    group). Returns DeepSpeed's parsed config; raises its error."""
    from deepspeed.runtime.config import DeepSpeedConfig

    filled = json.loads(json.dumps(config))
    settled = {"train_micro_batch_size_per_gpu": batch_size, "gradient_accumulation_steps":
               grad_accum, "train_batch_size": batch_size * grad_accum,
               "gradient_clipping": max_grad_norm}
    for key, value in settled.items():
        if filled.get(key) == "auto":
            filled[key] = value
    if filled.get("bf16", {}).get("enabled") == "auto":
        filled["bf16"]["enabled"] = True
    return DeepSpeedConfig(filled)
