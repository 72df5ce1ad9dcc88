"""Critique formats and their parsers: ReasonEdit's and EPAIQA stage 3's.

Two structured explanation formats are supported (:data:`FORMATS`):

``reasonedit`` (ReasonEdit, seed 004, §3.2.1 and appendix F.1; prompt template
``reasonedit-critique``)
    Per-dimension analysis sections, then a ``[Final Assessment]`` heading followed by one
    ``Name: score`` line per dimension::

        1. Visual quality: the cat's fur is sharp, no artifacts ...
        2. Instruction alignment: the hat was added as asked ...
        3. Content preservation: the background is unchanged ...
        [Final Assessment]
        Visual Quality: 4.5
        Instruction Alignment: 5
        Content Preservation: 4

    Sections are ``visual_quality``, ``instruction_alignment``, ``content_preservation``
    (the analysis text of each, when the answer labels it) and ``assessment`` (the text
    after the heading). Scores: the three dimensions on the template's 1-5 scale; all
    three are required.

``epaiqa`` (EPAIQA, seed 001, appendix E.3; prompt template ``epaiqa-overall``)
    ``The prompt completion is <completion>. <CoT>. The harmony: <CoT>. The local
    naturalness: <CoT>. Therefore, the overall editing quality level of the image is
    <level>``. When the prompt is not (or only partly) followed the answer exits early: the
    completion analysis, then the overall level directly (``bad`` when not followed,
    ``poor`` when partly followed), with no harmony or naturalness sections.

    Completion levels (EPAIQA §3.2: 1 non-compliant, 2 partly compliant, 3 fully
    compliant) are written ``not followed`` / ``partially followed`` / ``fully followed``
    (also accepted: ``non-compliant``, ``partly-compliant``, ``fully compliant``,
    ``followed``, ``not completed``, ``partially completed``, ``fully completed``).
    Sections: ``prompt_completion``, ``harmony``, ``local_naturalness``, ``overall``;
    scores: ``prompt_completion`` (1-3) and ``overall`` (bad=1 ... excellent=5), plus
    ``harmony`` / ``local_naturalness`` levels when their section states one ("... harmony
    level is good"). An early exit whose overall level contradicts the rule (not followed
    but not ``bad``), a full-completion answer missing the harmony or naturalness section,
    or a missing overall level is a parse failure.

An answer that does not parse is a :class:`Critique` with ``status="failed"`` and the
reason in ``error``, its text kept; never a guessed value. :func:`format_stability` is the
share of answers that parse (ReasonEdit Table 12's "format stability").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ieqa.errors import IeqaError
from ieqa.scorers.vlm.parsing import JudgeParseError, parse_critique, parse_level

__all__ = ["FORMATS", "FORMAT_TEMPLATES", "COMPLETION_WORDS", "Critique", "CritiqueFormatError",
           "parse_explanation", "parse_reasonedit", "parse_epaiqa", "format_stability",
           "epaiqa_answer", "format_dimensions"]

#: the critique formats :func:`parse_explanation` reads
FORMATS: tuple[str, ...] = ("reasonedit", "epaiqa")
#: the prompt template that asks for each format
FORMAT_TEMPLATES: dict[str, str] = {"reasonedit": "reasonedit-critique",
                                    "epaiqa": "epaiqa-overall"}
#: canonical completion words, level 1 (not followed) to 3 (fully followed)
COMPLETION_WORDS: tuple[str, ...] = ("not followed", "partially followed", "fully followed")
_LEVELS = ("bad", "poor", "fair", "good", "excellent")
_REASONEDIT_DIMS = ("visual_quality", "instruction_alignment", "content_preservation")
_EPAIQA_DIMS = ("prompt_completion", "harmony", "local_naturalness", "overall")


class CritiqueFormatError(IeqaError, ValueError):
    """An unknown critique format was asked for."""


def format_dimensions(fmt: str) -> tuple[str, ...]:
    """The score columns a format's critiques fill (``reasonedit``: the core three;
    ``epaiqa``: prompt_completion, harmony, local_naturalness, overall)."""
    _check_format(fmt)
    return _REASONEDIT_DIMS if fmt == "reasonedit" else _EPAIQA_DIMS


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise CritiqueFormatError(f"unknown critique format {fmt!r}; choose one of "
                                  f"{', '.join(FORMATS)}")


@dataclass
class Critique:
    """One generated explanation and what its parser read from it.

    Attributes:
        text: the answer as generated (kept when it does not parse).
        format: ``reasonedit`` or ``epaiqa``.
        status: ``ok`` (parsed), ``failed`` (the text does not follow the format: see
            ``error``) or ``error`` (no answer was generated: see ``error``).
        sections: section name -> its text (see the module docstring for the names).
        scores: parsed scores / levels as numbers (dimension -> value); empty unless ok.
        levels: the level words behind ``scores`` for the epaiqa format
            (``prompt_completion`` -> ``"fully followed"``, ``overall`` -> ``"good"``).
        early_exit: epaiqa: the answer stopped after the completion analysis.
        error: why it did not parse, or why there is no answer.
        id: the sample id, when it came from a sample.
    """

    text: str | None
    format: str
    status: str = "ok"
    sections: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    levels: dict[str, str] = field(default_factory=dict)
    early_exit: bool = False
    error: str | None = None
    id: str | None = None

    @property
    def ok(self) -> bool:
        """True when the critique parsed."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


