"""Outside CI: EditReward's own Qwen3-VL inferencer (``EditRewardQwen3Inferencer`` and
``Qwen3_VLRewardModelBT_MultiHead`` of TIGER-AI-Lab/EditReward at edb027e, run as released)
beside ``ieqa score --scorer editreward -O variant=qwen3-vl-8b`` on a tiny random Qwen3-VL
replica, with the authors' own prompt files.

Setup (see README.md): the released package extracted at the pinned commit,
``git --git-dir=/work/.mirror/TIGER-AI-Lab+EditReward/repo archive edb027e EditReward | tar -x
-C /tmp/harness/er_src``, and a virtualenv with torch, transformers, safetensors, pillow,
pandas, requests (``/tmp/harness/venv_er``). Run with that virtualenv's python:
``/tmp/harness/venv_er/bin/python scripts/harness/editreward_qwen3_vs_released.py``.

What is not theirs, and why: the released package imports its training stack (torchvision,
trl, peft, omegaconf) at import time, which does not install beside transformers' Qwen-VL
here, so ``torchvision`` and the package's ``__init__`` are stubbed; ``parse_args_with_yaml``
returns the settings of their ``EditReward-Qwen3-VL.yaml`` and ``create_model_and_processor``
builds their model class from the tiny base as theirs does (processor right-padded with
``<|Reward|>`` added; ``from_pretrained`` with ``output_dim=2``, ``special_token_ids``,
``rm_head_type``, ``pooling_strategy=mean``; embeddings resized; heads float32). The
processor is transformers' Qwen3-VL processor without its video part (that part needs
torchvision). Their class reads ``config.hidden_size``, which transformers 5 keeps only in
``text_config``, so it is copied to the top level; and their forward does not pass
``mm_token_type_ids``, which transformers 5 needs for the 3-D positions (4.57 read them from
``input_ids``), so it is given from ``input_ids``. Everything else, the checkpoint loading, the messages, ``apply_chat_template``,
the forward, the pooling at ``<|Reward|>`` and the fusion, is their code.
"""
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import torch

SRC = Path("/tmp/harness/er_src")
IEQA = Path(__file__).resolve().parents[2]


