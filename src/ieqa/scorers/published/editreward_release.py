"""Loaders for evaluators released in their authors' own on-disk formats.

:func:`load_reward_release` reads a reward model released as ONE full state dict (a single
``model.safetensors`` with no config or tokenizer, as EditReward's): the configuration,
tokenizer and processor come from the base model the release was trained from; the
tokenizer gains the release's special token (``<|Reward|>``) and the model's embedding
and output matrices have the release's vocabulary size. The state dict holds the VLM's
weights in one of the two key layouts in use

* ``model.visual.*``, ``model.language_model.*``, ``lm_head.weight`` (transformers >= 4.52,
  the layout of the published EditReward files), or
* ``visual.*``, ``model.layers.*`` / ``model.embed_tokens.*`` / ``model.norm.*``,
  ``lm_head.weight`` (older transformers),

plus the reward heads under ``rm_heads.<name>.*`` (or a single ``rm_head.*``), which are
returned as tensors for the scorer to build. Keys that match nothing in the architecture,
and architecture weights the file lacks, are an error listing them: a release is never
loaded into a model that silently keeps random weights.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.backends.processor import BackendError, load_processor
from ieqa.backends.transformers_vlm import TransformersVLM, resolve_device

__all__ = ["RewardRelease", "load_reward_release", "read_state_dict", "release_file",
           "split_heads", "to_current_layout"]

log = logging.getLogger(__name__)

#: the file a single-state-dict release ships
RELEASE_FILE = "model.safetensors"


@dataclass
class RewardRelease:
    """A released reward model, loaded.

    Attributes:
        vlm: the VLM with the release's weights (a :class:`TransformersVLM`).
        heads: per head name (``"head_0"``, ...; ``""`` for a single ``rm_head``), its
            tensors keyed by their name inside the head (``"0.weight"``, ...), float32 CPU.
        special_token: the token added to the base tokenizer (the reward is read there).
        files: where the weights and the base model came from (recorded in score files).
    """

    vlm: TransformersVLM
    heads: dict[str, dict[str, Any]]
    special_token: str
    files: dict[str, Any] = field(default_factory=dict)


#: what a checkpoint folder of the authors' training may hold instead (their inferencers
#: read ``model.pth`` first: a ``torch.save``d state dict, possibly under ``"model"``)
TORCH_FILE = "model.pth"


def release_file(release: str | Path, *, revision: str | None = None,
                 filename: str = RELEASE_FILE) -> Path:
    """The local path of a release's weights file.

    ``release`` is the file itself, a local folder holding ``filename`` (or, for a
    checkpoint of the authors' training, ``model.pth``, which their inferencers read
    first), or a hub id (downloaded by huggingface_hub into its cache; ``revision`` pins a
    branch, tag or commit).

    Raises:
        BackendError: the folder lacks the file, or the hub has no such repository/file.
    """
    path = Path(release).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        if filename == RELEASE_FILE and (path / TORCH_FILE).is_file():
            return path / TORCH_FILE
        if (path / filename).is_file():
            return path / filename
        present = sorted(p.name for p in path.iterdir())[:20]
        also = f" or {TORCH_FILE}" if filename == RELEASE_FILE else ""
        raise BackendError(f"{path} holds no {filename}{also} (it holds: "
                           f"{', '.join(present) or 'nothing'}); pass the folder of the "
                           "released files or the hub id")
    if str(release).startswith((".", "/", "~")) or str(release).count("/") != 1:
        raise BackendError(f"{release} is neither a local file or folder nor a hub id "
                           "(owner/name)")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(hf_hub_download(str(release), filename, revision=revision))
    except LocalEntryNotFoundError as exc:
        raise BackendError(f"{release}: {filename} is not in the local Hugging Face cache and "
                           "could not be downloaded (HF_HUB_OFFLINE=1, or no network); "
                           "download it once with network, or pass --model with a local "
                           "folder holding it") from exc
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise BackendError(f"cannot download {filename} of {release}"
                           f"{f' at {revision}' if revision else ''}: {exc}") from exc


def read_state_dict(path: Path) -> dict[str, Any]:
    """The tensors of a weights file: safetensors, or a ``torch.save``d state dict
    (``.pth``/``.pt``/``.bin``; read with ``weights_only=True``, so nothing in it runs),
    unwrapped from ``{"model": ...}`` as the authors' inferencers do."""
    if path.suffix in (".pth", ".pt", ".bin"):
        import torch

        try:
            state = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a bad file
            raise BackendError(f"cannot read {path} as a torch state dict: {exc}") from exc
        if isinstance(state, dict) and isinstance(state.get("model"), dict):
            state = state["model"]
        if not isinstance(state, dict):
            raise BackendError(f"{path} holds a {type(state).__name__}, not a state dict")
        return state
    from safetensors.torch import load_file

    return load_file(str(path))


