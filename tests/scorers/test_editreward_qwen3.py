"""``editreward -O variant=qwen3-vl-8b``: the authors' Qwen3-VL configuration
(``EditReward/config/EditReward-Qwen3-VL.yaml``) against their inferencer's steps written out
here, not ieqa's code.

What the authors' ``EditRewardQwen3Inferencer`` and ``Qwen3_VLRewardModelBT_MultiHead`` do
(TIGER-AI-Lab/EditReward at edb027e: ``inference_qwen3_vl_edit.py``,
``model/qwen3_vl_trainer.py``, ``train_qwen3_vl_edit.py``), and the reference below repeats:

* the processor is the base model's, right-padded, with ``<|Reward|>`` added; the model is
  the base model with its embeddings resized to the tokenizer, then the checkpoint's state
  dict loaded strictly (``model.pth``, unwrapped from ``"model"``, or
  ``model.safetensors``);
* per head, one message: the source image, the edited image (each with ``min_pixels`` /
  ``max_pixels`` keys, which ``apply_chat_template`` does not read), then the head's prompt
  with the instruction and the reward cue; ``processor.apply_chat_template(...,
  tokenize=True, add_generation_prompt=True, return_dict=True)`` builds the inputs (the
  images reach the processor as they are);
* ``self.model(...)`` with no position ids (the model's own 3-D positions); the head runs
  in float32 on every hidden state and the output at ``<|Reward|>`` is kept;
  ``pooling_strategy: mean`` fuses the two heads' ``[mu, log sigma]`` elementwise.

The replica: a tiny random Qwen3-VL (``ieqa.testing.build_tiny_vlm``) with ``<|Reward|>``
and two heads H-1024-16-2, saved as the authors' trainer saves it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ieqa import EditSample, create_scorer
from ieqa.scorers.base import ScorerError

from .qwen_steps import random_image


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.editreward import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_reward_release, write_prompt_standins

    root = tmp_path_factory.mktemp("editreward_qwen3")
    base = build_tiny_vlm(root / "base", "qwen3-vl", seed=5)
    build_reward_release(root / "release", base, seed=13)
    return {"base": base, "release": root / "release",
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


@pytest.fixture(scope="module")
def samples():
    src = random_image(0, (96, 64))
    return [EditSample(id="a0", source=src, edited=random_image(10, (96, 64)),
                       instruction="make the sky red", group_id="a"),
            EditSample(id="a1", source=src, edited=random_image(11, (96, 64)),
                       instruction="make the sky red", group_id="a"),
            EditSample(id="b0", source=random_image(1, (64, 80)), edited=random_image(20, (72, 56)),
                       instruction="remove the cat {and} the dog", group_id="b")]


def _scorer(replica, **options):  # noqa: ANN202
    options = {"model": str(replica["release"]), **options}
    return create_scorer("editreward", variant="qwen3-vl-8b", base_model=str(replica["base"]),
                         prompts=str(replica["prompts"]), device="cpu", dtype="float32",
                         **options)


def _texts(folder) -> dict[str, str]:  # noqa: ANN001
    import ast

    def constants(path) -> dict[str, str]:  # noqa: ANN001
        tree = ast.parse(path.read_text())
        return {n.targets[0].id: n.value.value for n in tree.body if isinstance(n, ast.Assign)}

    prompts = constants(folder / "EditReward/dataset/prompts.py")
    collator = constants(folder / "EditReward/dataset/data_collator_qwen_edit.py")
    return {"dim1": prompts["INSTRUCTION_EDIT_FOLLOWING"],
            "dim2": prompts["INSTRUCTION_EDIT_QUALITY"], "cue": collator["prompt_with_special_token"]}


def reference(replica, samples) -> dict[str, np.ndarray]:  # noqa: ANN001
    """``[n, (mu, log sigma)]`` per head and fused, by the authors' Qwen3-VL steps."""
    from safetensors.torch import load_file
    from transformers import Qwen3VLForConditionalGeneration

    from ieqa.backends.processor import load_processor  # transformers' own, no video part

    processor = load_processor(replica["base"])
    processor.tokenizer.padding_side = "right"
    processor.tokenizer.add_special_tokens({"additional_special_tokens": ["<|Reward|>"]})
    reward_id = processor.tokenizer.convert_tokens_to_ids("<|Reward|>")
    model = Qwen3VLForConditionalGeneration.from_pretrained(replica["base"],
                                                            dtype=torch.float32).eval()
    model.resize_token_embeddings(len(processor.tokenizer))
    state = load_file(str(replica["release"] / "model.safetensors"))
    heads = {}
    for h in ("head_0", "head_1"):
        w = {k.split(".", 2)[2]: v for k, v in state.items() if k.startswith(f"rm_heads.{h}.")}
        head = torch.nn.Sequential(torch.nn.Linear(w["0.weight"].shape[1], 1024), torch.nn.ReLU(),
                                   torch.nn.Dropout(0.05), torch.nn.Linear(1024, 16),
                                   torch.nn.ReLU(), torch.nn.Linear(16, 2))
        head.load_state_dict(w)
        heads[h] = head.float().eval()
    model.load_state_dict({k: v for k, v in state.items() if not k.startswith("rm_heads.")},
                          strict=True)
    texts = _texts(replica["prompts"])
    budget = 256 * 28 * 28
    out = {}
    for h, dim in (("head_0", "dim1"), ("head_1", "dim2")):
        rows = []
        for s in samples:
            final_text = texts[dim].format(text_prompt=s.instruction) + texts["cue"]
            message = {"role": "user", "content": [
                {"type": "image", "image": s.source, "min_pixels": budget, "max_pixels": budget},
                {"type": "image", "image": s.edited, "min_pixels": budget, "max_pixels": budget},
                {"type": "text", "text": final_text}]}
            batch = processor.apply_chat_template([message], tokenize=True,
                                                  add_generation_prompt=True, return_dict=True,
                                                  return_tensors="pt")
            with torch.no_grad():
                hidden = model.model(**batch, return_dict=True)[0]
                logits = heads[h](hidden.float())
            mask = batch["input_ids"] == reward_id
            rows.append(logits[mask, ...].view(1, -1)[0].numpy())
        out[h] = np.array(rows, dtype=np.float64)
    out["fused"] = (out["head_0"] + out["head_1"]) / 2  # pooling_strategy: mean
    return out


