"""EPAIQA §4.1 grounding answers: the edited region ``(x, y, w, h)`` as fractions of the image —
the writer :func:`box_target` and the strict parser :func:`parse_region`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import ValidationError

from ieqa.data.schema import BBox
from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import NUM, JudgeParseError, in_scale, require_text

__all__ = ["box_target", "parse_region"]


_REGION = re.compile(rf"[(\[<{{]\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*"
                     rf"[)\]>}}]")
_NUMBER_RUN = re.compile(rf"(?<![\d.]){NUM}(?:\s*,\s*{NUM})+")


def parse_region(text: str) -> tuple[float, float, float, float]:
    """EPAIQA's edit region ``(x, y, w, h)``: centre and size as fractions of the image,
    each in [0, 1], written ``(0.42, 0.55, 0.30, 0.25)`` (or in ``<>``/``[]``, or bare).

    Raises :class:`JudgeParseError` when no four-number group is found or a value lies
    outside [0, 1] (percentages or pixels are not converted).
    """
    text = require_text(text)
    m = _REGION.search(text)
    if m:
        values = tuple(float(g) for g in m.groups())
    else:
        runs = [re.split(r"\s*,\s*", r.group()) for r in _NUMBER_RUN.finditer(text)]
        runs = [r for r in runs if len(r) == 4]
        if not runs:
            raise JudgeParseError("no region (x, y, w, h) found", text)
        values = tuple(float(v) for v in runs[0])
    for name, v in zip(("x", "y", "w", "h"), values, strict=True):
        in_scale(v, None, (0.0, 1.0), f"region {name}", text)
    return values  # type: ignore[return-value]



def box_target(bbox: BBox | Sequence[float]) -> str:
    """EPAIQA grounding target: ``" (0.42, 0.55, 0.30, 0.25)"``.

    ``bbox`` is a :class:`~ieqa.data.schema.BBox` (or an ``(x, y, w, h)`` sequence): centre
    x, centre y, width and height as fractions of the image, each in [0, 1]. Written with
    two decimals (EPAIQA §4.1) and a leading space, since the ``epaiqa-grounding`` answer
    prefix ends with ``"are:"``.
    """
    if not isinstance(bbox, BBox):
        try:
            x, y, w, h = bbox  # type: ignore[misc]
            bbox = BBox(x=x, y=y, w=w, h=h)
        except (TypeError, ValueError, ValidationError) as exc:
            raise TrainDataError(f"bbox must be a BBox or four fractions (x, y, w, h) in "
                                 f"[0, 1], got {bbox!r}: {exc}") from None
    return f" ({bbox.x:.2f}, {bbox.y:.2f}, {bbox.w:.2f}, {bbox.h:.2f})"
