"""A tiny random BERT text encoder saved to a folder, built offline (no downloads)."""

from __future__ import annotations

from pathlib import Path

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "is", "red", "blue", "edit",
         "looks", "natural", "fake", "dog", "a", "park", "prompt", "followed", "not", "good",
         "bad", "harmony", "overall"]


def build_tiny_encoder(folder: Path) -> Path:
    """Save a 2-layer, 16-wide random BERT and a word-level tokenizer into ``folder``."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                        unk_token="[UNK]", cls_token="[CLS]",
                                        sep_token="[SEP]")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
