"""EPAIQA stage-3 training answers built from ground truth (target ``epaiqa-cot``).

EPAIQA (seed 001, §4.3 and appendix E.3) fine-tunes the stage-2 model on answers of the
form ``The prompt completion is <completion>. <CoT>. The harmony: <CoT>. The local
naturalness: <CoT>. Therefore, the overall editing quality level of the image is
<level>``, with the early exit when the prompt is not (fully) followed. The paper's CoT
pieces were written by proprietary LMMs and checked by two others; ieqa builds them from
the data instead:

* **completion** (1-3): the sample's ``prompt_completion`` score or ``meta`` value (EPAIQA
  data), else, for ShapesEdit, the generator's ``meta["mode"]`` (perfect / over_edit ->
  fully followed, partial -> partially followed, no_op / wrong_target -> not followed).
  A sample with neither is an error, never a guess.
* **levels** of harmony, local naturalness and overall: the project's level bins
  (:func:`ieqa.prompts.answers.level_target`) of the columns the stage maps them to
  (``labels``; the ``epaiqa`` recipe's stage 3 maps harmony to content_preservation and
  local naturalness to visual_quality for ShapesEdit, which has neither column). An early
  exit's overall level is the format's (not followed: bad, partly followed: poor).
* **CoT sentences**: ``meta["cot"]`` pieces when the data has them (``{"completion": ...,
  "harmony": ..., "naturalness": ...}``); else, for ShapesEdit, the generator's factual
  description of what was done (:func:`ieqa.data.shapesedit.truth.describe`'s parts);
  else a sentence naming the level. Harmony and naturalness sentences end with "harmony
  level is <level>" / "naturalness level is <level>", so the parser reads those levels
  back (:func:`ieqa.prompts.answers.parse_epaiqa`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.prompts.answers import epaiqa_answer

__all__ = ["MODE_COMPLETION", "completion_of", "epaiqa_cot_target"]

#: ShapesEdit editor modes -> EPAIQA prompt-completion level
MODE_COMPLETION: dict[str, int] = {"perfect": 3, "over_edit": 3, "partial": 2, "no_op": 1,
                                   "wrong_target": 1}
_COMPLETION_TEXT = {
    1: "The edited image does not show what the prompt asks for",
    2: "Only part of what the prompt asks for is visible in the edited image",
    3: "The edited image shows what the prompt asks for",
}
_SHAPES_COMPLETION = {
    "perfect": "The requested edit was carried out completely",
    "over_edit": "The requested edit was carried out, but other content changed as well",
    "partial": "The requested edit was only partly carried out",
    "no_op": "The image is unchanged where it should change",
    "wrong_target": "The edit was applied to the wrong target",
}


def completion_of(sample: EditSample) -> int:
    """The sample's EPAIQA prompt-completion level (1-3); see the module docstring."""
    for value in (sample.scores.get("prompt_completion"), sample.meta.get("prompt_completion")):
        if value is not None:
            level = round(float(value))
            if level not in (1, 2, 3) or abs(float(value) - level) > 1e-6:
                raise TrainDataError(f"sample {sample.id!r}: prompt_completion must be 1, 2 or "
                                     f"3 (EPAIQA's levels), got {value!r}")
            return level
    mode = sample.meta.get("mode")
    if mode in MODE_COMPLETION:
        return MODE_COMPLETION[str(mode)]
    raise TrainDataError(f"sample {sample.id!r} has no prompt completion level: give it a "
                         "prompt_completion score (1-3) or meta value (a ShapesEdit sample "
                         "has meta['mode'])")


def _harmony_text(sample: EditSample, level: str) -> str:
    meta = sample.meta
    if "unintended_change" in meta:
        change = float(meta.get("unintended_change") or 0.0)
        fact = (f"about {100 * change:.0f}% of the image changed without being asked"
                if change > 0.02 else "the rest of the image is preserved")
        return f"{fact}, harmony level is {level}"
    return f"the edited area fits the whole image at a {level} level, harmony level is {level}"


def _naturalness_text(sample: EditSample, level: str) -> str:
    meta = sample.meta
    if "mode" in meta:
        artifact = meta.get("artifact")
        if artifact:
            severity = float(meta.get("artifact_severity") or 0.0)
            grade = "strong" if severity > 0.66 else "moderate" if severity > 0.33 else "slight"
            fact = f"there is {grade} {artifact} degradation"
        else:
            fact = "there are no visible artifacts"
        return f"{fact}, naturalness level is {level}"
    return f"the edited area looks {level}, naturalness level is {level}"


def epaiqa_cot_target(sample: EditSample, levels: Mapping[str, str]) -> str:
    """The stage-3 answer of ``sample``.

    Args:
        sample: the edit (its completion level and CoT facts: see the module docstring).
        levels: level words (``bad`` ... ``excellent``, a leading space allowed) of
            ``harmony``, ``local_naturalness`` and ``overall``, binned by the caller;
            harmony and naturalness are needed only when the prompt is fully followed.

    Raises:
        TrainDataError: no completion level, or a missing level.
    """
    completion = completion_of(sample)
    clean = {k: str(v).strip() for k, v in levels.items() if v is not None}
    cot: dict[str, Any] = sample.meta.get("cot") if isinstance(sample.meta.get("cot"),
                                                                 Mapping) else {}

    def piece(key: str, default: str) -> str:
        text = str(cot.get(key) or default).strip()
        return text[:-1] if text.endswith(".") else text

    mode = sample.meta.get("mode")
    comp_text = piece("completion", _SHAPES_COMPLETION.get(str(mode), _COMPLETION_TEXT[completion]))
    if completion < 3:
        return epaiqa_answer(completion, "bad" if completion == 1 else "poor",
                             completion_cot=comp_text)
    missing = [d for d in ("harmony", "local_naturalness", "overall") if d not in clean]
    if missing:
        raise TrainDataError(f"sample {sample.id!r}: no level for {', '.join(missing)} (the "
                             "stage's labels map each to a score column)")
    return epaiqa_answer(
        3, clean["overall"], completion_cot=comp_text,
        harmony_cot=piece("harmony", _harmony_text(sample, clean["harmony"])),
        naturalness_cot=piece("naturalness", _naturalness_text(sample, clean["local_naturalness"])))
