"""Outside CI: EditScore's own Qwen3-VL backbone (``editscore/mllm_tools/qwen3vl.py`` and the
prompts its ``EditScore`` class builds, VectorSpaceLab/EditScore at 6e0f1b9a, run as
released) beside ``ieqa score --scorer editscore -O variant=qwen3-vl-8b`` on a tiny random
Qwen3-VL with a random LoRA adapter, with the authors' real prompt file.

Setup: ``git --git-dir=/work/.mirror/VectorSpaceLab+EditScore/repo archive 6e0f1b9a editscore
| tar -x -C /tmp/harness/editscore_src``; the harness virtualenv ``/tmp/harness/venv_er`` with
``peft`` and ``json-repair==0.64.4`` added. Run with its python.

What is not theirs, and why: their ``Qwen3VL`` builds the processor with
``AutoProcessor.from_pretrained``, which needs a video processor and so torchvision, which
does not install beside transformers' Qwen-VL here: it gets transformers' Qwen3-VL processor
without its video part instead; ``inputs.to("cuda")`` stays on the CPU. The model is theirs
as released: bfloat16, the adapter merged by PEFT, so ieqa runs at ``dtype=bfloat16`` too.
Their ``evaluate`` loop is not run (a random model's answers send it to its random guess);
its two calls per pass are: ``prepare_input`` of the SC prompt (``EditScore.SC_prompt`` with
the instruction) with both images and of the PQ prompt with the edit, then ``inference``
with ``seed + pass``.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SRC = Path("/tmp/harness/editscore_src")
IEQA = Path(__file__).resolve().parents[2]
PASSES, SEED = 2, 42


def main() -> None:
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoTokenizer, Qwen3VLProcessor

    class NoVideo(Qwen3VLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kw):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template)

    inner = transformers.BatchFeature.to
    transformers.BatchFeature.to = lambda self, *a, **k: inner(
        self, *(("cpu",) if a and a[0] == "cuda" else a), **k)
    sys.path.insert(0, str(SRC))
    import editscore.mllm_tools.qwen3vl as backbone
    from editscore import EditScore

    def processor(path, **kw):
        tok = AutoTokenizer.from_pretrained(path)
        return NoVideo(AutoImageProcessor.from_pretrained(path), tok,
                       chat_template=tok.chat_template)

    backbone.AutoProcessor = type("AutoProcessor", (), {"from_pretrained": staticmethod(processor)})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        code = (f"from ieqa.testing import build_tiny_vlm\n"
                f"from ieqa.testing.releases import build_lora_adapter\n"
                f"b = build_tiny_vlm({str(tmp / 'base')!r}, 'qwen3-vl', seed=7)\n"
                f"build_lora_adapter({str(tmp / 'adapter')!r}, b, seed=3)\n")
        subprocess.run([str(IEQA / ".venv/bin/python"), "-c", code], check=True,
                       env={"PYTHONPATH": str(IEQA / "src"), "HF_HUB_OFFLINE": "1"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rng = np.random.default_rng(1)
        edits = tmp / "edits"
        (edits / "source").mkdir(parents=True)
        (edits / "edited").mkdir()
        specs = [("e0", (64, 48), (64, 48), "make the cube red"),
                 ("e1", (48, 80), (56, 40), "remove the blue ball")]
        for name, ss, es, _ in specs:
            for sub, size in (("source", ss), ("edited", es)):
                Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                                ).save(edits / sub / f"{name}.png")
        (edits / "instructions.csv").write_text(
            "name,instruction\n" + "".join(f"{n},{i}\n" for n, _, _, i in specs))
        es = EditScore(backbone="qwen3vl", model_name_or_path=str(tmp / "base"),
                       lora_path=str(tmp / "adapter"), num_pass=PASSES, seed=SEED)
        theirs = {}
        for name, _, _, instruction in specs:
            images = [Image.open(edits / "source" / f"{name}.png"),
                      Image.open(edits / "edited" / f"{name}.png")]
            sc = es.model.prepare_input(images, es.SC_prompt.replace("<instruction>", instruction))
            pq = es.model.prepare_input(images[-1], es.PQ_prompt)
            theirs[name] = [(es.model.inference(sc, seed=SEED + i),
                             es.model.inference(pq, seed=SEED + i)) for i in range(PASSES)]
        out = tmp / "scores.jsonl"
        subprocess.run([str(IEQA / ".venv/bin/ieqa"), "score", str(edits), "--scorer",
                        "editscore", "-O", "variant=qwen3-vl-8b", "--model", str(tmp / "base"),
                        "-O", f"adapter={tmp / 'adapter'}", "--prompts", str(SRC), "-O",
                        "device=cpu", "-O", "dtype=bfloat16", "-O", f"num_pass={PASSES}",
                        "--allow-errors", "-o", str(out)], check=True,
                       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = {json.loads(x)["id"]: json.loads(x) for x in out.read_text().splitlines() if x}
    same = total = 0
    for name, *_ in specs:
        raw = rows[name]["raw"]
        raw = json.loads(raw) if isinstance(raw, str) else raw
        for i, (sc, pq) in enumerate(theirs[name]):
            mine = raw["passes"][i]
            for kind, t, m in (("SC", sc, mine["sc_text"].strip()), ("PQ", pq, mine["pq_text"].strip())):
                total += 1
                same += t == m
                print(f"{name} pass {i} {kind}: identical {t == m}  theirs {t[:50]!r}  ieqa {m[:50]!r}")
    print(f"{same} of {total} answers identical (seeded sampling, T=0.7, top-p 0.9, top-k 20, "
          "512 new tokens, bfloat16)")


if __name__ == "__main__":
    main()
