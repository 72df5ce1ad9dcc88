"""``reasonedit``: ReasonEdit's released evaluator (IntMeGroup/ReasonEdit), scoring as its
authors' inference code does.

The release is a package folder (``TmpAccount/ReasonEdit``, subfolder ``ReasonEdit``):
a LoRA state dict (``adapter_model.safetensors``) for Qwen3.5-9B, a regression head
(``regression_head.pt``), the processor files and, optionally, ``calibration.json``. The
LoRA settings are the authors' code's (rank 64, alpha 128, their target modules), and the
adapter stays unmerged, as they run it. Per edit:

* both images are converted to RGB and, when larger than 262 144 pixels, scaled down to
  that area with sides rounded to multiples of 16 (Lanczos), then the processor resizes
  them with min = max = 262 144 pixels;
* the chat is the source image, the edited image, then the authors' prompt with the
  instruction (stripped), with the generation prompt appended;
* the final normalised hidden state of the last prompt token goes through the head,
  ``Linear(H, H/2) - SiLU - Dropout - Linear(H/2, 3)`` in the model's dtype: raw visual
  quality, editing alignment and content preservation;
* calibration: per dimension ``clip(raw * slope + intercept, 0, 1)`` (slope 1, intercept 0
  without ``calibration.json``), and ``overall = 0.3 VQ + 0.4 IA + 0.3 CP``.

Reported: ``visual_quality``, ``instruction_alignment``, ``content_preservation`` and
``overall`` on 0-1; the raw head outputs are in ``raw``. The release loads the base model
in 4 bit by default (bitsandbytes nf4 with double quantisation, the unquantised parameters
in fp32, CUDA); ``load_in_4bit`` defaults to that when the scorer's device is a GPU and to
full precision on the CPU, where 4 bit does not run. The prompt text is the authors':
``build_prompt`` of their ``core/prompting.py`` at a pinned commit with a SHA-256 check,
read by parsing the file, or from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from torch import nn

from ieqa.backends import Prompt, TransformersVLM
from ieqa.data.combine import REASONEDIT_WEIGHTS
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import ReleasedHead
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["ReasonEditReleaseScorer", "PROMPT_SOURCES", "LORA", "release_head", "fit_release_pixels"]

#: the commit of IntMeGroup/ReasonEdit the prompt file is read at
REVISION = "aa081e9d0708143be9e03da24efa3bef1aa9b504"
_PROMPTING = SourceFile("IntMeGroup/ReasonEdit", REVISION, "core/prompting.py",
                        "f7d0d6a70ecfe9affb6a0552ce7c3d8864b1e7ac3bd38c6f332e05f041ab53ad")
#: the prompt: what ``build_prompt(instruction)`` returns, the instruction stripped
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("prompt", _PROMPTING, "build_prompt()", ("instruction|strip",)),
)

#: the release on the hub (a subfolder of the repository) and its base model
RELEASE, SUBFOLDER, BASE_MODEL = "TmpAccount/ReasonEdit", "ReasonEdit", "Qwen/Qwen3.5-9B"
#: the LoRA settings of the authors' inference code (their adapter file has no config)
LORA: dict[str, Any] = {
    "r": 64, "lora_alpha": 128, "lora_dropout": 0.05, "bias": "none",
    "target_modules": ["up_proj", "gate_proj", "attn.qkv", "patch_embed.proj", "k_proj",
                       "q_proj", "merger.linear_fc2", "mlp.linear_fc1", "down_proj", "o_proj",
                       "mlp.linear_fc2", "attn.proj", "merger.linear_fc1", "v_proj"]}
#: pixels per image (the processor's min and max), and the grid of the authors' pre-resize
PIXELS, GRID = 262144, 16
#: the head's outputs in order, and the weights of ``overall``
DIMENSIONS = ("visual_quality", "instruction_alignment", "content_preservation")
WEIGHTS = tuple(REASONEDIT_WEIGHTS[d] for d in DIMENSIONS)
_CALIBRATION_NAMES = ("visual_quality", "editing_alignment", "content_preservation")


def fit_release_pixels(image: Image.Image, max_pixels: int = PIXELS) -> Image.Image:
    """The authors' pre-resize: an image over ``max_pixels`` is scaled to about that area,
    each side rounded to the nearest pixel and then down to a multiple of 16 (at least 16),
    with Lanczos; a smaller one is returned unchanged."""
    width, height = image.size
    if width * height <= max_pixels:
        return image
    scale = math.sqrt(max_pixels / float(width * height))
    w = max(GRID, (max(GRID, int(round(width * scale))) // GRID) * GRID)
    h = max(GRID, (max(GRID, int(round(height * scale))) // GRID) * GRID)
    return image.resize((w, h), Image.Resampling.LANCZOS)


def release_head(state: dict[str, torch.Tensor], dtype: torch.dtype) -> nn.Sequential:
    """The released regression head from its state dict (``0.weight``, ``0.bias``,
    ``3.weight``, ``3.bias``): ``Linear - SiLU - Dropout - Linear`` to 3 outputs, in
    ``dtype``, in eval mode."""
    if sorted(state) != ["0.bias", "0.weight", "3.bias", "3.weight"]:
        raise ScorerError(f"a ReasonEdit regression head holds 0.weight, 0.bias, 3.weight and "
                          f"3.bias; this one holds {sorted(state)}")
    hidden, width = state["0.weight"].shape[1], state["0.weight"].shape[0]
    if tuple(state["3.weight"].shape) != (3, width):
        raise ScorerError(f"the head's last layer is {tuple(state['3.weight'].shape)}, not "
                          f"(3, {width})")
    head = nn.Sequential(nn.Linear(hidden, width), nn.SiLU(), nn.Dropout(0.1), nn.Linear(width, 3))
    head.load_state_dict(state)
    return head.to(dtype).eval()


def read_calibration(folder: Path) -> tuple[tuple[float, float], ...]:
    """``(slope, intercept)`` per dimension from ``calibration.json`` (identity without it).

    Raises:
        ScorerError: the file is not an ``affine_per_dimension`` calibration of the three
            dimensions.
    """
    path = folder / "calibration.json"
    if not path.is_file():
        return ((1.0, 0.0),) * 3
    try:
        payload = json.loads(path.read_text())
        if payload.get("calibration_type") != "affine_per_dimension":
            raise ValueError(f"calibration_type {payload.get('calibration_type')!r}")
        coeff = payload["coefficients"]
        return tuple((float(coeff[n]["slope"]), float(coeff[n]["intercept"]))
                     for n in _CALIBRATION_NAMES)
    except (ValueError, KeyError, TypeError) as exc:
        raise ScorerError(f"{path} is not an affine_per_dimension calibration of "
                          f"{', '.join(_CALIBRATION_NAMES)} ({exc})") from exc


class ReasonEditReleaseScorer(ReleasedHead):
    """ReasonEdit as released (see the module docstring).

    Args:
        model: the release package: hub id (default ``TmpAccount/ReasonEdit``, subfolder
            ``ReasonEdit``) or a local folder holding its files.
        base_model: the base VLM (default ``Qwen/Qwen3.5-9B``; hub id or local folder).
        revision, base_revision: hub revisions of the release and the base model.
        prompts: a local copy of the authors' repository (``--prompts``).
        load_in_4bit: load the base in 4 bit (the release's default; needs CUDA and
            bitsandbytes). Default: on when CUDA is available, off otherwise.
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)

    Every prompt runs in full (no prefix sharing: the hybrid decoder's linear-attention
    layers keep a recurrent state, not a key-value cache).
    """

    readout = "reasonedit"
    prompt_sources = PROMPT_SOURCES
    released_range = (0.0, 1.0)

    def __init__(self, *, model: str | Path | None = None, base_model: str | Path | None = None,
                 revision: str | None = None, base_revision: str | None = None,
                 prompts: str | Path | None = None, load_in_4bit: bool | None = None,
                 attn_implementation: str | None = None,
                 device: str | None = "auto", dtype: str = "auto", batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS) -> None:
        from ieqa.scorers.published.lora_release import (
            load_head_state,
            load_lora_state_release,
            release_folder,
        )

        self.texts = self.load_prompts(prompts)  # fails before the model
        needs = ("adapter_model.safetensors", "regression_head.pt")
        release_id = str(model) if model is not None else RELEASE
        folder = release_folder(release_id, subfolder=SUBFOLDER if release_id == RELEASE else None,
                                revision=revision, needs=needs)
        self.calibration = read_calibration(folder)
        from ieqa.backends.transformers_vlm import resolve_device

        on_gpu = resolve_device(device).startswith("cuda")
        four_bit = on_gpu if load_in_4bit is None else bool(load_in_4bit)
        release = load_lora_state_release(
            folder, base_model=base_model if base_model is not None else BASE_MODEL, lora=LORA,
            base_revision=base_revision, device=device, dtype=dtype, load_in_4bit=four_bit,
            attn_implementation=attn_implementation, min_pixels=PIXELS, max_pixels=PIXELS,
            share_prefix=False, name=release_id)
        # the head runs in the precision the model was asked for (bf16 on a GPU), as the
        # authors cast it, whatever 4-bit loading upcast
        precision = TransformersVLM.torch_dtype_of(dtype)
        self.head = release_head(load_head_state(folder / "regression_head.pt"), precision)
        self.head.to(release.vlm.input_device)
        self.package_dir = str(folder)
        self.release_files = {**release.files, "release": release_id,
                              "subfolder": SUBFOLDER if release_id == RELEASE else None,
                              "revision": revision,
                              "calibration": (folder / "calibration.json").is_file()}
        super().__init__(backend=release.vlm, template="editreward", dimensions=DIMENSIONS,
                         batch_size=batch_size, max_instruction_chars=max_instruction_chars)

    def release_config(self) -> dict[str, Any]:
        return {"pixels": PIXELS, "calibration": [list(c) for c in self.calibration]}

    def prompt(self, item: LoadedSample) -> Prompt:
        """The chat of one edit: source image, edited image, the authors' prompt."""
        if item.source is None:
            raise ScorerError(f"sample {item.sample.id!r} has no source image; ReasonEdit "
                              "compares the edit with its source")
        text = self.texts["prompt"].replace("{instruction|strip}", item.sample.instruction.strip())
        return Prompt(parts=(fit_release_pixels(item.source), fit_release_pixels(item.edited),
                             text))

    def raw_scores(self, items: Sequence[LoadedSample]) -> torch.Tensor:
        """The head's outputs ``[n, 3]`` (float32): raw VQ, IA, CP."""
        hidden = self.backend.forward([self.prompt(item) for item in items], logits=False,
                                      anchor="last").hidden
        with torch.inference_mode():
            out = self.head(hidden.to(self.head[0].weight.dtype).to(self.head[0].weight.device))
        return out.float().cpu()

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        return self.head_results(items, self.raw_scores(items).tolist(), self._result)

    def _result(self, item: LoadedSample, values: list[float]) -> ScoreResult:
        calibrated = [min(1.0, max(0.0, v * slope + intercept))
                      for v, (slope, intercept) in zip(values, self.calibration, strict=True)]
        scores = dict(zip(DIMENSIONS, calibrated, strict=True))
        scores["overall"] = sum(w * v for w, v in zip(WEIGHTS, calibrated, strict=True))
        return ScoreResult(id=item.sample.id, scores=scores,
                           raw={"head": dict(zip(DIMENSIONS, values, strict=True))})
