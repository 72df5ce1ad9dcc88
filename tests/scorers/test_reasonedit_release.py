"""``reasonedit``: ReasonEdit's release package and forward, against an independent
implementation written here from the authors' release description.

The replica is laid out as the release package (``build_lora_state_release``): a LoRA state
dict without a config for a tiny Qwen3.5 (hybrid linear/full attention), a regression head
saved with ``torch.save``, the processor files and a ``calibration.json``; the prompt file
is a stand-in with the authors' path and function name (``write_prompt_standins``).

The reference: the base model loaded with transformers, every LoRA pair merged by hand
(``W + alpha / r * B @ A``; the patch embedding's convolution likewise), each image larger
than 262 144 pixels scaled to that area with sides rounded then floored to multiples of 16
(Lanczos), the chat built by the processor's template (source image, edited image, the
stand-in's ``build_prompt`` evaluated by Python), the processor at min = max = 262 144
pixels, the last prompt token's final hidden state through ``Linear - SiLU - Linear``, and
the calibration ``clip(raw * slope + intercept, 0, 1)`` with ``overall = 0.3 VQ + 0.4 IA +
0.3 CP``.
"""

from __future__ import annotations

import ast
import json
import math
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa import EditSample, create_scorer
from ieqa.backends.processor import BackendError

