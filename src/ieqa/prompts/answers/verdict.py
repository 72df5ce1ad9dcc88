"""Pairwise verdicts (``[[A>B]]`` ...): every reading of a judge's verdict, with
:func:`write_verdict` writing one back.

* :func:`parse_verdict` — ieqa's reading (single or double brackets, ``B<A``, echoed option
  lists left out, a verdict cued by "verdict" preferred); raises when there is none.
* :func:`genai_bench_verdict` — GenAI-Bench's re-parse of a judge's full response, the
  reading its ``accuracy_reparsed`` protocol states: the last *double*-bracketed verdict,
  spaces and case ignored; None when there is none (counted wrong, never guessed).

Both return one of :data:`VERDICTS` (defined in :mod:`ieqa.metrics.preference`, whose
GenAI-Bench accuracy takes them).
"""

from __future__ import annotations

import re

from ieqa.metrics.preference import VERDICTS
from ieqa.prompts.answers._text import JudgeParseError, require_text

__all__ = ["VERDICTS", "genai_bench_verdict", "parse_verdict", "write_verdict"]

_GENAI_VERDICT = re.compile(
    r"\[\[\s*(A\s*>>?\s*B|B\s*>>?\s*A|A\s*=\s*B\s*=\s*good|A\s*=\s*B\s*=\s*bad|A\s*=\s*B)\s*\]\]",
    re.IGNORECASE,
)


def genai_bench_verdict(text: str | None) -> str | None:
    """GenAI-Bench's re-parse: the last double-bracketed verdict in a judge's ``text``,
    normalised to one of :data:`VERDICTS`; ``None`` when the text holds none (an unparsed
    answer — never replaced by a guess).

    Accepts ``[[A>B]]``, ``[[A>>B]]`` (-> ``"A>B"``), ``[[B>A]]``, ``[[B>>A]]``,
    ``[[A=B=Good]]``, ``[[A=B=Bad]]``, ``[[A=B]]``; spaces inside and letter case are ignored.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"text must be a str or None, got {type(text).__name__}")
    matches = _GENAI_VERDICT.findall(text)
    if not matches:
        return None
    v = re.sub(r"\s+", "", matches[-1]).upper().replace(">>", ">")
    if v.endswith("GOOD"):
        return "A=B=Good"
    if v.endswith("BAD"):
        return "A=B=Bad"
    return v


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
    text = require_text(text)
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



def write_verdict(verdict: str) -> str:
    """The verdict as a judge writes it (``"[[A>B]]"``); ``verdict`` is one of
    :data:`VERDICTS`. :func:`parse_verdict` reads it back."""
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}; expected one of {', '.join(VERDICTS)}")
    return f"[[{verdict}]]"
