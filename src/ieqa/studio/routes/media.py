"""Image routes: ``GET /media/KEY/SLOT`` (an image of an item on the rater's list, or any
item's for the admin: the file the manifest named for that item, ``source`` or candidate
``cI``, never a path from the request) and ``GET /guidelines/img/N`` (the guidelines'
images). Also the images' files, sizes and media types that the task pages use."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response

from ieqa.studio.state import Denied, StudioState, studio
from ieqa.studio.store import Item

__all__ = ["router", "sizes"]

router = APIRouter()

_SLOT = re.compile(r"^(source|c\d{1,3})$")


@router.get("/guidelines/img/{n}")
def guideline_image(request: Request, n: int, st: StudioState = Depends(studio)) -> Response:
    if st.admin_session(request) is None:
        st.rater_of(request)
    g, _ = st.guidelines()
    if g is None or not 0 <= n < len(g.images) or not Path(g.images[n]).is_file():
        raise Denied(404, "No such image.")
    return FileResponse(g.images[n], media_type=_mime(Path(g.images[n])),
                        headers={"Cache-Control": "private, max-age=3600"})


@router.get("/media/{key}/{slot}")
def media(request: Request, key: int, slot: str, st: StudioState = Depends(studio)) -> Response:
    if not _SLOT.match(slot):
        raise Denied(404, "No such image.")
    if st.admin_session(request) is None:
        rater, _ = st.rater_of(request)
        if not st.store.is_assigned(rater, key):
            raise Denied(403, "This image belongs to an item that is not on your list.")
    item = st.store.item(key)
    if item is None:
        raise Denied(404, "No such item.")
    path = _path_of(item, slot)
    if not path or not Path(path).is_file():
        raise Denied(404, "The image file is missing; the manifest's files moved since the study "
                          "was created.")
    return FileResponse(path, media_type=_mime(Path(path)),
                        headers={"Cache-Control": "private, max-age=3600"})


def sizes(item: Item) -> dict[str, tuple[int, int] | None]:
    """``(width, height)`` of each image of ``item`` by slot (``source``, ``c0``...)."""
    n = len(item.data["samples"])
    return {slot: _size(_path_of(item, slot)) for slot in ["source"] + [f"c{i}" for i in range(n)]}


def _path_of(item: Item, slot: str) -> str | None:
    """The image file of ``slot`` (``source`` or ``cI``) of ``item``, or None."""
    samples = item.data["samples"]
    if slot == "source":
        return samples[0].get("source")
    i = int(slot[1:])
    return samples[i]["edited"] if i < len(samples) else None


@functools.lru_cache(maxsize=4096)
def _size(path: str | None) -> tuple[int, int] | None:
    """``(width, height)`` of an image file (read from its header), or None; the pages
    give images their size up front, so nothing moves while they load."""
    if not path:
        return None
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.size
    except Exception:  # noqa: BLE001 - a missing or unreadable file gets no size
        return None


def _mime(path: Path) -> str:
    """The media type of an image file, from its header (never from the name alone)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            fmt = im.format
    except Exception:  # noqa: BLE001 - anything unreadable is served as opaque bytes
        return "application/octet-stream"
    return Image.MIME.get(fmt or "", "application/octet-stream")
