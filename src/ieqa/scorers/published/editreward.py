"""``editreward``: EditReward's released reward models, scoring as their authors' code does.

EditReward (Wu et al. 2025, TIGER-Lab) released its reward models as one state dict on a
base VLM (:func:`ieqa.scorers.published.editreward_release.load_reward_release`). Each triplet runs two
forward passes, each with the source and then the edited image followed by one prompt:
the *instruction-following* prompt, read by ``head_0``, and the *visual-quality* prompt,
read by ``head_1``. Each head maps the final hidden state at the ``<|Reward|>`` token
(fp32) to ``(mu, log sigma)``. The released model fuses the heads by the mean of
``[mu, log sigma]`` elementwise, which is ``overall`` here (``sigma_aggregation=
"independent"`` gives the sigma of a mean of independent Gaussians instead).

Reported: ``instruction_alignment`` (mu of head_0), ``visual_quality`` (mu of head_1), with
their sigma, and ``overall``. Both images are resized to the release's pixel budget
(``min_pixels = max_pixels = 200704``) with Pillow before the processor, as the authors'
``process_vision_info`` does (:func:`~ieqa.backends.base.fit_qwen_grid`); the processor
keeps them (its budget is the released Qwen processor's, 3136 to 12845056 pixels), so the
pixels do not depend on which image processor transformers picks. The forward uses 1-D positions, as released
(``positions="1d"``; ``"model"`` gives transformers' 3-D M-RoPE positions, which the
release was not trained with).

The Qwen3-VL configuration of the authors' repository (``variant="qwen3-vl-8b"``, their
``EditReward-Qwen3-VL.yaml``: a full fine-tune of ``Qwen/Qwen3-VL-8B-Instruct`` saved as the
same one-file state dict) runs as their ``EditRewardQwen3Inferencer`` does, which differs in
two ways: the images go to the processor unresized (their messages carry ``min_pixels`` /
``max_pixels`` keys, which ``processor.apply_chat_template`` does not read, so the Qwen3-VL
processor's own budget applies), and the forward gets no position ids (the model's own 3-D
positions, ``positions="model"``). The authors published no weights for it: ``model=``
(``--model``) names a checkpoint trained with that configuration (``model.safetensors``,
or their ``model.pth``).

The prompt texts are the authors': read at run time from their repository's files at a
pinned commit with a SHA-256 check (:mod:`ieqa.prompts.published`), or from ``prompts=DIR``
(``--prompts``), a local copy laid out as their repository.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ieqa.backends import Prompt
from ieqa.backends.base import fit_qwen_grid
from ieqa.prompts.published import PublishedText, SourceFile, load_texts
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import ReleasedHead
from ieqa.scorers.published.editreward_release import RewardRelease
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    share_key,
)

__all__ = ["EditRewardScorer", "EditRewardVariant", "VARIANTS", "PROMPT_SOURCES",
           "release_head"]

#: the commit of TIGER-AI-Lab/EditReward the prompt files are read at
REVISION = "edb027edde6080b8a9521ef8e87049b3797f8374"
_PROMPTS = SourceFile("TIGER-AI-Lab/EditReward", REVISION, "EditReward/dataset/prompts.py",
                      "1a64bd01924d69fe1bb4b1664d33a32c06c5fbc7230ed7cb67f253183322c7aa")
_COLLATOR = SourceFile("TIGER-AI-Lab/EditReward", REVISION,
                       "EditReward/dataset/data_collator_qwen_edit.py",
                       "afe43a33ae6481db03a8ab3b50c4b5e9923c2c6ce89e1022fe533755ba42b2c7")

#: the authors' texts, by what ieqa calls them: the two head prompts (the instruction goes
#: into ``{text_prompt}``) and the cue that ends each prompt with the reward token
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("instruction_following", _PROMPTS, "INSTRUCTION_EDIT_FOLLOWING",
                  ("text_prompt",)),
    PublishedText("visual_quality", _PROMPTS, "INSTRUCTION_EDIT_QUALITY", ("text_prompt",)),
    PublishedText("reward_cue", _COLLATOR, "prompt_with_special_token", markers=("<|Reward|>",)),
)

#: pixel budget of each image, min = max (256 * 28 * 28), as the release's inference sets it
PIXELS = 200704
#: the image processor's own budget in the release's inference (the Qwen2.5-VL processor's
#: defaults), which keeps the images resized to :data:`PIXELS`
PROCESSOR_PIXELS = (4 * 28 * 28, 16384 * 28 * 28)


@dataclass(frozen=True)
class EditRewardVariant:
    """One EditReward model of the authors' repository.

    Attributes:
        release: hub id of the released state dict; None where the authors published a
            configuration but no weights (``model=`` is then required).
        base_model: hub id of the VLM it was trained from.
        parameters: parameter count of the release (VLM and heads), for the catalog.
        pixels: each image's pixel budget (min = max), applied with Pillow before the
            processor as the authors' Qwen2.5-VL collator does; None: the images go to the
            processor as they are (its own budget applies), as their Qwen3-VL inferencer.
        positions: the forward's position ids by default: ``"1d"`` (the Qwen2.5-VL
            trainer's) or ``"model"`` (the model's own, the Qwen3-VL trainer's).
        config: the authors' configuration file it was trained with.
    """

    release: str | None
    base_model: str
    parameters: str
    pixels: int | None = PIXELS
    positions: str = "1d"
    config: str = "EditReward/config/EditReward-Qwen2.5-7B-VL.yaml"


#: the released models (``variant=``); the first is the default
VARIANTS: dict[str, EditRewardVariant] = {
    "qwen2.5-vl-7b": EditRewardVariant("TIGER-Lab/EditReward-Qwen2.5-7B-VL",
                                       "Qwen/Qwen2.5-VL-7B-Instruct", "8.3 B"),
    "mimo-vl-7b": EditRewardVariant("TIGER-Lab/EditReward-MiMo-VL-7B-SFT-2508",
                                    "XiaomiMiMo/MiMo-VL-7B-SFT-2508", "8.3 B",
                                    config="EditReward/config/EditReward-MiMo-VL-7B-SFT-2508.yaml"),
    "qwen3-vl-8b": EditRewardVariant(None, "Qwen/Qwen3-VL-8B-Instruct", "8.8 B", pixels=None,
                                     positions="model",
                                     config="EditReward/config/EditReward-Qwen3-VL.yaml"),
}

#: which head reads which prompt, and the dimension it scores
_HEADS = (("head_0", "instruction_following", "instruction_alignment"),
          ("head_1", "visual_quality", "visual_quality"))


def release_head(tensors: Mapping[str, torch.Tensor]) -> nn.Sequential:
    """The released head from its tensors (``"0.weight"``, ``"0.bias"``, ``"3.weight"``,
    ...): ``Linear - ReLU - Dropout - Linear - ReLU - Linear``, the widths read from the
    weights, float32, in eval mode (dropout off)."""
    indices = sorted({int(k.split(".")[0]) for k in tensors})
    if indices != [0, 3, 5]:
        raise ScorerError(f"a released EditReward head has linear layers 0, 3 and 5; this one "
                          f"has {indices}")
    shapes = [tuple(tensors[f"{i}.weight"].shape) for i in indices]
    head = nn.Sequential(nn.Linear(shapes[0][1], shapes[0][0]), nn.ReLU(), nn.Dropout(0.0),
                         nn.Linear(shapes[1][1], shapes[1][0]), nn.ReLU(),
                         nn.Linear(shapes[2][1], shapes[2][0]))
    head.load_state_dict(dict(tensors))
    return head.float().eval()


class EditRewardScorer(ReleasedHead):
    """EditReward as released (see the module docstring).

    Args:
        model: the release: hub id (default: the variant's), a local folder holding its
            ``model.safetensors``, or the file.
        variant: ``"qwen2.5-vl-7b"`` (default), ``"mimo-vl-7b"`` or ``"qwen3-vl-8b"`` (the
            authors' Qwen3-VL configuration; no published weights, so ``model`` is
            required): the default release, base model, pixels and positions.
        base_model: the base VLM (hub id or local folder); default the variant's.
        revision, base_revision: hub revisions of the release and the base model.
        prompts: a local copy of the authors' repository (``--prompts``) instead of
            fetching the pinned prompt files.
        positions: ``"1d"`` or ``"model"`` (transformers' M-RoPE); default the
            variant's (``"1d"`` for Qwen2.5-VL and MiMo-VL, ``"model"`` for Qwen3-VL).
        sigma_aggregation: ``"elementwise"`` (as released: mean of log sigma) or
            ``"independent"``.
        attn_implementation, share_prefix: transformers backend settings.
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`: ``device``,
        ``dtype``, ``batch_size``, ``max_instruction_chars``)
    """

    readout = "editreward"
    prompt_sources = PROMPT_SOURCES
    package_key = None

    def __init__(self, *, model: str | Path | None = None, variant: str = "qwen2.5-vl-7b",
                 base_model: str | Path | None = None, revision: str | None = None,
                 base_revision: str | None = None, prompts: str | Path | None = None,
                 positions: str | None = None, sigma_aggregation: str = "elementwise",
                 attn_implementation: str | None = None, share_prefix: bool = True,
                 device: str | None = "auto", dtype: str = "auto", batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS) -> None:
        from ieqa.scorers.published.editreward_release import load_reward_release

        if variant not in VARIANTS:
            raise ScorerError(f"unknown EditReward variant {variant!r}; choose one of "
                              f"{', '.join(VARIANTS)}")
        if sigma_aggregation not in ("elementwise", "independent"):  # before the model
            raise ScorerError("sigma_aggregation must be elementwise (as released) or "
                              f"independent, got {sigma_aggregation!r}")
        chosen = VARIANTS[variant]
        if model is None and chosen.release is None:
            raise ScorerError(
                f"EditReward's {variant} configuration ({chosen.config} in "
                "TIGER-AI-Lab/EditReward) has no published weights: pass --model (-O model=) "
                "with a checkpoint trained with it, a folder holding model.safetensors or "
                "model.pth, or the file")
        texts = load_texts(PROMPT_SOURCES, prompts_dir=prompts)  # before the model: fails fast
        budget = PROCESSOR_PIXELS if chosen.pixels is not None else (None, None)
        release = load_reward_release(
            model if model is not None else chosen.release,
            base_model=base_model if base_model is not None else chosen.base_model,
            revision=revision, base_revision=base_revision, device=device, dtype=dtype,
            attn_implementation=attn_implementation, min_pixels=budget[0],
            max_pixels=budget[1], positions=positions or chosen.positions,
            share_prefix=share_prefix)
        self._setup(release, texts, prompts, variant=variant,
                    sigma_aggregation=sigma_aggregation, batch_size=batch_size,
                    max_instruction_chars=max_instruction_chars, pixels=chosen.pixels)

    @classmethod
    def from_release(cls, release: RewardRelease, *, prompts: str | Path | None = None,
                     variant: str = "in-memory", sigma_aggregation: str = "elementwise",
                     batch_size: int = 8,
                     max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                     pixels: int | None = PIXELS) -> EditRewardScorer:
        """The scorer on a release already in memory (a model built for a benchmark, or
        loaded with :func:`ieqa.scorers.published.editreward_release.load_reward_release`); ``prompts`` as for
        the constructor; ``pixels`` as :attr:`EditRewardVariant.pixels`."""
        from ieqa.scorers.table import scorer_info

        scorer = cls.__new__(cls)
        scorer.info = scorer_info("editreward")
        scorer._setup(release, load_texts(PROMPT_SOURCES, prompts_dir=prompts), prompts,
                      variant=variant, sigma_aggregation=sigma_aggregation,
                      batch_size=batch_size, max_instruction_chars=max_instruction_chars,
                      pixels=pixels)
        return scorer

    def _setup(self, release: RewardRelease, texts: dict[str, str],
               prompts: str | Path | None, *, variant: str, sigma_aggregation: str,
               batch_size: int, max_instruction_chars: int | None,
               pixels: int | None) -> None:
        if sigma_aggregation not in ("elementwise", "independent"):
            raise ScorerError("sigma_aggregation must be elementwise (as released) or "
                              f"independent, got {sigma_aggregation!r}")
        self.variant = variant
        self.pixels = pixels
        self.sigma_aggregation = sigma_aggregation
        self.texts = texts
        self.prompts_dir = str(prompts) if prompts is not None else None
        missing = [name for name, _, _ in _HEADS if name not in release.heads]
        if missing:
            raise ScorerError(f"the release has heads {sorted(release.heads)}; EditReward "
                              f"reads {', '.join(missing)} too")
        self.heads = {name: release_head(release.heads[name]) for name, _, _ in _HEADS}
        self.anchor = f"token:{release.special_token}"
        self.release_files = release.files
        super().__init__(backend=release.vlm, template="editreward",
                         dimensions=[dim for _, _, dim in _HEADS], batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars)
        self.backend.anchor_token(self.anchor)  # the token is one token of the tokenizer

    def release_config(self) -> dict[str, Any]:
        return {"variant": self.variant, "sigma_aggregation": self.sigma_aggregation,
                "pixels": self.pixels if self.pixels is not None else "processor"}

    def prompt(self, item: LoadedSample, text: str) -> Prompt:
        """The prompt of one head: source image, edited image (each resized to the pixel
        budget, or as they are where the variant has none), then the authors' prompt with
        the instruction filled in and the reward cue appended."""
        if item.source is None:
            raise ScorerError(f"sample {item.sample.id!r} has no source image; EditReward "
                              "compares the edit with its source")
        body = self.texts[text].format(text_prompt=item.sample.instruction)
        source, edited = item.source, item.edited
        if self.pixels is not None:
            source, edited = (fit_qwen_grid(im, min_pixels=self.pixels, max_pixels=self.pixels)
                              for im in (source, edited))
        return Prompt(parts=(source, edited, body + self.texts["reward_cue"]),
                      share_key=f"{share_key(item.sample)}\x00{text}", shared_images=1)

    def head_outputs(self, items: Sequence[LoadedSample]) -> torch.Tensor:
        """``[n_items, 2 heads, (mu, log sigma)]`` float64."""
        out = []
        for name, text, _ in _HEADS:
            hidden = self.backend.forward([self.prompt(item, text) for item in items],
                                          logits=False, anchor=self.anchor).hidden
            with torch.inference_mode():
                out.append(self.heads[name](hidden.float()).double())
        return torch.stack(out, dim=1)

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        from ieqa.data.combine import aggregate_gaussian

        out = self.head_outputs(items)
        mu, log_sigma = out[..., 0], out[..., 1]
        fused_mu, fused_log_sigma = aggregate_gaussian(mu, log_sigma, "mean",
                                                       self.sigma_aggregation)
        results = []
        for k, item in enumerate(items):
            scores = dict(zip(self.score_dimensions, mu[k].tolist(), strict=True))
            sigma = dict(zip(self.score_dimensions, log_sigma[k].exp().tolist(), strict=True))
            scores["overall"] = float(fused_mu[k])
            sigma["overall"] = float(fused_log_sigma[k].exp())
            results.append(ScoreResult(id=item.sample.id, scores=scores, sigma=sigma))
        return results
