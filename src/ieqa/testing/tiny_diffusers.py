"""A tiny random diffusers editing pipeline, built offline (nothing downloaded), for tests
and docs examples of ``ieqa generate``: :func:`build_tiny_pix2pix`."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["build_tiny_pix2pix"]


def build_tiny_pix2pix(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random ``StableDiffusionInstructPix2PixPipeline`` (a 2-block UNet with 8
    input channels, a 2-block VAE, a 1-layer CLIP text encoder with a 54-token character
    vocabulary; about 0.5 MB) to ``folder`` with ``save_pretrained``; returns ``folder``.
    Its edits are noise: it exercises the code path of a real pipeline, not its quality."""
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    from ieqa.testing.tiny_embedders import tiny_clip_tokenizer

    folder = Path(folder)
    tok_dir = folder / "_tokenizer_files"
    tokenizer = tiny_clip_tokenizer(tok_dir)
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=16, projection_dim=16, bos_token_id=0,
        eos_token_id=1, pad_token_id=1))
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=8,
        out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
        norm_num_groups=4, attention_head_dim=2)
    vae = AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3,
                        down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4,
                        norm_num_groups=4, sample_size=16)
    pipe = StableDiffusionInstructPix2PixPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(), safety_checker=None,
        feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder
