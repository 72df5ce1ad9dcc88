"""Level answers: one of the five level words (``" good"``), EditHF §4.2 textual learning,
Q-Align and EPAIQA §4.2 — the writer :func:`level_target` and the strict parser
:func:`parse_level`, on the one list of level words :data:`ieqa.data.dimensions.LEVEL_WORDS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ieqa.data.dimensions import LEVEL_WORDS, canonical_dimension
from ieqa.errors import TrainDataError
from ieqa.human.mos import level_indices
from ieqa.prompts.answers._text import (
    JudgeParseError,
    ParsedScores,
    check_scale,
    finite_number,
    require_text,
)

__all__ = ["LEVEL_WORDS", "READOUT_LEVEL_WORDS", "level_index", "level_target", "parse_level"]

#: The level words in the order of the ``vlm-levels`` readout's five logits, best first.
READOUT_LEVEL_WORDS: tuple[str, ...] = tuple(reversed(LEVEL_WORDS))


def parse_level(text: str, dimension: str | None = None, scale: Sequence[float] = (1, 5),
                levels: Sequence[str] = LEVEL_WORDS) -> ParsedScores:
    """A quality level word (``bad``/``poor``/``fair``/``good``/``excellent``) as a number:
    the levels, worst first, map evenly onto ``scale`` (bad=1 ... excellent=5).

    Reads, in order: a level word opening the answer (the continuation of "... is"), the
    last "level ... is <word>" statement, or the only level word in the answer. A negated
    level ("not good") or several different level words without a level statement raise
    :class:`JudgeParseError`. The result is keyed by ``dimension`` (default ``overall``).
    """
    text = require_text(text)
    low, high = check_scale(scale) or (1.0, 5.0)
    if len(levels) < 2:
        raise ValueError("levels needs at least two words, worst first")
    key = canonical_dimension(dimension) if dimension is not None else "overall"
    words = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in
                     sorted(levels, key=len, reverse=True))
    word = rf"(?<![\w-])({words})(?![\w-])"
    negated = re.compile(r"\b(?:not|never|no|isn't|n't)\s+(?:very\s+|so\s+|too\s+|that\s+)?$",
                         re.I)

    def value(m: re.Match[str]) -> float:
        if negated.search(text[max(0, m.start(1) - 24):m.start(1)]):
            raise JudgeParseError(f"the level {m.group(1)!r} is negated", text)
        norm = re.sub(r"\s+", " ", m.group(1).lower())
        i = [w.lower() for w in levels].index(norm)
        return low + i * (high - low) / (len(levels) - 1)

    opening = re.match(rf"^[\s*:\"'`(\[]*{word}", text, re.I)
    if opening:
        if re.match(rf"\s*(?:or|to|/|-|and)\s*{word}", text[opening.end():], re.I):
            raise JudgeParseError("the answer hedges between levels", text)
        return ParsedScores({key: value(opening)})
    cue = list(re.finditer(rf"\blevel\b[^.\n]{{0,80}}?(?:\bis\b|:)[\s*\"'`(\[]*{word}", text,
                           re.I))
    if cue:
        return ParsedScores({key: value(cue[-1])})
    hits = list(re.finditer(word, text, re.I))
    distinct = {re.sub(r"\s+", " ", m.group(1).lower()) for m in hits}
    if len(distinct) == 1:
        return ParsedScores({key: value(hits[-1])})
    if not hits:
        raise JudgeParseError(f"no quality level ({', '.join(levels)}) found", text)
    raise JudgeParseError(f"several levels ({', '.join(sorted(distinct))}) and no "
                          "'level is ...' statement", text)



def level_target(score: float, *, lo: float, hi: float) -> str:
    """EditHF / Q-Align level word of ``score``, with a leading space: ``" good"``.

    The range ``[lo, hi]`` is cut into five equal bins named bad, poor, fair, good,
    excellent, lowest first (EditHF §4.2 textual learning; the bins of
    :func:`ieqa.human.mos.level_indices`: a score on an inner edge takes the upper level,
    ``hi`` is ``excellent``). EditHF bins each dimension over its own range over the whole
    dataset (:func:`score_ranges`), not over one batch and not over all dimensions pooled:
    with visual quality in [40, 90] and another dimension in [0, 100], a visual-quality 40
    is ``" bad"`` on its own range but ``" fair"`` on the pooled one. A score outside
    ``[lo, hi]`` or ``lo >= hi`` raises.

    The leading space is deliberate: the EPAIQA answer prefixes end without one
    (``"Harmony level is:"``, ``"The harmony of the edited image is"``), and BPE tokenizers
    spell the word after a space as one token (``"Ġgood"``), the one the level readout
    reads. Strip it if your prefix already ends with a space.
    """
    x = finite_number(score, "score")
    idx = int(level_indices([x], len(LEVEL_WORDS), lo=lo, hi=hi)[0])
    return " " + LEVEL_WORDS[idx]


def level_index(word: str) -> int:
    """Position of a level word in :data:`READOUT_LEVEL_WORDS`
    (``excellent`` = 0 … ``bad`` = 4), i.e. the class index of the five level logits the
    ``vlm-levels`` readout uses (for a cross-entropy over those five). Case and
    surrounding whitespace are ignored, so ``level_index(" good") == 1``."""
    norm = word.strip().lower() if isinstance(word, str) else None
    if norm not in READOUT_LEVEL_WORDS:
        raise TrainDataError(f"unknown level word {word!r}; expected one of "
                             f"{', '.join(READOUT_LEVEL_WORDS)}")
    return READOUT_LEVEL_WORDS.index(norm)