def stub(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def stub_their_imports() -> None:
    """After transformers has looked for torchvision (and found none)."""
    # torchvision: imported by their dataset utilities, not used on this path
    tv = stub("torchvision", io=None)
    stub("torchvision.io")
    stub("torchvision.transforms", InterpolationMode=types.SimpleNamespace(BICUBIC=3))
    stub("torchvision.transforms.functional")
    tv.transforms = sys.modules["torchvision.transforms"]
    # the package without its __init__ (which imports the Qwen2.5-VL inferencer's stack)
    stub("EditReward", __path__=[str(SRC / "EditReward")])


def build_fixture(root: Path) -> dict:
    """The tiny base, the checkpoint as their trainer saves it, and three edits (by ieqa's
    test builders, in the ieqa environment)."""
    code = f"""
import numpy as np
from pathlib import Path
from PIL import Image
from ieqa.testing import build_tiny_vlm
from ieqa.testing.releases import build_reward_release
root = Path({str(root)!r})
base = build_tiny_vlm(root / "base", "qwen3-vl", seed=5)
build_reward_release(root / "ckpt", base, seed=13)
def img(seed, size):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
edits = root / "edits"
(edits / "source").mkdir(parents=True); (edits / "edited").mkdir()
specs = [("a0", 0, (96, 64), 10, (96, 64)), ("a1", 0, (96, 64), 11, (96, 64)),
         ("b0", 1, (64, 80), 20, (72, 56)), ("c0", 2, (160, 120), 30, (120, 160))]
for name, s, ss, e, es in specs:
    img(s, ss).save(edits / "source" / f"{{name}}.png")
    img(e, es).save(edits / "edited" / f"{{name}}.png")
(edits / "instructions.csv").write_text(
    "name,instruction\\na0,make the sky red\\na1,make the sky red\\n"
    "b0,remove the cat {{and}} the dog\\nc0,turn it into a watercolour painting\\n")
"""
    subprocess.run([str(IEQA / ".venv/bin/python"), "-c", code], check=True,
                   env={"PYTHONPATH": str(IEQA / "src"), "HF_HUB_OFFLINE": "1"})
    names = ["a0", "a1", "b0", "c0"]
    instructions = {"a0": "make the sky red", "a1": "make the sky red",
                    "b0": "remove the cat {and} the dog",
                    "c0": "turn it into a watercolour painting"}
    return {"base": root / "base", "ckpt": root / "ckpt", "edits": root / "edits",
            "names": names, "instructions": instructions}


def theirs(fx: dict) -> dict[str, dict[str, list[float]]]:
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer, Qwen3VLProcessor

    transformers.Qwen3VLForConditionalGeneration  # noqa: B018 - resolved before the stubs
    stub_their_imports()
    from EditReward.model.qwen3_vl_trainer import Qwen3_VLRewardModelBT_MultiHead

    class NoVideo(Qwen3VLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kw):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template)

    base = str(fx["base"])
    settings = types.SimpleNamespace(
        use_special_tokens=True, model_name_or_path=base, output_dim=2, reward_token="special",
        rm_head_type="ranknet_multi_head", rm_head_kwargs=None, pooling_strategy="mean")

    def create_model_and_processor(model_config, peft_lora_config, training_args, cache_dir=None):
        tokenizer = AutoTokenizer.from_pretrained(base, padding_side="right")
        template = json.loads((Path(base) / "chat_template.json").read_text())["chat_template"] \
            if (Path(base) / "chat_template.json").exists() else tokenizer.chat_template
        processor = NoVideo(AutoImageProcessor.from_pretrained(base), tokenizer,
                            chat_template=template)
        processor.tokenizer.add_special_tokens({"additional_special_tokens": ["<|Reward|>"]})
        ids = processor.tokenizer.convert_tokens_to_ids(["<|Reward|>"])
        # their class reads config.hidden_size, which transformers 5's Qwen3VLConfig keeps
        # only in text_config (the released code ran on a transformers that forwarded it)
        config = transformers.AutoConfig.from_pretrained(base)
        config.hidden_size = config.text_config.hidden_size
        model = Qwen3_VLRewardModelBT_MultiHead.from_pretrained(
            base, config=config, output_dim=2, reward_token="special", special_token_ids=ids,
            torch_dtype=torch.float32, attn_implementation="sdpa",
            rm_head_type="ranknet_multi_head", rm_head_kwargs=None, pooling_strategy="mean")
        model.resize_token_embeddings(len(processor.tokenizer))
        # their forward passes the inputs it names, and transformers 5 needs one more
        # (mm_token_type_ids: 1 at image tokens) to place the 3-D positions that transformers
        # 4.57 read from input_ids itself; given the same way here
        inner, image_id = model.model.forward, model.config.image_token_id

        def forward(*args, **kwargs):
            if kwargs.get("mm_token_type_ids") is None and kwargs.get("input_ids") is not None:
                kwargs["mm_token_type_ids"] = (kwargs["input_ids"] == image_id).long()
            return inner(*args, **kwargs)

        model.model.forward = forward
        for h in model.rm_heads.values():
            h.to(torch.float32)
        model.config.tokenizer_padding_side = processor.tokenizer.padding_side
        model.config.pad_token_id = processor.tokenizer.pad_token_id
        return model, processor, None

    def parse_args_with_yaml(classes, path, is_train=False):
        return ((types.SimpleNamespace(), types.SimpleNamespace(output_dir="/tmp"), settings,
                 types.SimpleNamespace()), str(path))

    stub("EditReward.train_qwen3_vl_edit", create_model_and_processor=create_model_and_processor)
    stub("EditReward.utils", __path__=[])
    stub("EditReward.utils.parser", ModelConfig=None, PEFTLoraConfig=None, TrainingConfig=None,
         DataConfig=None, parse_args_with_yaml=parse_args_with_yaml)
    from EditReward.inference_qwen3_vl_edit import EditRewardQwen3Inferencer

    inf = EditRewardQwen3Inferencer(config_path="EditReward-Qwen3-VL.yaml",
                                    checkpoint_path=str(fx["ckpt"]), device="cpu",
                                    reward_dim="overall_detail",
                                    rm_head_type="ranknet_multi_head")
    edits = fx["edits"]
    out = {}
    # one edit per call: their prepare_batch hands apply_chat_template a list of messages,
    # which it reads as ONE conversation, so a call with k edits scores edit j after the
    # messages of edits 1..j-1 (shown below the table)
    for names in [[n] for n in fx["names"]] + [["a0", "b0"]]:
        args = {"prompts": [fx["instructions"][n] for n in names],
                "image_src": [str(edits / "source" / f"{n}.png") for n in names],
                "image_paths": [str(edits / "edited" / f"{n}.png") for n in names]}
        with torch.no_grad():
            fused = inf.reward(**args)
            inf.model.pooling_strategy = None  # their code returns each head's output then
            heads = inf.model(return_dict=True, **inf.prepare_batch(
                args["image_src"], args["image_paths"], args["prompts"]))
            inf.model.pooling_strategy = "mean"
        if len(names) > 1:
            out["two-edit call"] = {"shape": list(fused.shape), "values": fused[0].tolist()}
            continue
        out[names[0]] = {"overall": fused[0].tolist(), "head_0": heads[0][0].tolist(),
                         "head_1": heads[1][0].tolist()}
    return out


