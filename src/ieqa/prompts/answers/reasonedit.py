"""ReasonEdit (seed 004) §3.2.1 / appendix F.1 critiques: per-dimension analysis, then a
``[Final Assessment]`` heading and one ``Name: score`` line per dimension::

    1. Visual quality: the cat's fur is sharp, no artifacts ...
    [Final Assessment]
    Visual Quality: 4.50
    Instruction Alignment: 5.00
    Content Preservation: 4.00

The writer :func:`critique_target` (the ``reasonedit-critique`` training target), the strict
score parser :func:`parse_critique` and :func:`parse_reasonedit`, which reads the sections
too into a :class:`~ieqa.prompts.answers.critique.Critique` (``status="failed"`` with the
reason when the answer does not follow the format).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ieqa.data.dimensions import CORE_DIMENSIONS, canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import (
    JudgeParseError,
    ParsedScores,
    bounds_pair,
    check_scale,
    clip,
    in_scale,
    require_text,
    rescale,
    statements,
)
from ieqa.prompts.answers.critique import Critique

__all__ = ["EXPLANATION_KEY", "FINAL_HEADING", "REASONEDIT_DIMENSIONS", "critique_target",
           "parse_critique", "parse_reasonedit"]

#: The ``EditSample.meta`` key that holds a sample's explanation / critique text.
EXPLANATION_KEY = "explanation"
#: The headings that open the final block (``[Final Assessment]``, ``Final assessment:``).
FINAL_HEADING = re.compile(r"\[\s*final\s+assessment\s*\]|^[#>*\s-]*final\s+assessment\b\s*\**\s*:?",
                           re.I | re.M)
#: The three dimensions a ReasonEdit critique scores.
REASONEDIT_DIMENSIONS: tuple[str, ...] = ("visual_quality", "instruction_alignment",
                                          "content_preservation")


def parse_critique(text: str, dimensions: Sequence[str] = CORE_DIMENSIONS,
                   scale: Sequence[float] | None = (1, 5)) -> ParsedScores:
    """A ``reasonedit-critique`` answer: critique text, then a ``[Final Assessment]`` line
    followed by ``Name: score`` lines (``Visual Quality: 3.5`` …).

    The critique before the last ``[Final Assessment]`` heading becomes ``reasoning``; the
    first statement of each dimension after it is its score. Without the heading, the last
    statement of each dimension anywhere in the text counts and ``reasoning`` is the whole
    answer. Raises :class:`JudgeParseError` listing missing dimensions, or for
    out-of-scale values.
    """
    text = require_text(text)
    rng = check_scale(scale)
    dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions))
    heads = list(FINAL_HEADING.finditer(text))
    if heads:
        reasoning = text[:heads[-1].start()].strip() or None
        stated = statements(text[heads[-1].end():])
        stated = [s for i, s in enumerate(stated) if s[0] not in {t[0] for t in stated[:i]}]
    else:
        reasoning = text.strip()
        stated = statements(text)
    found: dict[str, float] = {}
    for dim, num, den, _ in stated:
        if dim in dims:
            found[dim] = in_scale(num, den, rng, dim, text)
    missing = [d for d in dims if d not in found]
    if missing:
        where = "after [Final Assessment]" if heads else "in the answer"
        raise JudgeParseError(f"no score for {', '.join(missing)} {where}", text)
    return ParsedScores({d: found[d] for d in dims}, {}, reasoning)


def _critique_label(dimension: str) -> str:
    """``"visual_quality"`` -> ``"Visual Quality"`` (the reasonedit-critique wording)."""
    return dimension.replace("_", " ").title()


def _data_scale(sample: EditSample, data_scale: Sequence[float] | None,
                default: tuple[float, float]) -> tuple[float, float]:
    if data_scale is not None:
        return bounds_pair(data_scale, "data_scale")
    stated = sample.meta.get("score_scale")
    if stated is None:
        return default
    try:
        return bounds_pair(stated, f"sample {sample.id!r} meta['score_scale']")
    except TrainDataError as exc:
        raise TrainDataError(f"{exc}; pass data_scale=(low, high)") from None


def critique_target(sample: EditSample, dimensions: Sequence[str] = CORE_DIMENSIONS,
                    scale: Sequence[float] = (1, 5), *,
                    data_scale: Sequence[float] | None = None,
                    key: str = EXPLANATION_KEY) -> str:
    """ReasonEdit-style critique target: the sample's explanation, then the scores.

    The answer the ``reasonedit-critique`` template asks for (ReasonEdit §3.2.1, appendix
    F.1 ``[Final Assessment]`` anchor)::

        <explanation text>

        [Final Assessment]
        Visual Quality: 4.25
        Instruction Alignment: 3.00
        Content Preservation: 5.00

    The explanation is ``sample.meta[key]`` (``"explanation"`` by default; ieqa's loaders
    do not fill it, so datasets with critiques put them there). One line per dimension of
    ``dimensions`` (canonical names or aliases, in the given order), with
    ``sample.scores[dim]`` mapped from the data scale onto ``scale`` (the template's,
    1-5), clipped into it and written with two decimals. The data scale is ``data_scale``,
    else ``sample.meta["score_scale"]`` (ShapesEdit sets ``[1, 5]``), else ``scale``
    itself. :func:`~ieqa.prompts.answers.parse_critique` reads the scores back.

    Raises :class:`TrainDataError` when the sample has no explanation text (callers decide
    whether to skip such samples), when the explanation already holds a final-assessment
    heading, or when a score is missing.
    """
    text = sample.meta.get(key)
    if not isinstance(text, str) or not text.strip():
        raise TrainDataError(f"sample {sample.id!r} has no explanation text in meta[{key!r}]; "
                             "a critique target needs one (skip such samples)")
    if FINAL_HEADING.search(text):
        raise TrainDataError(f"the explanation of sample {sample.id!r} already contains a "
                             "'[Final Assessment]' heading; pass the critique text only")
    if isinstance(dimensions, str):
        raise TrainDataError("dimensions must be a list of names, not one string")
    dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions))
    if not dims:
        raise TrainDataError("dimensions is empty: name the dimensions to score")
    missing = [d for d in dims if d not in sample.scores]
    if missing:
        raise TrainDataError(f"sample {sample.id!r} has no score for {', '.join(missing)} "
                             f"(it has {', '.join(sample.scores) or 'none'})")
    target = bounds_pair(scale, "scale")
    if target[0] == target[1]:
        raise TrainDataError(f"scale must have low < high, got {tuple(scale)!r}")
    src = _data_scale(sample, data_scale, target)
    lines = [f"{_critique_label(d)}: {clip(rescale(sample.scores[d], src, target), target):.2f}"
             for d in dims]
    return text.strip() + "\n\n[Final Assessment]\n" + "\n".join(lines)


_SECTION_HEAD = {
    "visual_quality": r"visual\s+quality",
    "instruction_alignment": r"instruction\s+(?:alignment|following|adherence)",
    "content_preservation": r"content\s+preservation|preservation",
}
_HEAD = re.compile(
    r"^[\s#>*\-]*(?:\d+[.)]\s*)?[*_]*(" + "|".join(f"(?P<{k}>{v})" for k, v in
                                                   _SECTION_HEAD.items()) + r")[*_]*\s*[:\-–]",
    re.I | re.M)


def parse_reasonedit(text: Any, *, scale: Sequence[float] = (1, 5)) -> Critique:
    """Parse a ReasonEdit-format critique (see the module docstring).

    Scores are read with :func:`ieqa.prompts.answers.parse_critique` (all three
    dimensions after the last ``[Final Assessment]``, each inside ``scale``); a missing
    heading, a missing or out-of-scale score, or an empty answer gives ``status="failed"``.
    A truncated answer (cut before the last score line) fails the same way.
    """
    fmt = "reasonedit"
    if not isinstance(text, str) or not text.strip():
        return Critique(text if isinstance(text, str) else None, fmt, "failed",
                        error="the answer is empty")
    heads = list(FINAL_HEADING.finditer(text))
    if not heads:
        return Critique(text, fmt, "failed",
                        error="no [Final Assessment] heading (the answer must end with "
                              "'[Final Assessment]' and one 'Name: score' line per dimension)")
    try:
        parsed = parse_critique(text, REASONEDIT_DIMENSIONS, scale)
    except JudgeParseError as exc:
        return Critique(text, fmt, "failed", error=exc.reason)
    body = text[:heads[-1].start()]
    sections: dict[str, str] = {}
    marks = [(m.start(), m.end(), next(k for k in _SECTION_HEAD if m.group(k)))
             for m in _HEAD.finditer(body)]
    for i, (_, end, name) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else len(body)
        chunk = body[end:stop].strip()
        if chunk and name not in sections:
            sections[name] = chunk
    sections["assessment"] = text[heads[-1].end():].strip()
    return Critique(text, fmt, "ok", sections=sections, scores=dict(parsed.scores))
