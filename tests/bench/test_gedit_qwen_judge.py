"""GEdit-Bench's other released judge, ``protocol="qwen25vl"`` (its
``viescore/mllm_tools/qwen25vl_eval.py``): Qwen2.5-VL run locally, the images first and
sized as ``qwen_vl_utils`` sizes them, greedy, 512 new tokens; checked on a tiny random
Qwen2.5-VL, whose random answers are counted as failures after the one re-ask."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from ieqa import create_scorer
from ieqa.scorers.published.gedit_judge import PROMPT_SOURCES, qwen_image


def _img(seed, size):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def test_qwen_image_sizes_by_hand():
    assert qwen_image(_img(0, (100, 61))).size == (112, 56)  # sides rounded to 28
    assert qwen_image(_img(0, (20, 20))).size == (56, 56)  # up to 4 * 28^2 pixels
    # 20 Mpx over 16384 * 28^2: both sides / sqrt(20e6 / 12845056), floored to 28
    assert qwen_image(Image.new("RGB", (5000, 4000))).size == (4004, 3192)
    small = _img(1, (56, 84))
    assert np.array_equal(np.asarray(qwen_image(small)), np.asarray(small))  # kept as is


def test_the_qwen_protocol_on_a_local_model(tmp_path, tiny_models):
    from ieqa.testing.releases import write_prompt_standins

    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    judge = create_scorer("gedit-judge", protocol="qwen25vl", prompts=str(prompts),
                          model=str(tiny_models["qwen2.5-vl"]), max_new_tokens=8)
    assert judge.readout_config()["protocol"] == "qwen25vl"
    calls = []
    generate = judge.backend.generate

    def spy(batch, **kwargs):
        calls.append((list(batch), kwargs))
        return generate(batch, **kwargs)

    judge.backend.generate = spy
    result = judge.score([{"id": "a", "source": _img(2, (100, 61)), "edited": _img(3, (80, 50)),
                           "instruction": "make it red"}])[0]
    (sc, pq), kwargs = calls[0]
    assert [type(p).__name__ for p in sc.parts][-1] == "str"
    assert all(isinstance(p, Image.Image) for p in sc.parts[:2])  # images first
    assert sc.parts[0].size == sc.parts[1].size == (112, 56)  # edit to the source, then 28s
    assert "make it red" in sc.parts[2] and isinstance(pq.parts[0], Image.Image)
    assert kwargs["temperature"] == 0.0 and kwargs["max_new_tokens"] == 8  # greedy
    assert len(calls) == 2  # random answers do not parse: both asked once more, as released
    assert result.error is not None and not result.scores  # then a counted failure
    default = create_scorer("gedit-judge", protocol="qwen25vl", prompts=str(prompts),
                            model=str(tiny_models["qwen2.5-vl"]))
    assert default.readout_config()["max_new_tokens"] == 512
    with pytest.raises(Exception, match="protocol must be one of gpt, qwen25vl"):
        create_scorer("gedit-judge", protocol="qwen", prompts=str(prompts))
