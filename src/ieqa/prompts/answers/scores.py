"""Scores stated in an answer: a JSON object (``json_scores``), VIEScore's score list
(``viescore_json``) and a free-text ``Name: score`` statement (``text_score``).

Strict parsers (rules in :mod:`ieqa.prompts.answers._text`): each returns what the answer
states or raises :class:`~ieqa.prompts.answers.JudgeParseError`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ieqa.data.dimensions import canonical_dimension, dimension_aliases
from ieqa.prompts.answers._text import (
    EXTRA_LABELS,
    NUM,
    JudgeParseError,
    ParsedScores,
    check_scale,
    in_scale,
    key_dimension,
    number,
    require_text,
    squash,
    statements,
)

__all__ = ["extract_json", "parse_json_scores", "parse_text_score", "parse_viescore"]

_MAX_JSON_CHARS = 50_000
_MAX_CANDIDATES = 32
_REASONING_KEYS = ("reasoning", "reason", "explanation", "rationale", "analysis", "comment")


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
    text = require_text(text)
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
    rng = check_scale(scale)
    wanted = {squash(a): d for d in dims for a in dimension_aliases(d)}
    wanted.update({squash(k): v for k, v in EXTRA_LABELS.items() if v in dims})
    items = list(obj.items())
    for nest in ("scores", "score", "ratings", "evaluation"):
        inner = _get(obj, (nest,))
        if isinstance(inner, Mapping):
            items.extend(inner.items())
    found: dict[str, float] = {}
    for key, value in items:
        if not isinstance(key, str) or key.lower().strip() in _REASONING_KEYS:
            continue
        dim = key_dimension(key, wanted)
        if dim is None and len(dims) == 1 and key.lower().strip() in ("score", "rating"):
            dim = dims[0]
        if dim is None:
            continue
        if isinstance(value, Mapping):
            value = _get(value, ("score", "value", "rating"))
            if value is None:
                continue
        num = number(value, rng, f"key {key!r}", text)
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
    text = require_text(text)
    dim = canonical_dimension(dimension)
    rng = check_scale(scale)
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
    values = [number(v, rng, f"sub-score {i + 1}", text) for i, v in enumerate(raw)]
    if n_scores is not None and len(values) != n_scores:
        raise JudgeParseError(f"expected {n_scores} sub-scores, got {len(values)}", text)
    return ParsedScores({dim: min(values)}, {dim: values}, reasoning)


# ----------------------------------------------------------------------- text answers
_LEADING = re.compile(rf"^[\s*\"'`]*({NUM})(?![\d.]*\d)(?:\s*(?:/|\bout\s+of\b)\s*({NUM}))?"
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
    text = require_text(text)
    rng = check_scale(scale)
    dim = canonical_dimension(dimension) if dimension is not None else None
    stated = statements(text)
    named = [s for s in stated if s[0] and (dim is None or s[0] == dim)]
    if dim is None and len({s[0] for s in named}) > 1:
        raise JudgeParseError("the answer scores several dimensions "
                              f"({', '.join(sorted({s[0] for s in named}))}); name one", text)
    pick = named or [s for s in stated if s[0] == ""]
    if pick:
        key, num, den, _ = pick[-1]
        key = key or dim or "overall"
        return ParsedScores({key: in_scale(num, den, rng, key, text)})
    m = _LEADING.match(text)
    if m:
        key = dim or "overall"
        den = float(m.group(2)) if m.group(2) else None
        return ParsedScores({key: in_scale(float(m.group(1)), den, rng, key, text)})
    what = f"{dim} score" if dim else "score"
    raise JudgeParseError(f"no {what} found (expected e.g. 'Score: 4' or a number)", text)
