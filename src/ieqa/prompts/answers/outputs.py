""":func:`parse_output`: read an answer the way a template's ``output`` kind says, with the
strict parser of that answer format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ieqa.data.dimensions import CORE_DIMENSIONS, LEVEL_WORDS
from ieqa.prompts.answers._text import ParsedScores, require_text
from ieqa.prompts.answers.levels import parse_level
from ieqa.prompts.answers.reasonedit import parse_critique
from ieqa.prompts.answers.scores import parse_json_scores, parse_text_score, parse_viescore
from ieqa.prompts.answers.verdict import parse_verdict

__all__ = ["parse_output"]


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
        return require_text(text).strip()
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
