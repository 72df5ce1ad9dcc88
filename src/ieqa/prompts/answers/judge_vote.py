"""EPAIQA's explanation-judge answers (EPAIQA (001) appendix F): a JSON object with a 0, 1 or
2 per dimension (PA, LNA, GHA, Overall). :func:`parse_judge_vote` reads one; the protocol
around it (votes, modes, coverage) is :mod:`ieqa.explain.judge_protocol`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ieqa.prompts.answers._text import JudgeParseError

__all__ = ["JUDGE_DIMENSIONS", "parse_judge_vote"]

#: the four concerns of EPAIQA appendix F, in the paper's order: prompt completion, local
#: naturalness, global harmony, overall
JUDGE_DIMENSIONS: tuple[str, ...] = ("PA", "LNA", "GHA", "Overall")
_SCORES = (0, 1, 2)


def _read_score(value: Any) -> int | None:
    """0, 1 or 2 from a JSON value (``2``, ``2.0``, ``"2"``), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if value not in ("0", "1", "2"):
            return None
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value) and float(value).is_integer():
        return int(value) if int(value) in _SCORES else None
    return None


def parse_judge_vote(text: str, dimensions: Sequence[str] = JUDGE_DIMENSIONS,
                     ) -> tuple[dict[str, int], dict[str, str]]:
    """Read one judge answer: ``(scores, errors)``.

    ``scores`` maps each readable dimension to 0, 1 or 2; ``errors`` maps each unreadable
    one to the reason (no JSON object, key missing, value not 0/1/2). Keys match
    case-insensitively (``"pa"``, ``"Overall"``). Nothing is guessed.
    """
    from ieqa.prompts.answers.scores import extract_json

    if not isinstance(text, str) or not text.strip():
        return {}, {d: "empty answer" for d in dimensions}
    try:
        obj = extract_json(text)
    except JudgeParseError:
        return {}, {d: "no JSON object in the answer" for d in dimensions}
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    scores: dict[str, int] = {}
    errors: dict[str, str] = {}
    for dim in dimensions:
        if dim.lower() not in lowered:
            errors[dim] = f"key {dim!r} missing"
            continue
        score = _read_score(lowered[dim.lower()])
        if score is None:
            errors[dim] = f"{dim}={lowered[dim.lower()]!r} is not 0, 1 or 2"
        else:
            scores[dim] = score
    return scores, errors
