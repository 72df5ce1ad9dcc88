"""Reading scores out of generated judge answers — strictly.

Every parser returns what the answer states or raises :class:`JudgeParseError` (which
carries the offending text, truncated); none of them guesses, rescales or falls back to a
default number. Rules shared by all parsers:

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

:func:`parse_output` dispatches on a template's ``output`` kind.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ieqa.data.dimensions import CORE_DIMENSIONS, canonical_dimension, dimension_aliases
from ieqa.errors import IeqaError, UnknownDimensionError

__all__ = [
    "JudgeParseError", "ParsedScores", "LEVEL_WORDS", "VERDICTS", "extract_json",
    "parse_json_scores", "parse_viescore", "parse_text_score", "parse_level", "parse_verdict",
    "parse_critique", "parse_region", "parse_output",
]

#: Q-Align's five level words, worst to best (mapped evenly onto the scale, 1..5 by default).
LEVEL_WORDS: tuple[str, ...] = ("bad", "poor", "fair", "good", "excellent")
#: The normalised verdicts :func:`parse_verdict` returns.
VERDICTS: tuple[str, ...] = ("A>B", "B>A", "A=B=Good", "A=B=Bad", "A=B")

_MAX_JSON_CHARS = 50_000
_MAX_CANDIDATES = 32
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_FRACTION = re.compile(rf"\s*({_NUM})\s*(?:(?:/|\bout\s+of\b)\s*({_NUM}))?\s*", re.I)
_REASONING_KEYS = ("reasoning", "reason", "explanation", "rationale", "analysis", "comment")
_SCORE_WORDS = frozenset({"score", "scores", "rating", "ratings", "grade", "value"})
# parser-local labels judges write that the alias table does not know
_EXTRA_LABELS = {"instruction adherence": "instruction_alignment",
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
        self.text = _clip(text) if isinstance(text, str) else None
        shown = f"; answer: {self.text!r}" if self.text is not None else ""
        super().__init__(reason + shown)


def _clip(text: str, limit: int = 300) -> str:
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
def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise JudgeParseError(f"the answer is not text (got {type(text).__name__})")
    if not text.strip():
        raise JudgeParseError("the answer is empty", text)
    return text


def _squash(label: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", label.lower())


def _check_scale(scale: Sequence[float] | None) -> tuple[float, float] | None:
    if scale is None:
        return None
    low, high = (float(v) for v in scale)
    if not low < high:
        raise ValueError(f"scale must be (low, high) with low < high, got {scale!r}")
    return low, high


def _number(value: Any, scale: tuple[float, float] | None, what: str, text: str) -> float:
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
    return _in_scale(num, den, scale, what, text)


def _in_scale(num: float, den: float | None, scale: tuple[float, float] | None, what: str,
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


def _label_dimension(label: str) -> str | None:
    """Canonical dimension a free-text label names; ``""`` for a label ending in a score
    word that names no dimension ("Score", "I give it a score"); else ``None``.

    The longest run of words that is a known alias wins ("Overall quality" is overall,
    not visual quality); a tie between different dimensions is no match.
    """
    words = re.sub(r"[^0-9a-z]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", label).lower()).split()
    scored = bool(words) and words[-1] in _SCORE_WORDS
    while words and words[-1] in _SCORE_WORDS:
        words.pop()
    for size in range(len(words), 0, -1):
        found = set()
        for start in range(len(words) - size + 1):
            span = " ".join(words[start:start + size])
            dim = _EXTRA_LABELS.get(span)
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


def _key_dimension(key: str, wanted: Mapping[str, str]) -> str | None:
    """Canonical dimension of a JSON key among ``wanted`` (squashed alias -> dimension)."""
    squashed = _squash(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key))
    for suffix in ("scores", "score", "rating"):
        if squashed.endswith(suffix) and squashed != suffix:
            squashed = squashed[: -len(suffix)]
            break
    if squashed in wanted:
        return wanted[squashed]
    dim = _label_dimension(key)
    return dim if dim and dim in wanted.values() else None


_VALUE = re.compile(
    rf"[ \t]*\**[ \t]*(?::|=|\bis\b|\bof\b)[ \t]*\**[ \t]*(?P<num>{_NUM})(?![\d.]*\d)"
    rf"(?:[ \t]*(?:/|\bout\s+of\b)[ \t]*(?P<den>{_NUM}))?", re.I)
_LABEL = re.compile(r"(?<![A-Za-z])([A-Za-z][A-Za-z \t_&/'\-]{0,60}?)[ \t]*(?:\([^()\n]{0,24}\))?"
                    r"[ \t]*\**[ \t]*$")


def _statements(text: str) -> list[tuple[str | None, float, float | None, int]]:
    """``(dimension or "" for a bare score word or None, value, denominator, position)``
    for every "<label>: <number>" statement in ``text`` (label within 60 characters)."""
    out = []
    for m in _VALUE.finditer(text):
        window = text[max(0, m.start() - 100):m.start()]
        label = _LABEL.search(window)
        if label is None:
            continue
        den = float(m.group("den")) if m.group("den") else None
        out.append((_label_dimension(label.group(1)), float(m.group("num")), den, m.start()))
    return out


# ----------------------------------------------------------------------------- JSON
_FENCE = re.compile(r"```[ \t]*(?:json5?|javascript|js|python)?[ \t]*\n?(.*?)```", re.S | re.I)


def _balanced(text: str, start: int) -> str | None:
    """The ``{...}`` starting at ``start`` with balanced braces outside strings."""
    depth, quote, escaped = 0, "", False
    for i in range(start, min(len(text), start + _MAX_JSON_CHARS)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            # an apostrophe inside a word is not a quote ("it's")
            if ch == "'" and i > 0 and text[i - 1].isalnum():
                continue
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def _outside_strings(s: str, fn: Any) -> str:
    """Apply ``fn`` to the parts of ``s`` outside double-quoted strings."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', s)
    return "".join(p if i % 2 else fn(p) for i, p in enumerate(parts))


