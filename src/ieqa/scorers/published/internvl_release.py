"""LoRA adapters trained on InternVL's own (remote-code) model, applied to transformers'
InternVL (EditHF's release).

InternVL's remote code names its vision encoder ``encoder.layers.{i}.attn.qkv`` (one fused
query-key-value projection), ``attn.proj``, ``mlp.fc1``/``fc2`` and
``embeddings.patch_embedding``, and its language model is a ``...ForCausalLM`` whose
layers are ``model.layers.{i}.*``. transformers' InternVL (the ``-HF`` checkpoints) holds
the same weights as ``model.vision_tower.encoder.layer.{i}.attention.{q,k,v}_proj``,
``attention.projection_layer``, ``mlp.fc1``/``fc2``,
``embeddings.patch_embeddings.projection`` and ``model.language_model.layers.{i}.*``.

A LoRA pair on the fused ``qkv`` (``A``: ``r x C``, ``B``: ``3C x r``) is exactly three pairs
on the split projections: the same ``A`` and the query, key and value thirds of ``B`` (the
remote code reshapes the fused output as query, key, value in that order). Every other pair
keeps its tensors. :func:`convert_lora` does the mapping; :func:`add_adapters` adds one
named PEFT adapter per converted set to the model, unmerged, and loads it strictly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.backends.processor import BackendError

__all__ = ["convert_lora", "read_lora", "add_adapters"]

_VISION = "model.vision_tower."
_LANGUAGE = "model.language_model."
_RULES: tuple[tuple[str, str], ...] = (
    (r"encoder\.layers\.(\d+)\.attn\.proj", _VISION + r"encoder.layer.\1.attention.projection_layer"),
    (r"encoder\.layers\.(\d+)\.mlp\.(fc1|fc2)", _VISION + r"encoder.layer.\1.mlp.\2"),
    (r"embeddings\.patch_embedding", _VISION + "embeddings.patch_embeddings.projection"),
)
_QKV = re.compile(r"encoder\.layers\.(\d+)\.attn\.qkv")


def read_lora(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(adapter_config, tensors)`` of a PEFT adapter folder.

    Raises:
        BackendError: a file is missing.
    """
    from safetensors.torch import load_file

    config_path = folder / "adapter_config.json"
    weights = folder / "adapter_model.safetensors"
    for path in (config_path, weights):
        if not path.is_file():
            raise BackendError(f"{folder} lacks {path.name}: not a PEFT adapter folder")
    return json.loads(config_path.read_text()), load_file(str(weights), device="cpu")


def _module_and_kind(key: str) -> tuple[str, str]:
    """``("encoder.layers.0.attn.qkv", "lora_A.weight")`` from a saved PEFT key."""
    match = re.fullmatch(r"base_model\.model\.(.+)\.(lora_[AB]\.weight)", key)
    if not match:
        raise BackendError(f"{key}: not a LoRA weight of a PEFT adapter (expected "
                           "base_model.model.<module>.lora_A/lora_B.weight)")
    return match.group(1), match.group(2)


