"""The images of a reward request: one item's image string -> something a scorer decodes.

An image travels as base64 of the encoded file, or as a data URL
(``data:image/png;base64,...``). A file path is accepted only when the server was started
with ``--allow-root DIR`` (``allow_root``), and only when it stays inside that folder once
resolved: no ``..`` component, no symbolic link that leads out. The server never fetches
a URL. Every refusal is a :class:`BadImage` whose message says what to send instead; the
server records it as that item's ``error`` (the other items are scored).

Before any pixel is decoded, the header's ``width * height`` is checked against the
server's pixel budget (:func:`check_pixels`): a decompression bomb of a few kilobytes is an
item error, not a process out of memory.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

from ieqa.data.images import image_size
from ieqa.errors import IeqaError

__all__ = ["BadImage", "check_pixels", "decode_image"]

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[\w.+-]+=[\w.+-]+)*)"
                       r"(?P<b64>;base64)?,", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_BASE64_CHARS = re.compile(r"^[A-Za-z0-9+/_\-\s]*={0,2}\s*$")
#: longest string considered as a file path (longer ones can only be base64)
_MAX_PATH_CHARS = 4096
_WHAT_TO_SEND = "send the image file's bytes as base64 or as a data URL (data:image/png;base64,...)"


class BadImage(IeqaError):
    """An image string the server does not accept (the message says what to send)."""


def decode_image(text: str, *, allow_root: Path | None = None, field: str = "image") -> bytes | Path:
    """The encoded image bytes of a base64 string or data URL, or the resolved path of a
    file inside ``allow_root``.

    Args:
        text: the request's image string.
        allow_root: the folder paths may name (``None``: paths are refused). Relative
            paths are relative to it; absolute paths must lie inside it.
        field: the field's name for messages (e.g. ``"items[3].edited"``).

    Raises:
        BadImage: a URL, an unreadable data URL or base64 string, or a path that is refused
            (no ``allow_root``, ``..``, outside the root once symbolic links are resolved,
            or not a file).
    """
    stripped = text.strip()
    match = _DATA_URL.match(stripped)
    if match:
        if not match["b64"]:
            raise BadImage(f"{field}: a data URL must be base64-encoded (data:image/png;base64,...)")
        return _b64(stripped[match.end():], field)
    if _SCHEME.match(stripped):
        raise BadImage(f"{field}: the server never fetches URLs; {_WHAT_TO_SEND}")
    if allow_root is not None and len(stripped) <= _MAX_PATH_CHARS and _looks_like_path(stripped):
        return _inside_root(stripped, allow_root, field)
    if not _BASE64_CHARS.match(stripped):
        hint = ("" if allow_root is not None else
                "; file paths are accepted only when the server runs with --allow-root DIR")
        raise BadImage(f"{field}: not base64 or a data URL{hint}; {_WHAT_TO_SEND}")
    return _b64(stripped, field)


def _looks_like_path(text: str) -> bool:
    """A path has a ``.`` (a file extension), a ``~`` or a backslash, or is not base64:
    base64 (``A-Z a-z 0-9 + / =``, or ``- _``) never has those."""
    if "\x00" in text:
        return False
    return any(c in text for c in ".~\\") or not _BASE64_CHARS.match(text)


def _b64(data: str, field: str) -> bytes:
    compact = "".join(data.split())
    try:
        if "-" in compact or "_" in compact:
            raw = base64.urlsafe_b64decode(compact + "=" * (-len(compact) % 4))
        else:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise BadImage(f"{field}: not valid base64; {_WHAT_TO_SEND}") from None
    if not raw:
        raise BadImage(f"{field}: the image is empty; {_WHAT_TO_SEND}")
    return raw


def _inside_root(text: str, root: Path, field: str) -> Path:
    candidate = Path(text)
    if ".." in candidate.parts:
        raise BadImage(f"{field}: '..' is not allowed in a path; give a path inside the "
                       "server's --allow-root folder")
    root = root.resolve()
    path = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise BadImage(f"{field}: no file {text!r} under the server's --allow-root folder; "
                       f"check the path, or {_WHAT_TO_SEND}") from None
    if not resolved.is_relative_to(root):
        raise BadImage(f"{field}: {text!r} leads outside the server's --allow-root folder "
                       f"(symbolic links are resolved); copy the file into it, or {_WHAT_TO_SEND}")
    if not resolved.is_file():
        raise BadImage(f"{field}: {text!r} is not a file; give an image file inside the "
                       "server's --allow-root folder")
    return resolved


def check_pixels(image: bytes | Path, max_pixels: int | None, field: str = "image") -> int:
    """The image's pixel count (width x height) from its header; nothing is decoded.

    Raises :class:`BadImage` when the header says more than ``max_pixels`` or cannot be
    read; ``max_pixels=None`` only checks that the header is readable.
    """
    try:
        width, height = image_size(image)
    except Exception as exc:  # noqa: BLE001 - an item error, by contract
        raise BadImage(f"{field}: not a readable image ({exc})") from None
    if max_pixels is not None and width * height > max_pixels:
        raise BadImage(f"{field}: {width}x{height} = {width * height:,} pixels is over the "
                       f"server's pixel budget of {max_pixels:,} per image (--max-pixels); "
                       "downscale the image before sending it")
    return width * height
