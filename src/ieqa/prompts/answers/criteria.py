"""The answer format of ImgEdit-Bench's rubrics: a line ``Brief reasoning: ...`` and one line
``Criterion Name: score`` per criterion (three, each an integer 1-5); the strict parser
:func:`parse_criteria_answer`, the writer :func:`write_criteria_answer`, and the released
scripts' own reading :func:`released_criteria_scores`.

The released ``step1_get_avgscore.py`` takes every line that, stripped, splits on ``": "``
into exactly two parts whose second is all digits, however many there are and whatever
their value; an answer with none is dropped. ieqa's parser takes the same lines but requires
exactly ``n`` of them, each in ``[low, high]``, and raises
:class:`~ieqa.prompts.answers.JudgeParseError` otherwise, so the scorer records and counts it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["parse_criteria_answer", "write_criteria_answer", "released_criteria_scores",
           "released_criteria_mean"]


def _score_lines(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        parts = line.strip().split(": ")
        if len(parts) == 2 and parts[1].isdigit():
            out.append((parts[0], parts[1]))
    return out


def released_criteria_scores(text: str) -> list[int]:
    """The scores ImgEdit's released ``step1_get_avgscore.py`` reads (see the module
    docstring): any number of lines, any integer. A "digit" that ``int`` cannot read (a
    superscript, say) is left out here, where the released script would stop."""
    out = []
    for _, value in _score_lines(text):
        try:
            out.append(int(value))
        except ValueError:
            continue
    return out


def released_criteria_mean(text: str) -> float | None:
    """The released item score: the mean of :func:`released_criteria_scores` rounded to 2
    decimals (Python's ``round``), ``None`` when there is none (the item is dropped)."""
    scores = released_criteria_scores(text)
    return round(sum(scores) / len(scores), 2) if scores else None


def parse_criteria_answer(text: str, *, n: int = 3, low: int = 1,
                          high: int = 5) -> list[tuple[str, int]]:
    """``[(criterion name, score), ...]`` of an answer: the released rule's lines, exactly
    ``n`` of them, each score an integer in ``[low, high]``.

    Raises:
        JudgeParseError: an empty answer, not exactly ``n`` score lines, or a score out of
            range.
    """
    text = require_text(text)
    lines = _score_lines(text)
    if len(lines) != n:
        raise JudgeParseError(f"expected {n} 'Criterion: score' lines, found {len(lines)}",
                              text)
    out = []
    for name, value in lines:
        score = int(value) if value.isascii() else low - 1
        if not low <= score <= high:
            raise JudgeParseError(f"{name}: {value} is not a score {low}-{high}", text)
        out.append((name.strip(), score))
    return out


def write_criteria_answer(criteria: Sequence[tuple[str, int]], reasoning: str = "") -> str:
    """An answer in the format: ``Brief reasoning: ...`` then ``Name: score`` per line.

    Raises:
        TrainDataError: a name that is empty or holds ``": "`` or a line break, or a score
            that is not a non-negative integer.
    """
    lines = [f"Brief reasoning: {' '.join(reasoning.split())}"]
    for name, score in criteria:
        if not name.strip() or ": " in name or "\n" in name:
            raise TrainDataError(f"criterion name {name!r} cannot be written in the format")
        if isinstance(score, bool) or not isinstance(score, int) or score < 0:
            raise TrainDataError(f"score {score!r} of {name!r} is not a non-negative integer")
        lines.append(f"{name.strip()}: {score}")
    return "\n".join(lines)
