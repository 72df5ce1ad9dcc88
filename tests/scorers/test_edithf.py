"""``edithf``: EditHF's release, against an independent implementation of its authors'
``inference.py`` written here.

The replica (``build_edithf_release``) is laid out as the release: per dimension a folder
with LoRA adapters keyed as InternVL's remote code names its modules (a fused ``attn.qkv``
in the vision encoder; ``model.layers.*`` for the language model, with another rank and
alpha) and an MLP head; the base is a tiny InternVL in transformers' layout (448-px images,
256 tokens each); the prompt file is a stand-in with the authors' path and function names.

The reference merges every LoRA pair by hand into a copy of the base per dimension
(``W += alpha / r * B @ A``; the fused query-key-value pair split into its query, key and
value thirds), builds the query as the authors' code does (their functions evaluated by
Python, each ``<image>`` replaced by ``<img>`` + 256 ``<IMG_CONTEXT>`` + ``</img>``, the
text tokenised as is), the pixels by hand (448 x 448 bicubic, /255, ImageNet mean and std),
reads the final hidden state 6 tokens from the end and applies the head in float32:
``100 * |mlp(h)|``.
"""

from __future__ import annotations

import ast
import copy
import json
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa import EditSample, create_scorer
from ieqa.backends.processor import BackendError
from ieqa.scorers.base import ScorerError

MODES = {"visual_quality": "visual", "instruction_alignment": "alignment",
         "content_preservation": "preservation"}
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.edithf import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_edithf_release, write_prompt_standins

    root = tmp_path_factory.mktemp("edithf")
    base = build_tiny_vlm(root / "base", "internvl", seed=3)
    return {"base": base, "release": build_edithf_release(root / "EditHF", base, seed=5),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).resize(
        size, Image.Resampling.BILINEAR)


@pytest.fixture(scope="module")
def samples():
    return [EditSample(id="a", source=_image(0, (80, 60)), edited=_image(1, (70, 50)),
                       instruction="make the sky red"),
            EditSample(id="b", source=_image(2, (500, 300)), edited=_image(3, (64, 64)),
                       instruction="remove the cat from the sofa, keep the rest")]


def _merged(model, release, folder: str):
    from safetensors.torch import load_file

    model = copy.deepcopy(model)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for part in ("vision_lora", "llm_lora"):
            path = release / folder / part
            config = json.loads((path / "adapter_config.json").read_text())
            scale = config["lora_alpha"] / config["r"]
            tensors = load_file(str(path / "adapter_model.safetensors"))
            for key in [k for k in tensors if ".lora_A." in k]:
                module = key.removeprefix("base_model.model.").split(".lora_A.")[0]
                delta = scale * tensors[key.replace(".lora_A.", ".lora_B.")] @ tensors[key]
                if part == "llm_lora":
                    params[f"model.language_model.{module.removeprefix('model.')}.weight"] += delta
                    continue
                _, _, layer, sub, name = module.split(".")
                prefix = f"model.vision_tower.encoder.layer.{layer}"
                if name == "qkv":
                    for third, proj in zip(delta.chunk(3), ("q_proj", "k_proj", "v_proj"),
                                           strict=True):
                        params[f"{prefix}.attention.{proj}.weight"] += third
                elif name == "proj":
                    params[f"{prefix}.attention.projection_layer.weight"] += delta
                else:
                    params[f"{prefix}.mlp.{name}.weight"] += delta
    return model.eval()


