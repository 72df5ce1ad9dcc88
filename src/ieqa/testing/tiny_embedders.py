"""Tiny random CLIP and DINO checkpoints, built offline (nothing downloaded), for tests and
docs examples of the editing papers' metrics (:mod:`ieqa.scorers.edit_metrics`):
:func:`build_tiny_clip`, :func:`build_tiny_dino`. Their numbers are noise: they exercise
the code path of the real models (``openai/clip-vit-base-patch32``,
``facebook/dino-vits16``), not their judgement."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["build_tiny_clip", "build_tiny_dino", "tiny_clip_tokenizer"]


def tiny_clip_tokenizer(folder: str | os.PathLike[str]) -> Any:
    """A ``CLIPTokenizer`` of a 54-token character vocabulary (context 16), its vocabulary
    and merges files written to ``folder``: the tokenizer of the tiny CLIP models here and
    of the tiny diffusers pipeline (:mod:`ieqa.testing.tiny_diffusers`)."""
    from transformers import CLIPTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"),
                         model_max_length=16)


def build_tiny_clip(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random ``CLIPModel`` (1-layer 16-wide towers, 224-pixel images in 32-pixel
    patches, a 54-token character vocabulary, context 16) and its tokenizer to ``folder``."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    folder = Path(folder)
    tokenizer = tiny_clip_tokenizer(folder)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2,
                     "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 1,
                     "pad_token_id": 1},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 224, "patch_size": 32},
        projection_dim=8)
    CLIPModel(config).save_pretrained(folder)
    return folder


def build_tiny_dino(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random ``ViTModel`` in DINO ViT-S/16's layout (16-pixel patches of a
    224-pixel image; 1 layer, 16 wide) to ``folder``."""
    import torch
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(seed)
    model = ViTModel(ViTConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                               num_attention_heads=2, image_size=224, patch_size=16),
                     add_pooling_layer=False)
    model.save_pretrained(folder)
    return Path(folder)
