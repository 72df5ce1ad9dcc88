"""``editreward``: EditReward's release format and forward, against an independent
implementation written here from the paper and the released model's description.

The replica is laid out as the hub release (``model.safetensors`` only: a tiny Qwen2.5-VL
with ``<|Reward|>`` added and two heads ``rm_heads.head_{0,1}`` of shapes H-1024-16-2),
and the prompt files are stand-ins with the authors' file names, constant names and
placeholder and marker (``ieqa.testing.releases.write_prompt_standins``), read with
``--prompts``.

The reference below computes the forward pass without ieqa's model code: (only the
processor comes through ``ieqa.backends.processor.load_processor``, which builds
transformers' own without its video part; the replica comes from ieqa.testing) it loads
the base model with transformers, resizes
each image to the release's pixel budget first (min = max = 200704, factor 28) as the
authors' inference does, builds inputs with the processor, runs the language model with
1-D positions (attention_mask cumsum - 1 on every M-RoPE axis), takes the final hidden
state at ``<|Reward|>`` and applies each head in float32: Linear-ReLU-Linear-ReLU-Linear
(dropout off) to (mu, log sigma); the reward is the elementwise mean of the two heads'
[mu, log sigma].
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from ieqa import EditSample, create_scorer
from ieqa.backends.processor import BackendError

PIXELS = 200704




# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.editreward import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_reward_release, write_prompt_standins

    root = tmp_path_factory.mktemp("editreward")
    base = build_tiny_vlm(root / "base", "qwen2.5-vl", seed=3)
    build_reward_release(root / "release", base, seed=11)
    build_reward_release(root / "legacy", base, seed=11, layout="legacy")
    return {"base": base, "release": root / "release", "legacy": root / "legacy",
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _images(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def samples():
    src_a, src_b = _images(0, (80, 60)), _images(1, (64, 64))
    out = []
    for k in range(3):
        out.append(EditSample(id=f"a{k}", source=src_a, edited=_images(10 + k, (80, 60)),
                              instruction="make the sky red", group_id="a"))
    out.append(EditSample(id="b0", source=src_b, edited=_images(20, (70, 50)),
                          instruction="remove the cat {and} the dog", group_id="b"))
    return out


def _scorer(replica, **options):  # noqa: ANN202
    return create_scorer("editreward", model=str(replica["release"]),
                         base_model=str(replica["base"]), prompts=str(replica["prompts"]),
                         device="cpu", dtype="float32", **options)


# ---------------------------------------------------------------------------- reference
def _texts(folder: Path) -> dict[str, str]:
    import ast

    def constants(path: Path) -> dict[str, str]:
        tree = ast.parse(path.read_text())
        return {n.targets[0].id: n.value.value for n in tree.body if isinstance(n, ast.Assign)}

    prompts = constants(folder / "EditReward/dataset/prompts.py")
    collator = constants(folder / "EditReward/dataset/data_collator_qwen_edit.py")
    return {"head_0": prompts["INSTRUCTION_EDIT_FOLLOWING"],
            "head_1": prompts["INSTRUCTION_EDIT_QUALITY"],
            "cue": collator["prompt_with_special_token"]}


def _resize_first(image: Image.Image, factor: int = 28) -> Image.Image:
    """Qwen-VL's resizing rule: each side a multiple of ``factor`` nearest the original,
    then scaled (keeping the aspect ratio) so the area is within the pixel budget."""
    h = max(factor, round(image.height / factor) * factor)
    w = max(factor, round(image.width / factor) * factor)
    if h * w > PIXELS:
        beta = math.sqrt(image.height * image.width / PIXELS)
        h = max(factor, math.floor(image.height / beta / factor) * factor)
        w = max(factor, math.floor(image.width / beta / factor) * factor)
    elif h * w < PIXELS:
        beta = math.sqrt(PIXELS / (image.height * image.width))
        h = math.ceil(image.height * beta / factor) * factor
        w = math.ceil(image.width * beta / factor) * factor
    return image.convert("RGB").resize((w, h), Image.Resampling.BICUBIC)


def reference(replica, samples, *, positions: str = "1d") -> dict[str, np.ndarray]:
    """mu and log sigma per head ``[n, 2]`` and the fused reward, computed without ieqa."""
    from safetensors.torch import load_file
    from transformers import Qwen2_5_VLForConditionalGeneration

    from ieqa.backends.processor import load_processor  # transformers' processor, no video part

    processor = load_processor(replica["base"])
    # the images come resized already; the processor keeps them (the released Qwen
    # processor's own budget, 3136 to 12845056 pixels, holds them; the tiny base's is smaller)
    processor.image_processor.size = {"shortest_edge": 3136, "longest_edge": 12845056}
    processor.tokenizer.add_special_tokens({"additional_special_tokens": ["<|Reward|>"]})
    reward_id = processor.tokenizer.convert_tokens_to_ids("<|Reward|>")
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(replica["base"],
                                                               dtype=torch.float32).eval()
    model.resize_token_embeddings(len(processor.tokenizer))
    state = load_file(str(replica["release"] / "model.safetensors"))
    heads = {h: {k.split(".", 2)[2]: v for k, v in state.items()
                 if k.startswith(f"rm_heads.{h}.")} for h in ("head_0", "head_1")}
    model.load_state_dict({k: v for k, v in state.items() if not k.startswith("rm_heads.")},
                          strict=True)
    texts = _texts(replica["prompts"])
    out = {}
    for h in ("head_0", "head_1"):
        rows = []
        for s in samples:
            body = texts[h].format(text_prompt=s.instruction) + texts["cue"]
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "image"},
                                                     {"type": "text", "text": body}]}]
            text = processor.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=False)
            enc = processor(text=[text], images=[_resize_first(s.source), _resize_first(s.edited)],
                            return_tensors="pt")
            with torch.no_grad():
                embeds = model.get_input_embeddings()(enc["input_ids"])
                feats = torch.cat(model.model.get_image_features(
                    enc["pixel_values"], enc["image_grid_thw"]).pooler_output)
                mask = (enc["input_ids"] == model.config.image_token_id).unsqueeze(-1)
                embeds = embeds.masked_scatter(mask.expand_as(embeds), feats)
                if positions == "1d":
                    pos = (enc["attention_mask"].cumsum(-1) - 1).unsqueeze(0).expand(3, -1, -1)
                else:
                    pos = model.model.get_rope_index(
                        enc["input_ids"], mm_token_type_ids=enc["mm_token_type_ids"],
                        image_grid_thw=enc["image_grid_thw"],
                        attention_mask=enc["attention_mask"])[0]
                hidden = model.model.language_model(
                    inputs_embeds=embeds, position_ids=pos,
                    attention_mask=enc["attention_mask"]).last_hidden_state[0]
                at = int((enc["input_ids"][0] == reward_id).nonzero()[-1])
                x = hidden[at].float()
                w = heads[h]
                x = torch.relu(x @ w["0.weight"].T + w["0.bias"])
                x = torch.relu(x @ w["3.weight"].T + w["3.bias"])
                rows.append((x @ w["5.weight"].T + w["5.bias"]).numpy())
        out[h] = np.array(rows, dtype=np.float64)
    out["fused"] = (out["head_0"] + out["head_1"]) / 2  # elementwise over [mu, log sigma]
    return out


def _close(a, b, rtol=1e-4) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))))


# -------------------------------------------------------------------------------- tests
def test_scores_equal_the_released_forward(replica, samples) -> None:
    """mu and sigma of both heads and the fused reward agree with the reference to 1e-4
    relative: batched with prefix sharing, batched with padding (instructions of different
    lengths) and one at a time."""
    ref = reference(replica, samples)
    for options in ({"batch_size": 4}, {"batch_size": 4, "share_prefix": False},
                    {"batch_size": 1, "share_prefix": False}):
        results = _scorer(replica, **options).score(samples)
        assert all(r.ok for r in results), [r.error for r in results]
        got = {dim: np.array([[r.scores[dim], math.log(r.sigma[dim])] for r in results])
               for dim in ("instruction_alignment", "visual_quality", "overall")}
        assert _close(got["instruction_alignment"], ref["head_0"]), (options, got, ref)
        assert _close(got["visual_quality"], ref["head_1"]), (options, got, ref)
        assert _close(got["overall"], ref["fused"]), (options, got, ref)
    # the rewards differ between edits (the comparison above compares numbers that vary)
    assert np.ptp(ref["head_0"][:, 0]) > 1e-3 and np.ptp(ref["head_1"][:, 0]) > 1e-3


def test_pixels_do_not_depend_on_the_processors_own_resizing(replica, samples) -> None:
    """The images are resized with Pillow first, as the authors' code does, so the
    processor never resizes: a processor that would resample otherwise (nearest, as a
    different image-processor backend would) gives the same numbers."""
    from PIL import Image as _Image

    scorer = _scorer(replica)
    scorer.backend.processor.image_processor.resample = _Image.Resampling.NEAREST
    ref = reference(replica, samples)
    results = scorer.score(samples)
    got = np.array([[r.scores["instruction_alignment"],
                     math.log(r.sigma["instruction_alignment"])] for r in results])
    assert _close(got, ref["head_0"])


def test_positions_and_fusion_are_the_released_ones(replica, samples) -> None:
    """3-D positions give other numbers (the reference with 3-D positions agrees with
    them), and the independent sigma rule changes only the fused sigma."""
    one_d = _scorer(replica).score(samples)
    three_d = _scorer(replica, positions="model").score(samples)
    ref3 = reference(replica, samples, positions="model")
    mu1 = np.array([r.scores["instruction_alignment"] for r in one_d])
    mu3 = np.array([r.scores["instruction_alignment"] for r in three_d])
    assert np.max(np.abs(mu1 - mu3)) > 1e-3, "1-D and 3-D positions gave the same scores"
    assert _close(mu3, ref3["head_0"][:, 0])
    independent = _scorer(replica, sigma_aggregation="independent").score(samples)
    for a, b in zip(one_d, independent, strict=True):
        assert a.scores == pytest.approx(b.scores, rel=1e-9)
        s0, s1 = a.sigma["instruction_alignment"], a.sigma["visual_quality"]
        assert a.sigma["overall"] == pytest.approx(math.sqrt(s0 * s1), rel=1e-9)
        assert b.sigma["overall"] == pytest.approx(math.sqrt(s0**2 + s1**2) / 2, rel=1e-9)


def test_both_key_layouts_load_to_the_same_scores(replica, samples) -> None:
    current = _scorer(replica).score(samples[:2])
    legacy = create_scorer("editreward", model=str(replica["legacy"] / "model.safetensors"),
                           base_model=str(replica["base"]), prompts=str(replica["prompts"]),
                           device="cpu", dtype="float32").score(samples[:2])
    for a, b in zip(current, legacy, strict=True):
        assert a.scores == pytest.approx(b.scores, rel=1e-6)


def test_a_release_that_does_not_match_is_an_error_listing_the_keys(replica, tmp_path) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(str(replica["release"] / "model.safetensors"))
    dropped = sorted(k for k in state if ".layers.1." in k)[:2]
    bad = {k: v for k, v in state.items() if k not in dropped}
    bad["model.language_model.extra.weight"] = torch.zeros(2)
    (tmp_path / "bad").mkdir()
    save_file(bad, str(tmp_path / "bad" / "model.safetensors"))
    with pytest.raises(BackendError, match="missing keys") as info:
        create_scorer("editreward", model=str(tmp_path / "bad"), base_model=str(replica["base"]),
                      prompts=str(replica["prompts"]), device="cpu", dtype="float32")
    message = str(info.value)
    assert dropped[0] in message and "model.language_model.extra.weight" in message
    assert "--base-model" in message
    # a weight of the wrong shape is named, not reported as "see above"
    wrong = dict(state)
    key = next(k for k in state if k.endswith("mlp.up_proj.weight"))
    wrong[key] = torch.zeros(state[key].shape[0] + 1, state[key].shape[1])
    save_file(wrong, str(tmp_path / "bad" / "model.safetensors"))
    with pytest.raises(BackendError, match="mismatched keys") as info:
        create_scorer("editreward", model=str(tmp_path / "bad"), base_model=str(replica["base"]),
                      prompts=str(replica["prompts"]), device="cpu", dtype="float32")
    assert key in str(info.value)
    # a base model whose tokenizer does not match the release's vocabulary
    other = tmp_path / "other"
    shutil.copytree(replica["base"], other)
    tok = other / "tokenizer_config.json"
    from transformers import AutoTokenizer

    t = AutoTokenizer.from_pretrained(other)
    t.add_special_tokens({"additional_special_tokens": ["<|extra|>"]})
    t.save_pretrained(other)
    assert tok.exists()
    with pytest.raises(BackendError, match="rows but"):
        create_scorer("editreward", model=str(replica["release"]), base_model=str(other),
                      prompts=str(replica["prompts"]), device="cpu", dtype="float32")
    # no head at all: not a reward-model release
    save_file({k: v for k, v in state.items() if not k.startswith("rm_heads.")},
              str(tmp_path / "bad" / "model.safetensors"))
    with pytest.raises(BackendError, match="no reward head"):
        create_scorer("editreward", model=str(tmp_path / "bad"), base_model=str(replica["base"]),
                      prompts=str(replica["prompts"]), device="cpu", dtype="float32")


def test_prompt_files_are_checked(replica, tmp_path) -> None:
    """Files that are not the authors' (the stand-ins without their mark) are refused,
    naming the file, the pinned hash and --prompts; a missing file names its path."""
    from ieqa.prompts.published import PublishedPromptError, load_texts
    from ieqa.scorers.published.editreward import PROMPT_SOURCES
    from ieqa.testing.releases import STANDIN_MARKER

    unmarked = tmp_path / "unmarked"
    shutil.copytree(replica["prompts"], unmarked)
    (unmarked / STANDIN_MARKER).unlink()
    with pytest.raises(PublishedPromptError) as info:
        load_texts(PROMPT_SOURCES, prompts_dir=unmarked)
    message = str(info.value)
    assert "EditReward/dataset/prompts.py" in message and PROMPT_SOURCES[0].source.sha256 in message
    assert "--prompts" in message
    (unmarked / "EditReward/dataset/data_collator_qwen_edit.py").unlink()
    with pytest.raises(PublishedPromptError, match="data_collator_qwen_edit.py not found"):
        load_texts(PROMPT_SOURCES, prompts_dir=unmarked, verify=False)
    assert _scorer(replica).config()["prompts"]["standin"] is True


def test_cli_scores_a_folder_with_the_release(replica, tmp_path) -> None:
    from typer.testing import CliRunner

    from ieqa.cli import app
    from ieqa.data.scorefile import iter_score_rows

    folder = tmp_path / "edits"
    (folder / "source").mkdir(parents=True)
    (folder / "edited").mkdir()
    lines = ["name,instruction"]
    for k in range(3):
        _images(k, (64, 48)).save(folder / "source" / f"e{k}.png")
        _images(50 + k, (64, 48)).save(folder / "edited" / f"e{k}.png")
        lines.append(f"e{k},make it brighter")
    (folder / "instructions.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "scores.jsonl"
    result = CliRunner().invoke(app, [
        "score", str(folder), "--scorer", "editreward", "--model", str(replica["release"]),
        "--base-model", str(replica["base"]), "--prompts", str(replica["prompts"]),
        "-O", "device=cpu", "-O", "dtype=float32", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(iter_score_rows(out))
    assert len(rows) == 3
    assert all({"instruction_alignment", "visual_quality", "overall"} <= set(r.scores)
               and not r.failed for r in rows), rows


def test_the_catalog_lists_the_release() -> None:
    from typer.testing import CliRunner

    from ieqa.cli import app
    from ieqa.scorers.published.editreward import VARIANTS
    from ieqa.scorers.table import scorer_info

    result = CliRunner().invoke(app, ["list", "scorers"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if "  released: " in x]
    line = next(x for x in lines if "EditReward" in x)
    assert "TIGER-Lab/EditReward-Qwen2.5-7B-VL" in line and "Qwen/Qwen2.5-VL-7B-Instruct" in line
    release = scorer_info("editreward").release
    default = VARIANTS["qwen2.5-vl-7b"]
    assert (release["hub_id"], release["base_model"]) == (default.release, default.base_model)


def test_the_release_is_a_reward_with_its_sigma(replica, samples) -> None:
    """As an RL reward: rule ``overall`` is the fused mu, and the uncertainty penalty uses
    the fused sigma; best-of-N picks the highest fused mu."""
    from ieqa.rewards import LocalRewarder, RewardRule, best_of_n

    scorer = _scorer(replica)
    results = scorer.score(samples[:3])
    plain = LocalRewarder(scorer, rule="overall").score(samples[:3])
    penalised = LocalRewarder(scorer, rule=RewardRule("overall", uncertainty_penalty=0.5)
                              ).score(samples[:3])
    for r, a, b in zip(results, plain.results, penalised.results, strict=True):
        assert a.reward == pytest.approx(r.scores["overall"], rel=1e-9)
        assert b.reward == pytest.approx(r.scores["overall"] - 0.5 * r.sigma["overall"], rel=1e-9)
    best, pick = best_of_n(LocalRewarder(scorer, rule="overall"), samples[0].source,
                           samples[0].instruction, [s.edited for s in samples[:3]])
    assert best == int(np.argmax([r.scores["overall"] for r in results]))


# ------------------------------------------------------------------ the MiMo-VL release
@pytest.fixture(scope="module")
def mimo(tmp_path_factory, replica):
    """A tiny MiMo-VL base (Qwen2.5-VL's architecture, its own tokenizer and a chat
    template with a default system turn) and a release on it."""
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_reward_release

    root = tmp_path_factory.mktemp("editreward_mimo")
    base = build_tiny_vlm(root / "base", "mimo-vl", seed=4)
    build_reward_release(root / "release", base, seed=17)
    return {"base": base, "release": root / "release", "prompts": replica["prompts"]}


def test_the_mimo_vl_release_runs_on_its_own_base_as_released(mimo, samples) -> None:
    """``variant=mimo-vl-7b``: the authors' Qwen2.5-VL inference with MiMo-VL's processor,
    so the chat is the base's own template (its system turn is in the prompt ieqa renders)
    and the vocabulary its own tokenizer's; scores equal the reference within 1e-4."""
    ref = reference(mimo, samples)
    scorer = create_scorer("editreward", variant="mimo-vl-7b", model=str(mimo["release"]),
                           base_model=str(mimo["base"]), prompts=str(mimo["prompts"]),
                           device="cpu", dtype="float32")
    rendered = scorer.backend.render(scorer.prompt(scorer.load_samples(samples[:1])[0][0][1],
                                                   "instruction_following"))
    assert rendered.startswith("<|im_start|>system\nYou are a tiny random stand-in of MiMo-VL")
    assert "<think>" in scorer.backend.tokenizer.get_added_vocab()  # MiMo's own tokens
    results = scorer.score(samples)
    assert all(r.ok for r in results), [r.error for r in results]
    got = np.array([[r.scores["overall"], math.log(r.sigma["overall"])] for r in results])
    assert _close(got, ref["fused"]), (got, ref["fused"])
    assert scorer.config()["variant"] == "mimo-vl-7b"
