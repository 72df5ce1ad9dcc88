"""``rise-judge``: RISEBench's official judge (``PhoenixZ810/RISEBench``'s ``gpt_eval.py``),
as released: up to three requests per edit, on any OpenAI-compatible server
(``gpt-4.1-2025-04-14`` at temperature 0 by default, as released).

Per item the released code asks, each as one user message (the text, then the images):

* **consistency** (``judge1``; not for items flagged ``consistency_free``): does the output
  keep what should stay. Temporal/causal: ``prompt_consist`` with the source and the
  output. Spatial: ``prompt_spatial_cons`` with the source (the answer image when the item
  has one) and the output. Logical: ``prompt_logical_cons_ans`` (answer text) with the
  source and the output, or ``prompt_logical_cons`` with the answer image and the output;
* **reasoning** (``judge2``): is the output the right answer. Temporal/causal:
  ``prompt_reasoning`` (``prompt_reasoning_w_input`` with the source first when the item's
  ``reasoning_img`` is set); spatial: ``prompt_spatial_ref_img`` (with the answer image
  first), ``prompt_spatial_ref_w_input`` (with the source first) or ``prompt_spatial_ref``;
  logical: ``prompt_logical_txt`` with the output, or ``prompt_logical_img`` (or, when the
  data file has a ``reasoning_wo_ins`` field at all, ``prompt_logical_img_wo_q``) with the
  answer image and the output;
* **plausibility** (``judge3``; temporal, causal and spatial only): ``prompt_generation`` or
  ``prompt_spatial_qual`` with the output.

Each text is the prompt file's, filled with ``str.format(instruct=..., reference=...)``
(``prompt_logical_img_wo_q`` is sent unformatted). Each image is the file opened with
Pillow, converted to RGB when RGBA or P, shrunk with ``thumbnail((768, 768))`` and sent as a
JPEG at Pillow's default quality, ``data:image/jpeg;base64,...`` with ``"detail": "high"``.
The body is ``{"model", "messages", "max_tokens": 4096, "n": 1, "temperature": 0}``
(:data:`DEFAULT_MODEL`).

The answers end in ``**Final Score:** **X**``: 1-5, or 0/1 for logical items, which the
released code maps to 1 or 5 (``4 * min(x, 1) + 1``). Scores: ``content_preservation``
(consistency; none for a ``consistency_free`` item), ``instruction_alignment``
(reasoning), ``visual_quality`` (plausibility; none for logical items) and ``overall``, the
lowest of them (5 exactly when the item counts as solved: RISEBench's accuracy).

Where ieqa differs: the released reading (:func:`~ieqa.prompts.answers.final_score.
released_final_scores`) takes every number after "Final Score"; an answer with none, or an
API error (recorded as the text "Failed to obtain answer via API."), fails the item, which
still counts as unsolved; an answer with two numbers stops the released script. ieqa
needs exactly one score in range per answer (1-5; 0-1 for logical) and makes anything else,
and every API error, a row error, counted; the released reading of each answer is kept in
``raw["released"]`` so that ``bench-editor`` reports the released accuracy too. The prompt
texts are read at run time from the benchmark's ``utils.py`` at a pinned commit with a
SHA-256 check, or from ``prompts=DIR``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from PIL import Image

from ieqa.backends import OPENAI_BASE_URL, EncodedImage, Prompt
from ieqa.data.images import file_of
from ieqa.prompts.answers import parse_final_score, released_final_scores
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge
from ieqa.scorers.vlm.base import (
    LoadedSample,
)

__all__ = ["RiseJudge", "PROMPT_SOURCES", "DEFAULT_MODEL", "REVISION", "JUDGES",
           "released_image"]

#: the commit of PhoenixZ810/RISEBench the prompt file is read at
REVISION = "5f226519b25c005bb32fb83864bbd1845ab85c23"
_PROMPTS = SourceFile("PhoenixZ810/RISEBench", REVISION, "utils.py",
                      "c8a693294768b7ceb355d98d3bc71f40c4fe51979a2e84ffc07f829764b676a3")
_FIELDS = {"prompt_consist": ("instruct",), "prompt_reasoning": ("instruct", "reference"),
           "prompt_reasoning_w_input": ("instruct", "reference"), "prompt_generation": (),
           "prompt_spatial_ref": ("instruct", "reference"), "prompt_spatial_ref_img": ("instruct",),
           "prompt_spatial_ref_w_input": ("instruct", "reference"), "prompt_spatial_qual": (),
           "prompt_spatial_cons": ("instruct",), "prompt_logical_cons_ans": ("instruct", "reference"),
           "prompt_logical_txt": ("reference",), "prompt_logical_cons": ("instruct",),
           "prompt_logical_img": ("instruct",), "prompt_logical_img_wo_q": ()}
#: the benchmark's 14 prompts, by their names in its file
PROMPT_SOURCES: tuple[PublishedText, ...] = tuple(
    PublishedText(name, _PROMPTS, name, placeholders=fields) for name, fields in _FIELDS.items())
#: the released judge and its settings
DEFAULT_MODEL = "gpt-4.1-2025-04-14"
DEFAULT_BASE_URL = OPENAI_BASE_URL
MAX_TOKENS, IMAGE_SIZE = 4096, 768
#: the three judgements, by the released code's names, and the dimension each becomes
JUDGES: dict[str, str] = {"judge1": "content_preservation", "judge2": "instruction_alignment",
                          "judge3": "visual_quality"}
_TEMPORAL_CAUSAL = ("temporal_reasoning", "causal_reasoning")


def released_image(path: str | None, decoded: Image.Image) -> EncodedImage:
    """An image as the released code sends it (see the module docstring); an image made in
    memory, which has no file, from its decoded pixels."""
    if path is not None:
        with Image.open(path) as opened:
            img = opened.copy()
    else:
        img = decoded.copy()
    if img.mode in ("RGBA", "P"):
        img = img.convert("RGB")
    img.thumbnail((IMAGE_SIZE, IMAGE_SIZE))
    buf = io.BytesIO()
    img.save(buf, format="JPEG")
    return EncodedImage(data=buf.getvalue(), mime="image/jpeg", image=decoded, detail="high")


class RiseJudge(PublishedJudge):
    """RISEBench's judge as released (see the module docstring). A sample carries the
    item's fields in ``meta`` (:meth:`ieqa.data.loaders.risebench.RiseItem.meta`).

    Args:
        model: the judge's model name (default ``gpt-4.1-2025-04-14``, as released).
        base_url: the OpenAI-compatible endpoint (default OpenAI's).
        prompts: a local copy of the benchmark's repository (``--prompts``).
        batch_size: items per backend call.
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "rise-judge"
    prompt_sources = PROMPT_SOURCES
    default_model = DEFAULT_MODEL
    default_base_url = DEFAULT_BASE_URL
    # the released body's own fields and order: ..., "n": 1, "temperature": 0
    released_body = {"n": 1, "temperature": 0}
    judged = tuple(JUDGES.values())
    local_stand_in = False
    max_tokens = MAX_TOKENS

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": 0, "max_new_tokens": MAX_TOKENS, "image_size": IMAGE_SIZE,
                **self.prompts_config()}

    # ------------------------------------------------------------------------ requests
    def _text(self, name: str, item: Mapping[str, Any], instruction: str) -> str:
        if name == "prompt_logical_img_wo_q":
            return self.texts[name]  # sent unformatted, as released
        fields = {"instruct": instruction, "reference": item.get("reference_txt")
                  if item["category"] == "logical_reasoning" else item.get("reference")}
        return self.texts[name].format(**{k: fields[k] for k in _FIELDS[name]})

    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        """The released requests of one item, by judge (``judge1`` .. ``judge3``)."""
        meta = item.sample.meta
        category = meta.get("category") or item.sample.task
        if category not in ("temporal_reasoning", "causal_reasoning", "spatial_reasoning",
                            "logical_reasoning"):
            raise ScorerError(f"sample {item.sample.id!r}: RISEBench's judge needs the item's "
                              f"category (meta['category']), got {category!r}")
        assert item.source is not None
        m = {**meta, "category": category}
        src = released_image(file_of(item.source), item.source)
        out = released_image(file_of(item.edited), item.edited)
        ref = None
        if m.get("reference_img"):
            with Image.open(m["reference_img"]) as opened:
                ref = released_image(m["reference_img"], opened.convert("RGB"))
        text = item.sample.instruction
        if category in _TEMPORAL_CAUSAL:
            cons = ("prompt_consist", [src, out])
            rea = (("prompt_reasoning_w_input", [src, out]) if m.get("reasoning_img")
                   else ("prompt_reasoning", [out]))
            qua = ("prompt_generation", [out])
        elif category == "spatial_reasoning":
            if ref is not None:
                rea = ("prompt_spatial_ref_img", [ref, out])
            elif m.get("reasoning_img"):
                rea = ("prompt_spatial_ref_w_input", [src, out])
            else:
                rea = ("prompt_spatial_ref", [out])
            cons = ("prompt_spatial_cons", [ref if ref is not None else src, out])
            qua = ("prompt_spatial_qual", [out])
        else:
            qua = None
            if m.get("reference_txt"):
                cons = ("prompt_logical_cons_ans", [src, out])
                rea = ("prompt_logical_txt", [out])
            elif ref is not None:
                cons = ("prompt_logical_cons", [ref, out])
                rea = ("prompt_logical_img_wo_q" if m.get("reasoning_wo_ins")
                       else "prompt_logical_img", [ref, out])
            else:
                raise ScorerError(f"sample {item.sample.id!r}: a logical item needs "
                                  "reference_txt or reference_img (the released code has no "
                                  "prompt for it)")
        plan = {"judge1": None if m.get("consistency_free") else cons, "judge2": rea,
                "judge3": qua}
        return {judge: Prompt(parts=(self._text(name, m, text), *images))
                for judge, spec in plan.items() if spec is not None
                for name, images in [spec]}

    # ----------------------------------------------------------------------- reading
    def released_reading(self, item: LoadedSample, key: str, gen: Any) -> dict[str, Any]:
        # a failed request: the released "Failed to obtain answer"
        return {key: None if gen.error else released_final_scores(gen.text)}

    def read_answer(self, item: LoadedSample, key: str, text: str) -> dict[str, float]:
        if self._logical(item):
            value = parse_final_score(text, low=0, high=1)
            return {JUDGES[key]: float(4 * min(value, 1) + 1)}
        return {JUDGES[key]: float(parse_final_score(text, low=1, high=5))}

    def finish(self, item: LoadedSample, scores: dict[str, float],
               raw: dict[str, Any]) -> ScoreResult:
        scores["overall"] = min(scores.values())
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw)

    @staticmethod
    def _logical(item: LoadedSample) -> bool:
        return (item.sample.meta.get("category") or item.sample.task) == "logical_reasoning"
