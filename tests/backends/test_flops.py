"""The analytic FLOP count equals torch's profiler count on the tiny models."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from torch.utils.flop_counter import FlopCounterMode

from ieqa.backends import Prompt
from ieqa.backends.flops import (
    forward_flops,
    head_flops,
    peak_tflops,
    text_flops,
    utilisation,
    vision_flops,
    window_segments,
)
from ieqa.backends.transformers_vlm import TransformersVLM, _image_runs


def _img(seed: int, h: int, w: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((h, w, 3)) * 255).astype(np.uint8))


def _counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.fixture(scope="module", params=["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
def eager(request, tiny_models) -> TransformersVLM:
    # eager attention: the profiler counts its matmuls (it does not count CPU SDPA)
    return TransformersVLM(tiny_models[request.param], device="cpu", dtype="float32",
                           attn_implementation="eager")


def test_one_forward_counts_what_the_profiler_counts(eager):
    # two images of different sizes, the second cut by the window edges (Qwen2.5-VL)
    prompt = Prompt(parts=("Source:", _img(0, 224, 224), "Edited:", _img(1, 100, 156),
                           "Rate it."), answer_prefix="It is")
    enc = eager.encode_one(prompt)
    want = forward_flops(eager.model.config, int(enc["input_ids"].shape[1]),
                         enc["image_grid_thw"].tolist(), head_positions=1)
    before = eager.flops_done.total
    assert _counted(lambda: eager.forward([prompt], share_prefix=False)) == want.total
    assert eager.flops_done.total - before == want.total  # the backend's own running count
    assert want.vision > 0 and want.text > 0 and want.head > 0


def test_a_shared_prefix_counts_once(eager):
    # three candidates of one source (suffixes of equal length: no padding in the count)
    src = _img(0, 224, 224)
    prompts = [Prompt(parts=("Source:", src, "Edited:", _img(k + 1, 112, 112), "Rate it."),
                      answer_prefix="It is", share_key="g", shared_images=1) for k in range(3)]
    enc = [eager.encode_one(p) for p in prompts]
    ids = enc[0]["input_ids"][0]
    # the edited images have the same size, so the token ids agree to the end: the backend
    # compares the pixels and cuts the shared prefix where the second image starts
    cut = _image_runs(ids, eager.image_token_id)[1][0]
    total = len(ids)
    grids = [e["image_grid_thw"].tolist() for e in enc]
    config = eager.model.config
    want = (vision_flops(config, grids[0][:1]) + text_flops(config, cut)
            + sum(vision_flops(config, g[1:]) for g in grids)
            + text_flops(config, total - cut, past=cut, batch=3) + head_flops(config, 3))
    before = eager.flops_done.total
    assert _counted(lambda: eager.forward(prompts, share_prefix=True)) == want
    assert eager.flops_done.total - before == want
    unshared = 3 * forward_flops(config, total, grids[0]).total
    assert want < unshared


def test_generation_counts_the_prompt_per_answer_and_each_new_token(eager):
    prompt = Prompt(parts=("Edited:", _img(1, 100, 156), "Rate it."), answer_prefix="It is")
    before = eager.flops_done.total
    out = []
    counted = _counted(lambda: out.extend(eager.generate(
        [prompt], max_new_tokens=5, num_samples=2, temperature=1.0, seed=3)))
    assert [g.raw["usage"]["completion_tokens"] for g in out[0]] == [5, 5]
    enc = eager.encode_one(prompt)
    tokens, grids, config = int(enc["input_ids"].shape[1]), enc["image_grid_thw"].tolist(), \
        eager.model.config
    # random weights: no end token within 5 tokens, so the image once (transformers repeats
    # the prompt after the vision tower) and 2 x (the prompt's text + 4 steps)
    want = vision_flops(config, grids) + 2 * (
        forward_flops(config, tokens).total
        + sum(text_flops(config, 1, past=tokens + t) + head_flops(config, 1) for t in range(4)))
    assert counted == want
    assert eager.flops_done.total - before == want


def test_windows_cover_the_grid_and_are_cut_at_the_edges():
    # 448x448 at Qwen2.5-VL's 14-px patches: 16 windows of 8x8 patches
    assert window_segments((1, 32, 32), 112, 14, 2) == [64] * 16
    # 20x28 patches: rows of 8, 8, 4 patches by columns of 8, 8, 8, 4, per frame
    got = window_segments((2, 20, 28), 112, 14, 2)
    assert got == 2 * [64, 64, 64, 32, 64, 64, 64, 32, 32, 32, 32, 16]
    assert sum(got) == 2 * 20 * 28


@pytest.mark.parametrize(("name", "peak"), [
    ("NVIDIA H100 80GB HBM3", 989.4), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H100 NVL", 835.0),
    ("NVIDIA H200", 989.4), ("NVIDIA H200 NVL", 835.0), ("NVIDIA GH200 480GB", 989.4),
    ("NVIDIA A100-SXM4-80GB", 312.0), ("NVIDIA A10", 125.0), ("NVIDIA L4", 121.0),
    ("NVIDIA L40S", 362.05), ("NVIDIA GeForce RTX 4090", 165.2), ("NVIDIA B200", 2250.0),
    ("Tesla T4", None), ("cpu", None), (None, None)])
def test_peaks_by_device_name(name, peak):
    assert peak_tflops(name) == peak


def test_utilisation():
    assert utilisation(2e12, 0.5, 400.0) == (4.0, 1.0)
    assert utilisation(2e12, 0.5, None) == (4.0, None)


def test_unsupported_models_are_refused():
    with pytest.raises(ValueError, match="counted for qwen2_vl"):
        text_flops({"model_type": "llava"}, 10)
