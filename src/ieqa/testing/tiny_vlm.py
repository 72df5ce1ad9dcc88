"""Tiny offline vision-language models of the Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5
families, MiMo-VL (Qwen2.5-VL's architecture with a tokenizer and chat template of its own)
and InternVL (transformers' own layout, a Qwen3 decoder).

:func:`build_tiny_vlm` writes a complete checkpoint folder (config, random weights,
byte-level tokenizer (single-byte tokens plus the level words
" excellent" ... " bad" as single tokens) with the Qwen special tokens, image processor and a Qwen-style chat
template) that loads through exactly the code path real checkpoints take
(:class:`ieqa.backends.TransformersVLM`). Nothing is downloaded. The models are random,
about 0.2 M parameters, < 1 MB on disk: for tests, demos and smoke tests, never for scores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from ieqa.data.dimensions import LEVEL_WORDS

__all__ = ["build_tiny_vlm", "TINY_FAMILIES", "TinyFamily"]

TinyFamily = Literal["qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "mimo-vl", "internvl"]
TINY_FAMILIES: tuple[str, ...] = ("qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "mimo-vl",
                                  "internvl")

#: MiMo-VL (XiaomiMiMo/MiMo-VL-7B-*) is Qwen2.5-VL's architecture with a tokenizer of its own
#: (thinking tokens among its added tokens) and a chat template that opens with a default
#: system turn; the tiny family has both, so a test shows that a scorer takes the base's
#: own vocabulary and template (the wording below is ieqa's, not MiMo's)
_MIMO_TOKENS = ("<think>", "</think>")

#: InternVL's image tokens (named as transformers' InternVL processor reads them)
_INTERNVL_TOKENS = {"start_image_token": "<img>", "end_image_token": "</img>",
                    "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"}

_SPECIAL_TOKENS = (
    "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)

# A Qwen-style ChatML template: an image item renders as <|vision_start|><|image_pad|><|vision_end|>.
_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


_MIMO_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\n"
    "You are a tiny random stand-in of MiMo-VL built by ieqa.<|im_end|>\n{% endif %}"
    + _CHAT_TEMPLATE)


# The level words (ieqa.data.dimensions.LEVEL_WORDS) are one token after a space in real Qwen
# tokenizers; the tiny tokenizer merges them too so that the level readout (one token per
# level word) works as on a real model.
_WORDS = tuple(reversed(LEVEL_WORDS))  # best first, the order the merges were always added in


def _tokenizer(named: dict[str, str] | None = None, extra: tuple[str, ...] = (),
               template: str = _CHAT_TEMPLATE) -> Any:
    """The byte-level tokenizer; ``named``: extra special tokens a processor reads by
    name (InternVL's image tokens); ``extra``: more special tokens; ``template``: the chat
    template."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import Qwen2Tokenizer

    vocab = {symbol: i for i, symbol in enumerate(sorted(ByteLevel.alphabet()))}
    merges: list[tuple[str, str]] = []
    for word in _WORDS:
        symbols = ["\u0120", *word]  # byte-level "Ġ" is the space
        token = symbols[0]
        for nxt in symbols[1:]:
            merges.append((token, nxt))
            token += nxt
            vocab.setdefault(token, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, **(named or {}))
    tokenizer.add_special_tokens({"additional_special_tokens": [*_SPECIAL_TOKENS,
                                                                *(named or {}).values(),
                                                                *extra]})
    tokenizer.chat_template = template
    return tokenizer


# Larger than the usual 0.02 so a random tiny model's outputs differ visibly between inputs
# (tests comparing batched and unbatched scores then compare numbers that vary).
_INIT_STD = 0.1


def _config(family: str, tokenizer: Any, hidden: int, layers: int) -> Any:
    from transformers import Qwen2_5_VLConfig, Qwen2VLConfig, Qwen3VLConfig

    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in (
        ("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
        ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>"))}
    heads, kv_heads = 4, 2
    head_dim = hidden // heads
    # mrope sections (temporal, height, width) sum to head_dim / 2
    quarter = head_dim // 2
    section = [quarter - 2 * (quarter // 3), quarter // 3, quarter // 3]
    text: dict[str, Any] = dict(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=4096, initializer_range=_INIT_STD, eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": section})
    if family == "internvl":
        from transformers import InternVLConfig

        qwen3 = {k: v for k, v in text.items() if k != "rope_parameters"}
        qwen3.update(model_type="qwen3", head_dim=head_dim,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        # InternViT at the released geometry (448-px images, 14-px patches, pixel shuffle
        # 0.5: 256 tokens per image), tiny widths
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, image_size=[448, 448], patch_size=[14, 14],
                      norm_type="layer_norm", use_qk_norm=False, initializer_range=_INIT_STD)
        return InternVLConfig(vision_config=vision, text_config=qwen3, downsample_ratio=0.5,
                              image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"))
    if family == "qwen2-vl":
        vision = dict(depth=1, embed_dim=32, hidden_size=hidden, num_heads=2, mlp_ratio=2,
                      initializer_range=_INIT_STD)
        return Qwen2VLConfig(text_config=text, vision_config=vision, **ids)
    if family in ("qwen2.5-vl", "mimo-vl"):
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                      out_hidden_size=hidden, window_size=56, fullatt_block_indexes=[1],
                      initializer_range=_INIT_STD)
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)
    text.update(head_dim=head_dim)
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_interleaved": True}
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16,
                  out_hidden_size=hidden, num_position_embeddings=64,
                  initializer_range=_INIT_STD)
    if family == "qwen3.5":
        from transformers import Qwen3_5Config

        # Qwen3.5's hybrid decoder: linear-attention (gated delta rule) and full-attention
        # layers, the last one full as in the released models
        kinds = ["linear_attention"] * (layers - 1) + ["full_attention"]
        text.update(layer_types=kinds, linear_key_head_dim=16, linear_value_head_dim=16,
                    linear_num_key_heads=2, linear_num_value_heads=4, linear_conv_kernel_dim=4)
        return Qwen3_5Config(text_config=text, vision_config=vision, **ids)
    return Qwen3VLConfig(text_config=text, vision_config={**vision, "deepstack_visual_indexes": [0]},
                         **ids)


def _model_class(family: str) -> Any:
    from transformers import (
        InternVLForConditionalGeneration,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLForConditionalGeneration,
        Qwen3_5ForConditionalGeneration,
        Qwen3VLForConditionalGeneration,
    )

    return {"qwen2-vl": Qwen2VLForConditionalGeneration,
            "qwen2.5-vl": Qwen2_5_VLForConditionalGeneration,
            "mimo-vl": Qwen2_5_VLForConditionalGeneration,
            "qwen3-vl": Qwen3VLForConditionalGeneration,
            "qwen3.5": Qwen3_5ForConditionalGeneration,
            "internvl": InternVLForConditionalGeneration}[family]


def _qwen_image_processor(patch: int, qwen3: bool, min_pixels: int, max_pixels: int) -> Any:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    return Qwen2VLImageProcessorPil(
        patch_size=patch, merge_size=2, temporal_patch_size=2,
        size={"shortest_edge": int(min_pixels), "longest_edge": int(max_pixels)},
        **({"image_mean": [0.5] * 3, "image_std": [0.5] * 3} if qwen3 else {}))


def build_tiny_vlm(path: str | Path, family: TinyFamily = "qwen2-vl", *, seed: int = 0,
                   hidden_size: int = 64, num_layers: int = 2, min_pixels: int = 28 * 28,
                   max_pixels: int = 224 * 224, overwrite: bool = False) -> Path:
    """Write a tiny random VLM checkpoint of ``family`` to ``path`` and return the path.

    Args:
        path: output folder (created).
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"``, ``"qwen3-vl"``, ``"qwen3.5"`` (the
            hybrid linear/full-attention decoder of Qwen3.5, the last layer full),
            ``"mimo-vl"`` (Qwen2.5-VL's architecture, a tokenizer with ``<think>`` and
            ``</think>`` and a chat template that opens with a default system turn) or
            ``"internvl"`` (transformers' InternVL layout with a Qwen3 decoder, 448-px
            single-tile images of 256 tokens; ``min_pixels``/``max_pixels`` do not apply).
        seed: weight initialisation seed; the same seed gives the same weights.
        hidden_size: text hidden size (multiple of 16).
        num_layers: text decoder layers.
        min_pixels, max_pixels: the image processor's pixel budget (pixels); the default
            maximum (224²) gives 64 image tokens per image (49 for Qwen3-VL's 16-px patches).
        overwrite: replace an existing checkpoint in ``path``.

    Raises:
        ValueError: unknown family, bad sizes, or ``path`` holds a checkpoint and
            ``overwrite`` is False.
    """
    import torch

    if family not in TINY_FAMILIES:
        raise ValueError(f"unknown tiny VLM family {family!r}; choose one of {', '.join(TINY_FAMILIES)}")
    if hidden_size % 16 or hidden_size < 32:
        raise ValueError(f"hidden_size must be a multiple of 16 and at least 32, got {hidden_size}")
    path = Path(path)
    if (path / "config.json").exists() and not overwrite:
        raise ValueError(f"{path} already holds a checkpoint; pass overwrite=True to replace it")
    path.mkdir(parents=True, exist_ok=True)
    if family == "mimo-vl":
        tokenizer = _tokenizer(extra=_MIMO_TOKENS, template=_MIMO_TEMPLATE)
    else:
        tokenizer = _tokenizer(_INTERNVL_TOKENS if family == "internvl" else None)
    config = _config(family, tokenizer, hidden_size, num_layers)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _model_class(family)(config).eval()
    qwen3 = family in ("qwen3-vl", "qwen3.5")
    patch = 16 if qwen3 else 14
    if family == "internvl":
        from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
            GotOcr2ImageProcessorPil,
        )

        # one 448x448 tile per image (no dynamic tiling), ImageNet normalisation
        image_processor = GotOcr2ImageProcessorPil(
            size={"height": 448, "width": 448}, crop_to_patches=False,
            image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    else:
        image_processor = _qwen_image_processor(patch, qwen3, min_pixels, max_pixels)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = config.text_config.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor.save_pretrained(path)
    (path / "ieqa_tiny.json").write_text(json.dumps(
        {"family": family, "seed": seed, "hidden_size": hidden_size, "num_layers": num_layers,
         "note": "random weights built by ieqa.testing.build_tiny_vlm; not a real evaluator"},
        indent=2) + "\n")
    return path
