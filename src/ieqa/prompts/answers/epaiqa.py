"""EPAIQA (seed 001) appendix E.3 stage-3 answers: ``The prompt completion is <completion>.
<CoT>. The harmony: <CoT>. The local naturalness: <CoT>. Therefore, the overall editing
quality level of the image is <level>``, with an early exit (``bad`` when the prompt is not
followed, ``poor`` when partly) — the writer :func:`epaiqa_answer` and the strict parser
:func:`parse_epaiqa`.

Completion levels (EPAIQA §3.2: 1 non-compliant, 2 partly compliant, 3 fully compliant) are
written ``not followed`` / ``partially followed`` / ``fully followed`` (also accepted:
``non-compliant``, ``partly-compliant``, ``fully compliant``, ``followed``, ``not
completed``, ``partially completed``, ``fully completed``). Sections:
``prompt_completion``, ``harmony``, ``local_naturalness``, ``overall``; scores:
``prompt_completion`` (1-3) and ``overall`` (bad=1 ... excellent=5), plus ``harmony`` /
``local_naturalness`` levels when their section states one. An early exit whose overall
level contradicts the rule, a full-completion answer missing the harmony or naturalness
section, or a missing overall level is a parse failure (``status="failed"``).
"""

from __future__ import annotations

import re
from typing import Any

from ieqa.data.dimensions import LEVEL_WORDS
from ieqa.prompts.answers._text import JudgeParseError
from ieqa.prompts.answers.critique import Critique
from ieqa.prompts.answers.levels import parse_level

__all__ = ["COMPLETION_WORDS", "EPAIQA_DIMENSIONS", "epaiqa_answer", "parse_epaiqa"]

#: canonical completion words, level 1 (not followed) to 3 (fully followed)
COMPLETION_WORDS: tuple[str, ...] = ("not followed", "partially followed", "fully followed")
#: the score columns an EPAIQA stage-3 answer fills
EPAIQA_DIMENSIONS: tuple[str, ...] = ("prompt_completion", "harmony", "local_naturalness",
                                      "overall")


_COMPLETION_ALIASES: dict[int, tuple[str, ...]] = {
    1: ("not followed", "not been followed", "non-compliant", "non compliant",
        "not compliant", "not completed", "not fulfilled", "no completion", "non-completion"),
    2: ("partially followed", "partly followed", "partly-compliant", "partly compliant",
        "partially compliant", "partially completed", "partly completed",
        "partial completion", "partially fulfilled"),
    3: ("fully followed", "followed", "fully compliant", "fully-compliant", "compliant",
        "fully completed", "completed", "full completion", "fully fulfilled"),
}
_COMPLETION_RE = re.compile(
    r"prompt\s+completion\s+(?:level\s+)?(?:is|:)\s*[:*\"'`\s]*("
    + "|".join(re.escape(a).replace(r"\ ", r"\s+") for a in
               sorted({a for v in _COMPLETION_ALIASES.values() for a in v}, key=len,
                      reverse=True))
    + r")(?![\w-])", re.I)
_HARMONY_RE = re.compile(r"\b(?:the\s+)?(?:overall\s+)?harmony\s*:", re.I)
_NATURAL_RE = re.compile(r"\b(?:the\s+)?local\s+naturalness\s*:", re.I)
_OVERALL_RE = re.compile(
    r"overall\s+(?:editing\s+)?quality\s+level(?:\s+of\s+the\s+(?:edited\s+)?image)?\s*"
    r"(?:is|:)\s*[:*\"'`\s]*(" + "|".join(LEVEL_WORDS) + r")(?![\w-])", re.I)
_OVERALL_CUE = re.compile(r"\btherefore\b|overall\s+(?:editing\s+)?quality\s+level", re.I)
_EARLY_OVERALL = {1: "bad", 2: "poor"}


def _completion_level(word: str) -> int:
    norm = re.sub(r"\s+", " ", word.lower())
    for level, aliases in _COMPLETION_ALIASES.items():
        if norm in aliases:
            return level
    raise AssertionError(norm)  # unreachable: the regex only matches aliases


