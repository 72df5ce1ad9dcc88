"""``structscore``: StructEditBench's StructScore (zhuole1025/Structured-Visuals'
``qwen_scoring.py``), as released: each of an item's questions asked about the edited image,
then each answer judged against the ground truth by the same model, text only; the item's
accuracy is 0.9 x the share of its ``editing`` questions answered right + 0.1 x that of its
``maintain`` questions.

What the released code does per item, and ieqa with it on an OpenAI-compatible server (it
runs vLLM's engine on ``Qwen2.5-VL-72B-Instruct``; serve it with vLLM and pass ``-O
base_url=URL --model NAME``):

* the edited image converted to RGB and resized and centre-cropped to the nearest of the
  released aspect-ratio buckets of ``img_size`` 1024 (``var_center_crop``: the table
  ``ASPECT_RATIO_1024`` read from their file, the scale that covers the bucket, Lanczos);
* per question (a question or ground truth that is missing is skipped, as released): one
  user message, the image then ``QA_PROMPT + question``, at most 256 tokens;
* then one text-only user message, ``EVAL_PROMPT`` filled with the question, the ground
  truth and the answer as generated (not stripped); at most 16 tokens;
* every request at ``temperature`` 0, ``top_p`` 1, and the released ``stop`` strings;
* a judgement is right when ``"Correct"`` occurs in it (so "Incorrect" is wrong, and so is
  "correct"); per item, the released tally (:func:`released_item_accuracy`).

ieqa's own reading needs every question asked and every judgement to be exactly the word
``Correct`` or ``Incorrect`` (spaces and a final full stop aside); anything else, and every
request that fails, makes the item a row error, counted. Scores, 0-100:
``instruction_alignment`` (editing questions), ``content_preservation`` (maintain
questions; none when the item has none) and ``overall`` (the weighted accuracy). The
prompts and the aspect-ratio table are read at run time from the authors' file at a pinned
commit with a SHA-256 check, or from ``prompts=DIR``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from ieqa.backends import EncodedImage, Prompt
from ieqa.prompts.published import PublishedPromptError, PublishedText, SourceFile, fetch_source
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    failure,
    request_kind,
)

__all__ = ["StructScore", "PROMPT_SOURCES", "REVISION", "STOP", "center_crop",
           "released_item_accuracy", "weighted_accuracy"]

#: the commit of zhuole1025/Structured-Visuals the prompts are read at
REVISION = "c8cc9f41261af5accaa9fd591daf87f1fd2671d3"
_SCORING = SourceFile("zhuole1025/Structured-Visuals", REVISION, "qwen_scoring.py",
                      "59979ef0dbca1423f0e885fccabc69b26708d5bfc446f228d4579d67c56e0aaa")
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("qa", _SCORING, "evaluate_with_vllm(QA_PROMPT)"),
    PublishedText("eval", _SCORING, "evaluate_with_vllm(EVAL_PROMPT)",
                  ("question", "ground_truth_answer", "model_response")),
)
#: the table of aspect-ratio buckets the edited image is cropped to (img_size 1024)
TABLE = "ASPECT_RATIO_1024"
#: the released sampling's stop strings (two replacement characters, one emoji line)
STOP = ("\ufffd\ufffd", "\n\ufffd\ufffd", "\U0001f4d0\n")
QA_TOKENS, EVAL_TOKENS = 256, 16
DEFAULT_MODEL = "Qwen/Qwen2.5-VL-72B-Instruct"


def read_table(path: Path, name: str = TABLE) -> dict[str, tuple[float, float]]:
    """The module-level dict literal ``name`` of a Python file, parsed (never executed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            value = ast.literal_eval(node.value)
            return {str(k): (float(v[0]), float(v[1])) for k, v in value.items()}
    raise PublishedPromptError(f"{path} has no {name} table; is this the file at the pinned "
                               "commit?")


def center_crop(image: Image.Image, table: Mapping[str, tuple[float, float]]) -> Image.Image:
    """The released ``var_center_crop``: the bucket whose ratio is nearest the image's
    width/height (the first in the table's order on a tie), the image scaled by the
    larger of the two scales that cover it (sides rounded half to even), Lanczos, then
    the bucket's size cut from the centre."""
    ratio = image.size[0] / image.size[1]
    nearest = min(table, key=lambda r: abs(float(r) - ratio))
    crop_w, crop_h = (int(v) for v in table[nearest])
    scale = max(crop_w / image.size[0], crop_h / image.size[1])
    image = image.resize(tuple(round(x * scale) for x in image.size),
                         resample=Image.Resampling.LANCZOS)
    left, upper = (image.size[0] - crop_w) // 2, (image.size[1] - crop_h) // 2
    return image.crop((left, upper, left + crop_w, upper + crop_h))


def weighted_accuracy(editing: tuple[int, int], maintain: tuple[int, int]
                      ) -> tuple[float, float, float]:
    """``(editing, maintain, weighted)`` in percent from (right, asked) counts, as released:
    a share with nothing asked is 0; without maintain questions the weighted accuracy is
    the editing one, else 0.9 editing + 0.1 maintain."""
    e = 100 * editing[0] / editing[1] if editing[1] > 0 else 0.0
    m = 100 * maintain[0] / maintain[1] if maintain[1] > 0 else 0.0
    return e, m, (e if maintain[1] <= 0 else 0.1 * m + 0.9 * e)


def released_item_accuracy(results: Mapping[int, bool], labels: Sequence[str | None]
                           ) -> tuple[float, float, float] | None:
    """An item's accuracies as the released ``process_evaluation_results`` tallies them:
    ``results`` by question index (the questions that were asked and judged); every index
    up to the largest judged one is counted, a judged one under its label (a label other
    than ``editing`` or ``maintain``, a null one included, is not counted), an index without
    a result as a wrong ``editing`` question; ``None`` when nothing was judged (the item has no
    accuracy and is left out of the means)."""
    if not results:
        return None
    right = {"editing": 0, "maintain": 0}
    asked = {"editing": 0, "maintain": 0}
    for i in range(max(results) + 1):
        if i in results:
            label = labels[i] if i < len(labels) else None
            if label in asked:
                asked[label] += 1
                right[label] += int(bool(results[i]))
        else:
            asked["editing"] += 1
    return weighted_accuracy((right["editing"], asked["editing"]),
                             (right["maintain"], asked["maintain"]))


def _strict(text: str) -> bool | None:
    word = text.strip().rstrip(".").strip()
    return {"Correct": True, "Incorrect": False}.get(word)


class StructScore(PublishedJudge):
    """StructEditBench's StructScore as released (see the module docstring). A sample
    carries its questions in ``meta["qa"]`` (:meth:`ieqa.data.loaders.structeditbench.
    StructEditItem.meta`).

    Args:
        model: the served judge's name (the released one is Qwen2.5-VL-72B-Instruct).
        base_url: its OpenAI-compatible endpoint (required: the released judge runs on vLLM).
        prompts: a local copy of the authors' repository (``--prompts``).
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "structscore"
    prompt_sources = PROMPT_SOURCES
    default_model = DEFAULT_MODEL
    default_base_url = "http://localhost:8000/v1"
    released_body: Mapping[str, Any] = {"stop": list(STOP)}
    judged = ("instruction_alignment", "content_preservation")
    released_range = (0.0, 100.0)
    local_stand_in = False

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(model=model, base_url=base_url, prompts=prompts, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, backend=backend,
                         backend_options=backend_options)
        self.table = read_table(fetch_source(_SCORING, prompts_dir=prompts))

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": 0, "top_p": 1, "max_new_tokens": [QA_TOKENS, EVAL_TOKENS],
                "stop": list(STOP), "img_size": 1024, **self.prompts_config()}

    def check_sample(self, sample: Any) -> None:
        super().check_sample(sample)
        if not isinstance(sample.meta.get("qa"), list):
            raise ScorerError(f"sample {sample.id!r}: StructScore asks the item's questions "
                              "(meta['qa']); it has none")

    def _options(self, tokens: int) -> dict[str, Any]:
        return {"max_new_tokens": tokens, "temperature": 0.0, "top_p": 1.0}

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        """Two rounds over all items' questions: the answers, then their judgements."""
        asked: list[tuple[int, int, str, str]] = []  # (item, question index, question, truth)
        images = []
        for n, item in enumerate(items):
            images.append(EncodedImage.png(center_crop(item.edited.convert("RGB"), self.table)))
            for i, qa in enumerate(item.sample.meta["qa"]):
                if qa.get("question") is None or qa.get("answer") is None:
                    continue  # skipped, as released
                asked.append((n, i, str(qa["question"]), str(qa["answer"])))
        answers = self.backend.generate(
            [Prompt(parts=(images[n], self.texts["qa"] + q)) for n, _, q, _ in asked],
            **self._options(QA_TOKENS))
        judged_at = [k for k, a in enumerate(answers) if not a[0].error]
        verdicts = iter(self.backend.generate(
            [Prompt(parts=(self.texts["eval"].format(
                question=asked[k][2], ground_truth_answer=asked[k][3],
                model_response=answers[k][0].text),)) for k in judged_at],
            **self._options(EVAL_TOKENS)))
        judged = {k: next(verdicts)[0] for k in judged_at}
        return [self._result(n, item, asked, answers, judged) for n, item in enumerate(items)]

    def _result(self, n: int, item: LoadedSample, asked: list[tuple[int, int, str, str]],
                answers: list[Any], judged: dict[int, Any]) -> ScoreResult:
        labels = [qa.get("label") for qa in item.sample.meta["qa"]]
        raw: dict[str, Any] = {"qa": [], "released": {}}
        results: dict[int, bool] = {}
        strict: dict[int, bool] = {}
        problems: list[tuple[str, str]] = []
        for k, (owner, i, question, truth) in enumerate(asked):
            if owner != n:
                continue
            answer, verdict = answers[k][0], judged.get(k)
            record = {"index": i, "question": question, "truth": truth, "label": labels[i],
                      "answer": answer.text if not answer.error else None,
                      "judgement": None if verdict is None or verdict.error else verdict.text}
            raw["qa"].append(record)
            failed = answer if answer.error else verdict if verdict.error else None
            if failed is not None:
                problems.append((request_kind(failed), f"question {i}: {failed.error}"))
                continue
            results[i] = "Correct" in verdict.text
            reading = _strict(verdict.text)
            if reading is None:
                problems.append(("unreadable", f"question {i}: the judgement "
                                               f"{verdict.text[:40]!r} is not Correct or "
                                               "Incorrect"))
            else:
                strict[i] = reading
        failed = sum(1 for kind, _ in problems if kind != "unreadable")
        # the released code runs its model in process and never loses a request; an item
        # with a failed request has no released tally here (left out, counted), never one
        # the released rule would give for a question it skipped
        released = None if failed else released_item_accuracy(results, labels)
        raw["released"] = {"results": {str(i): v for i, v in results.items()},
                           "accuracy": None if released is None else list(released),
                           "failed_requests": failed}
        if not any(owner == n for owner, *_ in asked):
            problems.append(("unreadable", "the item has no question to ask"))
        if problems:
            return failure(item.sample.id, raw, problems, asked=len(raw["qa"]))
        tally = {"editing": [0, 0], "maintain": [0, 0]}
        for i, ok in strict.items():
            label = labels[i]
            if label in tally:
                tally[label][0] += int(ok)
                tally[label][1] += 1
        e, m, w = weighted_accuracy(tuple(tally["editing"]), tuple(tally["maintain"]))
        scores = {"instruction_alignment": e, "overall": w}
        if tally["maintain"][1]:
            scores["content_preservation"] = m
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw)
