"""``uniredit-judge``: UniREditBench's official judge (``Maplebb/UniREditBench``'s
``eval/gpt_eval_uniredit.py``), as released: three requests per edit, on any
OpenAI-compatible server (``gpt-4.1-2025-04-14`` at temperature 0 by default, as released).

Per item the released ``eval_unified`` asks, each as one user message (the text, then the
images), with ``instruct`` the instruction, after the item's ``rules`` and a line break for
a game-world item:

* **appearance consistency** (``judge1``): ``prompt_consist.format(instruct=...)`` with the
  original image and the output;
* **reasoning** (``judge2``): ``prompt_reasoning_w_ref_image.format(instruct=...,
  reference=reference_effect)`` with the original image, the ground-truth image and the
  output (the dual reference: text and image);
* **visual plausibility** (``judge3``): ``prompt_generation``, unformatted, with the output.

Each image is the file opened with Pillow, converted to RGB when RGBA or P, shrunk with
``thumbnail((768, 768))`` and sent as a JPEG, ``data:image/jpeg;base64,...`` with
``"detail": "high"``; the body is ``{"model", "stream": false, "messages", "max_tokens":
4096, "n": 1, "temperature": 0}``.

The answers end in ``Final Score: X`` on 1-5. The released ``extract`` (the same as
RISEBench's, :func:`~ieqa.prompts.answers.released_final_scores`) takes every integer
after the phrase, and the released script keeps the **first** of them, with no range
check; an item with an answer it cannot read has no scores and drops out of every mean.
ieqa needs exactly one score, 1-5, per answer, and makes anything else, and every API error,
a row error, counted; the released reading is kept in ``raw["released"]`` so that
``bench-editor`` reports the released numbers too. Scores: ``content_preservation``
(consistency), ``instruction_alignment`` (reasoning), ``visual_quality`` (plausibility) and
``overall`` = 0.3 consistency + 0.5 reasoning + 0.2 plausibility (the released ``score``).
The prompt texts are read at run time from the benchmark's ``eval/utils.py`` at a pinned
commit with a SHA-256 check, or from ``prompts=DIR``.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from ieqa.backends import OPENAI_BASE_URL, Prompt
from ieqa.data.images import file_of
from ieqa.prompts.answers import parse_final_score, released_final_scores
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge
from ieqa.scorers.published.rise_judge import IMAGE_SIZE, MAX_TOKENS, released_image
from ieqa.scorers.vlm.base import LoadedSample

__all__ = ["UniREditJudge", "PROMPT_SOURCES", "DEFAULT_MODEL", "REVISION", "JUDGES",
           "WEIGHTS", "released_item_scores"]

#: the commit of Maplebb/UniREditBench the prompt file is read at
REVISION = "a7015c5c2d17aecb1a5af4af1b234c357d86cc7d"
_PROMPTS = SourceFile("Maplebb/UniREditBench", REVISION, "eval/utils.py",
                      "2823400b1cc083fcaa86aa37c35f0fa7dc8b8af520f3c1de045547896dd76870")
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("prompt_consist", _PROMPTS, "prompt_consist", ("instruct",)),
    PublishedText("prompt_reasoning_w_ref_image", _PROMPTS, "prompt_reasoning_w_ref_image",
                  ("instruct", "reference")),
    PublishedText("prompt_generation", _PROMPTS, "prompt_generation"),
)
DEFAULT_MODEL = "gpt-4.1-2025-04-14"
#: the three judgements, by the released code's names, and the dimension each becomes
JUDGES: dict[str, str] = {"judge1": "content_preservation", "judge2": "instruction_alignment",
                          "judge3": "visual_quality"}
#: the released item score: 0.3 consistency + 0.5 reasoning + 0.2 plausibility
WEIGHTS: dict[str, float] = {"content_preservation": 0.3, "instruction_alignment": 0.5,
                             "visual_quality": 0.2}


def released_item_scores(released: dict[str, Any]) -> tuple[int, int, int] | None:
    """``(consistency, reasoning, plausibility)`` as the released script reads an item's
    three answers (each the list :func:`released_final_scores` gave, ``None`` for no
    answer): the first number of each, ``None`` when any is empty or missing."""
    parts = [released.get(j) for j in JUDGES]
    if any(not p for p in parts):
        return None
    return parts[0][0], parts[1][0], parts[2][0]  # type: ignore[index]


class UniREditJudge(PublishedJudge):
    """UniREditBench's judge as released (see the module docstring). A sample carries the
    item's fields in ``meta`` (:meth:`ieqa.data.loaders.unireditbench.UniREditItem.meta`).

    Args:
        model: the judge's model name (default ``gpt-4.1-2025-04-14``, as released).
        base_url: the OpenAI-compatible endpoint (default OpenAI's).
        prompts: a local copy of the benchmark's repository (``--prompts``).
        batch_size: items per backend call.
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "uniredit-judge"
    prompt_sources = PROMPT_SOURCES
    default_model = DEFAULT_MODEL
    default_base_url = OPENAI_BASE_URL
    # the released body's own fields and order: model, stream, messages, max_tokens, n, temperature
    released_body = {"stream": False, "n": 1, "temperature": 0}
    judged = tuple(JUDGES.values())
    local_stand_in = False
    max_tokens = MAX_TOKENS

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": 0, "max_new_tokens": MAX_TOKENS, "image_size": IMAGE_SIZE,
                **self.prompts_config()}

    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        """The released requests of one item, by judge (``judge1`` .. ``judge3``)."""
        meta = item.sample.meta
        if not meta.get("reference_img"):
            raise ScorerError(f"sample {item.sample.id!r}: UniREditBench's judge needs the "
                              "item's ground-truth image (meta['reference_img'])")
        assert item.source is not None
        instruct = item.sample.instruction
        if meta.get("rules"):
            instruct = f"{meta['rules']}\n{instruct}"
        src = released_image(file_of(item.source), item.source)
        out = released_image(file_of(item.edited), item.edited)
        with Image.open(meta["reference_img"]) as opened:
            ref = released_image(meta["reference_img"], opened.convert("RGB"))
        reference = meta.get("reference_effect") or ""
        return {
            "judge1": Prompt(parts=(self.texts["prompt_consist"].format(instruct=instruct),
                                    src, out)),
            "judge2": Prompt(parts=(self.texts["prompt_reasoning_w_ref_image"].format(
                instruct=instruct, reference=reference), src, ref, out)),
            "judge3": Prompt(parts=(self.texts["prompt_generation"], out)),
        }

    def released_reading(self, item: LoadedSample, key: str, gen: Any) -> dict[str, Any]:
        return {key: None if gen.error else released_final_scores(gen.text)}

    def read_answer(self, item: LoadedSample, key: str, text: str) -> dict[str, float]:
        return {JUDGES[key]: float(parse_final_score(text, low=1, high=5))}

    def finish(self, item: LoadedSample, scores: dict[str, float],
               raw: dict[str, Any]) -> ScoreResult:
        scores["overall"] = sum(w * scores[d] for d, w in WEIGHTS.items())
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw)
