"""The explanation formats ``ieqa explain`` reads (:data:`FORMATS`): ``reasonedit``
(:mod:`ieqa.prompts.answers.reasonedit`) and ``epaiqa``
(:mod:`ieqa.prompts.answers.epaiqa`), and :func:`parse_explanation`, which picks the parser.

An answer that does not parse is a :class:`~ieqa.prompts.answers.critique.Critique` with
``status="failed"`` and the reason in ``error``, its text kept; never a guessed value.
"""

from __future__ import annotations

from typing import Any

from ieqa.errors import IeqaError
from ieqa.prompts.answers.critique import Critique
from ieqa.prompts.answers.epaiqa import EPAIQA_DIMENSIONS, parse_epaiqa
from ieqa.prompts.answers.reasonedit import REASONEDIT_DIMENSIONS, parse_reasonedit

__all__ = ["FORMATS", "FORMAT_TEMPLATES", "CritiqueFormatError", "format_dimensions",
           "parse_explanation"]


#: the critique formats :func:`parse_explanation` reads
FORMATS: tuple[str, ...] = ("reasonedit", "epaiqa")
#: the prompt template that asks for each format
FORMAT_TEMPLATES: dict[str, str] = {"reasonedit": "reasonedit-critique",
                                    "epaiqa": "epaiqa-overall"}
#: canonical completion words, level 1 (not followed) to 3 (fully followed)


class CritiqueFormatError(IeqaError, ValueError):
    """An unknown critique format was asked for."""


def format_dimensions(fmt: str) -> tuple[str, ...]:
    """The score columns a format's critiques fill (``reasonedit``: the core three;
    ``epaiqa``: prompt_completion, harmony, local_naturalness, overall)."""
    _check_format(fmt)
    return REASONEDIT_DIMENSIONS if fmt == "reasonedit" else EPAIQA_DIMENSIONS


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise CritiqueFormatError(f"unknown critique format {fmt!r}; choose one of "
                                  f"{', '.join(FORMATS)}")



def parse_explanation(text: Any, fmt: str, **options: Any) -> Critique:
    """Parse ``text`` as a critique in format ``fmt`` (``reasonedit`` or ``epaiqa``);
    ``options`` go to the format's parser (``scale=`` for reasonedit). Never raises for a
    bad answer: it comes back with ``status="failed"``."""
    _check_format(fmt)
    if fmt == "reasonedit":
        return parse_reasonedit(text, **options)
    return parse_epaiqa(text)