def _loads_lenient(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    fixed = candidate.replace("\u201c", '"').replace("\u201d", '"')
    fixed = fixed.replace("\u2018", "'").replace("\u2019", "'")
    no_commas = _outside_strings(fixed, lambda p: re.sub(r",(\s*[}\]])", r"\1", p))
    try:
        return json.loads(no_commas)
    except (ValueError, RecursionError):
        pass
    # Python-literal style ({'score': [7, 8]}, True/None); literal_eval runs no code
    pythonic = _outside_strings(fixed, lambda p: re.sub(
        r"\b(true|false|null)\b", lambda m: {"true": "True", "false": "False",
                                             "null": "None"}[m.group(1)], p))
    try:
        return ast.literal_eval(pythonic)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``.

    Looks in fenced code blocks first, then anywhere in the text (surrounding prose is
    ignored). Tolerates trailing commas, single-quoted strings, Python literals
    (``True``/``None``) and typographic quotes. Raises :class:`JudgeParseError` when no
    object parses (e.g. truncated JSON).
    """
    text = _require_text(text)
    pools = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    tried = 0
    for pool in pools:
        start = pool.find("{")
        while start != -1 and tried < _MAX_CANDIDATES:
            tried += 1
            candidate = _balanced(pool, start)
            if candidate is not None:
                obj = _loads_lenient(candidate)
                if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
                    return obj
            start = pool.find("{", start + 1)
    raise JudgeParseError("no JSON object found in the answer", text)


def _get(obj: Mapping[str, Any], names: Sequence[str]) -> Any:
    lowered = {k.lower().strip(): v for k, v in obj.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def _reasoning(obj: Mapping[str, Any]) -> str | None:
    value = _get(obj, _REASONING_KEYS)
    return value.strip() if isinstance(value, str) and value.strip() else None


def parse_json_scores(text: str, dimensions: Sequence[str],
                      scale: Sequence[float] | None = None) -> ParsedScores:
    """Scores for ``dimensions`` from a JSON answer such as
    ``{"visual_quality": 4, "instruction_alignment": "3.5", "reasoning": "..."}``.

    Keys may be any alias (``"SC"``, ``"Visual Quality"``, ``"visualQuality"``,
    ``"visual_quality_score"``); values may be nested (``{"visual_quality": {"score": 4}}``
    or ``{"scores": {...}}``). With one requested dimension a bare ``"score"`` key also
    counts. Keys of other dimensions are ignored. Raises :class:`JudgeParseError` for
    missing dimensions (all listed), non-numbers, out-of-scale values and conflicting keys.
    """
    obj = extract_json(text)
    dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions))
    if not dims:
        raise ValueError("dimensions is empty: name the dimensions to read")
    rng = _check_scale(scale)
    wanted = {_squash(a): d for d in dims for a in dimension_aliases(d)}
    wanted.update({_squash(k): v for k, v in _EXTRA_LABELS.items() if v in dims})
    items = list(obj.items())
    for nest in ("scores", "score", "ratings", "evaluation"):
        inner = _get(obj, (nest,))
        if isinstance(inner, Mapping):
            items.extend(inner.items())
    found: dict[str, float] = {}
    for key, value in items:
        if not isinstance(key, str) or key.lower().strip() in _REASONING_KEYS:
            continue
        dim = _key_dimension(key, wanted)
        if dim is None and len(dims) == 1 and key.lower().strip() in ("score", "rating"):
            dim = dims[0]
        if dim is None:
            continue
        if isinstance(value, Mapping):
            value = _get(value, ("score", "value", "rating"))
            if value is None:
                continue
        num = _number(value, rng, f"key {key!r}", text)
        if dim in found and found[dim] != num:
            raise JudgeParseError(f"{dim} is given twice with different values "
                                  f"({found[dim]:g} and {num:g})", text)
        found[dim] = num
    missing = [d for d in dims if d not in found]
    if missing:
        raise JudgeParseError(f"no score for {', '.join(missing)} in the JSON answer "
                              f"(keys: {', '.join(map(str, obj))})", text)
    return ParsedScores({d: found[d] for d in dims}, {}, _reasoning(obj))


_VIE_LIST = re.compile(r"[\"']?score[\"']?\s*[:=]\s*\[([^\[\]]*)\]", re.I)


def parse_viescore(text: str, n_scores: int | None = None, scale: Sequence[float] = (0, 10),
                   *, dimension: str = "overall") -> ParsedScores:
    """A VIEScore answer ``{"score": [s1, s2, ...], "reasoning": "..."}``.

    The sub-scores are kept in ``sub_scores[dimension]`` and the dimension's value is their
    minimum, as VIEScore combines them (SC = min of the SC sub-scores, PQ likewise).
    ``n_scores`` (when given) is the required number of sub-scores. Without a JSON object, a
    ``score: [..]`` list in the text is read. Raises :class:`JudgeParseError` otherwise.
    """
    text = _require_text(text)
    dim = canonical_dimension(dimension)
    rng = _check_scale(scale)
    reasoning = None
    try:
        obj = extract_json(text)
    except JudgeParseError:
        m = _VIE_LIST.search(text)
        if not m:
            raise JudgeParseError("no VIEScore answer ({\"score\": [...]}) found", text) from None
        raw: Any = [v for v in (s.strip().strip("\"'") for s in m.group(1).split(",")) if v]
    else:
        raw = _get(obj, ("score", "scores"))
        reasoning = _reasoning(obj)
        if raw is None:
            raise JudgeParseError("the JSON answer has no 'score' list", text)
        if isinstance(raw, str) and raw.strip().startswith("["):
            parsed = _loads_lenient(raw.strip())
            raw = parsed if isinstance(parsed, list) else raw
    if isinstance(raw, (int, float, str)) and not isinstance(raw, bool):
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise JudgeParseError(f"'score' must be a non-empty list of numbers, got {raw!r}", text)
    values = [_number(v, rng, f"sub-score {i + 1}", text) for i, v in enumerate(raw)]
    if n_scores is not None and len(values) != n_scores:
        raise JudgeParseError(f"expected {n_scores} sub-scores, got {len(values)}", text)
    return ParsedScores({dim: min(values)}, {dim: values}, reasoning)


# ----------------------------------------------------------------------- text answers
_LEADING = re.compile(rf"^[\s*\"'`]*({_NUM})(?![\d.]*\d)(?:\s*(?:/|\bout\s+of\b)\s*({_NUM}))?"
                      r"(?![\w.]*[A-Za-z])", re.I)


def parse_text_score(text: str, dimension: str | None = None,
                     scale: Sequence[float] | None = None) -> ParsedScores:
    """One score written as text: ``"Visual quality: 4/5"``, ``"score: 3.75"``,
    ``"Editing fidelity score: 3.75"``, ``"The quality score is 72.50"`` or a bare number
    (the continuation of an answer prefix such as ``"Visual quality score: "``).

    Statements labelled with ``dimension`` (any alias) are preferred, then unlabelled
    ``score``/``rating`` statements, then a number opening the answer; the last statement
    of the preferred kind wins. Without ``dimension`` the result is keyed by the single
    dimension the answer names, or ``"overall"`` for an unlabelled score. Raises
    :class:`JudgeParseError` when nothing matches or the value is off the scale.
    """
    text = _require_text(text)
    rng = _check_scale(scale)
    dim = canonical_dimension(dimension) if dimension is not None else None
    stated = _statements(text)
    named = [s for s in stated if s[0] and (dim is None or s[0] == dim)]
    if dim is None and len({s[0] for s in named}) > 1:
        raise JudgeParseError("the answer scores several dimensions "
                              f"({', '.join(sorted({s[0] for s in named}))}); name one", text)
    pick = named or [s for s in stated if s[0] == ""]
    if pick:
        key, num, den, _ = pick[-1]
        key = key or dim or "overall"
        return ParsedScores({key: _in_scale(num, den, rng, key, text)})
    m = _LEADING.match(text)
    if m:
        key = dim or "overall"
        den = float(m.group(2)) if m.group(2) else None
        return ParsedScores({key: _in_scale(float(m.group(1)), den, rng, key, text)})
    what = f"{dim} score" if dim else "score"
    raise JudgeParseError(f"no {what} found (expected e.g. 'Score: 4' or a number)", text)


def parse_level(text: str, dimension: str | None = None, scale: Sequence[float] = (1, 5),
                levels: Sequence[str] = LEVEL_WORDS) -> ParsedScores:
    """A quality level word (``bad``/``poor``/``fair``/``good``/``excellent``) as a number:
    the levels, worst first, map evenly onto ``scale`` (bad=1 ... excellent=5).

    Reads, in order: a level word opening the answer (the continuation of "... is"), the
    last "level ... is <word>" statement, or the only level word in the answer. A negated
    level ("not good") or several different level words without a level statement raise
    :class:`JudgeParseError`. The result is keyed by ``dimension`` (default ``overall``).
    """
    text = _require_text(text)
    low, high = _check_scale(scale) or (1.0, 5.0)
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


_VERDICT = re.compile(r"\[\[?\s*([AB])\s*(>>|>|<<|<|=)\s*([AB])\s*(?:=\s*(good|bad)\s*)?\]\]?",
                      re.I)
_LIST_GAP = re.compile(r"(?:[\s,;/|.:]|\bor\b|\band\b|\([^()\n]{0,40}\))*", re.I)


def parse_verdict(text: str) -> str:
    """A pairwise verdict: one of ``"A>B"``, ``"B>A"``, ``"A=B=Good"``, ``"A=B=Bad"``,
    ``"A=B"`` (a tie of unstated kind).

    Accepts GenAI-Bench's ``[[A>B]]`` forms, ``[[A>>B]]`` (= ``A>B``), ``[[B<A]]``,
    single brackets and any case. When the answer holds several verdicts, runs of
    different verdicts separated only by commas/"or" (an echoed option list) are ignored,
    a verdict preceded by the word "verdict" is preferred, and otherwise the **last**
    verdict wins (the prompts ask for the final verdict on the last line). Raises
    :class:`JudgeParseError` when none remains.
    """
    text = _require_text(text)
    found: list[tuple[str, int, int]] = []
    for m in _VERDICT.finditer(text):
        left, op, right, kind = m.group(1).upper(), m.group(2), m.group(3).upper(), m.group(4)
        if left == right or (kind and op != "="):
            continue
        if op == "=":
            verdict = f"A=B={kind.capitalize()}" if kind else "A=B"
        else:
            winner = left if op.startswith(">") else right
            verdict = "A>B" if winner == "A" else "B>A"
        found.append((verdict, m.start(), m.end()))
    # drop echoed option lists: adjacent verdicts joined by separators only
    keep: list[tuple[str, int, int]] = []
    run: list[tuple[str, int, int]] = []
    for item in [*found, None]:
        if item is not None and run and _LIST_GAP.fullmatch(text[run[-1][2]:item[1]]):
            run.append(item)
            continue
        if run and len({v for v, _, _ in run}) == 1:
            keep.extend(run)
        run = [item] if item is not None else []
    if not keep:
        why = "only a list of options" if found else "no verdict such as [[A>B]]"
        raise JudgeParseError(f"{why} found in the answer", text)
    cued = [v for v in keep if re.search(r"verdict\W{0,12}\w{0,6}\W{0,6}$",
                                         text[max(0, v[1] - 30):v[1]], re.I)]
    return (cued or keep)[-1][0]


_FINAL = re.compile(r"\[\s*final\s+assessment\s*\]|^[#>*\s-]*final\s+assessment\b\s*\**\s*:?",
                    re.I | re.M)


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
    text = _require_text(text)
    rng = _check_scale(scale)
    dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions))
    heads = list(_FINAL.finditer(text))
    if heads:
        reasoning = text[:heads[-1].start()].strip() or None
        stated = _statements(text[heads[-1].end():])
        stated = [s for i, s in enumerate(stated) if s[0] not in {t[0] for t in stated[:i]}]
    else:
        reasoning = text.strip()
        stated = _statements(text)
    found: dict[str, float] = {}
    for dim, num, den, _ in stated:
        if dim in dims:
            found[dim] = _in_scale(num, den, rng, dim, text)
    missing = [d for d in dims if d not in found]
    if missing:
        where = "after [Final Assessment]" if heads else "in the answer"
        raise JudgeParseError(f"no score for {', '.join(missing)} {where}", text)
    return ParsedScores({d: found[d] for d in dims}, {}, reasoning)


_REGION = re.compile(rf"[(\[<{{]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*"
                     rf"[)\]>}}]")
_NUMBER_RUN = re.compile(rf"(?<![\d.]){_NUM}(?:\s*,\s*{_NUM})+")


def parse_region(text: str) -> tuple[float, float, float, float]:
    """EPAIQA's edit region ``(x, y, w, h)``: centre and size as fractions of the image,
    each in [0, 1], written ``(0.42, 0.55, 0.30, 0.25)`` (or in ``<>``/``[]``, or bare).

    Raises :class:`JudgeParseError` when no four-number group is found or a value lies
    outside [0, 1] (percentages or pixels are not converted).
    """
    text = _require_text(text)
    m = _REGION.search(text)
    if m:
        values = tuple(float(g) for g in m.groups())
    else:
        runs = [re.split(r"\s*,\s*", r.group()) for r in _NUMBER_RUN.finditer(text)]
        runs = [r for r in runs if len(r) == 4]
        if not runs:
            raise JudgeParseError("no region (x, y, w, h) found", text)
        values = tuple(float(v) for v in runs[0])
    for name, v in zip(("x", "y", "w", "h"), values, strict=True):
        _in_scale(v, None, (0.0, 1.0), f"region {name}", text)
    return values  # type: ignore[return-value]


# ---------------------------------------------------------------------------- dispatch
def parse_output(kind: Any, text: str, *, dimensions: Sequence[str] | None = None,
                 dimension: str | None = None, scale: Sequence[float] | None = None,
                 n_scores: int | None = None,
                 levels: Sequence[str] = LEVEL_WORDS) -> ParsedScores | str:
    """Parse ``text`` the way output ``kind`` says (a
    :class:`~ieqa.prompts.PromptTemplate` works too: its output, scale, dimensions and
    sub-score count become the defaults).

    ``json_scores``/``critique`` read every dimension in ``dimensions`` (critique: the
    core three by default); ``text_score``/``digits``/``levels``/``viescore_json`` read
    ``dimension`` or each of ``dimensions``. ``verdict`` returns the verdict string and
    ``text`` the stripped answer. Raises :class:`JudgeParseError` for unreadable answers
    and ``ValueError`` for an unknown kind.
    """
    if not isinstance(kind, str):
        template = kind
        kind = template.output
        scale = scale if scale is not None else template.scale
        if not dimensions and dimension is None and template.dimensions:
            dimensions = list(template.dimensions)
        if n_scores is None and getattr(template, "sub_scores", ()):
            n_scores = len(template.sub_scores)
    dims = list(dimensions) if dimensions else ([dimension] if dimension is not None else [])
    if kind == "json_scores":
        if not dims:
            raise ValueError("json_scores needs the dimensions to read (dimensions=[...])")
        return parse_json_scores(text, dims, scale)
    if kind == "critique":
        return parse_critique(text, dims or CORE_DIMENSIONS, scale)
    if kind == "verdict":
        return parse_verdict(text)
    if kind == "text":
        return _require_text(text).strip()
    if kind == "viescore_json":
        return parse_viescore(text, n_scores, scale if scale is not None else (0, 10),
                              dimension=dims[0] if dims else "overall")
    if kind in ("text_score", "digits", "levels"):
        parts = []
        for d in dims or [None]:
            if kind == "levels":
                parts.append(parse_level(text, d, scale if scale is not None else (1, 5), levels))
            else:
                parts.append(parse_text_score(text, d, scale))
        return ParsedScores({k: v for p in parts for k, v in p.scores.items()})
    raise ValueError(f"unknown output kind {kind!r}; expected json_scores, viescore_json, "
                     "levels, digits, verdict, critique, text_score or text")
