"""Evaluators released as a LoRA state dict plus a score head, with the LoRA settings in
their authors' code rather than in an ``adapter_config.json`` (ReasonEdit's release:
``adapter_model.safetensors`` and ``regression_head.pt`` in one package folder).

:func:`load_lora_state_release` builds the base model, injects LoRA layers with the
authors' settings, loads the adapter weights strictly (unexpected or missing adapter weights
are an error that lists them) and keeps the adapter unmerged, as the authors' inference
runs it; :func:`load_head_state` reads a head saved with ``torch.save`` without unpickling
anything but tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.backends.base import key_mismatch
from ieqa.backends.processor import BackendError, load_processor
from ieqa.backends.transformers_vlm import TransformersVLM, resolve_device

__all__ = ["LoraRelease", "release_folder", "load_lora_state_release", "load_head_state"]


@dataclass
class LoraRelease:
    """A loaded release: the backend (adapter applied, unmerged), its package folder (a
    local path: provenance) and what identifies it (``files``)."""

    vlm: TransformersVLM
    folder: Path
    files: dict[str, Any] = field(default_factory=dict)


def release_folder(release: str | Path, *, subfolder: str | None = None,
                   revision: str | None = None, needs: tuple[str, ...] = ()) -> Path:
    """The local folder of a release package: ``release`` itself when it is a folder,
    else a hub id downloaded by huggingface_hub (only ``subfolder`` when given).

    Raises:
        BackendError: a needed file is missing, or the hub id cannot be had.
    """
    local = Path(release).expanduser()
    if local.is_dir() or str(release).startswith((".", "/", "~")) or str(release).count("/") != 1:
        folder = local
    else:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError

        try:
            root = Path(snapshot_download(str(release), revision=revision,
                                          allow_patterns=[f"{subfolder}/*"] if subfolder else None))
        except (OSError, ValueError, HFValidationError) as exc:
            raise BackendError(f"cannot download {release}{f' at {revision}' if revision else ''}: "
                               f"{exc}. Without network (HF_HUB_OFFLINE=1 or none reachable), "
                               "pass a local copy of the package (--model DIR)") from exc
        folder = root / subfolder if subfolder else root
    missing = [name for name in needs if not (folder / name).is_file()]
    if missing:
        where = f" (subfolder {subfolder} of {release})" if subfolder else ""
        raise BackendError(f"{folder}{where} lacks {', '.join(missing)}: pass the release's "
                           f"package folder (the one holding {', '.join(needs)}) or its hub id")
    return folder


def load_head_state(path: str | Path) -> dict[str, Any]:
    """A head's state dict saved with ``torch.save`` (tensors only: nothing else is
    unpickled).

    Raises:
        BackendError: the file holds anything but a mapping of names to tensors.
    """
    import torch

    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling refusal means the same
        raise BackendError(f"{path} is not a plain state dict of tensors ({exc})") from exc
    if not isinstance(state, Mapping) or not all(torch.is_tensor(v) for v in state.values()):
        raise BackendError(f"{path} is not a state dict of tensors")
    return dict(state)


def load_lora_state_release(folder: Path, *, base_model: str | Path, lora: Mapping[str, Any],
                            adapter_file: str = "adapter_model.safetensors",
                            processor_from_release: bool = True, base_revision: str | None = None,
                            device: str | None = "auto", dtype: str = "auto",
                            load_in_4bit: bool = False, attn_implementation: str | None = None,
                            min_pixels: int | None = None, max_pixels: int | None = None,
                            share_prefix: bool = True, name: str | None = None) -> LoraRelease:
    """The base model with the release's LoRA weights, unmerged.

    Args:
        folder: the release's package folder (:func:`release_folder`).
        base_model: the base VLM (hub id or local folder).
        lora: :class:`peft.LoraConfig` arguments as the authors' code sets them (rank,
            alpha, dropout, target modules); ``task_type`` is ``CAUSAL_LM``.
        adapter_file: the LoRA state dict in ``folder``.
        processor_from_release: load the processor (tokenizer, chat template, image
            processor) from ``folder`` when it holds one (as the authors do), else from the
            base model.
        base_revision, device, dtype, load_in_4bit, attn_implementation, min_pixels,
            max_pixels, share_prefix: as for :class:`TransformersVLM`.
        name: what the backend's config records as the model (default: ``folder``).

    Raises:
        BackendError: the adapter's weights do not match the LoRA layers the settings make
            (both lists named), or a file is missing.
    """
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import AutoModelForImageTextToText

    adapter_path = folder / adapter_file
    if not adapter_path.is_file():
        raise BackendError(f"{folder} lacks {adapter_file}")
    has_processor = any((folder / f).is_file() for f in ("preprocessor_config.json",
                                                         "processor_config.json"))
    from_release = processor_from_release and has_processor
    processor = load_processor(folder if from_release else base_model, min_pixels=min_pixels,
                               max_pixels=max_pixels,
                               revision=None if from_release else base_revision,
                               config_from=base_model if from_release else None)
    torch_dtype = TransformersVLM.torch_dtype_of(dtype)
    kwargs: dict[str, Any] = {"dtype": torch_dtype, "revision": base_revision}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if load_in_4bit:  # as ReasonEdit's release loads it: nf4 with double quantisation
        kwargs["quantization_config"] = TransformersVLM._four_bit(torch_dtype, double_quant=True)
        kwargs["device_map"] = {"": resolve_device(device)}
    try:
        model = AutoModelForImageTextToText.from_pretrained(base_model, **kwargs)
    except OSError as exc:
        raise BackendError(f"cannot load {base_model}: {exc}. Pass a local folder with "
                           "--base-model, or a hub id you can download") from exc
    if load_in_4bit:  # as the authors' code: the parameters that stay unquantised in fp32
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    try:
        peft_model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **dict(lora)),
                                    autocast_adapter_dtype=False)
    except ValueError as exc:
        raise BackendError(f"the release's LoRA settings do not fit {base_model}: {exc}") from exc
    result = set_peft_model_state_dict(peft_model, load_file(str(adapter_path), device="cpu"))
    mismatch = key_mismatch(list(result.unexpected_keys),
                            [k for k in result.missing_keys if "lora_" in k])
    if mismatch:
        raise BackendError(f"{adapter_path} does not match {base_model} with the release's LoRA "
                           f"settings: adapter weights {mismatch}. Is --base-model the "
                           "model this release was trained on?")
    base = peft_model.get_base_model()  # the LoRA layers stay in it, unmerged
    if not load_in_4bit:
        base.to(resolve_device(device))
    base.eval()
    vlm = TransformersVLM.from_model(
        base, processor, name=name or str(folder), share_prefix=share_prefix,
        settings={"base_model": str(base_model), "base_revision": base_revision,
                  "min_pixels": min_pixels, "max_pixels": max_pixels, "dtype": dtype,
                  "load_in_4bit": load_in_4bit, "adapter": adapter_file})
    vlm.device = None if load_in_4bit else resolve_device(device)
    return LoraRelease(vlm=vlm, folder=folder, files={"base_model": str(base_model)})
