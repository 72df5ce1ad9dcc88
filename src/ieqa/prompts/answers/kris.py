"""The answer format of KRIS-Bench's judge prompts: reasoning, then a JSON object with one
or two integer scores 1-5 under ``consistency_score``, ``quality_score``,
``instruction_score`` or ``knowledge_score``; the strict parser :func:`parse_kris_scores`,
the writer :func:`write_kris_answer`, and the released scripts' own readings
(:func:`released_kris_score`, :func:`released_kris_dual`).

The released scripts read a score in a chain of fallbacks, each tried when the one before
finds nothing:

1. the first ``{...}`` block (without nested braces) that names the key, parsed with
   ``json.loads``; its value through ``int()`` (so ``4.7`` is 4 and ``0`` or ``7`` are
   kept as they are);
2. ``<stem> score: N`` with N in 1-5 (``reader="common"``: the colon optional;
   ``reader="knowledge"``: the colon required; ``reader="generic"``: skipped);
3. ``N/5``, then ``N out of 5``;
4. the **first standalone digit 1-5 anywhere in the answer** (the "1" of "1. Detect
   Difference" will do).

``reader="knowledge"`` (``metrics_knowledge.py``) returns the JSON block's value even when
it is null. The knowledge categories' two-score answer (:func:`released_kris_dual`) reads
both scores from the JSON block of ``instruction_score`` or, when it does not parse, from
``instruction score: N`` and ``knowledge score: N`` (colon required); there is no digit
fallback.

ieqa's parser takes a score only where the answer states it under its key (``"key": N``
or ``key: N``, in JSON or not); every mention must agree, and the score must be an integer
in 1-5. Anything else raises :class:`~ieqa.prompts.answers.JudgeParseError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["KRIS_KEYS", "READERS", "parse_kris_scores", "released_kris_score",
           "released_kris_dual", "write_kris_answer"]

#: the answer keys, by the stem the released regexes use
KRIS_KEYS: dict[str, str] = {"consistency": "consistency_score", "quality": "quality_score",
                             "instruction": "instruction_score", "knowledge": "knowledge_score"}
#: the released readings of one score (see the module docstring)
READERS: tuple[str, ...] = ("common", "knowledge", "generic")
_FALLBACKS = (r"([1-5])\s*/\s*5", r"([1-5])\s+out\s+of\s+5")


def _json_block(text: str, key: str) -> dict | None:
    found = re.search(r"\{[^{}]*" + re.escape(key) + r"[^{}]*\}", text, re.DOTALL)
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None


def released_kris_score(text: str | None, key: str, reader: str = "common") -> int | None:
    """The score of ``key`` (e.g. ``"consistency_score"``) as the released script of
    ``reader`` reads it (see the module docstring); ``None`` when it finds none (also for
    an empty answer, which is what a failed request leaves)."""
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}, got {reader!r}")
    text = text or ""
    block = _json_block(text, key)
    if block is not None:
        value = block.get(key)
        if value is None and reader == "knowledge":
            return None  # metrics_knowledge.py stops at a parsed block without the score
        if value is not None and _int(value) is not None:
            return _int(value)
    stem = key.removesuffix("_score")
    patterns: list[str] = list(_FALLBACKS)
    if reader != "generic":
        colon = "[:：]" if reader == "knowledge" else "[:：]?"
        patterns.insert(0, stem + r"[_\s]*score\s*" + colon + r"\s*([1-5])")
    for pattern in patterns:
        found = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
        if found:
            return int(found.group(1))
    found = re.search(r"\b([1-5])\b", text)
    return int(found.group(1)) if found else None


def released_kris_dual(text: str | None) -> tuple[int | None, int | None]:
    """``(instruction_score, knowledge_score)`` of a knowledge item's two-score answer as
    the released ``metrics_knowledge.py`` reads it (see the module docstring)."""
    text = text or ""
    found = re.search(r"\{[^{}]*instruction_score[^{}]*\}", text, re.DOTALL)
    if found:
        try:
            data = json.loads(found.group(0))
            return tuple(  # type: ignore[return-value]
                None if data.get(k) is None else int(data[k])
                for k in ("instruction_score", "knowledge_score"))
        except (ValueError, TypeError, AttributeError, OverflowError):
            pass
    out = []
    for stem in ("instruction", "knowledge"):
        m = re.search(stem + r"[_\s]*score\s*[:：]\s*([1-5])", text, re.IGNORECASE)
        out.append(int(m.group(1)) if m else None)
    return out[0], out[1]


def parse_kris_scores(text: str, keys: Sequence[str]) -> dict[str, int]:
    """The scores of ``keys`` (e.g. ``("instruction_score", "knowledge_score")``), each
    stated under its key as an integer 1-5 (see the module docstring).

    Raises:
        JudgeParseError: an empty answer, a key with no score, mentions that disagree, or
            a score that is not an integer in 1-5.
    """
    text = require_text(text)
    out: dict[str, int] = {}
    for key in keys:
        values = re.findall(r"[\"']?\b" + re.escape(key) + r"[\"']?\s*[:：]\s*[\"']?"
                            r"(-?\d+(?:\.\d+)?)", text, re.IGNORECASE)
        if not values:
            raise JudgeParseError(f"no {key} in the answer", text)
        numbers = {float(v) for v in values}
        if len(numbers) > 1:
            raise JudgeParseError(f"{key} is given {len(numbers)} different values "
                                  f"({', '.join(sorted(values))})", text)
        value = numbers.pop()
        if value != int(value) or not 1 <= value <= 5:
            raise JudgeParseError(f"{key} {value:g} is not an integer from 1 to 5", text)
        out[key] = int(value)
    return out


def write_kris_answer(scores: Mapping[str, int], reasoning: str = "") -> str:
    """An answer in the format: a JSON object with the reasoning under ``"reasoning"``,
    then ``scores`` (key -> integer 1-5).

    Raises:
        TrainDataError: a key that is not one of :data:`KRIS_KEYS`' values, a score that
            is not an integer 1-5, or reasoning that names a key (the parser would read it).
    """
    if any(key in reasoning.lower() for key in KRIS_KEYS.values()):
        raise TrainDataError("the reasoning cannot name a score key "
                             f"({', '.join(KRIS_KEYS.values())})")
    for key, value in scores.items():
        if key not in KRIS_KEYS.values():
            raise TrainDataError(f"unknown KRIS-Bench key {key!r}; one of "
                                 f"{', '.join(KRIS_KEYS.values())}")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            raise TrainDataError(f"{key} {value!r} is not an integer from 1 to 5")
    return json.dumps({"reasoning": reasoning.strip(), **scores}, ensure_ascii=False, indent=1)
