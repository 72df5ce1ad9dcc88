"""ieqa's variable-length SDPA for packed vision towers equals transformers' eager path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa.backends import Prompt
from ieqa.backends.attention import (
    VARLEN_ATTENTION,
    register_attention,
    use_fast_attention,
    varlen_sdpa_attention,
)
from ieqa.backends.transformers_vlm import TransformersVLM


def _img(seed: int, h: int, w: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8))


def _prompts() -> list[Prompt]:
    # sizes that leave windows cut by the right and the bottom edge (Qwen2.5-VL), images
    # of different sizes in one batch, and a prompt with one image
    src = _img(0, 224, 224)
    return [Prompt(parts=("Source:", src, "Edited:", _img(1, 100, 156), "Rate it."),
                   answer_prefix="It is"),
            Prompt(parts=("Source:", _img(2, 64, 80), "Edited:", src, "Rate it."),
                   answer_prefix="It is"),
            Prompt(parts=("Only:", _img(3, 140, 84), "Rate it."), answer_prefix="It is")]


def _loop(q, k, v, bounds, scale):
    """The reference: one attention per segment, as transformers' SDPA path runs it."""
    outs = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        w = torch.softmax(q[:, a:b] @ k[:, a:b].transpose(-1, -2) * scale, -1)
        outs.append(w @ v[:, a:b])
    return torch.cat(outs, 1).transpose(0, 1)


def test_segments_of_unequal_lengths_equal_the_per_segment_loop():
    g = torch.Generator().manual_seed(0)
    # windows of 16, edge windows of 8, 12 and 6, an empty segment, a whole image of 20
    bounds = [0, 16, 32, 40, 52, 52, 68, 74, 94]
    q, k, v = (torch.randn(3, 94, 8, generator=g) for _ in range(3))
    got, weights = varlen_sdpa_attention(None, q[None], k[None], v[None], None, scaling=0.3,
                                         cu_seq_lens_q=torch.tensor(bounds),
                                         cu_seq_lens_k=torch.tensor(bounds))
    assert weights is None and got.shape == (1, 94, 3, 8)
    assert torch.allclose(got[0], _loop(q, k, v, bounds, 0.3), atol=1e-6, rtol=0)
    # a segment's result does not depend on the others: the first image alone (measured
    # difference 0.0 on this CPU; the bar leaves room for another kernel's blocking)
    alone, _ = varlen_sdpa_attention(None, q[None, :, :32], k[None, :, :32], v[None, :, :32],
                                     None, scaling=0.3, cu_seq_lens_q=torch.tensor([0, 16, 32]))
    assert torch.allclose(alone[0], got[0, :32], atol=1e-7, rtol=0)
    with pytest.raises(ValueError, match="cover tokens"):
        varlen_sdpa_attention(None, q[None], k[None], v[None], None,
                              cu_seq_lens_q=torch.tensor([0, 16]))


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
def test_the_default_backend_equals_the_eager_path(tiny_models, family):
    fast = TransformersVLM(tiny_models[family], device="cpu", dtype="float32")
    eager = TransformersVLM(tiny_models[family], device="cpu", dtype="float32",
                            attn_implementation="eager")
    assert fast.model.config.vision_config._attn_implementation == VARLEN_ATTENTION
    assert fast.config()["vision_attention"] == VARLEN_ATTENTION
    assert eager.model.config.vision_config._attn_implementation == "eager"
    assert "vision_attention" not in eager.config()
    prompts = _prompts()
    a = fast.forward(prompts, anchor="mean", share_prefix=False)
    b = eager.forward(prompts, anchor="mean", share_prefix=False)
    for x, y in zip(a.logits, b.logits, strict=True):
        assert torch.allclose(x, y, atol=1e-5, rtol=0), (x - y).abs().max()
    assert torch.allclose(a.hidden, b.hidden, atol=1e-5, rtol=0)


def test_qwen3_5_and_a_model_without_a_packed_tower(tmp_path):
    from ieqa.testing import build_tiny_vlm

    path = build_tiny_vlm(tmp_path / "q35", "qwen3.5")
    fast = TransformersVLM(path, device="cpu", dtype="float32")
    eager = TransformersVLM(path, device="cpu", dtype="float32", attn_implementation="eager")
    assert fast.config()["vision_attention"] == VARLEN_ATTENTION
    prompts = _prompts()[:2]
    for x, y in zip(fast.forward(prompts, share_prefix=False).logits,
                    eager.forward(prompts, share_prefix=False).logits, strict=True):
        assert torch.allclose(x, y, atol=1e-5, rtol=0), (x - y).abs().max()
    # InternVL's vision tower takes fixed 448-px tiles: left as it is
    internvl = TransformersVLM(build_tiny_vlm(tmp_path / "ivl", "internvl"), device="cpu")
    assert "vision_attention" not in internvl.config() and use_fast_attention(internvl.model) is None


def test_a_named_implementation_is_kept(tiny_models):
    sdpa = TransformersVLM(tiny_models["qwen2.5-vl"], device="cpu", attn_implementation="sdpa")
    assert sdpa.model.config.vision_config._attn_implementation == "sdpa"
    assert "vision_attention" not in sdpa.config()
    # switched afterwards (as the benchmarks do with an in-memory model), recorded by from_model
    assert use_fast_attention(sdpa.model) == VARLEN_ATTENTION == register_attention()
    wrapped = TransformersVLM.from_model(sdpa.model, sdpa.processor)
    assert wrapped.config()["vision_attention"] == VARLEN_ATTENTION