def split_heads(state_dict: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(model weights, heads)``: the ``rm_heads.<name>.*`` / ``rm_head.*`` tensors taken out
    of ``state_dict`` and grouped by head (float32)."""
    model, heads = {}, {}
    for key, value in state_dict.items():
        if key.startswith("rm_heads."):
            name, _, rest = key[len("rm_heads."):].partition(".")
            heads.setdefault(name, {})[rest] = value.float()
        elif key.startswith("rm_head."):
            heads.setdefault("", {})[key[len("rm_head."):]] = value.float()
        else:
            model[key] = value
    return model, heads


def to_current_layout(state_dict: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The weights under transformers' current Qwen-VL key names, and which layout they
    came in (``"current"`` or ``"legacy"``)."""
    if any(k.startswith(("model.language_model.", "model.visual.")) for k in state_dict):
        return state_dict, "current"
    out = {}
    for key, value in state_dict.items():
        if key.startswith("visual."):
            key = "model." + key
        elif key.startswith("model."):
            key = "model.language_model." + key[len("model."):]
        out[key] = value
    return out, "legacy"


def _vocab_rows(state_dict: dict[str, Any]) -> int:
    key = "model.language_model.embed_tokens.weight"
    if key not in state_dict:
        raise BackendError(f"the release has no {key} (nor model.embed_tokens.weight): is it a "
                           "Qwen-VL reward model's full state dict?")
    return int(state_dict[key].shape[0])


def load_reward_release(release: str | Path, *, base_model: str | Path,
                        special_token: str = "<|Reward|>", revision: str | None = None,
                        base_revision: str | None = None, device: str | None = "auto",
                        dtype: str = "auto", attn_implementation: str | None = None,
                        min_pixels: int | None = None, max_pixels: int | None = None,
                        positions: str = "1d", share_prefix: bool = True) -> RewardRelease:
    """Load a reward model released as one state dict onto its base model.

    Args:
        release: the weights file, a folder holding ``model.safetensors``, or a hub id.
        base_model: the base VLM (hub id or local folder) whose config, tokenizer and
            processor the release uses.
        special_token: the token added to the tokenizer (the release's embedding matrix must
            have exactly the base tokenizer's size plus this token).
        revision, base_revision: hub revisions of the release and the base model.
        device, dtype, attn_implementation, min_pixels, max_pixels, share_prefix: as for
            :class:`TransformersVLM`.
        positions: position ids of the forward (``"1d"`` as EditReward's release runs).

    Raises:
        BackendError: a file is missing, the vocabulary does not match the base tokenizer,
            or the release's keys do not match the architecture (listed).
    """
    from transformers import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING, AutoConfig

    from ieqa.backends.transformers_vlm import POSITION_MODES

    if positions not in POSITION_MODES:  # before reading gigabytes
        raise BackendError(f"positions must be one of {', '.join(POSITION_MODES)}, got "
                           f"{positions!r}")
    path = release_file(release, revision=revision)
    weights, heads = split_heads(read_state_dict(path))
    if not heads:
        raise BackendError(f"{path} holds no reward head (no rm_heads.* or rm_head.* keys): it "
                           "is not a reward-model release")
    weights, layout = to_current_layout(weights)
    processor = load_processor(base_model, min_pixels=min_pixels, max_pixels=max_pixels,
                               revision=base_revision)
    tokenizer = processor.tokenizer
    tokenizer.add_special_tokens({"additional_special_tokens": [special_token]})
    rows = _vocab_rows(weights)
    if rows != len(tokenizer):
        raise BackendError(
            f"{path}: the embedding matrix has {rows} rows but {base_model}'s tokenizer with "
            f"{special_token} has {len(tokenizer)} tokens; is --base-model the model this "
            "release was trained from?")
    config = AutoConfig.from_pretrained(base_model, revision=base_revision)
    text_config = getattr(config, "text_config", config)
    text_config.vocab_size = rows
    torch_dtype = TransformersVLM.torch_dtype_of(dtype)
    # mismatched shapes are reported in the loading info (listed below), not raised unnamed
    kwargs: dict[str, Any] = {"config": config, "state_dict": weights, "dtype": torch_dtype,
                              "output_loading_info": True, "ignore_mismatched_sizes": True}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model_class = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(config)]
    except KeyError as exc:
        raise BackendError(f"{base_model} ({type(config).__name__}) is not an image-text-to-text "
                           "model transformers knows") from exc
    try:
        model, info = model_class.from_pretrained(None, **kwargs)
    except (ValueError, RuntimeError) as exc:
        raise BackendError(f"{path} does not load onto {base_model}'s architecture: {exc}") from exc
    problems = {kind: sorted(info.get(kind) or []) for kind in
                ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if any(problems.values()):
        listed = "; ".join(f"{kind.replace('_', ' ')} ({len(keys)}): "
                           f"{', '.join(map(str, keys[:8]))}{' ...' if len(keys) > 8 else ''}"
                           for kind, keys in problems.items() if keys)
        raise BackendError(f"{path} does not match {base_model}'s architecture: {listed}. "
                           "Is --base-model the model this release was trained from?")
    model.config.pad_token_id = tokenizer.pad_token_id
    device = resolve_device(device)
    model.to(device)
    vlm = TransformersVLM.from_model(
        model, processor, name=str(release), share_prefix=share_prefix, positions=positions,
        settings={"base_model": str(base_model), "revision": revision,
                  "base_revision": base_revision, "min_pixels": min_pixels,
                  "max_pixels": max_pixels, "dtype": dtype})
    vlm.device = device
    return RewardRelease(vlm=vlm, heads=heads, special_token=special_token,
                         files={"weights": str(path), "layout": layout,
                                "base_model": str(base_model)})
