"""``imgedit-judge-7b``: ImgEdit-Judge run as the authors' README demo runs it
(PKU-YuanGroup/ImgEdit at 547185d, "Setups for ImgEdit-Judge"), written out here on a tiny
random Qwen2.5-VL standing in for the checkpoint: the processor with ``min_pixels=1016064``
and ``max_pixels=1354752``; one user message of the rubric (``<edit_prompt>`` replaced), the
original image and the result; ``apply_chat_template(..., add_generation_prompt=True)``;
``process_vision_info``'s resize (factor 28, 3136 to 12845056 pixels) before the processor;
``generate(max_new_tokens=...)``; the new tokens decoded without special tokens."""

from __future__ import annotations

import pytest
import torch

from ieqa import EditSample, create_scorer
from ieqa.scorers.base import ScorerError

from .qwen_steps import qwen_vl_utils_resize, random_image


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.imgedit_judge import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import write_prompt_standins

    root = tmp_path_factory.mktemp("imgedit_judge")
    return {"model": build_tiny_vlm(root / "ImgEdit_judge", "qwen2.5-vl", seed=6),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def test_the_judge_runs_as_the_readme_demo(replica) -> None:
    import json

    from transformers import Qwen2_5_VLForConditionalGeneration

    from ieqa.backends.processor import load_processor

    edits = [EditSample(id="e0", source=random_image(0, (40, 30)), edited=random_image(1, (40, 30)),
                        instruction="add a red hat", task="add"),
             EditSample(id="e1", source=random_image(2, (30, 44)), edited=random_image(3, (36, 30)),
                        instruction="remove the cup", task="remove")]
    rubric = json.loads((replica["prompts"] / "Benchmark/Basic/prompts.json").read_text())
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(replica["model"],
                                                               dtype=torch.float32).eval()
    processor = load_processor(replica["model"], min_pixels=1016064, max_pixels=1354752)
    want, inputs = [], []
    for e in edits:
        messages = [{"role": "user", "content": [
            {"type": "text", "text": rubric[e.task].replace("<edit_prompt>", e.instruction)},
            {"type": "image", "image": e.source}, {"type": "image", "image": e.edited}]}]
        text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        enc = processor(text=[text], images=[qwen_vl_utils_resize(e.source),
                                             qwen_vl_utils_resize(e.edited)], padding=True,
                        return_tensors="pt")
        inputs.append(enc)
        with torch.no_grad():
            ids = model.generate(**enc, max_new_tokens=10, do_sample=False)
        want.append(processor.batch_decode(ids[:, enc["input_ids"].shape[1]:],
                                           skip_special_tokens=True,
                                           clean_up_tokenization_spaces=False)[0])
    scorer = create_scorer("imgedit-judge-7b", model=str(replica["model"]),
                           prompts=str(replica["prompts"]), device="cpu", dtype="float32",
                           max_new_tokens=10)
    for (_, item), theirs in zip(scorer.load_samples(edits)[0], inputs, strict=True):
        ours = scorer.backend.encode_one(scorer.prompt(item))
        assert torch.equal(ours["input_ids"], theirs["input_ids"])
        assert torch.equal(ours["pixel_values"], theirs["pixel_values"])
        assert int(theirs["image_grid_thw"].prod(-1).sum()) // 4 > 2000  # the demo's budget
    results = scorer.score(edits)
    assert [r.raw["text"] for r in results] == want
    assert all(r.error for r in results)  # a random model's answer holds no three scores


def test_without_the_checkpoint_the_error_says_how_to_get_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    from ieqa.scorers.published.imgedit_judge import resolve_judge

    with pytest.raises(ScorerError, match="hf download sysuyy/ImgEdit --repo-type dataset "
                                          "--include 'ImgEdit_judge/\\*'"):
        resolve_judge(None)
    with pytest.raises(ScorerError, match="not a local folder"):
        resolve_judge("someone/other-judge")


def test_imgedit_bench_takes_it_as_a_released_judge(replica) -> None:
    """bench-editor reads its rows with the released reading, as the official judge's,
    and names it ImgEdit-Judge (not a stand-in)."""
    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("imgedit-bench")
    scorer = create_scorer("imgedit-judge-7b", model=str(replica["model"]),
                           prompts=str(replica["prompts"]), device="cpu", dtype="float32")
    assert protocol.is_released_judge(scorer)
    assert protocol.judge_label(scorer) == "ImgEdit-Judge, ImgEdit-Bench's open judge"
    row = {"overall": 4.0, "error": None, "raw": {"released": {"item_score": 3.67},
                                                  "criteria": [["a", 4], ["b", 4], ["c", 4]]}}
    assert protocol.item_values(row, scorer, None)["released_score"] == 3.67
