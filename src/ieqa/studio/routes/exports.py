"""The answer downloads (the admin token): ``GET /admin/export/NAME`` with NAME one of
the protocol's exports (``ratings.csv`` | ``rankings.jsonl`` | ``preferences.jsonl``, and
``answers.jsonl``: every answer, skip and replaced answer, with times); ``?part=training``
exports the training answers, ``?gold=0`` leaves the gold items out."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ieqa.studio import export
from ieqa.studio.state import Denied, StudioState, studio
from ieqa.studio.store import StudioError

__all__ = ["router"]

router = APIRouter()


@router.get("/admin/export/{name}")
def admin_export(request: Request, name: str, gold: int = 1, part: str = "study",
                 st: StudioState = Depends(studio)) -> Response:
    st.require_admin(request)
    names = export.export_names(st.config.protocol)
    if name not in names:
        raise Denied(404, f"No export {name!r}; there are {', '.join(names)}.")
    if part not in ("study", "training"):
        raise Denied(404, f"part={part!r}: use study or training.")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / name
        try:
            export.export_study(st.store, out, include_gold=bool(gold), part=part)
        except StudioError as exc:
            raise Denied(404, str(exc)) from None
        body = out.read_bytes()
    mime = "text/csv" if name.endswith(".csv") else "application/x-ndjson"
    filename = name if part == "study" else f"training-{name}"
    return Response(body, media_type=mime,
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})