# ------------------------------------------------------------------------------ reasonedit
_FINAL = re.compile(r"\[\s*final\s+assessment\s*\]|^[#>*\s-]*final\s+assessment\b\s*\**\s*:?",
                    re.I | re.M)
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

    Scores are read with :func:`ieqa.scorers.vlm.parsing.parse_critique` (all three
    dimensions after the last ``[Final Assessment]``, each inside ``scale``); a missing
    heading, a missing or out-of-scale score, or an empty answer gives ``status="failed"``.
    A truncated answer (cut before the last score line) fails the same way.
    """
    fmt = "reasonedit"
    if not isinstance(text, str) or not text.strip():
        return Critique(text if isinstance(text, str) else None, fmt, "failed",
                        error="the answer is empty")
    heads = list(_FINAL.finditer(text))
    if not heads:
        return Critique(text, fmt, "failed",
                        error="no [Final Assessment] heading (the answer must end with "
                              "'[Final Assessment]' and one 'Name: score' line per dimension)")
    try:
        parsed = parse_critique(text, _REASONEDIT_DIMS, scale)
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


# -------------------------------------------------------------------------------- epaiqa
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
    r"(?:is|:)\s*[:*\"'`\s]*(" + "|".join(_LEVELS) + r")(?![\w-])", re.I)
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
              "overall": float(_LEVELS.index(overall_word) + 1)}
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
            levels[dim] = _LEVELS[int(round(value)) - 1]
    return Critique(text, fmt, "ok", sections=sections, scores=scores, levels=levels,
                    early_exit=early)


# ------------------------------------------------------------------------------- shared
def parse_explanation(text: Any, fmt: str, **options: Any) -> Critique:
    """Parse ``text`` as a critique in format ``fmt`` (``reasonedit`` or ``epaiqa``);
    ``options`` go to the format's parser (``scale=`` for reasonedit). Never raises for a
    bad answer: it comes back with ``status="failed"``."""
    _check_format(fmt)
    if fmt == "reasonedit":
        return parse_reasonedit(text, **options)
    return parse_epaiqa(text)


def format_stability(critiques: Iterable[Critique | Mapping[str, Any]]) -> float:
    """Share of critiques that parse (ReasonEdit Table 12's "format stability"), in [0, 1].

    Critiques with ``status="error"`` (no answer was generated) are left out: they say
    nothing about the format. Accepts :class:`Critique` objects or rows with a
    ``parse_status`` / ``status`` key. Raises ``ValueError`` when none has an answer.
    """
    n = ok = 0
    for c in critiques:
        status = c.status if isinstance(c, Critique) else (c.get("parse_status")
                                                           or c.get("status"))
        if status == "error" or status is None:
            continue
        n += 1
        ok += status == "ok"
    if n == 0:
        raise ValueError("no generated critique to rate: every row is missing or errored")
    return ok / n


def epaiqa_answer(completion: int, overall: str, *, completion_cot: str,
                  harmony_cot: str | None = None, naturalness_cot: str | None = None) -> str:
    """An answer in the EPAIQA stage-3 format (appendix E.3), the training target of
    stage 3. ``completion`` is 1-3; below 3 the answer exits early (the harmony and
    naturalness CoTs must be None and ``overall`` must be bad / poor). CoT pieces are
    sentences without the final period."""
    if completion not in (1, 2, 3):
        raise ValueError(f"completion must be 1, 2 or 3, got {completion!r}")
    if overall not in _LEVELS:
        raise ValueError(f"overall must be one of {', '.join(_LEVELS)}, got {overall!r}")
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
