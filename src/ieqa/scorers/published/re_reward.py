"""``re-reward``: RE-Reward, ReasonEdit's released critique reward model
(IntMeGroup/ReasonEdit, ``RE-reward/reward_infer.py``), scoring a critique of an edit as
its authors' code does.

The release is a package folder (``TmpAccount/ReasonEdit``, subfolder ``RE-Reward``): a PEFT
LoRA adapter for Qwen3.5-4B (kept unmerged, as the authors run it), ``score_head.pth`` and
``reward_head_config.json`` (hidden size, bottleneck, dropout, labels). Per edit and
critique (``EditSample.meta["critique"]``, as for the ``critique`` scorer):

* the chat is the source image, the edited image, then the authors' prompt with the
  instruction and the critique (each stripped), with the generation prompt appended; the
  images are not resized before the base model's processor (the authors' default);
* the final hidden state of the last token goes through the head, ``Linear - SiLU - Dropout
  - Linear`` in float32 (the authors never cast it): logicality, accuracy, usefulness;
* ``overall = 0.3 logicality + 0.4 accuracy + 0.3 usefulness`` (the release's weights; the
  paper's RE-Reward weighs accuracy 0.5, which ieqa's ``critique`` scorer uses).

The prompt text is the authors': the method ``Qwen35LoRARewardModel.build_prompt`` of their
``RE-reward/reward_infer.py`` at a pinned commit with a SHA-256 check, read by parsing the
file, or from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ieqa.backends import Prompt, TransformersVLM
from ieqa.data.combine import RE_REWARD_WEIGHTS, weighted_sum
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.critique_input import CRITIQUE_KEYS, critique_text
from ieqa.scorers.published.base import ReleasedHead
from ieqa.scorers.published.reasonedit import REVISION
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["RERewardReleaseScorer", "PROMPT_SOURCES", "reward_head"]

_INFER = SourceFile("IntMeGroup/ReasonEdit", REVISION, "RE-reward/reward_infer.py",
                    "6859cdc81002ae62681665ea93f9f0fd8533ccb30bd2ee0b06ae0c3d452077bd")
#: the prompt: what ``Qwen35LoRARewardModel.build_prompt(instruction, critique_text)``
#: returns, both stripped
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("prompt", _INFER, "Qwen35LoRARewardModel.build_prompt()",
                  ("instruction|strip", "critique_text|strip")),
)
RELEASE, SUBFOLDER, BASE_MODEL = "TmpAccount/ReasonEdit", "RE-Reward", "Qwen/Qwen3.5-4B"
DIMENSIONS = tuple(RE_REWARD_WEIGHTS)
WEIGHTS = tuple(RE_REWARD_WEIGHTS.values())


def reward_head(config: dict[str, Any], state: dict[str, torch.Tensor],
                dtype: torch.dtype) -> nn.Sequential:
    """The released head from ``reward_head_config.json`` and its state dict (keys
    ``0.*``/``3.*`` or ``layers.0.*``/``layers.3.*``), in ``dtype``, in eval mode."""
    try:
        hidden, width = int(config["hidden_size"]), int(config["bottleneck"])
        labels, dropout = int(config["num_labels"]), float(config["dropout"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ScorerError(f"reward_head_config.json needs hidden_size, bottleneck, dropout and "
                          f"num_labels ({exc})") from exc
    if labels != len(DIMENSIONS):
        raise ScorerError(f"the head has {labels} outputs; RE-Reward's are {', '.join(DIMENSIONS)}")
    head = nn.Sequential(nn.Linear(hidden, width), nn.SiLU(), nn.Dropout(dropout),
                         nn.Linear(width, labels))
    state = {k.removeprefix("layers."): v for k, v in state.items()}
    try:
        head.load_state_dict(state)
    except RuntimeError as exc:
        raise ScorerError(f"score_head.pth does not fit reward_head_config.json: {exc}") from exc
    return head.to(dtype).eval()


class RERewardReleaseScorer(ReleasedHead):
    """RE-Reward as released (see the module docstring).

    Args:
        model: the release package: hub id (default ``TmpAccount/ReasonEdit``, subfolder
            ``RE-Reward``) or a local folder holding its files.
        base_model: the base VLM (default ``Qwen/Qwen3.5-4B``).
        revision, base_revision: hub revisions of the release and the base model.
        prompts: a local copy of the authors' repository (``--prompts``).
        critique_keys: ``meta`` keys read for the critique, in order.
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "re-reward"
    prompt_sources = PROMPT_SOURCES

    def __init__(self, *, model: str | Path | None = None, base_model: str | Path | None = None,
                 revision: str | None = None, base_revision: str | None = None,
                 prompts: str | Path | None = None, critique_keys: Sequence[str] = CRITIQUE_KEYS,
                 attn_implementation: str | None = None, device: str | None = "auto",
                 dtype: str = "auto", batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS) -> None:
        from ieqa.scorers.published.lora_release import load_head_state, release_folder

        self.texts = self.load_prompts(prompts)
        self.critique_keys = tuple(critique_keys)
        needs = ("adapter_config.json", "adapter_model.safetensors", "score_head.pth",
                 "reward_head_config.json")
        release_id = str(model) if model is not None else RELEASE
        folder = release_folder(release_id, subfolder=SUBFOLDER if release_id == RELEASE else None,
                                revision=revision, needs=needs)
        try:
            head_config = json.loads((folder / "reward_head_config.json").read_text())
        except ValueError as exc:
            raise ScorerError(f"{folder / 'reward_head_config.json'} is not JSON ({exc})") from exc
        state = load_head_state(folder / "score_head.pth")
        vlm = TransformersVLM(base_model if base_model is not None else BASE_MODEL,
                              adapter=folder, merge_adapter=False, revision=base_revision,
                              device=device, dtype=dtype, attn_implementation=attn_implementation,
                              share_prefix=False)
        # float32, as the authors' head (never cast; the pooled state is cast to it)
        self.head = reward_head(head_config, state, torch.float32).to(vlm.input_device)
        self.package_dir = str(folder)
        self.release_files = {"release": release_id,
                              "subfolder": SUBFOLDER if release_id == RELEASE else None,
                              "revision": revision, "head": head_config}
        super().__init__(backend=vlm, template="editreward", dimensions=DIMENSIONS,
                         batch_size=batch_size, max_instruction_chars=max_instruction_chars)

    def backend_config(self) -> dict[str, Any]:
        return {**self.backend.config(), "adapter": self.release_files["release"]}

    def release_config(self) -> dict[str, Any]:
        return {"critique_keys": list(self.critique_keys)}

    def check_sample(self, sample: Any) -> None:
        super().check_sample(sample)
        if critique_text(sample, self.critique_keys) is None:
            raise ScorerError(f"sample {sample.id!r} has no critique (meta keys "
                              f"{', '.join(self.critique_keys)}); RE-Reward scores a critique")

    def prompt(self, item: LoadedSample) -> Prompt:
        """The chat of one edit and critique: source image, edited image, the prompt."""
        if item.source is None:
            raise ScorerError(f"sample {item.sample.id!r} has no source image")
        critique = critique_text(item.sample, self.critique_keys) or ""
        text = (self.texts["prompt"]
                .replace("{instruction|strip}", item.sample.instruction.strip())
                .replace("{critique_text|strip}", critique.strip()))
        return Prompt(parts=(item.source, item.edited, text))

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        hidden = self.backend.forward([self.prompt(item) for item in items], logits=False,
                                      anchor="last").hidden
        weight = self.head[0].weight
        with torch.inference_mode():
            out = self.head(hidden.to(weight.device, weight.dtype)).float().cpu()
        return self.head_results(items, out.tolist(), self._result)

    @staticmethod
    def _result(item: LoadedSample, values: list[float]) -> ScoreResult:
        scores = dict(zip(DIMENSIONS, values, strict=True))
        scores["overall"] = weighted_sum(scores, RE_REWARD_WEIGHTS)
        return ScoreResult(id=item.sample.id, scores=scores)