PIXELS = 262144
CALIBRATION = {"calibration_type": "affine_per_dimension",
               "coefficients": {"visual_quality": {"slope": 2.0, "intercept": 0.9},
                                "editing_alignment": {"slope": -1.5, "intercept": 0.3},
                                "content_preservation": {"slope": 1.0, "intercept": 1.5}}}


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.reasonedit import LORA, PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_lora_state_release, write_prompt_standins

    root = tmp_path_factory.mktemp("reasonedit")
    base = build_tiny_vlm(root / "base", "qwen3.5", seed=3, max_pixels=PIXELS)
    package = build_lora_state_release(root / "ReasonEdit", base, LORA, seed=5,
                                       calibration=CALIBRATION)
    return {"base": base, "package": package,
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    return Image.fromarray(small).resize(size, Image.Resampling.BILINEAR)


@pytest.fixture(scope="module")
def samples():
    source = _image(0, (80, 60))
    out = [EditSample(id=f"a{k}", source=source, edited=_image(10 + k, (80, 60)),
                      instruction=f"  make the sky {c} ", group_id="a")
           for k, c in enumerate(("red", "blue"))]
    # an image over the pixel budget, so that the authors' pre-resize runs
    out.append(EditSample(id="big", source=_image(20, (640, 480)), edited=_image(21, (600, 500)),
                          instruction="remove the cat"))
    return out


def _pre_resize(image: Image.Image) -> Image.Image:
    w, h = image.size
    if w * h <= PIXELS:
        return image
    s = (PIXELS / (w * h)) ** 0.5
    nw, nh = max(16, int(round(w * s))), max(16, int(round(h * s)))
    return image.resize((max(16, nw // 16 * 16), max(16, nh // 16 * 16)),
                        Image.Resampling.LANCZOS)


def _build_prompt(replica, instruction: str) -> str:
    tree = ast.parse((replica["prompts"] / "core/prompting.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_prompt")
    namespace: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "stand-in", "exec"), namespace)  # noqa: S102
    return namespace["build_prompt"](instruction)


def reference(replica, samples) -> tuple[np.ndarray, np.ndarray]:
    """Raw head outputs ``[n, 3]`` and calibrated scores ``[n, 4]`` (VQ, IA, CP, overall)."""
    from safetensors.torch import load_file
    from transformers import Qwen3_5ForConditionalGeneration

    from ieqa.backends.processor import load_processor

    model = Qwen3_5ForConditionalGeneration.from_pretrained(replica["base"],
                                                            dtype=torch.float32).eval()
    lora = load_file(str(replica["package"] / "adapter_model.safetensors"))
    modules = dict(model.named_modules())
    scale = 128 / 64
    with torch.no_grad():
        for key in [k for k in lora if ".lora_A." in k]:
            name = key.removeprefix("base_model.model.").split(".lora_A.")[0]
            a, b = lora[key], lora[key.replace(".lora_A.", ".lora_B.")]
            weight = modules[name].weight
            if a.dim() == 2:
                weight += scale * b @ a
            else:  # a convolution: A is the kernel, B a 1x1 convolution
                weight += scale * torch.einsum("or,r...->o...", b.flatten(1), a)
    processor = load_processor(replica["base"], min_pixels=PIXELS, max_pixels=PIXELS)
    head = torch.load(replica["package"] / "regression_head.pt", weights_only=True)
    raws = []
    for s in samples:
        messages = [{"role": "user", "content": [
            {"type": "image"}, {"type": "image"},
            {"type": "text", "text": _build_prompt(replica, s.instruction)}]}]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        enc = processor(text=[text], images=[_pre_resize(s.source), _pre_resize(s.edited)],
                        return_tensors="pt")
        with torch.no_grad():
            hidden = model.model(**enc).last_hidden_state[0, -1]
            x = torch.nn.functional.silu(hidden @ head["0.weight"].T + head["0.bias"])
            raws.append((x @ head["3.weight"].T + head["3.bias"]).numpy())
    raw = np.array(raws, dtype=np.float64)
    coeff = CALIBRATION["coefficients"]
    names = ("visual_quality", "editing_alignment", "content_preservation")
    cal = np.clip(raw * [coeff[n]["slope"] for n in names]
                  + [coeff[n]["intercept"] for n in names], 0, 1)
    return raw, np.column_stack([cal, cal @ np.array([0.3, 0.4, 0.3])])


def _scorer(replica, **options):
    return create_scorer("reasonedit", model=str(replica["package"]),
                         base_model=str(replica["base"]), prompts=str(replica["prompts"]),
                         device="cpu", **options)


def test_scores_equal_the_released_forward(replica, samples):
    raw_ref, scores_ref = reference(replica, samples)
    for batch in (3, 1):
        results = _scorer(replica, batch_size=batch).score(samples)
        assert all(r.ok for r in results), [r.error for r in results]
        raw = np.array([[r.raw["head"][d] for d in ("visual_quality", "instruction_alignment",
                                                     "content_preservation")] for r in results])
        got = np.array([[r.scores[d] for d in ("visual_quality", "instruction_alignment",
                                                "content_preservation", "overall")]
                        for r in results])
        assert np.allclose(raw, raw_ref, rtol=1e-4, atol=1e-6), (batch, raw, raw_ref)
        assert np.allclose(got, scores_ref, rtol=1e-4, atol=1e-6), (batch, got, scores_ref)
    # the raw outputs vary between edits, and the calibration clips some of them
    assert np.ptp(raw_ref[:, 0]) > 1e-4
    assert ((scores_ref[:, :3] == 0) | (scores_ref[:, :3] == 1)).any() \
        and ((scores_ref[:, :3] > 0) & (scores_ref[:, :3] < 1)).any()


def test_without_calibration_the_scores_are_the_clipped_raw_ones(replica, samples, tmp_path):
    package = tmp_path / "ReasonEdit"
    shutil.copytree(replica["package"], package)
    (package / "calibration.json").unlink()
    result = create_scorer("reasonedit", model=str(package), base_model=str(replica["base"]),
                           prompts=str(replica["prompts"]), device="cpu").score(samples[:1])[0]
    raw = result.raw["head"]
    for dim, value in raw.items():
        assert result.scores[dim] == min(1.0, max(0.0, value))
    assert result.scores["overall"] == pytest.approx(
        0.3 * result.scores["visual_quality"] + 0.4 * result.scores["instruction_alignment"]
        + 0.3 * result.scores["content_preservation"])


def test_a_package_that_does_not_match_is_an_error(replica, tmp_path):
    from safetensors.torch import load_file, save_file

    from ieqa.scorers.base import ScorerError

    bad = tmp_path / "bad"
    shutil.copytree(replica["package"], bad)
    weights = load_file(bad / "adapter_model.safetensors")
    key = next(k for k in weights if "q_proj.lora_A" in k)
    weights[key.replace("q_proj", "qq_proj")] = weights.pop(key)
    save_file(weights, bad / "adapter_model.safetensors")
    with pytest.raises(BackendError, match=r"1 unexpected: .*qq_proj.*1 missing: .*q_proj"):
        _scorer({**replica, "package": bad})
    shutil.copy(replica["package"] / "adapter_model.safetensors", bad / "adapter_model.safetensors")
    torch.save({"0.weight": torch.zeros(2, 2)}, bad / "regression_head.pt")
    with pytest.raises(ScorerError, match="regression head holds 0.weight, 0.bias"):
        _scorer({**replica, "package": bad})
    (bad / "calibration.json").write_text(json.dumps({"calibration_type": "isotonic"}))
    with pytest.raises(ScorerError, match="not an affine_per_dimension calibration"):
        _scorer({**replica, "package": bad})
    (bad / "regression_head.pt").unlink()
    with pytest.raises(BackendError, match="lacks regression_head.pt"):
        _scorer({**replica, "package": bad})


def test_release_defaults_and_the_catalog(replica):
    from typer.testing import CliRunner

    from ieqa.cli import app

    scorer = _scorer(replica)
    config = scorer.config()
    assert config["backend"]["load_in_4bit"] is False  # no CUDA here: 4 bit needs it
    assert config["release"]["calibration"] is True and config["pixels"] == PIXELS
    assert config["prompts"]["standin"] is True
    assert config["provenance"]["package"] == str(replica["package"])
    # a head that returns NaN gives row errors, never a clipped number
    with torch.no_grad():
        scorer.head[3].bias[0] = float("nan")
    result = scorer.score([EditSample(id="n", source=_image(1, (64, 48)),
                                      edited=_image(2, (64, 48)), instruction="x")])[0]
    assert result.error and "not finite" in result.error and not result.scores
    result = CliRunner().invoke(app, ["list", "scorers"])
    block = result.output[result.output.index("reasonedit"):]
    assert "TmpAccount/ReasonEdit" in block and "Qwen/Qwen3.5-9B" in block


def test_the_pre_resize_is_the_authors(replica):
    from ieqa.scorers.published.reasonedit import fit_release_pixels

    for size in ((640, 480), (600, 500), (1000, 17), (80, 60)):
        image = _image(3, size)
        got, want = fit_release_pixels(image), _pre_resize(image)
        assert got.size == want.size and np.array_equal(np.asarray(got), np.asarray(want))
    assert math.prod(fit_release_pixels(_image(3, (640, 480))).size) <= PIXELS


# ------------------------------------------------------------------------------ RE-Reward
@pytest.fixture(scope="module")
def re_reward(replica, tmp_path_factory):
    from ieqa.scorers.published.re_reward import PROMPT_SOURCES
    from ieqa.scorers.published.reasonedit import LORA
    from ieqa.testing.releases import build_peft_head_release, write_prompt_standins

    root = tmp_path_factory.mktemp("re-reward")
    return {"base": replica["base"],
            "package": build_peft_head_release(root / "RE-Reward", replica["base"], LORA, seed=7),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _critiqued(samples):
    critiques = ("  The sky is red now; the clouds are kept. ", "Nothing changed.", "Cat gone.")
    return [EditSample(id=s.id, source=s.source, edited=s.edited, instruction=s.instruction,
                       meta={"critique": c}) for s, c in zip(samples, critiques, strict=False)]


def re_reward_reference(release, samples) -> np.ndarray:
    """logicality, accuracy, usefulness ``[n, 3]``: the base with the adapter merged by hand,
    the chat by the processor's template (the stand-in's method evaluated by Python), the
    images as they are, the head on the last token's final hidden state."""
    from safetensors.torch import load_file
    from transformers import Qwen3_5ForConditionalGeneration

    from ieqa.backends.processor import load_processor

    model = Qwen3_5ForConditionalGeneration.from_pretrained(release["base"],
                                                            dtype=torch.float32).eval()
    lora = load_file(str(release["package"] / "adapter_model.safetensors"))
    config = json.loads((release["package"] / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    modules = dict(model.named_modules())
    with torch.no_grad():
        for key in [k for k in lora if ".lora_A." in k]:
            name = key.removeprefix("base_model.model.").split(".lora_A.")[0]
            a, b = lora[key], lora[key.replace(".lora_A.", ".lora_B.")]
            weight = modules[name].weight
            weight += scale * (b @ a if a.dim() == 2
                               else torch.einsum("or,r...->o...", b.flatten(1), a))
    tree = ast.parse((release["prompts"] / "RE-reward/reward_infer.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    namespace: dict = {}
    exec(compile(ast.Module(body=[cls], type_ignores=[]), "stand-in", "exec"), namespace)  # noqa: S102
    build = namespace[cls.name]().build_prompt
    processor = load_processor(release["base"])
    head = {k.removeprefix("layers."): v for k, v in torch.load(
        release["package"] / "score_head.pth", weights_only=True).items()}
    out = []
    for s in samples:
        messages = [{"role": "user", "content": [
            {"type": "image"}, {"type": "image"},
            {"type": "text", "text": build(s.instruction, s.meta["critique"])}]}]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        enc = processor(text=[text], images=[s.source, s.edited], return_tensors="pt")
        with torch.no_grad():
            hidden = model.model(**enc).last_hidden_state[0, -1]
            x = torch.nn.functional.silu(hidden @ head["0.weight"].T + head["0.bias"])
            out.append((x @ head["3.weight"].T + head["3.bias"]).numpy())
    return np.array(out, dtype=np.float64)


def test_re_reward_equals_the_released_forward(re_reward, samples):
    critiqued = _critiqued(samples[:2])  # within the tiny processor's budget
    ref = re_reward_reference(re_reward, critiqued)
    scorer = create_scorer("re-reward", model=str(re_reward["package"]),
                           base_model=str(re_reward["base"]), prompts=str(re_reward["prompts"]),
                           device="cpu", batch_size=2)
    results = scorer.score(critiqued)
    got = np.array([[r.scores[d] for d in ("logicality", "accuracy", "usefulness")]
                    for r in results])
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-6), (got, ref)
    assert np.ptp(ref[:, 0]) > 1e-5
    for r in results:
        assert r.scores["overall"] == pytest.approx(0.3 * r.scores["logicality"] + 0.4 *
                                                    r.scores["accuracy"] + 0.3 * r.scores["usefulness"])
    assert scorer.backend.config()["merge_adapter"] is False
    # a sample without a critique is a recorded error, not a score
    bare = scorer.score([samples[0]])[0]
    assert bare.error and "has no critique" in bare.error


def test_the_default_release_id_downloads_its_subfolder(replica, monkeypatch, tmp_path):
    import huggingface_hub

    from ieqa.scorers.published.lora_release import release_folder

    calls = []
    root = tmp_path / "snapshot"
    shutil.copytree(replica["package"], root / "ReasonEdit")

    def fake(repo_id, revision=None, allow_patterns=None, **kwargs):
        calls.append((repo_id, revision, allow_patterns))
        return str(root)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    folder = release_folder("TmpAccount/ReasonEdit", subfolder="ReasonEdit", revision="r1",
                            needs=("regression_head.pt",))
    assert folder == root / "ReasonEdit"
    assert calls == [("TmpAccount/ReasonEdit", "r1", ["ReasonEdit/*"])]
    scorer = create_scorer("reasonedit", model="TmpAccount/ReasonEdit",
                           base_model=str(replica["base"]), prompts=str(replica["prompts"]),
                           device="cpu", revision="r1")
    assert calls[-1] == ("TmpAccount/ReasonEdit", "r1", ["ReasonEdit/*"])
    assert scorer.config()["release"]["subfolder"] == "ReasonEdit"
    with pytest.raises(BackendError, match=r"subfolder ReasonEdit of TmpAccount/ReasonEdit\) "
                                           r"lacks missing.bin"):
        release_folder("TmpAccount/ReasonEdit", subfolder="ReasonEdit", needs=("missing.bin",))
