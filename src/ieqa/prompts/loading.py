"""Reading user-supplied templates from YAML/JSON files or plain dicts.

A template file holds one mapping with the fields of
:class:`~ieqa.prompts.templates.PromptTemplate`::

    name: my-judge
    description: Asks for a 1-10 quality score.
    reference: in-house
    user: |
      <image:source><image:edited>
      Instruction: {instruction}. Rate the {dimension} of the second image from {low} to {high}.
    answer_prefix: "{Dimension} score:"
    output: text_score
    scale: [1, 10]
    images: [source, edited]

Unknown fields and wrong types are reported with the field's name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from ieqa.prompts.templates import OutputKind, PromptTemplate, TemplateError, register_template

__all__ = ["load_template", "template_from_dict"]


class _TemplateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)

    name: str
    description: str = ""
    reference: str = ""
    system: str | None = None
    user: str
    answer_prefix: str = ""
    output: OutputKind
    dimensions: list[str] = []
    scale: tuple[float, float] | None = None
    images: list[str]
    dimension_names: dict[str, str] = {}
    defaults: dict[str, str] = {}
    sub_scores: list[str] = []
    definitions: dict[str, str] = {}


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            lines.append(f"field {loc!r}: unknown field (known: "
                         f"{', '.join(_TemplateSpec.model_fields)})")
        elif err["type"] == "missing":
            lines.append(f"field {loc!r}: required")
        else:
            lines.append(f"field {loc!r}: {err['msg']}")
    return "; ".join(lines)


def template_from_dict(data: Mapping[str, Any], *, origin: str = "<dict>") -> PromptTemplate:
    """Validate a mapping with the template fields and build the :class:`PromptTemplate`.

    Raises :class:`~ieqa.prompts.templates.TemplateError` naming the bad field(s);
    ``origin`` (a file name) prefixes the message.
    """
    if not isinstance(data, Mapping):
        raise TemplateError(f"{origin}: a template must be a mapping of fields, got "
                            f"{type(data).__name__}")
    try:
        spec = _TemplateSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise TemplateError(f"{origin}: {_describe(exc)}") from None
    fields = spec.model_dump()
    fields["dimensions"] = tuple(fields["dimensions"])
    fields["images"] = tuple(fields["images"])
    fields["sub_scores"] = tuple(fields["sub_scores"])
    try:
        return PromptTemplate(**fields)
    except TemplateError as exc:
        raise TemplateError(f"{origin}: {exc}") from None


def load_template(source: str | Path | Mapping[str, Any], *, register: bool = False,
                  overwrite: bool = False) -> PromptTemplate:
    """Load a template from a ``.yaml``/``.yml``/``.json`` file, or from a dict.

    Args:
        source: the file path, or a mapping with the template fields.
        register: also add it to the registry (so ``get_template(name)`` finds it).
        overwrite: with ``register``, replace a registered template of the same name.

    Raises :class:`~ieqa.prompts.templates.TemplateError` for unreadable files, unknown
    suffixes, and invalid fields (the message names the field).
    """
    if isinstance(source, Mapping):
        template = template_from_dict(source)
    else:
        path = Path(source)
        suffix = path.suffix.lower()
        if suffix not in (".yaml", ".yml", ".json"):
            raise TemplateError(f"{path}: template files must end in .yaml, .yml or .json")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TemplateError(f"{path}: cannot read the template file ({exc.strerror or exc})"
                                ) from None
        try:
            data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise TemplateError(f"{path}: not valid {suffix[1:].upper()}: {exc}") from None
        template = template_from_dict(data, origin=str(path))
    if register:
        register_template(template, overwrite=overwrite)
    return template