def reference(replica, samples) -> dict[str, list[float]]:
    from transformers import AutoTokenizer, InternVLForConditionalGeneration

    base = InternVLForConditionalGeneration.from_pretrained(replica["base"],
                                                            dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(replica["base"])
    tree = ast.parse((replica["prompts"] / "inference.py").read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    namespace: dict = {}
    exec(compile(ast.Module(body=functions, type_ignores=[]), "stand-in", "exec"), namespace)  # noqa: S102
    image_tokens = "<img>" + "<IMG_CONTEXT>" * 256 + "</img>"
    out: dict[str, list[float]] = {}
    for dim, mode in MODES.items():
        model = _merged(base, replica["release"], f"lora_checkpoints_{mode}")
        head = torch.load(replica["release"] / f"lora_checkpoints_{mode}" / "mlp_head.pth",
                          weights_only=True)
        out[dim] = []
        for s in samples:
            query = namespace["infer_single"](s.instruction, mode)
            query = query.replace("<image>", image_tokens, 1).replace("<image>", image_tokens, 1)
            enc = tokenizer(query, return_tensors="pt")
            pixels = []
            for image in (s.source, s.edited):
                x = np.asarray(image.convert("RGB").resize((448, 448), Image.Resampling.BICUBIC),
                               dtype=np.float64) / 255.0
                pixels.append(torch.tensor(((x - MEAN) / STD).transpose(2, 0, 1), dtype=torch.float32))
            with torch.no_grad():
                hidden = model.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                     pixel_values=torch.stack(pixels)).last_hidden_state[0, -6]
                x = torch.relu(hidden @ head["mlp.0.weight"].T + head["mlp.0.bias"])
                x = torch.relu(x @ head["mlp.2.weight"].T + head["mlp.2.bias"])
                x = x @ head["mlp.4.weight"].T + head["mlp.4.bias"]
            out[dim].append(float(x.abs().item() * 100))
    return out


def _scorer(replica, **options):
    return create_scorer("edithf", model=str(replica["release"]), base_model=str(replica["base"]),
                         prompts=str(replica["prompts"]), device="cpu", **options)


def test_scores_equal_the_released_forward(replica, samples):
    ref = reference(replica, samples)
    for batch in (2, 1):
        results = _scorer(replica, batch_size=batch).score(samples)
        assert all(r.ok for r in results), [r.error for r in results]
        for dim in MODES:
            got = [r.scores[dim] for r in results]
            assert np.allclose(got, ref[dim], rtol=1e-4, atol=1e-4), (batch, dim, got, ref[dim])
        for r in results:
            assert r.scores["overall"] == pytest.approx(np.mean([r.scores[d] for d in MODES]))
    # the three dimensions (three adapters and heads) give different numbers
    assert len({round(ref[d][0], 6) for d in MODES}) == 3


def test_a_release_that_does_not_fit_is_an_error(replica, tmp_path):
    from safetensors.torch import load_file, save_file

    bad = tmp_path / "bad"
    shutil.copytree(replica["release"], bad)
    path = bad / "lora_checkpoints_alignment" / "vision_lora" / "adapter_model.safetensors"
    tensors = load_file(str(path))
    key = next(k for k in tensors if "attn.proj.lora_A" in k)
    tensors[key.replace("attn.proj", "attn.out")] = tensors.pop(key)
    save_file(tensors, str(path))
    with pytest.raises(BackendError, match=r"attn\.out.*no counterpart"):
        _scorer({**replica, "release": bad})
    shutil.rmtree(bad / "lora_checkpoints_preservation")
    with pytest.raises(ScorerError, match="lacks lora_checkpoints_preservation"):
        _scorer({**replica, "release": bad})


def test_the_adapters_are_mapped_exactly():
    from ieqa.scorers.published.internvl_release import convert_lora

    a, b = torch.randn(2, 4), torch.randn(12, 2)
    out = convert_lora({"base_model.model.encoder.layers.3.attn.qkv.lora_A.weight": a,
                        "base_model.model.encoder.layers.3.attn.qkv.lora_B.weight": b},
                       {"base_model.model.model.layers.1.mlp.up_proj.lora_A.weight": a,
                        "base_model.model.model.layers.1.mlp.up_proj.lora_B.weight": b})
    layer = "base_model.model.model.vision_tower.encoder.layer.3.attention."
    for k, part in enumerate(("q_proj", "k_proj", "v_proj")):
        assert torch.equal(out[f"{layer}{part}.lora_A.weight"], a)
        assert torch.equal(out[f"{layer}{part}.lora_B.weight"], b[4 * k:4 * (k + 1)])
    assert torch.equal(
        out["base_model.model.model.language_model.layers.1.mlp.up_proj.lora_B.weight"], b)
    with pytest.raises(BackendError, match="only one of lora_A and lora_B"):
        convert_lora({}, {"base_model.model.model.layers.1.mlp.up_proj.lora_A.weight": a})
