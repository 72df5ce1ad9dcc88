"""What does an instruction ask to change? A weight-free reading of its *scope*.

Region-aware preservation needs to know which change was requested: a global
brightening is the edit itself, while the same brightening after "remove the cup" is an
unrequested change. :func:`parse_scope` reads the instruction with a small English
lexicon (no model) and returns an :class:`EditScope`:

==============  =========================================================================
``kind``        meaning
==============  =========================================================================
``global``      a photometric operation on the whole image ("make the image brighter",
                "turn the photo black and white", "give it a sepia look", "restyle the
                picture as a flat poster", "blur the image")
``background``  a photometric operation on the background only ("blur the background")
``move``        an object relocated ("move the cup to the left", "place the car in the
                corner instead"): the edit changes two places
``local``       anything else: an object-level edit (add, remove, recolour, replace,
                resize, ...), whose region is estimated from the images
==============  =========================================================================

``operation`` (for ``global`` and ``background``) is one of :data:`OPERATIONS`. A
photometric word makes the scope ``background`` when the instruction names the
background, ``local`` when it names another object ("make the car brighter": a definite
"the ..." that is not the image, picture, photo, scene or frame), and ``global``
otherwise ("brighten the whole picture", "make it look vintage"). Anything the lexicon does not
recognise is ``local``: the scorer then behaves as an instruction-blind region-aware
measure. The lexicon is English only and deliberately small; :func:`parse_scope` records
the words it matched so a user can see why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["OPERATIONS", "EditScope", "parse_scope"]

ScopeKind = Literal["local", "move", "global", "background"]

#: Photometric operations the scope parser recognises, with the words that name them
#: (regular expressions, matched case-insensitively on word boundaries).
OPERATIONS: dict[str, tuple[str, ...]] = {
    "brighten": (r"bright(?:en|er|ness up)?", r"lighten", r"lighter", r"more light",
                 r"(?:increase|raise|boost) (?:the )?(?:brightness|exposure)", r"over-?expose"),
    "darken": (r"dark(?:en|er)", r"dimm?(?:er)?", r"less light",
               r"(?:decrease|lower|reduce) (?:the )?(?:brightness|exposure)", r"under-?expose"),
    "contrast_up": (r"(?:increase|raise|boost|more|higher|stronger) (?:the )?contrast",),
    "contrast_down": (r"(?:decrease|lower|reduce|less|softer|weaker) (?:the )?contrast",),
    "monochrome": (r"black[- ]and[- ]white", r"b ?& ?w", r"gr[ae]y ?scale", r"monochrome",
                   r"desaturat(?:e|ed|ion)", r"colou?rless", r"remove (?:all )?(?:the )?colou?rs?"),
    "sepia": (r"sepia(?:[- ]toned?)?", r"vintage", r"old[- ](?:photo|photograph|film)",
              r"antique", r"warm(?:er)? tones?"),
    "posterize": (r"posteri[sz]ed?", r"poster", r"flat colou?rs?", r"few(?:er)? colou?rs"),
    "blur": (r"blur(?:red|ry)?", r"out of focus", r"defocus(?:ed)?", r"bokeh"),
}

_BACKGROUND = re.compile(r"\b(?:background|backdrop|surroundings)\b", re.IGNORECASE)
# "move/shift/relocate/drag the X", or "place/put the X ... instead": a relocation.
_MOVE = re.compile(r"\b(?:move|moving|shift|relocate|drag)\b|"
                   r"\b(?:place|put|position)\s+the\b.*\binstead\b", re.IGNORECASE)
# A definite object the operation could apply to ("the car", "the red circle").
_OBJECT = re.compile(r"\bthe\s+(?!image|picture|photo|photograph|scene|frame|whole|entire|"
                     r"background|backdrop|colou?rs?|contrast|brightness|exposure|"
                     r"shapes?\s+sharp)[a-z]", re.IGNORECASE)
_OPERATION_RE = {op: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
                 for op, words in OPERATIONS.items()}


@dataclass(frozen=True)
class EditScope:
    """The scope of an instruction (see the module docstring).

    Attributes:
        kind: ``local``, ``move``, ``global`` or ``background``.
        operation: for ``global``/``background``, the photometric operation (a key of
            :data:`OPERATIONS`); ``None`` otherwise.
        matched: the words of the instruction that decided it (empty for ``local``).
    """

    kind: ScopeKind
    operation: str | None = None
    matched: str = ""

    def as_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind, "operation": self.operation, "matched": self.matched}


def _first_operation(text: str) -> tuple[str, str] | None:
    """The operation whose words occur earliest in ``text``, with the words."""
    best: tuple[int, str, str] | None = None
    for op, rx in _OPERATION_RE.items():
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), op, m.group(0))
    return None if best is None else (best[1], best[2])


def parse_scope(instruction: str | None) -> EditScope:
    """Read the scope of an editing instruction (English; see the module docstring).

    Args:
        instruction: the instruction text; ``None`` or empty gives ``local``.

    Returns:
        An :class:`EditScope`. Descriptions of the target image ("a black and white
        photo of a dog") are read like instructions.
    """
    text = " ".join((instruction or "").split())
    if not text:
        return EditScope("local")
    move = _MOVE.search(text)
    if move:
        return EditScope("move", None, move.group(0))
    found = _first_operation(text)
    if found is None:
        return EditScope("local")
    op, words = found
    background = _BACKGROUND.search(text)
    if background:
        return EditScope("background", op, f"{words} + {background.group(0)}")
    if _OBJECT.search(text):
        return EditScope("local")
    return EditScope("global", op, words)