def convert_lora(vision: Mapping[str, Any], language: Mapping[str, Any]) -> dict[str, Any]:
    """The two remote-code adapters' tensors as tensors of transformers' InternVL, keyed
    as PEFT saves them (``base_model.model.<module>.lora_A.weight``).

    Raises:
        BackendError: a module that has no counterpart, or an unpaired A/B.
    """
    out: dict[str, Any] = {}
    for key, tensor in vision.items():
        module, kind = _module_and_kind(key)
        qkv = _QKV.fullmatch(module)
        if qkv:
            layer = _VISION + f"encoder.layer.{qkv.group(1)}.attention."
            if kind == "lora_A.weight":
                for part in ("q_proj", "k_proj", "v_proj"):
                    out[f"base_model.model.{layer}{part}.{kind}"] = tensor
            else:
                if tensor.shape[0] % 3:
                    raise BackendError(f"{key}: a fused qkv LoRA B must have 3 x C rows, got "
                                       f"{tuple(tensor.shape)}")
                for part, third in zip(("q_proj", "k_proj", "v_proj"), tensor.chunk(3, dim=0),
                                       strict=True):
                    out[f"base_model.model.{layer}{part}.{kind}"] = third.contiguous()
            continue
        for pattern, target in _RULES:
            if re.fullmatch(pattern, module):
                out[f"base_model.model.{re.sub(pattern, target, module)}.{kind}"] = tensor
                break
        else:
            raise BackendError(f"{key}: the vision adapter adapts {module}, which has no "
                               "counterpart in transformers' InternVL that ieqa knows")
    for key, tensor in language.items():
        module, kind = _module_and_kind(key)
        if module.startswith("model.layers."):
            native = _LANGUAGE + module.removeprefix("model.")
        elif module == "lm_head":
            native = "lm_head"
        else:
            raise BackendError(f"{key}: the language adapter adapts {module}, which has no "
                               "counterpart in transformers' InternVL that ieqa knows")
        out[f"base_model.model.{native}.{kind}"] = tensor
    modules = {k.rsplit(".lora_", 1)[0] for k in out}
    for module in modules:
        if f"{module}.lora_A.weight" not in out or f"{module}.lora_B.weight" not in out:
            raise BackendError(f"{module}: the adapter holds only one of lora_A and lora_B")
    return out


def _scaling(config: Mapping[str, Any]) -> tuple[int, float, bool]:
    try:
        return int(config["r"]), float(config["lora_alpha"]), bool(config.get("use_rslora"))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"an adapter_config.json without r and lora_alpha ({exc})") from exc


def add_adapters(model: Any, adapters: Mapping[str, tuple[dict[str, Any], dict[str, Any],
                                                          dict[str, Any]]]) -> Any:
    """Add one named, unmerged LoRA adapter per entry to ``model`` (transformers' InternVL)
    and load its weights strictly; returns the :class:`peft.PeftModel` (switch with
    ``set_adapter(name)``; its base model holds the LoRA layers).

    Args:
        model: the base model.
        adapters: name -> ``(vision adapter_config, language adapter_config, converted
            tensors)`` (:func:`convert_lora`); each part keeps its own rank and alpha.

    Raises:
        BackendError: weights that do not fit the model (unexpected or missing, listed).
    """
    from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict

    peft_model: PeftModel | None = None
    for name, (vision_config, language_config, tensors) in adapters.items():
        modules = sorted({k.removeprefix("base_model.model.").rsplit(".lora_", 1)[0]
                          for k in tensors})
        ranks, alphas, rslora = {}, {}, set()
        for module in modules:
            r, alpha, rs = _scaling(vision_config if module.startswith(_VISION)
                                    else language_config)
            ranks[re.escape(module)], alphas[re.escape(module)] = r, alpha
            rslora.add(rs)
        if len(rslora) > 1:
            raise BackendError(f"adapter {name}: the vision and language parts disagree on "
                               "use_rslora; ieqa applies one scaling rule per adapter")
        first = next(iter(ranks.values()))
        config = LoraConfig(r=first, lora_alpha=alphas[next(iter(alphas))],
                            target_modules=modules, rank_pattern=ranks, alpha_pattern=alphas,
                            use_rslora=rslora.pop(), lora_dropout=0.0)
        try:
            if peft_model is None:
                peft_model = get_peft_model(model, config, adapter_name=name,
                                            autocast_adapter_dtype=False)
            else:
                peft_model.add_adapter(name, config)
        except ValueError as exc:
            raise BackendError(f"adapter {name} does not fit the model: {exc}") from exc
        result = set_peft_model_state_dict(peft_model, tensors, adapter_name=name)
        unexpected = sorted(result.unexpected_keys)
        missing = sorted(k for k in result.missing_keys if "lora_" in k and f".{name}." in k)
        if unexpected or missing:
            raise BackendError(f"adapter {name} does not match the model: {len(unexpected)} "
                               f"unexpected ({', '.join(unexpected[:4])}), {len(missing)} "
                               f"missing ({', '.join(missing[:4])})")
    if peft_model is None:
        raise BackendError("no adapter to add")
    peft_model.eval()
    return peft_model
