"""Outside CI: IE-Critic-R1's released evaluation functions (``scripts/iebench_eval.py`` of
Coobiw/IE-Critic-R1 at 357c239: its ``IE4k`` messages, ``model_gen`` and
``extract_answer_from_response``, run as released) beside ``ieqa score --scorer
ie-critic-r1`` on a tiny random Qwen2.5-VL standing in for ``Coobiw/IE-Critic-R1-7B``, with
the authors' real prompt.

Setup: ``git --git-dir=/work/.mirror/Coobiw+IE-Critic-R1/repo archive 357c239 scripts | tar -x
-C /tmp/harness/iecritic``; the harness virtualenv ``/tmp/harness/venv_er`` with
``qwen-vl-utils`` and ``scipy`` added. Run with its python.

What is not theirs, and why: ``qwen_vl_utils`` imports torchvision at start-up for its video
readers, and torchvision does not install beside transformers' Qwen-VL here, so it is a stub
(no image path uses it); ``datasets`` is a stub (the items are given directly to their
``IE4k``); their ``model_gen`` moves the inputs to CUDA, so ``BatchFeature.to("cuda")`` stays
on the CPU; the processor is transformers' Qwen2.5-VL processor without its video part, built
with their pixel budget and left padding.
"""
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

SRC = Path("/tmp/harness/iecritic")
IEQA = Path(__file__).resolve().parents[2]


def stub(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def main() -> None:
    import torch
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoTokenizer, Qwen2_5_VLProcessor

    transformers.Qwen2_5_VLForConditionalGeneration  # noqa: B018 - resolved before the stubs
    tv = stub("torchvision", __version__="0.20.0")
    stub("torchvision.io")
    stub("torchvision.transforms", InterpolationMode=types.SimpleNamespace(BICUBIC=3))
    tv.io, tv.transforms = sys.modules["torchvision.io"], sys.modules["torchvision.transforms"]
    stub("datasets", load_dataset=None)
    sys.path.insert(0, str(SRC / "scripts"))
    import iebench_eval as theirs  # their module: CoT_PROMPT, IE4k, model_gen, extract_answer

    inner = transformers.BatchFeature.to
    transformers.BatchFeature.to = lambda self, *a, **k: inner(
        self, *(("cpu",) if a and a[0] == "cuda" else a), **k)

    class NoVideo(Qwen2_5_VLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kw):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([str(IEQA / ".venv/bin/ieqa"), "tiny-vlm", str(tmp / "model"),
                        "--family", "qwen2.5-vl", "--seed", "8"], check=True,
                       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
                       stdout=subprocess.DEVNULL)
        rng = np.random.default_rng(0)
        edits = tmp / "edits"
        (edits / "source").mkdir(parents=True)
        (edits / "edited").mkdir()
        specs = [("e0", (40, 30), (40, 30), "make the sky red"),
                 ("e1", (30, 44), (36, 30), "remove the {cat}"),
                 ("e2", (600, 300), (640, 320), "turn it into a watercolour")]
        items = []
        for name, ss, es, instruction in specs:
            for sub, size in (("source", ss), ("edited", es)):
                Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                                ).save(edits / sub / f"{name}.png")
            items.append({"images": [Image.open(edits / "source" / f"{name}.png"),
                                     Image.open(edits / "edited" / f"{name}.png")],
                          "edit_inst": instruction, "answer": 3.0})
        (edits / "instructions.csv").write_text(
            "name,instruction\n" + "".join(f'{n},"{i}"\n' for n, _, _, i in specs))
        # theirs: their IE4k's messages, their model_gen (batch of 3), their reading
        model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
            tmp / "model", dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained(tmp / "model")
        image_processor = AutoImageProcessor.from_pretrained(
            tmp / "model", min_pixels=262144, max_pixels=1048576)
        processor = NoVideo(image_processor, tok, chat_template=tok.chat_template)
        processor.tokenizer.padding_side = "left"
        ie = theirs.IE4k.__new__(theirs.IE4k)
        ie.ie_dataset = items
        model.generation_config.max_new_tokens = None
        gen = theirs.model_gen
        texts = []
        for i in range(len(items)):  # one at a time too: their batch of 32 pads on the left
            texts.append(gen(model, processor, [ie[i]["messages"]])[0])
        batched = gen(model, processor, [ie[i]["messages"] for i in range(len(items))])
        # ieqa, the same model and the authors' prompt file
        out = tmp / "scores.jsonl"
        subprocess.run([str(IEQA / ".venv/bin/ieqa"), "score", str(edits), "--scorer",
                        "ie-critic-r1", "--model", str(tmp / "model"), "--prompts", str(SRC),
                        "-O", "device=cpu", "-O", "dtype=float32", "--allow-errors", "-o",
                        str(out)], check=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines() if x}
    same = 0
    for (name, *_), t, b in zip(specs, texts, batched, strict=True):
        raw = rows[name]["raw"]
        raw = json.loads(raw) if isinstance(raw, str) else raw
        mine = raw["text"]
        ok = mine == t
        same += ok
        print(f"{name}: theirs one at a time {t[:60]!r}\n    theirs batched   {b[:60]!r}\n"
              f"    ieqa             {mine[:60]!r}  identical to theirs: {ok}; their reading "
              f"{theirs.extract_answer_from_response(t.strip().rstrip('.'))!r}, ieqa's released "
              f"reading {raw['released']['score']!r}")
    print(f"{same} of {len(specs)} answers identical (2048 new tokens, greedy)")


if __name__ == "__main__":
    main()
