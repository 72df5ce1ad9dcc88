"""FDMPO's optimiser answers: a metric definition, tagged ``<definition>…</definition>`` or
bare (:func:`parse_definition`), and the form two definitions are compared in
(:func:`normalise_definition`). The optimiser's messages are :mod:`ieqa.optimize.messages`."""

from __future__ import annotations

import re

__all__ = ["normalise_definition", "parse_definition"]

_TAGGED = re.compile(r"<definition>(.*?)(?:</definition>|$)", re.S | re.I)


def parse_definition(answer: str) -> str:
    """The definition in an optimiser answer: the text between ``<definition>`` and
    ``</definition>`` when the tag is there, else the whole answer; surrounding
    whitespace and quotes removed, inner whitespace runs collapsed to one space."""
    m = _TAGGED.search(answer)
    text = m.group(1) if m else answer
    text = " ".join(text.split())
    return text.strip().strip('"\u201c\u201d\'').strip()


def normalise_definition(definition: str) -> str:
    """``definition`` lower-cased, whitespace collapsed, final period dropped: two
    definitions that differ only so count as a repeat."""
    return " ".join(definition.lower().split()).rstrip(".")