def _close(a, b, rtol=1e-4) -> bool:  # noqa: ANN001
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))))


def _table(results) -> dict[str, np.ndarray]:  # noqa: ANN001
    assert all(r.ok for r in results), [r.error for r in results]
    return {dim: np.array([[r.scores[dim], math.log(r.sigma[dim])] for r in results])
            for dim in ("instruction_alignment", "visual_quality", "overall")}


@pytest.fixture(scope="module")
def ref(replica, samples):
    return reference(replica, samples)


def test_scores_equal_the_authors_qwen3_vl_forward(replica, samples, ref) -> None:
    """mu and log sigma of both heads and the fused reward within 1e-4 relative, batched
    with prefix sharing and one at a time; the rewards vary between edits."""
    for options in ({"batch_size": 4}, {"batch_size": 1, "share_prefix": False}):
        got = _table(_scorer(replica, **options).score(samples))
        assert _close(got["instruction_alignment"], ref["head_0"]), (options, got, ref)
        assert _close(got["visual_quality"], ref["head_1"]), (options, got, ref)
        assert _close(got["overall"], ref["fused"]), (options, got, ref)
    assert np.ptp(ref["head_0"][:, 0]) > 1e-3 and np.ptp(ref["head_1"][:, 0]) > 1e-3


def test_the_qwen3_path_neither_resizes_nor_uses_1d_positions(replica, samples, ref) -> None:
    """What tells this variant from the Qwen2.5-VL one: resizing the images to 200704
    pixels first, or 1-D positions, each gives other numbers than the authors' steps."""
    scorer = _scorer(replica)
    assert scorer.pixels is None and scorer.backend.positions == "model"
    scorer.pixels = 256 * 28 * 28
    resized = _table(scorer.score(samples))["instruction_alignment"]
    assert not _close(resized, ref["head_0"]), "resizing first did not change the scores"
    one_d = _table(_scorer(replica, positions="1d").score(samples))["instruction_alignment"]
    assert not _close(one_d, ref["head_0"]), "1-D positions did not change the scores"


def test_a_torch_checkpoint_of_the_authors_training_loads(replica, samples, ref, tmp_path) -> None:
    """A folder with ``model.pth`` (a state dict under ``"model"``), as the authors'
    training writes and their inferencer reads first, gives the same scores."""
    from safetensors.torch import load_file

    state = load_file(str(replica["release"] / "model.safetensors"))
    torch.save({"model": state}, tmp_path / "model.pth")
    got = _table(_scorer(replica, model=str(tmp_path)).score(samples[:1]))
    assert _close(got["overall"], ref["fused"][:1])


def test_no_published_weights_means_model_is_required(replica) -> None:
    with pytest.raises(ScorerError, match="no published weights: pass --model"):
        create_scorer("editreward", variant="qwen3-vl-8b", prompts=str(replica["prompts"]))
