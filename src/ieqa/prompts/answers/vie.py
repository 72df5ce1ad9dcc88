"""The answer format of the published VIEScore and EditScore prompts: a JSON object
``{"reasoning": "...", "score": [s1, s2]}``, optionally between two ``||V^=^V||``
delimiters, or a bare list ``[s1, s2]``; the strict parser :func:`parse_vie_answer` and
the writer :func:`write_vie_answer`.

Where the authors' code finds the answer in the text it is followed here: the text between
the two delimiters when there are exactly two, else from the first ``{`` to the last
``}`` (line breaks removed, curly quotes made straight), else a bare list of two integers.
What their code then *repairs* or *guesses* (a JSON repair library, a random score, the
midpoint) is not done: an answer that is not valid JSON, a score that is not a number, a
list of the wrong length, a negative or out-of-range score, a refusal or an empty answer
raise :class:`~ieqa.prompts.answers.JudgeParseError` with the reason, so the scorer records
and counts it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["DELIMITER", "VieAnswer", "parse_vie_answer", "write_vie_answer"]

#: the delimiter VIEScore's prompts with a delimiter ask the answer to be wrapped in
DELIMITER = "||V^=^V||"

_BARE_LIST = re.compile(r"^\[\d+, ?\d+\]$")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


@dataclass(frozen=True)
class VieAnswer:
    """One parsed answer.

    Attributes:
        scores: the sub-scores in the order the prompt asks for them, on the asked scale
            (``0..high``), as stated.
        reasoning: the answer's ``reasoning`` text (``None`` when it has none).
    """

    scores: tuple[float, ...]
    reasoning: str | None = None


def _located(text: str) -> str:
    """The part of ``text`` the answer is read from (see the module docstring)."""
    if text.count(DELIMITER) == 2:
        start = text.find(DELIMITER) + len(DELIMITER)
        return text[start:text.rfind(DELIMITER)].strip()
    start, end = text.find("{"), text.rfind("}") + 1
    if start != -1 and end > start:
        return text[start:end].strip()
    start, end = text.find("["), text.rfind("]") + 1
    if start != -1 and end > start and _BARE_LIST.match(text[start:end]):
        return text[start:end]
    raise JudgeParseError("no answer object {\"reasoning\": ..., \"score\": [...]} found", text)


def parse_vie_answer(text: str, *, n_scores: int = 2, high: float = 10) -> VieAnswer:
    """The sub-scores and reasoning of a VIEScore / EditScore answer.

    Args:
        text: the model's answer.
        n_scores: how many sub-scores the prompt asks for (2 for both SC and PQ).
        high: the top of the asked scale (10; EditScore's 0-25 prompts: 25); every
            sub-score must lie in ``[0, high]``.

    Raises:
        JudgeParseError: the answer is empty, holds no answer object, is not valid JSON
            (a trailing comma, say), has no ``score``, a score that is not a number (a
            string, a boolean), the wrong number of scores, or a score outside
            ``[0, high]``.
    """
    text = require_text(text)
    located = _located(text).replace("\n", "").translate(_QUOTES)
    try:
        obj = json.loads(located)
    except (ValueError, RecursionError) as exc:
        raise JudgeParseError(f"the answer object is not valid JSON ({exc})", text) from None
    if isinstance(obj, list):
        obj = {"score": obj}
    if not isinstance(obj, dict):
        raise JudgeParseError(f"the answer is a JSON {type(obj).__name__}, not an object", text)
    if "score" not in obj:
        raise JudgeParseError("the answer object has no 'score'", text)
    raw = obj["score"]
    if not isinstance(raw, list):
        raw = [raw]
    values: list[float] = []
    for i, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise JudgeParseError(f"score {i + 1} is {value!r}, not a number", text)
        if not 0 <= value <= high:
            raise JudgeParseError(f"score {i + 1} is {value:g}, outside 0-{high:g}", text)
        values.append(float(value))
    if len(values) != n_scores:
        raise JudgeParseError(f"expected {n_scores} scores, got {len(values)}", text)
    reasoning = obj.get("reasoning")
    return VieAnswer(tuple(values), reasoning if isinstance(reasoning, str) else None)


def write_vie_answer(scores: Sequence[float], reasoning: str = "", *,
                     delimit: bool = False) -> str:
    """An answer in this format (the inverse of :func:`parse_vie_answer`): a JSON object
    with ``reasoning`` and ``score``, between :data:`DELIMITER` when ``delimit``.

    Raises:
        TrainDataError: a score is not a finite non-negative number.
    """
    values = []
    for value in scores:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise TrainDataError(f"a VIEScore sub-score must be a finite number >= 0, got "
                                 f"{value!r}")
        values.append(int(value) if float(value).is_integer() else float(value))
    body = json.dumps({"reasoning": reasoning, "score": values})
    return f"{DELIMITER}{body}{DELIMITER}" if delimit else body
