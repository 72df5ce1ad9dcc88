"""What ``ieqa score`` (and :func:`ieqa.scorers.run.score_to_file`) reads: a stream of
:class:`~ieqa.data.schema.EditSample` rows and :class:`BadRow` records, from a folder of
edits, a manifest (JSONL, Parquet, CSV) or a benchmark.

**Folder layout** (:func:`iter_folder`)::

    FOLDER/source/<name>.<ext>                 the source images
    FOLDER/edited/<name>.<ext>                 one editor's outputs, or
    FOLDER/edited/<editor>/<name>.<ext>        several editors, one sub-folder each
    FOLDER/instructions.csv                    columns name,instruction[,task]
      (or instructions.jsonl: {"name": ..., "instruction": ...[, "task": ...]} per line)

Each edited image becomes one sample: id ``<editor>/<name>`` (``<name>`` for a file
directly under ``edited/``), its source ``source/<name>.*``, the instruction of ``name``,
``editor`` the sub-folder, and ``group_id`` ``name`` (every editor's output of one source
and instruction forms a group). Image files are those with the suffixes in
:data:`IMAGE_SUFFIXES`; hidden files are skipped. An edited image with no source or no
instruction is a :class:`BadRow` (an error row in the output), not a crash.

**A malformed manifest row** (bad JSON, a missing or unknown field, a wrong type) is a
:class:`BadRow` carrying its line (JSONL, CSV: header = line 1) or row (Parquet) number
and the reason, unless the caller asks for strict reading.

**Row keys.** :func:`input_key` hashes what a row's score depends on (its fields, and
each image file's size and modification time, or an in-memory image's bytes), so a
re-run keeps the scores of the rows whose inputs did not change wherever they moved in
the input, and rescores the others.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ieqa.data.schema import EditSample
from ieqa.data.textfile import text_lines
from ieqa.errors import ManifestError

__all__ = ["IMAGE_SUFFIXES", "BadRow", "InputItem", "input_key", "is_edit_folder", "iter_folder"]

#: file suffixes (lower case) taken as images in a folder of edits
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif")


@dataclass
class BadRow:
    """An input row that cannot become a sample; it is written to the output as an error row.

    Attributes:
        id: the row's id when it could be read, else ``"<file>:<line or row number>"``.
        error: what is wrong and where (file and line), and what to do.
        key: content key of the row (see :func:`input_key`).
        fields: whatever sample fields could be read (``source``, ``edited``,
            ``instruction``, ``editor``, ``task``, ``group_id``), for the output row.
    """

    id: str
    error: str
    key: str
    fields: dict[str, Any] = field(default_factory=dict)


#: one item of an input stream
InputItem = EditSample | BadRow


def _hash_image(ref: Any, h: Any) -> None:
    if isinstance(ref, Path):
        try:
            st = ref.stat()
            h.update(f"{os.path.abspath(ref)}\x00{st.st_size}\x00{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"{os.path.abspath(ref)}\x00missing".encode())
    elif isinstance(ref, bytes):
        h.update(hashlib.sha1(ref).digest())
    elif isinstance(ref, np.ndarray):
        h.update(f"{ref.shape}{ref.dtype}".encode())
        h.update(hashlib.sha1(np.ascontiguousarray(ref).tobytes()).digest())
    elif isinstance(ref, Image.Image):
        h.update(f"{ref.mode}{ref.size}".encode())
        h.update(hashlib.sha1(ref.tobytes()).digest())
    else:
        h.update(b"none")


def input_key(sample: EditSample) -> str:
    """A hex digest of everything a sample's scores depend on: its id, instruction,
    task, editor, group, box and meta, and each image (path, size and mtime of a file;
    the pixels of an in-memory image). Equal keys mean the row need not be rescored."""
    h = hashlib.sha1()
    fields = sample.model_dump(exclude={"source", "edited", "mask", "scores", "ratings"},
                               mode="json")
    h.update(json.dumps(fields, sort_keys=True, default=str).encode())
    for ref in (sample.source, sample.edited, sample.mask):
        h.update(b"\x01")
        _hash_image(ref, h)
    return h.hexdigest()


def bad_row_key(where: str, raw: str) -> str:
    """The key of a malformed row: its place and its text."""
    return hashlib.sha1(f"{where}\x00{raw}".encode()).hexdigest()


# --------------------------------------------------------------------------- folders


def is_edit_folder(path: Path) -> bool:
    """True when ``path`` is a folder with an ``edited/`` sub-folder (the folder layout)."""
    return path.is_dir() and (path / "edited").is_dir()


def _images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and not p.name.startswith(".")
                  and p.suffix.lower() in IMAGE_SUFFIXES)


def _read_instructions(folder: Path) -> dict[str, dict[str, str]]:
    csv_path, jsonl_path = folder / "instructions.csv", folder / "instructions.jsonl"
    if csv_path.is_file() and jsonl_path.is_file():
        raise ManifestError(f"{folder} has both instructions.csv and instructions.jsonl; keep one")
    out: dict[str, dict[str, str]] = {}
    if csv_path.is_file():
        reader = csv.DictReader(line for _, line in text_lines(csv_path, error=ManifestError))
        if not reader.fieldnames or not {"name", "instruction"} <= set(reader.fieldnames):
            raise ManifestError(f"{csv_path}: the header must have the columns name,instruction "
                                f"(and optionally task); it has {reader.fieldnames}")
        rows = [(n, r) for n, r in enumerate(reader, 2)]
        where = csv_path
    elif jsonl_path.is_file():
        rows = []
        for n, line in text_lines(jsonl_path, error=ManifestError):
            if line.strip():
                try:
                    rows.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise ManifestError(f"{jsonl_path}, line {n}: not valid JSON ({e})") from None
        where = jsonl_path
    else:
        raise ManifestError(f"{folder} has no instructions.csv (columns name,instruction) or "
                            "instructions.jsonl; add one that gives each image name its instruction")
    for n, row in rows:
        if not isinstance(row, dict) or not str(row.get("name") or "").strip():
            raise ManifestError(f"{where}, line {n}: a row needs a non-empty 'name'")
        name = str(row["name"]).strip()
        name = Path(name).stem if Path(name).suffix.lower() in IMAGE_SUFFIXES else name
        if name in out:
            raise ManifestError(f"{where}, line {n}: name {name!r} is given twice")
        out[name] = {k: str(v) for k, v in row.items() if v not in (None, "")}
    return out


def iter_folder(folder: str | os.PathLike[str]) -> Iterator[InputItem]:
    """The samples of a folder of edits (module docstring), in sorted order: the images
    directly under ``edited/`` first, then each editor's sub-folder.

    Raises:
        ManifestError: no ``edited/`` folder, no instructions file, or a malformed one.
    """
    root = Path(folder)
    if not is_edit_folder(root):
        raise ManifestError(f"{root} has no edited/ folder; the layout is source/<name>.<ext>, "
                            "edited/[<editor>/]<name>.<ext> and instructions.csv")
    instructions = _read_instructions(root)
    sources: dict[str, list[Path]] = {}
    if (root / "source").is_dir():
        for p in _images(root / "source"):
            sources.setdefault(p.stem, []).append(p)
    edited_dir = root / "edited"
    editors = [None] + sorted(d.name for d in edited_dir.iterdir()
                              if d.is_dir() and not d.name.startswith("."))
    for editor in editors:
        for path in _images(edited_dir if editor is None else edited_dir / editor):
            name = path.stem
            ident = name if editor is None else f"{editor}/{name}"
            row = instructions.get(name, {})
            fields: dict[str, Any] = {"edited": str(path), "editor": editor, "group_id": name,
                                      "instruction": row.get("instruction"), "task": row.get("task")}
            found = sources.get(name, [])
            problems = []
            if len(found) != 1:
                problems.append(f"no source image source/{name}.<ext>" if not found else
                                f"several source images for {name!r} ({', '.join(p.name for p in found)}); "
                                "keep one")
            if "instruction" not in row:
                problems.append(f"no instruction for {name!r} in the instructions file")
            if problems:
                fields["source"] = str(found[0]) if len(found) == 1 else None
                yield BadRow(ident, f"{path}: " + "; ".join(problems),
                             bad_row_key(str(path), json.dumps(fields, sort_keys=True)), fields)
                continue
            yield EditSample(id=ident, source=found[0], edited=path,
                             instruction=row["instruction"], task=row.get("task"),
                             editor=editor, group_id=name)
