"""The trainable evaluator: a VLM (with LoRA adapters, fully trainable, or frozen) plus an
optional MLP head on the pooled hidden state.

:func:`build_model` loads the backbone through :class:`~ieqa.backends.TransformersVLM`
(the same loading code the scorers use: hub id or local folder, dtype, 4-bit), applies the
adapter with peft and creates the head. :class:`EvaluatorModel` runs one differentiable
forward pass and returns the final hidden states, the LM-head logits at the label
positions only, and the head outputs at the anchor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ieqa.backends import BackendError
from ieqa.scorers.vlm.heads import MLPHead
from ieqa.train.recipe import Recipe

__all__ = ["EvaluatorModel", "build_model", "LANGUAGE_TARGETS"]

#: LoRA targets of ``adapter.targets: language``: the decoder's projections (Qwen/Llama
#: naming), matched inside the language model only.
LANGUAGE_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"


class EvaluatorModel(nn.Module):
    """``model`` (a transformers image-text-to-text model, possibly PEFT-wrapped) and
    ``head`` (an :class:`MLPHead` or ``None``).

    Args:
        model: the backbone.
        head: the regression head.
        anchor: where the head reads the hidden state: ``"last"`` (last prompt token, the
            prefill state) or ``"mean"`` (mean over the prompt tokens).
    """

    def __init__(self, model: nn.Module, head: MLPHead | None, anchor: str = "last") -> None:
        super().__init__()
        if anchor not in ("last", "mean"):
            raise ValueError(f"training supports the 'last' and 'mean' anchors, got {anchor!r}")
        self.model = model
        self.head = head
        self.anchor = anchor
        # the backbone's layer classes that FSDP's transformer auto-wrap shards one by one
        self._no_split_modules = getattr(model, "_no_split_modules", None)

    @property
    def transformer(self) -> nn.Module:
        """The model without its LM head (returns ``last_hidden_state``)."""
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        return base.model

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        inputs = {k: v for k, v in batch.items() if k in _MODEL_KEYS}
        device = next(self.parameters()).device
        dtype = self.model.get_input_embeddings().weight.dtype
        inputs = {k: (v.to(device, dtype) if k == "pixel_values" else v.to(device))
                  for k, v in inputs.items()}
        hidden = self.transformer(**inputs, use_cache=False).last_hidden_state
        out: dict[str, torch.Tensor] = {}
        if "label_index" in batch:
            index = batch["label_index"].to(device)
            picked = hidden.gather(1, index[..., None].expand(-1, -1, hidden.shape[-1]))
            out["logits"] = self.model.get_output_embeddings()(picked).float()
        if self.head is not None:
            ends = batch["prompt_end"].to(device)
            if self.anchor == "last":
                pooled = hidden[torch.arange(len(ends), device=device), ends]
            else:
                mask = inputs["attention_mask"].clone()
                positions = torch.arange(mask.shape[1], device=device)[None]
                mask = mask * (positions <= ends[:, None])
                pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            out["head"] = self.head(pooled.float())
        return out


_MODEL_KEYS = ("input_ids", "attention_mask", "pixel_values", "image_grid_thw",
               "mm_token_type_ids", "position_ids")


def _lora_targets(targets: str | list[str]) -> str | list[str]:
    if targets == "language":
        return LANGUAGE_TARGETS
    return targets


def build_model(recipe: Recipe, *, seed: int | None = None) -> tuple[EvaluatorModel, Any]:
    """Load the backbone, apply the adapter, create the head.

    Returns ``(EvaluatorModel, vlm)`` where ``vlm`` is the
    :class:`~ieqa.backends.TransformersVLM` holding the processor (its ``model`` is the
    same module, so scorers built on it see the trained weights).

    The adapter and head initialisations are seeded by ``seed`` (default
    ``recipe.optim.seed``): the same recipe builds the same initial model.
    """
    from ieqa.backends.transformers_vlm import TransformersVLM

    m = recipe.model
    vlm = TransformersVLM(m.name, device=m.device, dtype=m.dtype,
                          attn_implementation=m.attn_implementation,
                          load_in_4bit=m.load_in_4bit, min_pixels=m.min_pixels,
                          max_pixels=m.max_pixels, share_prefix=False)
    model = vlm.model
    seed = recipe.optim.seed if seed is None else seed
    torch.manual_seed(seed)
    kind = recipe.adapter.kind
    if m.load_in_4bit and kind == "full":
        raise BackendError("a 4-bit model cannot be fully fine-tuned; use adapter.kind: lora "
                           "(QLoRA)")
    if m.load_in_4bit:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=m.gradient_checkpointing)
    elif m.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    if kind == "lora":
        from peft import LoraConfig, get_peft_model

        a = recipe.adapter
        config = LoraConfig(r=a.r, lora_alpha=a.alpha, lora_dropout=a.dropout,
                            target_modules=_lora_targets(a.targets))
        try:
            model = get_peft_model(model, config)
        except ValueError as exc:
            raise BackendError(f"LoRA targets {a.targets!r} match no module of {m.name}: "
                               f"{exc}") from exc
    else:
        for p in model.parameters():
            p.requires_grad_(kind == "full")
    head = None
    if recipe.head.kind != "none":
        h = recipe.head
        n_dims = len({d for s in recipe.stages if s.objective != "text" for d in s.dimensions})
        outputs = n_dims * (2 if h.kind == "gaussian" else 1)
        device = vlm.input_device
        head = MLPHead(vlm.hidden_size, outputs, h.hidden_features, h.num_layers,
                       h.dropout).to(device)
    return EvaluatorModel(model, head, recipe.head.anchor), vlm
