"""The data model: edit triplets, their human labels, groups and preferences.

An :class:`EditSample` is one edit: a *source* image, an *edited* image and the text that
asked for the edit, plus whatever labels a dataset carries. Images are references:
a filesystem path (resolved against the manifest's folder when read from a manifest),
or an in-memory ``PIL.Image.Image`` / ``numpy`` array / encoded ``bytes``.
Dimension names in ``scores`` and ``ratings`` are canonicalised through the alias table
(:mod:`ieqa.data.dimensions`), so ``{"SC": 0.8}`` is stored as
``{"instruction_alignment": 0.8}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ieqa.data.dimensions import canonical_dimension

#: What may stand where an image is expected.
ImageRef = Union[Path, Image.Image, np.ndarray, bytes]  # noqa: UP007 (a runtime alias)


def _coerce_image_ref(value: Any) -> Any:
    if isinstance(value, str):
        if not value:
            raise ValueError("image path is empty")
        return Path(value)
    if isinstance(value, (Path, Image.Image, np.ndarray, bytes)):
        return value
    raise ValueError(
        f"an image must be a path, PIL.Image, numpy array or bytes, got {type(value).__name__}"
    )


class BBox(BaseModel):
    """An axis-aligned box in EPAIQA's normalised ``<x, y, w, h>`` form.

    ``x``, ``y`` are the box centre and ``w``, ``h`` its width and height, all as
    fractions of the image width/height in [0, 1].
    """

    model_config = ConfigDict(frozen=True)

    x: float = Field(ge=0.0, le=1.0, description="centre x / image width")
    y: float = Field(ge=0.0, le=1.0, description="centre y / image height")
    w: float = Field(ge=0.0, le=1.0, description="box width / image width")
    h: float = Field(ge=0.0, le=1.0, description="box height / image height")

    @classmethod
    def from_xyxy(cls, x0: float, y0: float, x1: float, y1: float, width: int, height: int) -> BBox:
        """Build from pixel corners ``(x0, y0)`` inclusive and ``(x1, y1)`` exclusive."""
        if width <= 0 or height <= 0:
            raise ValueError(f"image size must be positive, got {width}x{height}")
        if not (0 <= x0 <= x1 <= width and 0 <= y0 <= y1 <= height):
            raise ValueError(f"box ({x0}, {y0}, {x1}, {y1}) is not inside a {width}x{height} image")
        return cls(
            x=(x0 + x1) / 2 / width, y=(y0 + y1) / 2 / height,
            w=(x1 - x0) / width, h=(y1 - y0) / height,
        )

    def to_xyxy(self, width: int, height: int) -> tuple[float, float, float, float]:
        """Pixel corners ``(x0, y0, x1, y1)`` for an image of ``width`` x ``height``."""
        return (
            (self.x - self.w / 2) * width, (self.y - self.h / 2) * height,
            (self.x + self.w / 2) * width, (self.y + self.h / 2) * height,
        )

    def iou(self, other: BBox) -> float:
        """Intersection over union with ``other`` (both normalised), in [0, 1]."""
        ax0, ay0, ax1, ay1 = self.to_xyxy(1, 1)
        bx0, by0, bx1, by1 = other.to_xyxy(1, 1)
        iw = max(0.0, min(ax1, bx1) - max(ax0, bx0))
        ih = max(0.0, min(ay1, by1) - max(ay0, by0))
        inter = iw * ih
        union = self.w * self.h + other.w * other.h - inter
        return inter / union if union > 0 else 0.0


class Rating(BaseModel):
    """One raw human rating: ``rater`` gave ``value`` on ``dimension``."""

    model_config = ConfigDict(frozen=True)

    rater: str
    dimension: str
    value: float

    @field_validator("dimension")
    @classmethod
    def _canon(cls, v: str) -> str:
        return canonical_dimension(v)


class InstructionKind(str, Enum):
    """Whether the text is an edit instruction or a description of the target image."""

    INSTRUCTION = "instruction"
    DESCRIPTION = "description"


class EditSample(BaseModel):
    """One image edit with optional human labels.

    Attributes:
        id: unique identifier within its dataset.
        source: the image before editing (path or in-memory image).
        edited: the image after editing.
        instruction: the edit request (or target description, see ``instruction_kind``).
        instruction_kind: ``instruction`` ("make the sky red") or ``description``
            ("a red sky over a lake").
        task: edit category, e.g. ``"recolor"``, ``"remove"``, ``"style"``.
        editor: name of the editing model (or simulated editor) that made ``edited``.
        group_id: edits that share one (source, instruction) share a group id.
        bbox: the edited region, normalised centre/size (EPAIQA ``<x,y,w,h>``).
        mask: the edited region as a binary image (non-zero = edited).
        scores: per-dimension scores, canonical names; scale given by the dataset.
        ratings: raw per-rater ratings the scores were aggregated from.
        meta: free-form extra fields (kept through manifest round trips; JSON-serialisable).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    id: str
    source: ImageRef | None = None
    edited: ImageRef
    instruction: str = ""
    instruction_kind: InstructionKind = InstructionKind.INSTRUCTION
    task: str | None = None
    editor: str | None = None
    group_id: str | None = None
    bbox: BBox | None = None
    mask: ImageRef | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    ratings: list[Rating] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: Any) -> str:
        if v is None or (isinstance(v, str) and not v):
            raise ValueError("id must be a non-empty string")
        return str(v)

    @field_validator("source", "edited", "mask", mode="before")
    @classmethod
    def _image(cls, v: Any) -> Any:
        return None if v is None else _coerce_image_ref(v)

    @field_validator("scores", mode="before")
    @classmethod
    def _scores(cls, v: Any) -> dict[str, float]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError(f"scores must be a dict of dimension -> float, got {type(v).__name__}")
        out: dict[str, float] = {}
        for k, val in v.items():
            canon = canonical_dimension(k)
            if canon in out:
                raise ValueError(f"scores name dimension {canon!r} twice (as {k!r} and an alias)")
            out[canon] = float(val)
        return out

    def image_paths(self) -> dict[str, Path]:
        """The image fields that are filesystem paths, by field name."""
        return {
            name: ref
            for name, ref in (("source", self.source), ("edited", self.edited), ("mask", self.mask))
            if isinstance(ref, Path)
        }


