"""Outside CI: StructEditBench's released ``qwen_scoring.py`` (zhuole1025/Structured-Visuals at
c8cc9f4), run as released from its ``__main__`` on a recorded set of answers and judgements
covering every shape, to record its report for tests/bench/test_editor_structedit.py.

Setup: ``git --git-dir=/work/.mirror/zhuole1025+Structured-Visuals/repo show
c8cc9f4:qwen_scoring.py > /tmp/harness/structedit/qwen_scoring.py``; the harness virtualenv
(``/tmp/harness/venv_er``: pillow, numpy, transformers). Run:
``/tmp/harness/venv_er/bin/python scripts/harness/structscore_official_vs_released.py``.

What is not theirs, and why: vLLM and ``datasets`` do not run here (no GPU, no hub), so
``vllm.LLM`` is a stand-in whose ``generate`` answers each prompt from the table below (the
question found in the prompt), ``datasets.load_dataset`` returns the four items below, and
``AutoProcessor.from_pretrained`` a processor whose chat template joins the texts.
Everything else, the image crop, the two rounds, the tally per item and the report, is
their code.
"""
import json
import runpy
import sys
import tempfile
import types
from pathlib import Path

from PIL import Image

HERE = Path("/tmp/harness/structedit")
#: question -> (the answer the model gives, the judgement it gives)
PLAN = {"q0 title?": ("Sales", "Correct"), "q1 bars?": ("3", "Incorrect"),
        "q2 axis?": ("years", "Correct"), "q3 legend?": ("none", "Correct."),
        "q4 color?": ("red", "correct"), "q6 max?": ("9", "Correct"),
        "q7 min?": ("1", "The answer is Correct"), "q8 x?": ("2", "Correct"),
        "q9 y?": ("4", "Correct"), "q10 z?": ("5", "Incorrect"), "q11 cell?": ("7", "Incorrect")}


def items():
    def img(size, shade):
        return Image.new("RGB", size, (shade, 100, 200 - shade))

    def qa(question, label=None):
        out = {"question": question, "answer": "truth of " + str(question)}
        if label:
            out["label"] = label
        return out

    return [
        {"category": "chart", "output_image_editor": img((120, 60), 10),
         "qa_list": [qa("q0 title?", "editing"), qa("q1 bars?", "editing"),
                     qa("q2 axis?", "maintain"), qa("q3 legend?", "maintain")]},
        {"category": "color", "output_image_editor": img((60, 60), 50),
         "qa_list": [qa("q4 color?", "editing"), qa(None, "editing"), qa("q6 max?", "editing"),
                     qa("q7 min?")]},
        {"category": "math", "output_image_editor": img((50, 100), 90),
         "qa_list": [qa("q8 x?", "editing"), qa("q9 y?", "editing"), qa("q10 z?", "maintain")]},
        {"category": "table", "output_image_editor": img((80, 80), 130),
         "qa_list": [qa("q11 cell?", "editing")]},
    ]


def main() -> None:
    class Out:
        def __init__(self, text):
            self.outputs = [types.SimpleNamespace(text=text)]

    class LLM:
        def __init__(self, **kw):
            pass

        def generate(self, inputs, sp):
            outs = []
            for x in inputs:
                prompt = x["prompt"]
                judging = "[Question]:" in prompt
                q = next(q for q in PLAN if q in prompt)
                outs.append(Out(PLAN[q][1] if judging else PLAN[q][0]))
            return outs

    class Processor:
        def apply_chat_template(self, msgs, tokenize=False, add_generation_prompt=True):
            return "".join(c["text"] for m in msgs for c in m["content"] if c["type"] == "text")

    class Dataset(list):
        @staticmethod
        def from_list(rows):
            return Dataset(rows)

        def save_to_disk(self, path):
            pass

    sys.modules["vllm"] = types.SimpleNamespace(LLM=LLM, SamplingParams=lambda **kw: kw)
    sys.modules["datasets"] = types.SimpleNamespace(load_dataset=lambda *a, **k: items(),
                                                    Dataset=Dataset)
    import transformers

    transformers.AutoProcessor.from_pretrained = staticmethod(lambda *a, **k: Processor())
    with tempfile.TemporaryDirectory() as tmp:
        sys.argv = ["qwen_scoring.py", "--dataset_path", "recorded/structedit", "--output_dir",
                    tmp, "--model_path", "stand-in"]
        runpy.run_path(str(HERE / "qwen_scoring.py"), run_name="__main__")
        for f in sorted(Path(tmp).glob("*.json")):
            print(f.name, json.dumps(json.loads(f.read_text()), indent=1))


if __name__ == "__main__":
    main()