def parse_epaiqa(text: Any) -> Critique:
    """Parse an EPAIQA stage-3 answer (see the module docstring).

    Reads the first ``prompt completion is <level>`` statement, the ``The harmony:`` and
    ``The local naturalness:`` sections (either order) and the last ``overall editing
    quality level of the image is <level>`` statement. Fails (``status="failed"``) on an
    empty answer, no completion statement, no overall level (e.g. a truncated answer), a
    full-completion answer without both analysis sections, or an early exit whose overall
    level breaks the rule (not followed -> bad, partly followed -> poor).
    """
    fmt = "epaiqa"
    if not isinstance(text, str) or not text.strip():
        return Critique(text if isinstance(text, str) else None, fmt, "failed",
                        error="the answer is empty")
    comp = _COMPLETION_RE.search(text)
    if comp is None:
        return Critique(text, fmt, "failed",
                        error="no 'The prompt completion is <not followed | partially followed "
                              "| fully followed>' statement")
    completion = _completion_level(comp.group(1))
    overall_hits = list(_OVERALL_RE.finditer(text))
    if not overall_hits:
        return Critique(text, fmt, "failed",
                        error="no 'the overall editing quality level of the image is <bad | "
                              "poor | fair | good | excellent>' statement (truncated answer?)")
    last = overall_hits[-1]
    overall_word = last.group(1).lower()
    # sections: completion CoT up to the first harmony/naturalness/overall cue
    marks: list[tuple[int, int, str]] = []
    h = _HARMONY_RE.search(text, comp.end())
    n = _NATURAL_RE.search(text, comp.end())
    for m, name in ((h, "harmony"), (n, "local_naturalness")):
        if m is not None and m.start() < last.start():
            marks.append((m.start(), m.end(), name))
    marks.sort()
    cue = _OVERALL_CUE.search(text, marks[-1][1] if marks else comp.end())
    overall_start = cue.start() if cue is not None and cue.start() <= last.start() else last.start()
    sections = {"prompt_completion": text[:(marks[0][0] if marks else overall_start)].strip()}
    for i, (_, end, name) in enumerate(marks):
        stop = marks[i + 1][0] if i + 1 < len(marks) else overall_start
        sections[name] = text[end:stop].strip()
    sections["overall"] = text[overall_start:].strip()
    levels = {"prompt_completion": COMPLETION_WORDS[completion - 1], "overall": overall_word}
    scores = {"prompt_completion": float(completion),
              "overall": float(LEVEL_WORDS.index(overall_word) + 1)}
    early = completion < 3
    if early:
        want = _EARLY_OVERALL[completion]
        if overall_word != want:
            return Critique(text, fmt, "failed", sections=sections,
                            error=f"the prompt is {COMPLETION_WORDS[completion - 1]} but the "
                                  f"overall level is {overall_word!r}; the format's early exit "
                                  f"gives {want!r}")
    else:
        missing = [s for s in ("harmony", "local_naturalness") if not sections.get(s)]
        if missing:
            return Critique(text, fmt, "failed", sections=sections,
                            error=f"the prompt is fully followed but the answer has no "
                                  f"{' or '.join(missing)} analysis ('The harmony: ...', "
                                  "'The local naturalness: ...')")
    for dim in ("harmony", "local_naturalness"):
        if sections.get(dim) and re.search(r"\blevel\b", sections[dim], re.I):
            try:
                got = parse_level(sections[dim], dim)
            except JudgeParseError:
                continue
            value = got.scores[dim]
            scores[dim] = value
            levels[dim] = LEVEL_WORDS[int(round(value)) - 1]
    return Critique(text, fmt, "ok", sections=sections, scores=scores, levels=levels,
                    early_exit=early)




def epaiqa_answer(completion: int, overall: str, *, completion_cot: str,
                  harmony_cot: str | None = None, naturalness_cot: str | None = None) -> str:
    """An answer in the EPAIQA stage-3 format (appendix E.3), the training target of
    stage 3. ``completion`` is 1-3; below 3 the answer exits early (the harmony and
    naturalness CoTs must be None and ``overall`` must be bad / poor). CoT pieces are
    sentences without the final period."""
    if completion not in (1, 2, 3):
        raise ValueError(f"completion must be 1, 2 or 3, got {completion!r}")
    if overall not in LEVEL_WORDS:
        raise ValueError(f"overall must be one of {', '.join(LEVEL_WORDS)}, got {overall!r}")
    head = f"The prompt completion is {COMPLETION_WORDS[completion - 1]}. {completion_cot}."
    tail = f" Therefore, the overall editing quality level of the image is {overall}."
    if completion < 3:
        if overall != _EARLY_OVERALL[completion] or harmony_cot or naturalness_cot:
            raise ValueError(f"a {COMPLETION_WORDS[completion - 1]} prompt exits early: overall "
                             f"{_EARLY_OVERALL[completion]!r}, no harmony/naturalness analysis")
        return head + tail
    if not harmony_cot or not naturalness_cot:
        raise ValueError("a fully followed prompt needs harmony_cot and naturalness_cot")
    return head + f" The harmony: {harmony_cot}. The local naturalness: {naturalness_cot}." + tail
