"""A prompt template with another definition of a dimension: :func:`definition_template`
swaps one in, :func:`load_definition` reads one from an ``ieqa optimize-prompt`` (FDMPO)
output (what the ``ds-ieqa`` recipe's ``definition_source`` points at).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError
from ieqa.prompts.loading import load_template
from ieqa.prompts.templates import PromptTemplate

__all__ = ["BEST_TEMPLATE_FILE", "FDMPOError", "definition_template", "load_definition"]

#: the template an FDMPO run writes with its best definition
BEST_TEMPLATE_FILE = "best_template.yaml"


class FDMPOError(IeqaError, ValueError):
    """FDMPO cannot run as asked (the message says what to change)."""



def definition_template(template: PromptTemplate, dimension: str, definition: str,
                        *, name: str | None = None) -> PromptTemplate:
    """``template`` with ``definition`` as its definition of ``dimension`` (in
    :attr:`PromptTemplate.definitions`); ``name`` renames it."""
    canon = canonical_dimension(dimension)
    changes: dict[str, Any] = {"definitions": {**template.definitions, canon: definition}}
    if name is not None:
        changes["name"] = name
    return dataclasses.replace(template, **changes)


def load_definition(source: str | Path, dimension: str) -> str:
    """The definition of ``dimension`` stored in an FDMPO output: its folder (read
    ``best_template.yaml``), a template file (``.yaml``/``.yml``/``.json``, its
    ``definitions`` entry) or a plain text file (``.txt``, the whole text).

    Raises :class:`FDMPOError` saying what is missing.
    """
    path = Path(source)
    canon = canonical_dimension(dimension)
    if path.is_dir():
        path = path / BEST_TEMPLATE_FILE
    if not path.exists():
        raise FDMPOError(f"{path}: no such file; point at the --out folder of `ieqa "
                         f"optimize-prompt --dimension {canon}` or at its {BEST_TEMPLATE_FILE}")
    if path.suffix.lower() == ".txt":
        text = " ".join(path.read_text(encoding="utf-8").split())
        if not text:
            raise FDMPOError(f"{path}: the definition file is empty")
        return text
    template = load_template(path)
    if canon not in template.definitions:
        have = ", ".join(template.definitions) or "none"
        raise FDMPOError(f"{path}: the template defines no {canon!r} (it defines: {have}); "
                         f"run `ieqa optimize-prompt --dimension {canon}` and point at its "
                         "output")
    return template.definitions[canon]