class PreferenceLabel(str, Enum):
    """The verdict of a pairwise comparison of edits ``a`` and ``b``."""

    A = "a>b"
    B = "b>a"
    TIE = "tie"
    BOTH_BAD = "both-bad"

    def flipped(self) -> PreferenceLabel:
        """The same verdict with ``a`` and ``b`` swapped."""
        return {PreferenceLabel.A: PreferenceLabel.B, PreferenceLabel.B: PreferenceLabel.A}.get(self, self)


class Preference(BaseModel):
    """A pairwise human (or model) judgement between two edits of the same request."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    a: EditSample
    b: EditSample
    label: PreferenceLabel
    dimension: str = "overall"
    rater: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("dimension")
    @classmethod
    def _canon(cls, v: str) -> str:
        return canonical_dimension(v)

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, v: Any) -> Any:
        if isinstance(v, str):
            aliases = {"a": "a>b", "b": "b>a", "=": "tie", "a=b": "tie", "both_bad": "both-bad", "bothbad": "both-bad"}
            return aliases.get(v.strip().lower(), v.strip().lower())
        return v

    def swapped(self) -> Preference:
        """The same judgement with the two edits' positions exchanged."""
        return self.model_copy(update={"a": self.b, "b": self.a, "label": self.label.flipped()})


class Group(BaseModel):
    """All edits of one (source, instruction): the unit of grouped and multi-way protocols."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    samples: list[EditSample]

    @model_validator(mode="after")
    def _check(self) -> Group:
        if not self.samples:
            raise ValueError(f"group {self.id!r} has no samples")
        bad = [s.id for s in self.samples if s.group_id not in (None, self.id)]
        if bad:
            raise ValueError(f"samples {bad[:5]} belong to another group than {self.id!r}")
        return self

    @property
    def instruction(self) -> str:
        return self.samples[0].instruction

    @property
    def source(self) -> ImageRef | None:
        return self.samples[0].source

    def __len__(self) -> int:
        return len(self.samples)


def group_samples(samples: Iterable[EditSample], key: Literal["group_id", "request"] = "group_id") -> list[Group]:
    """Collect samples into groups, in order of first appearance.

    ``key="group_id"`` uses each sample's ``group_id`` (samples without one raise
    ``ValueError``); ``key="request"`` groups by (source path, instruction) instead,
    for datasets that carry no group ids (in-memory sources are not groupable this way).
    """
    buckets: dict[str, list[EditSample]] = {}
    for s in samples:
        if key == "group_id":
            if s.group_id is None:
                raise ValueError(f"sample {s.id!r} has no group_id; use key='request' to group by source+instruction")
            gid = s.group_id
        elif key == "request":
            if not isinstance(s.source, Path):
                raise ValueError(f"sample {s.id!r}: key='request' needs source images given as paths")
            gid = f"{s.source}::{s.instruction}"
        else:
            raise ValueError(f"key must be 'group_id' or 'request', got {key!r}")
        buckets.setdefault(gid, []).append(s)
    return [Group(id=gid, samples=ss) for gid, ss in buckets.items()]
