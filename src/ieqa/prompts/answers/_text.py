"""What every answer parser shares: :class:`JudgeParseError`, :class:`ParsedScores`, the
number rules and the dimension-label rules.

Every parser of :mod:`ieqa.prompts.answers` returns what the answer states or raises
:class:`JudgeParseError` (which carries the offending text, truncated); none of them
guesses, rescales or falls back to a default number. Rules shared by all parsers:

* numbers may be written ``4``, ``4.5``, ``"4"``, ``4/5`` or ``4 out of 5``; a fraction
  must have the scale's upper bound as denominator (``8/10`` on a 1-5 scale is an error,
  not 4); booleans, NaN and infinities are errors;
* a value outside the requested ``scale`` (inclusive) is an error;
* dimension labels go through ieqa's alias table (``"SC"``, ``"Editing fidelity"``,
  ``"visualQuality"`` …), ignoring case, spaces, ``_`` and ``-``; a trailing
  ``score``/``rating`` is ignored;
* when an answer states the same dimension several times with different values, the *last*
  statement wins (answers put their final score last) — except in a critique's
  ``[Final Assessment]`` section, read top-down, and in JSON, where a conflict is an error.

The writers (training targets) share :func:`rescale` and :class:`~ieqa.errors.TrainDataError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.scales import finite_number
from ieqa.errors import IeqaError, TrainDataError, UnknownDimensionError

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_FRACTION = re.compile(rf"\s*({NUM})\s*(?:(?:/|\bout\s+of\b)\s*({NUM}))?\s*", re.I)
SCORE_WORDS = frozenset({"score", "scores", "rating", "ratings", "grade", "value"})
# parser-local labels judges write that the alias table does not know
EXTRA_LABELS = {"instruction adherence": "instruction_alignment",
                 "prompt adherence": "instruction_alignment",
                 "instruction compliance": "instruction_alignment"}


class JudgeParseError(IeqaError, ValueError):
    """A judge's answer holds no valid value of the requested kind.

    Attributes:
        reason: what was wrong.
        text: the answer, truncated to about 300 characters (``None`` if not text).
    """

    def __init__(self, reason: str, text: Any = None) -> None:
        self.reason = reason
        self.text = clip_text(text) if isinstance(text, str) else None
        shown = f"; answer: {self.text!r}" if self.text is not None else ""
        super().__init__(reason + shown)


def clip_text(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:200] + " … " + text[-(limit - 210):]


@dataclass(frozen=True)
class ParsedScores:
    """Scores read from one answer.

    Attributes:
        scores: canonical dimension -> value on the asked scale.
        sub_scores: canonical dimension -> the sub-scores it combines (VIEScore lists).
        reasoning: the answer's reasoning/critique text, when it has one.
    """

    scores: dict[str, float]
    sub_scores: dict[str, list[float]] = field(default_factory=dict)
    reasoning: str | None = None


# ------------------------------------------------------------------------ small helpers
def require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise JudgeParseError(f"the answer is not text (got {type(text).__name__})")
    if not text.strip():
        raise JudgeParseError("the answer is empty", text)
    return text


def squash(label: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", label.lower())


def check_scale(scale: Sequence[float] | None) -> tuple[float, float] | None:
    if scale is None:
        return None
    low, high = (float(v) for v in scale)
    if not low < high:
        raise ValueError(f"scale must be (low, high) with low < high, got {scale!r}")
    return low, high


def number(value: Any, scale: tuple[float, float] | None, what: str, text: str) -> float:
    """``value`` (number, numeric string or fraction) as a float inside ``scale``."""
    den = None
    if isinstance(value, bool) or value is None:
        raise JudgeParseError(f"{what}: {value!r} is not a number", text)
    if isinstance(value, (int, float)):
        num = float(value)
    elif isinstance(value, str):
        m = _FRACTION.fullmatch(value.strip().strip("*"))
        if not m:
            raise JudgeParseError(f"{what}: {value!r} is not a number", text)
        num = float(m.group(1))
        den = float(m.group(2)) if m.group(2) else None
    else:
        raise JudgeParseError(f"{what}: {type(value).__name__} {value!r} is not a number", text)
    return in_scale(num, den, scale, what, text)


def in_scale(num: float, den: float | None, scale: tuple[float, float] | None, what: str,
              text: str) -> float:
    if not math.isfinite(num):
        raise JudgeParseError(f"{what}: {num} is not a finite number", text)
    if den is not None and scale is not None and den != scale[1]:
        raise JudgeParseError(f"{what}: given as {num:g}/{den:g} but the scale ends at "
                              f"{scale[1]:g}; not rescaled", text)
    if scale is not None and not scale[0] <= num <= scale[1]:
        raise JudgeParseError(f"{what}: {num:g} is outside the scale "
                              f"{scale[0]:g}-{scale[1]:g}", text)
    return num


def label_dimension(label: str) -> str | None:
    """Canonical dimension a free-text label names; ``""`` for a label ending in a score
    word that names no dimension ("Score", "I give it a score"); else ``None``.

    The longest run of words that is a known alias wins ("Overall quality" is overall,
    not visual quality); a tie between different dimensions is no match.
    """
    words = re.sub(r"[^0-9a-z]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", label).lower()).split()
    scored = bool(words) and words[-1] in SCORE_WORDS
    while words and words[-1] in SCORE_WORDS:
        words.pop()
    for size in range(len(words), 0, -1):
        found = set()
        for start in range(len(words) - size + 1):
            span = " ".join(words[start:start + size])
            dim = EXTRA_LABELS.get(span)
            if dim is None:
                try:
                    dim = canonical_dimension(span)
                except UnknownDimensionError:
                    continue
            found.add(dim)
        if len(found) == 1:
            return found.pop()
        if found:
            return None
    return "" if scored else None


def key_dimension(key: str, wanted: Mapping[str, str]) -> str | None:
    """Canonical dimension of a JSON key among ``wanted`` (squashed alias -> dimension)."""
    squashed = squash(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key))
    for suffix in ("scores", "score", "rating"):
        if squashed.endswith(suffix) and squashed != suffix:
            squashed = squashed[: -len(suffix)]
            break
    if squashed in wanted:
        return wanted[squashed]
    dim = label_dimension(key)
    return dim if dim and dim in wanted.values() else None


_VALUE = re.compile(
    rf"[ \t]*\**[ \t]*(?::|=|\bis\b|\bof\b)[ \t]*\**[ \t]*(?P<num>{NUM})(?![\d.]*\d)"
    rf"(?:[ \t]*(?:/|\bout\s+of\b)[ \t]*(?P<den>{NUM}))?", re.I)
_LABEL = re.compile(r"(?<![A-Za-z])([A-Za-z][A-Za-z \t_&/'\-]{0,60}?)[ \t]*(?:\([^()\n]{0,24}\))?"
                    r"[ \t]*\**[ \t]*$")


def statements(text: str) -> list[tuple[str | None, float, float | None, int]]:
    """``(dimension or "" for a bare score word or None, value, denominator, position)``
    for every "<label>: <number>" statement in ``text`` (label within 60 characters)."""
    out = []
    for m in _VALUE.finditer(text):
        window = text[max(0, m.start() - 100):m.start()]
        label = _LABEL.search(window)
        if label is None:
            continue
        den = float(m.group("den")) if m.group("den") else None
        out.append((label_dimension(label.group(1)), float(m.group("num")), den, m.start()))
    return out



# --------------------------------------------------------------- writers (targets)
def bounds_pair(value: object, name: str) -> tuple[float, float]:
    try:
        lo, hi = value  # type: ignore[misc]
    except (TypeError, ValueError):
        raise TrainDataError(f"{name} must be a (low, high) pair, got {value!r}") from None
    return finite_number(lo, f"{name}[0]"), finite_number(hi, f"{name}[1]")


def rescale(value: float, src: Sequence[float], dst: Sequence[float]) -> float:
    """Map ``value`` linearly from the range ``src = (lo, hi)`` onto ``dst = (lo, hi)``.

    ``src[0]`` goes to ``dst[0]`` and ``src[1]`` to ``dst[1]`` (a reversed pair flips the
    direction, e.g. ranks ``(5, 1)`` onto scores ``(1, 5)``). Values outside ``src`` are
    extrapolated, not clipped. Raises :class:`TrainDataError` for a non-finite value or
    bound, or a zero-width ``src`` (every point would map to infinity).

    Examples:
        >>> rescale(50, (0, 100), (1, 5))
        3.0
    """
    v = finite_number(value, "value")
    lo, hi = bounds_pair(src, "src")
    dlo, dhi = bounds_pair(dst, "dst")
    if hi == lo:
        raise TrainDataError(f"src range ({lo:g}, {hi:g}) has zero width; cannot rescale from it")
    return dlo + (v - lo) * (dhi - dlo) / (hi - lo)


def clip(value: float, bounds: tuple[float, float]) -> float:
    lo, hi = min(bounds), max(bounds)
    return min(max(value, lo), hi)

