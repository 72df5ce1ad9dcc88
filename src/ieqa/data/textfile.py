"""Reading a text file of rows (JSONL, CSV; gzip-compressed when its name ends in ``.gz``)
line by line: the one place that decodes them (:func:`text_lines`), so that a byte that is
not UTF-8 or a damaged gzip stream ends in a one-line error naming the file and the line,
never in a traceback; :func:`json_lines` reads a JSONL file's values on top of it."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError

__all__ = ["UnreadableTextError", "json_lines", "text_lines"]


class UnreadableTextError(IeqaError, ValueError):
    """A text file whose bytes cannot be read as its format says (not UTF-8, damaged gzip);
    the message names the file and the line and says what to do."""


def text_lines(path: str | os.PathLike[str], *,
               error: type[Exception] = UnreadableTextError) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line)`` of ``path``, decoded as UTF-8 (a byte-order mark on
    the first line is dropped; lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, kept,
    as ``csv`` wants them); ``.gz``: gunzipped first.

    Raises:
        error: (default :class:`UnreadableTextError`; a reader passes its own error class)
            a line that is not UTF-8, or gzip data that is damaged or cut short, naming the
            file and the line.
    """
    p = Path(path)
    lineno = 0
    try:
        with (gzip.open(p, "rb") if p.name.endswith(".gz") else open(p, "rb")) as fh:
            for chunk in fh:
                for raw in chunk.splitlines(keepends=True):  # \n, \r\n and a lone \r
                    lineno += 1
                    try:
                        line = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise error(f"{p}: line {lineno} is not UTF-8 (byte "
                                    f"{raw[exc.start]:#04x} at column {exc.start + 1}): save "
                                    "the file as UTF-8 and run again") from None
                    yield lineno, line.removeprefix("\ufeff") if lineno == 1 else line
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise error(f"{p}: the gzip data is damaged or cut short after line {lineno} ({exc}); "
                    f"compress the file again (gzip -t {p.name} checks one)") from None


def json_lines(path: str | os.PathLike[str], *, error: type[Exception] = UnreadableTextError,
               hint: str = "write one JSON object per line",
               objects: bool = True) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSONL file, read by
    :func:`text_lines` (UTF-8, ``.gz``) and parsed as JSON: the one reading of JSONL files.

    Raises:
        error: a line that is not JSON (``PATH: line N: not valid JSON (why, column C);
            HINT``) or, with ``objects``, not a JSON object; and what :func:`text_lines`
            raises.
    """
    for lineno, line in text_lines(path, error=error):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}: line {lineno}: not valid JSON ({exc.msg}, column "
                        f"{exc.colno}); {hint}") from None
        if objects and not isinstance(value, dict):
            raise error(f"{path}: line {lineno}: expected a JSON object, got "
                        f"{type(value).__name__}; {hint}")
        yield lineno, value