def ieqa(fx: dict) -> dict[str, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scores.jsonl"
        subprocess.run([str(IEQA / ".venv/bin/ieqa"), "score", str(fx["edits"]), "--scorer",
                        "editreward", "-O", "variant=qwen3-vl-8b", "--model", str(fx["ckpt"]),
                        "--base-model", str(fx["base"]), "--prompts", str(SRC), "-O",
                        "device=cpu", "-O", "dtype=float32", "-o", str(out)], check=True,
                       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    result = {}
    for row in rows:
        s = row  # one column per dimension; sigma is a JSON text column
        sig = json.loads(row["sigma"]) if isinstance(row["sigma"], str) else row["sigma"]
        result[row["id"]] = {
            "overall": [s["overall"], float(np.log(sig["overall"]))],
            "head_0": [s["instruction_alignment"], float(np.log(sig["instruction_alignment"]))],
            "head_1": [s["visual_quality"], float(np.log(sig["visual_quality"]))]}
    return result


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fx = build_fixture(Path(tmp))
        a, b = theirs(fx), ieqa(fx)
    worst = 0.0
    print(f"{'item':6} {'output':8} {'theirs (mu, log sigma)':>28} {'ieqa':>28} {'max rel diff':>12}")
    for name in fx["names"]:
        for key in ("head_0", "head_1", "overall"):
            t, i = np.array(a[name][key]), np.array(b[name][key])
            rel = float(np.max(np.abs(t - i) / np.maximum(1.0, np.abs(t))))
            worst = max(worst, rel)
            print(f"{name:6} {key:8} {np.array2string(t, precision=6):>28} "
                  f"{np.array2string(i, precision=6):>28} {rel:12.2e}")
    print(f"worst relative difference: {worst:.2e} ({'within' if worst <= 1e-4 else 'OVER'} 1e-4)")
    two = a["two-edit call"]
    print(f"their reward() on [a0, b0] in one call: output shape {two['shape']} (one row of "
          f"2 x 2 numbers, one conversation), values {np.round(two['values'], 6).tolist()}; "
          f"a0 alone {np.round(a['a0']['overall'], 6).tolist()}, b0 alone "
          f"{np.round(a['b0']['overall'], 6).tolist()}")


if __name__ == "__main__":
    main()
