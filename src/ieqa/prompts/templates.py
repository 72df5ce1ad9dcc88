"""Prompt templates: :class:`PromptTemplate` and the template registry.

A template is data: an optional system text, a user text in which ``<image:SLOT>`` marks
where each image goes and ``{name}`` placeholders (``str.format`` syntax, ``{{``/``}}``
for literal braces) take per-call values, an optional ``answer_prefix`` the answer
continues from, and a description of the answer (``output`` kind and ``scale``) that tells
:func:`ieqa.prompts.answers.parse_output` how to read it.

Placeholders that :meth:`PromptTemplate.render` fills itself:

``{instruction}``
    the editing instruction.
``{dimension}`` / ``{Dimension}`` / ``{dimension_key}`` / ``{definition}``
    the asked dimension: human-readable (``"visual quality"``), capitalised
    (``"Visual quality"``), canonical (``"visual_quality"``) and its paragraph: the
    template's own :attr:`PromptTemplate.definitions` entry (written by ``ieqa
    optimize-prompt``), else the one from :mod:`ieqa.prompts.definitions`.
``{low}`` / ``{high}``
    the bounds of :attr:`PromptTemplate.scale` (``"1"``, ``"5"``).
``{dimensions_block}`` / ``{dimensions_list}`` / ``{json_example}``
    for several dimensions at once (``dimensions=[...]``): one bullet per dimension with
    its definition, the names joined in prose, and the JSON object the answer should be.

Any other placeholder comes from :attr:`PromptTemplate.defaults` or from keyword
arguments of :meth:`~PromptTemplate.render` (which win over everything above).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Literal, get_args

from PIL import Image

from ieqa.backends.base import Prompt
from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError
from ieqa.prompts.definitions import dimension_definition
from ieqa.registry import TEMPLATES, UnknownNameError

__all__ = [
    "OutputKind", "OUTPUT_KINDS", "SCORE_OUTPUTS", "KNOWN_SLOTS", "PromptTemplate",
    "FilledText", "TemplateError", "MissingPlaceholderError", "UnknownTemplateError",
    "get_template", "list_templates", "register_template", "unregister_template",
]

#: How a template's answer is read (see :func:`ieqa.prompts.answers.parse_output`).
OutputKind = Literal["json_scores", "viescore_json", "levels", "digits", "verdict",
                     "critique", "text_score", "text"]
OUTPUT_KINDS: tuple[str, ...] = get_args(OutputKind)
#: Output kinds whose answer is a number on :attr:`PromptTemplate.scale` (scale required).
SCORE_OUTPUTS: frozenset[str] = frozenset(
    {"json_scores", "viescore_json", "levels", "digits", "critique", "text_score"})
#: Image slots every caller may pass; a template that does not show one ignores it.
KNOWN_SLOTS: frozenset[str] = frozenset({"source", "edited", "a", "b", "crop"})

_MARKER = re.compile(r"<image:([^<>\s]*)>")
_SLOT = re.compile(r"[a-z][a-z0-9_]*")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.\-]*")
_FORMATTER = string.Formatter()


class TemplateError(IeqaError, ValueError):
    """A template is malformed, or cannot be rendered with the values given."""


class MissingPlaceholderError(TemplateError):
    """Rendering lacks values for some placeholders; ``missing`` lists them."""

    def __init__(self, template: str, missing: Iterable[str]) -> None:
        self.missing = sorted(missing)
        hint = ""
        if any(m in _DIMENSION_FIELDS for m in self.missing):
            hint = " (pass dimension=...)"
        elif any(m in _MULTI_FIELDS for m in self.missing):
            hint = " (pass dimension=... or dimensions=[...])"
        super().__init__(f"template {template!r} needs values for "
                         f"{', '.join('{' + m + '}' for m in self.missing)}{hint}")


class UnknownTemplateError(TemplateError, KeyError):
    """No template is registered under that name."""

    def __str__(self) -> str:
        return str(self.args[0])


_DIMENSION_FIELDS = frozenset({"dimension", "Dimension", "dimension_key", "definition"})
_MULTI_FIELDS = frozenset({"dimensions_block", "dimensions_list", "json_example"})


@dataclass(frozen=True)
class FilledText:
    """A template's texts with placeholders filled and ``<image:SLOT>`` markers kept
    (for display, logging and cache keys)."""

    system: str | None
    user: str
    answer_prefix: str


def _fields(text: str, where: str) -> list[str]:
    """The placeholder names in ``text``; raises :class:`TemplateError` on bad syntax."""
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise TemplateError(f"field {where!r}: {exc} (write literal braces as '{{{{' and "
                            "'}}}}')") from None
    names = []
    for _literal, name, spec, _conv in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise TemplateError(f"field {where!r}: placeholder {{{name}}} must be a plain name "
                                "such as {instruction} (no positions, attributes or indexes)")
        for _l, inner, _s, _c in _FORMATTER.parse(spec or ""):
            if inner is not None:
                raise TemplateError(f"field {where!r}: nested placeholder in {{{name}:{spec}}}")
        names.append(name)
    return names


class _FrozenMap(dict):
    """A read-only dict (picklable, copyable, hashable) for template mappings."""

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("template mappings are read-only; build a new template with "
                        "dataclasses.replace")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> _FrozenMap:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _FrozenMap:
        return self


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt for judging one edit (or a pair), rendered to a backend :class:`Prompt`.

    Attributes:
        name: registry name (lower case, digits, ``-``, ``_``, ``.``).
        description: what the template asks and how its answer is read.
        reference: where it comes from (paper and section).
        system: optional system message (placeholders allowed, no image markers).
        user: the user message; ``<image:SLOT>`` marks each image, ``{name}`` placeholders.
        answer_prefix: text the answer starts with (placeholders allowed); logit readouts
            read the next token after it.
        output: how the answer is read, one of :data:`OUTPUT_KINDS`.
        dimensions: canonical dimensions the template can ask about; empty means any.
        scale: ``(low, high)`` of the score the answer gives (``None`` for ``verdict`` and
            ``text``); e.g. ``(1, 5)``.
        images: the image slots in the order they appear in ``user``.
        dimension_names: per-template display names (canonical -> text), e.g. DS-IEQA
            calls ``instruction_alignment`` "editing fidelity".
        defaults: values for optional placeholders (overridden by render keywords).
        sub_scores: names of the sub-scores a ``viescore_json`` answer lists, in order.
        definitions: per-template dimension definitions (canonical -> paragraph) that
            replace :func:`~ieqa.prompts.dimension_definition` in ``{definition}`` and
            ``{dimensions_block}``; FDMPO (``ieqa optimize-prompt``) writes its best
            definition here.
    """

    name: str
    description: str
    reference: str
    system: str | None
    user: str
    answer_prefix: str = ""
    output: OutputKind = "json_scores"
    dimensions: tuple[str, ...] = ()
    scale: tuple[float, float] | None = (1, 5)
    images: tuple[str, ...] = ("source", "edited")
    dimension_names: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)
    sub_scores: tuple[str, ...] = ()
    definitions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def bad(fieldname: str, message: str) -> TemplateError:
            return TemplateError(f"template {self.name!r}: field {fieldname!r}: {message}")

        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise TemplateError(f"field 'name': {self.name!r} must be lower case letters, "
                                "digits, '-', '_' or '.', e.g. 'my-judge'")
        for fname in ("description", "reference", "user", "answer_prefix"):
            if not isinstance(getattr(self, fname), str):
                raise bad(fname, f"must be text, got {type(getattr(self, fname)).__name__}")
        if self.system is not None and not isinstance(self.system, str):
            raise bad("system", f"must be text or null, got {type(self.system).__name__}")
        if self.output not in OUTPUT_KINDS:
            raise bad("output", f"{self.output!r} is not one of {', '.join(OUTPUT_KINDS)}")
        # dimensions: canonical names
        if isinstance(self.dimensions, str):
            raise bad("dimensions", "must be a list of dimension names, not one string")
        dims = []
        for d in self.dimensions:
            try:
                dims.append(canonical_dimension(d))
            except (IeqaError, TypeError) as exc:
                raise bad("dimensions", str(exc)) from None
        object.__setattr__(self, "dimensions", tuple(dict.fromkeys(dims)))
        # scale
        if self.scale is None:
            if self.output in SCORE_OUTPUTS:
                raise bad("scale", f"output {self.output!r} gives a score: set scale: [low, high]")
        else:
            try:
                low, high = (float(v) for v in self.scale)
            except (TypeError, ValueError):
                raise bad("scale", f"must be two numbers [low, high], got {self.scale!r}") from None
            if not low < high:
                raise bad("scale", f"low must be below high, got {self.scale!r}")
            object.__setattr__(self, "scale", (low, high))
        # images and markers
        if isinstance(self.images, str):
            raise bad("images", "must be a list of slot names, not one string")
        images = tuple(self.images)
        for slot in images:
            if not isinstance(slot, str) or not _SLOT.fullmatch(slot):
                raise bad("images", f"slot {slot!r} must be a lower-case name such as 'edited'")
        if len(set(images)) != len(images):
            raise bad("images", f"slots repeat: {list(images)}")
        object.__setattr__(self, "images", images)
        markers = tuple(_MARKER.findall(self.user))
        if markers != images:
            raise bad("user", f"its image markers {['<image:' + m + '>' for m in markers]} must "
                      f"match field 'images' {list(images)} one to one and in order")
        for fname in ("system", "answer_prefix"):
            if _MARKER.search(getattr(self, fname) or ""):
                raise bad(fname, "images can only be placed in 'user'")
        # mappings
        for fname in ("dimension_names", "defaults", "definitions"):
            value = getattr(self, fname)
            if not isinstance(value, Mapping) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
                raise bad(fname, "must map names to text")
        try:
            names = {canonical_dimension(k): v for k, v in self.dimension_names.items()}
        except IeqaError as exc:
            raise bad("dimension_names", str(exc)) from None
        object.__setattr__(self, "dimension_names", _FrozenMap(names))
        try:
            defs = {canonical_dimension(k): v for k, v in self.definitions.items()}
        except IeqaError as exc:
            raise bad("definitions", str(exc)) from None
        if any(not v.strip() for v in defs.values()):
            raise bad("definitions", "a definition must not be empty")
        object.__setattr__(self, "definitions", _FrozenMap(defs))
        object.__setattr__(self, "defaults", _FrozenMap(self.defaults))
        subs = tuple(self.sub_scores)
        if not all(isinstance(s, str) and s for s in subs):
            raise bad("sub_scores", "must be a list of names")
        object.__setattr__(self, "sub_scores", subs)
        # placeholder syntax (raises on bad braces)
        for fname in ("system", "user", "answer_prefix"):
            try:
                _fields(getattr(self, fname) or "", fname)
            except TemplateError as exc:
                raise TemplateError(f"template {self.name!r}: {exc}") from None

    # ------------------------------------------------------------------ introspection
    @cached_property
    def placeholders(self) -> frozenset[str]:
        """Every placeholder name used in ``system``, ``user`` and ``answer_prefix``."""
        out: set[str] = set()
        for text, where in ((self.system or "", "system"), (self.user, "user"),
                            (self.answer_prefix, "answer_prefix")):
            out.update(_fields(text, where))
        return frozenset(out)

    @property
    def digest(self) -> str:
        """A 12-hex-digit fingerprint of the template's content (for cache keys)."""
        blob = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        """JSON/YAML-serialisable fields; :func:`~ieqa.prompts.load_template` reads them back."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(dimensions=list(self.dimensions), images=list(self.images),
                   scale=None if self.scale is None else list(self.scale),
                   dimension_names=dict(self.dimension_names), defaults=dict(self.defaults),
                   sub_scores=list(self.sub_scores), definitions=dict(self.definitions))
        if not self.definitions:  # keeps the digest of templates without definitions
            del out["definitions"]
        return out

    def label(self, dimension: str) -> str:
        """The display name of ``dimension`` in this template (aliases accepted)."""
        canon = canonical_dimension(dimension)
        return self.dimension_names.get(canon, canon.replace("_", " "))

    def definition(self, dimension: str) -> str:
        """The definition of ``dimension`` this template inserts as ``{definition}``: its
        own :attr:`definitions` entry, else :func:`~ieqa.prompts.dimension_definition`."""
        canon = canonical_dimension(dimension)
        return self.definitions.get(canon) or dimension_definition(canon)

    # ------------------------------------------------------------------ filling
    def _check_dimension(self, dimension: str) -> str:
        canon = canonical_dimension(dimension)
        if self.dimensions and canon not in self.dimensions:
            raise TemplateError(f"template {self.name!r} asks about {', '.join(self.dimensions)}"
                                f", not {canon!r}")
        return canon

    def context(self, *, instruction: str, dimension: str | None = None,
                dimensions: Sequence[str] | None = None, **extra: Any) -> dict[str, Any]:
        """The placeholder values :meth:`render` uses (see the module docstring).

        ``dimension`` defaults to the template's only dimension when it has exactly one;
        ``dimensions`` to ``[dimension]``, else to the template's dimensions. Keyword
        ``extra`` values win over computed ones.
        """
        if not isinstance(instruction, str):
            raise TemplateError(f"instruction must be text, got {type(instruction).__name__}")
        ctx: dict[str, Any] = dict(self.defaults)
        ctx["instruction"] = instruction
        if self.scale is not None:
            ctx["low"], ctx["high"] = _num(self.scale[0]), _num(self.scale[1])
        if dimension is None and len(self.dimensions) == 1:
            dimension = self.dimensions[0]
        if dimension is not None:
            canon = self._check_dimension(dimension)
            label = self.label(canon)
            ctx.update(dimension=label, Dimension=label[:1].upper() + label[1:],
                       dimension_key=canon, definition=self.definition(canon))
        if isinstance(dimensions, str):
            raise TemplateError("dimensions must be a list of names; use dimension= for one")
        if dimensions:
            dims = [self._check_dimension(d) for d in dimensions]
        elif dimension is not None:
            dims = [ctx["dimension_key"]]
        else:
            dims = list(self.dimensions)
        if dims:
            dims = list(dict.fromkeys(dims))
            ctx["dimensions_block"] = "\n".join(
                f"- {d} ({self.label(d)}): {self.definition(d)}" for d in dims)
            labels = [self.label(d) for d in dims]
            ctx["dimensions_list"] = (labels[0] if len(labels) == 1
                                      else ", ".join(labels[:-1]) + " and " + labels[-1])
            example = ", ".join(f'"{d}": <score>' for d in dims)
            ctx["json_example"] = "{" + example + ', "reasoning": "<one or two sentences>"}'
        ctx.update(extra)
        return ctx

    def _format(self, text: str, ctx: Mapping[str, Any]) -> str:
        return _FORMATTER.vformat(text, (), ctx) if text else text

    def _ready_context(self, instruction: str, dimension: str | None,
                       dimensions: Sequence[str] | None, extra: dict[str, Any]) -> dict[str, Any]:
        ctx = self.context(instruction=instruction, dimension=dimension, dimensions=dimensions,
                           **extra)
        missing = self.placeholders - ctx.keys()
        if missing:
            raise MissingPlaceholderError(self.name, missing)
        return ctx

    def fill(self, *, instruction: str, dimension: str | None = None,
             dimensions: Sequence[str] | None = None, **extra: Any) -> FilledText:
        """The texts with placeholders filled and image markers kept (no images needed)."""
        ctx = self._ready_context(instruction, dimension, dimensions, extra)
        pieces = _MARKER.split(self.user)
        user = "".join(self._format(p, ctx) if i % 2 == 0 else f"<image:{p}>"
                       for i, p in enumerate(pieces))
        system = None if self.system is None else self._format(self.system, ctx)
        return FilledText(system, user, self._format(self.answer_prefix, ctx))

    def render(self, *, instruction: str, images: Mapping[str, Image.Image],
               dimension: str | None = None, dimensions: Sequence[str] | None = None,
               share_key: str | None = None, **extra: Any) -> Prompt:
        """Build the backend :class:`~ieqa.backends.base.Prompt`.

        Args:
            instruction: the editing instruction (inserted as ``{instruction}``).
            images: slot name -> PIL image for every slot in :attr:`images`. Other slots
                of :data:`KNOWN_SLOTS` are ignored (``viescore-pq`` shows no source);
                any other name raises :class:`TemplateError`. Images are converted to RGB.
            dimension: the asked dimension (canonical name or alias).
            dimensions: several dimensions at once (``judge-json``).
            share_key: a key shared by prompts of one (source, instruction) group; text
                before the second image must then not depend on the candidate.
            **extra: values for other placeholders (``critique=...``, ``definition=...``).

        ``shared_images`` is 1 when ``share_key`` is given and the first slot is
        ``"source"``, else 0. Raises :class:`MissingPlaceholderError` listing every
        placeholder without a value, and :class:`TemplateError` for image problems.
        """
        if not isinstance(images, Mapping):
            raise TemplateError(f"images must map slot names to PIL images, got "
                                f"{type(images).__name__}")
        unknown = sorted(set(images) - set(self.images) - KNOWN_SLOTS)
        if unknown:
            raise TemplateError(f"template {self.name!r}: unknown image slot(s) {unknown}; "
                                f"it shows {list(self.images)}")
        missing = [s for s in self.images if images.get(s) is None]
        if missing:
            raise TemplateError(f"template {self.name!r} needs image(s) {missing} "
                                f"(slots: {list(self.images)})")
        for slot in self.images:
            if not isinstance(images[slot], Image.Image):
                raise TemplateError(f"image {slot!r} must be a PIL image, got "
                                    f"{type(images[slot]).__name__}")
        ctx = self._ready_context(instruction, dimension, dimensions, extra)
        parts: list[str | Image.Image] = []
        for i, piece in enumerate(_MARKER.split(self.user)):
            if i % 2:
                img = images[piece]
                parts.append(img if img.mode == "RGB" else img.convert("RGB"))
            else:
                text = self._format(piece, ctx)
                if text:
                    parts.append(text)
        shared = 1 if share_key is not None and self.images[:1] == ("source",) else 0
        return Prompt(parts=tuple(parts),
                      system=None if self.system is None else self._format(self.system, ctx),
                      answer_prefix=self._format(self.answer_prefix, ctx),
                      share_key=share_key, shared_images=shared)


# ---------------------------------------------------------------------- registry
# The templates live in ieqa.registry.TEMPLATES, whose provider module (ieqa.prompts.builtin)
# registers the built-in ones on first use.
def register_template(template: PromptTemplate, overwrite: bool = False) -> PromptTemplate:
    """Add ``template`` to the registry under its name and return it.

    Raises :class:`TemplateError` when the name is taken and ``overwrite`` is false.
    """
    if not isinstance(template, PromptTemplate):
        raise TypeError(f"expected a PromptTemplate, got {type(template).__name__}")
    TEMPLATES.load()
    if template.name in TEMPLATES and not overwrite:
        raise TemplateError(f"template {template.name!r} is already registered; pass "
                            "overwrite=True to replace it")
    TEMPLATES.add(template.name, f"[{template.output}] {template.description}",
                  tags=(template.output,), info=template, overwrite=True)
    return template


def unregister_template(name: str) -> None:
    """Remove a template from the registry (no error when absent)."""
    TEMPLATES.remove(name)


def get_template(name: str) -> PromptTemplate:
    """The registered template called ``name``; :class:`UnknownTemplateError` lists the
    known names otherwise."""
    try:
        return TEMPLATES.get(name).info
    except (UnknownNameError, TypeError):
        raise UnknownTemplateError(f"unknown prompt template {name!r}; known: "
                                   f"{', '.join(TEMPLATES.names())}") from None


def list_templates(output: str | None = None) -> list[str]:
    """Sorted names of the registered templates, optionally only those whose answer is
    read as ``output`` (one of :data:`OUTPUT_KINDS`)."""
    if output is not None and output not in OUTPUT_KINDS:
        raise TemplateError(f"output must be one of {', '.join(OUTPUT_KINDS)}, got {output!r}")
    return TEMPLATES.names(tag=output)
