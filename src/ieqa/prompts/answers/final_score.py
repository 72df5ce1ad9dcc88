"""The answer format of RISEBench's judge prompts: free text ending in a line
``**Final Score:** **X**``; the strict parser :func:`parse_final_score`, the writer
:func:`write_final_score_answer`, and the released script's own reading
:func:`released_final_scores`.

The released ``gpt_eval.py`` (``extract``) searches, ignoring case, for ``Final Score``
(with optional ``**`` around it and an optional colon) followed by a run of digits,
asterisks, spaces, commas and line breaks, and takes **every** integer of the first such
run that holds one (so ``Final Score: 4, 5`` gives two); failing that, the same after
``Final Scores`` (an empty list when that phrase is there without a number); ``None`` when
neither phrase is there. ieqa's parser takes the same run but requires exactly one integer
in ``[low, high]``, and raises :class:`~ieqa.prompts.answers.JudgeParseError` otherwise.
"""

from __future__ import annotations

import re

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["parse_final_score", "released_final_scores", "write_final_score_answer"]

_PATTERNS = tuple(re.compile(rf"\*?\*?{phrase}\*?\*?:?\s*([\d*\s,\n]*)", re.IGNORECASE)
                  for phrase in ("Final Score", "Final Scores"))


def _numbers(match: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", match.replace("\n", " "))]


def released_final_scores(text: str) -> list[int] | None:
    """The integers RISEBench's released ``extract`` reads (see the module docstring):
    a list (possibly of several, possibly empty after ``Final Scores``) or ``None``."""
    for match in _PATTERNS[0].findall(text):
        numbers = _numbers(match)
        if numbers:
            return numbers
    matches = _PATTERNS[1].findall(text)
    if not matches:
        return None
    for match in matches:
        numbers = _numbers(match)
        if numbers:
            return numbers
    return []


def parse_final_score(text: str, *, low: int = 1, high: int = 5) -> int:
    """The one score after ``Final Score``: the released reading, which must give exactly
    one integer, in ``[low, high]``.

    Raises:
        JudgeParseError: an empty answer, no ``Final Score``, several numbers, or a score
            out of range.
    """
    text = require_text(text)
    numbers = released_final_scores(text)
    if not numbers:
        raise JudgeParseError("no number after 'Final Score'", text)
    if len(numbers) != 1:
        raise JudgeParseError(f"{len(numbers)} numbers after 'Final Score' "
                              f"({', '.join(map(str, numbers))}), expected one", text)
    if not low <= numbers[0] <= high:
        raise JudgeParseError(f"final score {numbers[0]} is outside {low}-{high}", text)
    return numbers[0]


def write_final_score_answer(score: int, reasoning: str = "") -> str:
    """An answer in the format: the reasoning, then ``**Final Score:** **X**``.

    Raises:
        TrainDataError: a score that is not a non-negative integer, or reasoning that
            holds the phrase "final score" (the parser would read it).
    """
    if isinstance(score, bool) or not isinstance(score, int) or score < 0:
        raise TrainDataError(f"score {score!r} is not a non-negative integer")
    if "final score" in reasoning.lower():
        raise TrainDataError("the reasoning cannot hold the phrase 'final score'")
    return (reasoning.strip() + "\n\n" if reasoning.strip() else "") + f"**Final Score:** **{score}**"
