"""A parsed explanation: :class:`Critique` (what an explanation parser read from one answer,
or why it could not), and :func:`format_stability`, the share of answers that parse
(ReasonEdit Table 12's "format stability").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Critique", "format_stability"]


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
