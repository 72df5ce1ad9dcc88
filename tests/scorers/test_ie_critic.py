"""``ie-critic-r1``: IE-Critic-R1 against its authors' evaluation steps, written out here.

The released ``scripts/iebench_eval.py`` (Coobiw/IE-Critic-R1 at 357c239), as the
reference below repeats it on a tiny random Qwen2.5-VL standing in for
``Coobiw/IE-Critic-R1-7B``: the processor with ``min_pixels=262144``,
``max_pixels=1048576``; messages = a user turn (source image, edited image, the prompt
with the instruction) and an assistant turn ``"<think>"``;
``apply_chat_template(..., add_generation_prompt=False)``; each image resized by
``qwen_vl_utils``' rule (factor 28, 3136 to 12845056 pixels, bicubic) before the
processor; greedy ``generate``; the new tokens decoded with special tokens skipped. The
answers of a random model are not scores, so the reading is checked on a server whose
answers are scripted, with the released ``extract_answer_from_response`` written out.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from PIL import Image

from chat_server import FakeServer, Reply, serve
from ieqa import EditSample, create_scorer

from .qwen_steps import qwen_vl_utils_resize, random_image


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.ie_critic import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import write_prompt_standins

    root = tmp_path_factory.mktemp("ie_critic")
    return {"model": build_tiny_vlm(root / "model", "qwen2.5-vl", seed=8),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _edits() -> list[EditSample]:
    return [EditSample(id="e0", source=random_image(0, (40, 30)), edited=random_image(1, (40, 30)),
                       instruction="make the sky red"),
            EditSample(id="e1", source=random_image(2, (30, 44)), edited=random_image(3, (36, 30)),
                       instruction="remove the {cat}")]


def _prompt_text(folder, instruction: str) -> str:  # noqa: ANN001
    import ast

    tree = ast.parse((folder / "scripts/iebench_eval.py").read_text())
    cot = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
               and n.targets[0].id == "CoT_PROMPT")
    return cot.format(edit_instruction=instruction)


def reference(replica, edits, max_new_tokens: int) -> tuple[list[str], list]:  # noqa: ANN001
    from transformers import Qwen2_5_VLForConditionalGeneration

    from ieqa.backends.processor import load_processor  # transformers' own, no video part

    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(replica["model"],
                                                               dtype=torch.float32).eval()
    processor = load_processor(replica["model"], min_pixels=262144, max_pixels=1048576)
    out, encoded = [], []
    for e in edits:
        msg = [{"role": "user", "content": [
                    {"type": "image", "image": e.source}, {"type": "image", "image": e.edited},
                    {"type": "text", "text": _prompt_text(replica["prompts"], e.instruction)}]},
               {"role": "assistant", "content": "<think>"}]
        text = processor.apply_chat_template(msg, tokenize=False, add_generation_prompt=False)
        assert text.endswith("<|im_start|>assistant\n<think><|im_end|>\n")
        inputs = processor(text=[text], images=[qwen_vl_utils_resize(e.source),
                                                qwen_vl_utils_resize(e.edited)],
                           padding=True, return_tensors="pt")
        encoded.append(inputs)
        with torch.no_grad():
            ids = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        out.append(processor.batch_decode(ids[:, inputs["input_ids"].shape[1]:],
                                          skip_special_tokens=True,
                                          clean_up_tokenization_spaces=False)[0])
    return out, encoded


def test_the_local_model_generates_as_the_released_evaluation(replica) -> None:
    """The model's inputs (token ids, pixels, grids) equal the authors' exactly, and the
    answers are identical, batched and one at a time; the processor gets the released pixel
    budget (a 40x30 edit reaches 262144 pixels: hundreds of image tokens per image)."""
    edits = _edits()
    want, inputs = reference(replica, edits, 12)
    assert all(w.strip() for w in want)
    scorer = create_scorer("ie-critic-r1", model=str(replica["model"]),
                           prompts=str(replica["prompts"]), device="cpu", dtype="float32")
    for e, theirs in zip(scorer.load_samples(edits)[0], inputs, strict=True):
        ours = scorer.backend.encode_one(scorer.prompt(e[1]))
        assert torch.equal(ours["input_ids"], theirs["input_ids"])
        assert torch.equal(ours["image_grid_thw"], theirs["image_grid_thw"])
        assert torch.equal(ours["pixel_values"], theirs["pixel_values"])
        assert int(theirs["image_grid_thw"].prod(-1).sum()) // 4 > 600  # the released budget
    for batch_size in (2, 1):
        scorer = create_scorer("ie-critic-r1", model=str(replica["model"]),
                               prompts=str(replica["prompts"]), device="cpu", dtype="float32",
                               max_new_tokens=12, batch_size=batch_size)
        results = scorer.score(edits)
        assert [r.raw["text"] for r in results] == want
    # a random model's answers hold no number: each edit is a counted row error
    assert all(r.error and "no number in <answer>" in r.error for r in results)


def _released(response: str):  # noqa: ANN202
    """``extract_answer_from_response(response.strip().rstrip("."))`` as released."""
    response = response.strip().rstrip(".")
    try:
        a = response.find("<answer>")
        b = response.find("</answer>", a + len("<answer>"))
        if b == -1:
            body = response if a == -1 else response[a + len("<answer>"):]
        else:
            body = response[a + len("<answer>"):b]
        return float(body.strip())
    except Exception:  # noqa: BLE001 - as released
        return None


ANSWERS = {
    "e0": "The sky is red now. </think><answer>3.75</answer>",
    "e1": "<think>hm</think><answer> 4.2.</answer>",
    "x0": "<answer>2.50",  # no end tag: read to the end
    "x1": "4",  # no tags: the whole text
    "x2": "<answer>7.5</answer>",  # read by the released rule, off the 1-5 scale
    "x3": "<answer>about four</answer>",  # unreadable
    "x4": "no answer at all.",
}


class Critic(FakeServer):
    def next_reply(self, body):  # noqa: ANN001, ANN201
        text = body["messages"][0]["content"][-1]["text"]
        key = next(k for k in ANSWERS if f"instruction {k}" in text)
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": ANSWERS[key]}}]})


def test_on_a_server_the_request_and_the_reading_are_the_released_ones(replica) -> None:
    edits = [EditSample(id=k, source=random_image(i, (20, 16)), edited=random_image(10 + i, (20, 16)),
                        instruction=f"instruction {k}") for i, k in enumerate(ANSWERS)]
    with serve(Critic()) as server:
        scorer = create_scorer("ie-critic-r1", base_url=server.url, model="IE-Critic-R1-7B",
                               prompts=str(replica["prompts"]))
        results = {r.id: r for r in scorer.score(edits)}
        body = next(q.body for q in server.requests
                    if "instruction e0" in q.body["messages"][0]["content"][-1]["text"])
    # the request of iebench_eval_vllm.py: user (PNG images, then the text), then "<think>"
    user, assistant = body["messages"]
    assert assistant == {"role": "assistant", "content": "<think>"}
    assert [p["type"] for p in user["content"]] == ["image_url", "image_url", "text"]
    assert user["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(user["content"][0]["image_url"]["url"]
                                                  .split(",", 1)[1])))
    assert sent.size == (20, 16) and np.array_equal(np.asarray(sent), np.asarray(edits[0].source))
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.0, 1.0, 2048)
    assert "continue_final_message" not in body and "add_generation_prompt" not in body
    # the reading: the released rule, and strictly on the 1-5 scale
    for key, text in ANSWERS.items():
        r = results[key]
        assert r.raw["released"]["score"] == _released(text), key
        ok = _released(text) is not None and 1 <= _released(text) <= 5
        assert (r.error is None) == ok, (key, r.error)
        if ok:
            assert r.scores == {"overall": _released(text)}
    assert results["e0"].explanation == "The sky is red now."
    assert "off the released 1-5 scale" in results["x2"].error


def test_the_catalog_lists_it() -> None:
    from ieqa.scorers.table import scorer_info

    info = scorer_info("ie-critic-r1")
    assert info.release["hub_id"] == "Coobiw/IE-Critic-R1-7B"
    assert info.dimensions == ("overall",) and info.score_range == (1.0, 5.0)
