"""Manifests: dataset files that list :class:`~ieqa.data.schema.EditSample` rows.

A manifest is one file, one sample per row, in either format:

* **JSONL** (``.jsonl``, or gzip-compressed ``.jsonl.gz``): one JSON object per line,
  UTF-8; blank lines are ignored.
* **Parquet** (``.parquet``): one fixed Arrow schema (:data:`SAMPLE_SCHEMA`), written in
  row groups of at most ``row_group_size`` rows.
* **CSV** (``.csv``, read only): a header row and one sample per row, columns
  ``source,edited,instruction`` and optionally ``id`` (default: the ``edited`` path),
  ``instruction_kind``, ``task``, ``editor``, ``group_id``, ``mask``; a column named like a
  dimension (``visual_quality``, ``SC``, ...) holds scores, any other column goes to
  ``meta``; an empty cell is a missing value.

JSONL and CSV may start with a UTF-8 byte-order mark.

The format comes from the file suffix, or from an explicit ``format="jsonl" | "parquet"``.

Row schema (the same logical fields in both formats)::

    id                str, required, non-empty
    source            str | null      image path (see "Image paths" below)
    edited            str, required   image path
    instruction       str             default ""
    instruction_kind  str             "instruction" (default) | "description"
    task              str | null      edit category, e.g. "recolor"
    editor            str | null      name of the editing model
    group_id          str | null
    bbox              {x, y, w, h} | null     float64, normalised centre/size in [0, 1]
    mask              str | null      image path
    scores            {dimension: float}      JSONL: object; Parquet: map<string, float64>
    ratings           [{rater: str, dimension: str, value: float}]
    meta              object          JSONL: object; Parquet: column ``meta_json``, the
                                      object JSON-encoded (null when empty)

Rows may leave out any optional field (or set it to null) to get its default; a field
not in this list is an error (put extra information under ``meta``). Dimension names are
canonicalised on read (``"SC"`` -> ``"instruction_alignment"``). Floats round-trip
exactly: JSON holds Python's shortest ``repr`` of each float (``NaN``/``Infinity`` are
written as the bare tokens Python's :mod:`json` reads back), Parquet holds float64.

Image paths: a relative path in a row is relative to the folder holding the manifest,
written with ``/`` separators, so a dataset folder (manifest + images) can be moved or
copied as a whole. Readers turn it into ``<manifest folder>/<path>``; absolute paths are
kept. Writers store a path relative when the image lies under the manifest's folder and
absolute otherwise. In-memory images (``PIL.Image``, numpy arrays, encoded ``bytes``) are
saved by the writer into an image folder as files named by the SHA-1 of their encoded
bytes (identical images are stored once) and referenced by path.

Preference files (:func:`write_preferences`, :func:`iter_preferences`) use the same
formats with rows ``{a: <sample row>, b: <sample row>, label, dimension, rater, meta}``
(``meta_json`` in Parquet, also inside ``a`` and ``b``).

Reading streams: :func:`iter_manifest` holds one line (JSONL) or one record batch
(Parquet) at a time, so a manifest of millions of rows is read in bounded memory.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image
from pydantic import ValidationError

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.inputs import BadRow, bad_row_key
from ieqa.data.schema import EditSample, ImageRef, Preference
from ieqa.data.textfile import UnreadableTextError, text_lines
from ieqa.errors import ManifestError, UnknownDimensionError

__all__ = [
    "ImageStore", "ManifestWriter", "PREFERENCE_SCHEMA", "SAMPLE_SCHEMA", "iter_manifest",
    "first_row_keys", "iter_manifest_items", "iter_preferences", "read_manifest", "read_preferences", "row_to_sample",
    "sample_to_row", "write_manifest", "write_preferences",
]

logger = logging.getLogger("ieqa")

Format = Literal["jsonl", "parquet", "csv"]
#: Saves an in-memory image and returns the path of the file it wrote.
ImageSaver = Callable[[ImageRef], Path]
T = TypeVar("T")
_W = TypeVar("_W", bound="_RowWriter")

_SUFFIXES: dict[str, Format] = {".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".parquet": "parquet",
                                ".csv": "csv"}

# --------------------------------------------------------------------------- Arrow schema

_BBOX_TYPE = pa.struct([(k, pa.float64()) for k in ("x", "y", "w", "h")])
_RATING_TYPE = pa.struct(
    [("rater", pa.string()), ("dimension", pa.string()), ("value", pa.float64())]
)
_SAMPLE_FIELDS = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("source", pa.string()),
    pa.field("edited", pa.string(), nullable=False),
    pa.field("instruction", pa.string(), nullable=False),
    pa.field("instruction_kind", pa.string(), nullable=False),
    pa.field("task", pa.string()),
    pa.field("editor", pa.string()),
    pa.field("group_id", pa.string()),
    pa.field("bbox", _BBOX_TYPE),
    pa.field("mask", pa.string()),
    pa.field("scores", pa.map_(pa.string(), pa.float64()), nullable=False),
    pa.field("ratings", pa.list_(_RATING_TYPE), nullable=False),
    pa.field("meta_json", pa.string()),
]
#: The Arrow schema of a Parquet manifest; every row group is written with it.
SAMPLE_SCHEMA = pa.schema(_SAMPLE_FIELDS)
#: The Arrow schema of a Parquet preference file.
PREFERENCE_SCHEMA = pa.schema([
    pa.field("a", pa.struct(_SAMPLE_FIELDS), nullable=False),
    pa.field("b", pa.struct(_SAMPLE_FIELDS), nullable=False),
    pa.field("label", pa.string(), nullable=False),
    pa.field("dimension", pa.string(), nullable=False),
    pa.field("rater", pa.string()),
    pa.field("meta_json", pa.string()),
])

_SAMPLE_KEYS = frozenset(
    ("id", "source", "edited", "instruction", "instruction_kind", "task", "editor",
     "group_id", "bbox", "mask", "scores", "ratings", "meta")
)
_PREFERENCE_KEYS = frozenset(("a", "b", "label", "dimension", "rater", "meta"))


# --------------------------------------------------------------------------- formats

def _detect_format(path: Path, format: str | None) -> Format:
    if format is not None:
        if format not in ("jsonl", "parquet", "csv"):
            raise ManifestError(f"format must be 'jsonl', 'parquet' or 'csv', got {format!r}")
        return format  # type: ignore[return-value]
    for suffix, fmt in _SUFFIXES.items():
        if path.name.endswith(suffix):
            return fmt
    raise ManifestError(
        f"{path}: cannot tell the manifest format from the file name; supported suffixes "
        f"are {', '.join(_SUFFIXES)} (or pass format='jsonl' / format='parquet')"
    )


def _stem(path: Path) -> str:
    for suffix in _SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.name[: -len(suffix)]
    return path.stem


def _is_gzip(path: Path) -> bool:
    return path.name.endswith(".gz")


def first_row_keys(path: str | os.PathLike[str]) -> set[str] | None:
    """The field names of a row-per-record file, to tell its kind without reading it.

    Parquet: the schema's column names. JSONL (``.jsonl``, ``.jsonl.gz``): the keys of the
    first non-blank line. ``None`` for another suffix, a missing or unreadable file, an
    empty file, or a first line that is not a JSON object.

    Raises:
        UnreadableTextError: a line that is not UTF-8, or damaged gzip data (the file and
            the line named).
    """
    p = Path(path)
    try:
        fmt = _detect_format(p, None)
        if fmt == "parquet":
            return set(pq.read_schema(p).names)
        if fmt == "csv":
            header = next(csv.reader(line for _, line in text_lines(p)), None)
            return set(header) if header else None
        for _, line in text_lines(p):
            if line.strip():
                row = json.loads(line)
                return set(row) if isinstance(row, dict) else None
    except UnreadableTextError:
        raise  # bytes that are not UTF-8, damaged gzip: say which line, whatever the kind
    except (ManifestError, OSError, ValueError, pa.ArrowInvalid):
        return None
    return None


# --------------------------------------------------------------------------- images

_SUFFIX_BY_PIL_FORMAT = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "TIFF": ".tiff"}


def _encode_image(image: Image.Image | np.ndarray | bytes) -> tuple[bytes, str]:
    """Encoded bytes and file suffix of an in-memory image (lossless PNG unless bytes)."""
    if isinstance(image, bytes):
        try:
            with Image.open(io.BytesIO(image)) as im:
                fmt = im.format or ""
        except Exception as e:
            raise ManifestError(f"image bytes are not an image PIL can identify ({e})") from e
        return image, _SUFFIX_BY_PIL_FORMAT.get(fmt, "." + fmt.lower())
    if isinstance(image, np.ndarray):
        arr = image[..., 0] if image.ndim == 3 and image.shape[2] == 1 else image
        try:
            image = Image.fromarray(arr)
        except TypeError as e:
            raise ManifestError(
                f"cannot store a numpy image of shape {image.shape} and dtype {image.dtype}: {e}; "
                "use uint8 HxW, HxWx3 or HxWx4 (or uint16 / bool HxW)"
            ) from e
    buf = io.BytesIO()
    try:
        image.save(buf, format="PNG")
    except (OSError, KeyError, ValueError) as e:
        raise ManifestError(
            f"cannot store an image of mode {image.mode!r} losslessly as PNG ({e}); convert it "
            "to uint8 / an 8-bit mode (L, RGB, RGBA) first, or save it yourself and pass the path"
        ) from e
    return buf.getvalue(), ".png"


class ImageStore:
    """Saves in-memory images as files named by content: ``<sha1 of encoded bytes><suffix>``.

    PIL images and numpy arrays are encoded as lossless PNG; ``bytes`` are written
    unchanged with a suffix from the format PIL detects. A file that already exists is not
    written again, so identical images are stored once. The folder is created on first use.
    """

    def __init__(self, image_dir: str | os.PathLike[str]) -> None:
        self.image_dir = Path(image_dir)
        self._known: set[str] = set()

    def __call__(self, image: ImageRef) -> Path:
        if isinstance(image, Path):
            return image
        data, suffix = _encode_image(image)
        name = hashlib.sha1(data).hexdigest() + suffix
        dest = self.image_dir / name
        if name not in self._known and not dest.exists():
            self.image_dir.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, dest)
        self._known.add(name)
        return dest


# --------------------------------------------------------------------------- rows

def _path_to_str(path: Path, base_dir: str) -> str:
    """``path`` relative to ``base_dir`` with ``/`` separators if it lies under it, else absolute."""
    full = os.path.abspath(path)
    prefix = base_dir.rstrip(os.sep) + os.sep
    if full.startswith(prefix):
        return full[len(prefix):].replace(os.sep, "/")
    return full


def _image_to_str(
    sample: EditSample, field: str, base_dir: str, image_saver: ImageSaver | None
) -> str | None:
    ref = getattr(sample, field)
    if ref is None:
        return None
    if not isinstance(ref, Path):
        if image_saver is None:
            raise ManifestError(
                f"sample {sample.id!r}: {field} is an in-memory image; write it with "
                "ManifestWriter (which saves it to its image_dir) or pass an image_saver"
            )
        ref = image_saver(ref)
    return _path_to_str(ref, base_dir)


def sample_to_row(
    sample: EditSample, base_dir: str | os.PathLike[str], image_saver: ImageSaver | None = None
) -> dict[str, Any]:
    """The manifest row of ``sample`` (see the module docstring for the schema).

    Image paths become strings relative to ``base_dir`` (the manifest's folder) when they
    lie under it, absolute otherwise. In-memory images are first passed to
    ``image_saver`` (e.g. an :class:`ImageStore`), which returns the path it saved to;
    without one they raise :class:`ManifestError`.
    """
    base = os.path.abspath(base_dir)
    bbox = sample.bbox
    return {
        "id": sample.id,
        "source": _image_to_str(sample, "source", base, image_saver),
        "edited": _image_to_str(sample, "edited", base, image_saver),
        "instruction": sample.instruction,
        "instruction_kind": sample.instruction_kind.value,
        "task": sample.task,
        "editor": sample.editor,
        "group_id": sample.group_id,
        "bbox": None if bbox is None else {"x": bbox.x, "y": bbox.y, "w": bbox.w, "h": bbox.h},
        "mask": _image_to_str(sample, "mask", base, image_saver),
        "scores": dict(sample.scores),
        "ratings": [
            {"rater": r.rater, "dimension": r.dimension, "value": r.value} for r in sample.ratings
        ],
        "meta": sample.meta,
    }


def _describe(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'row'}: {err['msg']} "
            f"(got {str(repr(err.get('input')))[:80]})"
            for err in e.errors(include_url=False)
        )
    return f"{type(e).__name__}: {e}"


def _check_keys(row: Any, known: frozenset[str], required: tuple[str, ...], what: str) -> None:
    if not isinstance(row, Mapping):
        raise ManifestError(f"a {what} row must be an object, got {type(row).__name__}")
    unknown = row.keys() - known
    if unknown:
        raise ManifestError(
            f"unknown field(s) {sorted(unknown)}; known fields are {sorted(known)} "
            "(put extra information under 'meta')"
        )
    missing = [k for k in required if row.get(k) in (None, "")]
    if missing:
        raise ManifestError(f"required field(s) {missing} missing or empty")


def row_to_sample(row: Mapping[str, Any], base_dir: str | os.PathLike[str]) -> EditSample:
    """Parse one manifest row; relative image paths are joined to ``base_dir``.

    Null fields take their defaults. Raises :class:`ManifestError` for unknown or missing
    fields and for values the :class:`EditSample` model rejects.
    """
    _check_keys(row, _SAMPLE_KEYS, ("id", "edited"), "manifest")
    base = os.fspath(base_dir)
    data = {k: v for k, v in row.items() if v is not None}
    for field in ("source", "edited", "mask"):
        value = data.get(field)
        if isinstance(value, str) and value:
            data[field] = os.path.join(base, value)  # an absolute value is kept as is
    try:
        return EditSample.model_validate(data)
    except (ValueError, TypeError, UnknownDimensionError) as e:  # ValidationError is a ValueError
        raise ManifestError(_describe(e)) from e


def _preference_to_row(
    pref: Preference, base_dir: str | os.PathLike[str], image_saver: ImageSaver | None
) -> dict[str, Any]:
    return {
        "a": sample_to_row(pref.a, base_dir, image_saver),
        "b": sample_to_row(pref.b, base_dir, image_saver),
        "label": pref.label.value,
        "dimension": pref.dimension,
        "rater": pref.rater,
        "meta": pref.meta,
    }


def _row_to_preference(row: Mapping[str, Any], base_dir: str | os.PathLike[str]) -> Preference:
    _check_keys(row, _PREFERENCE_KEYS, ("a", "b", "label"), "preference")
    sides = {}
    for k in ("a", "b"):
        try:
            sides[k] = row_to_sample(row[k], base_dir)
        except ManifestError as e:
            raise ManifestError(f"{k}: {e}") from e
    data = {k: v for k, v in row.items() if v is not None and k not in ("a", "b")}
    try:
        return Preference.model_validate({**data, **sides})
    except (ValueError, TypeError, UnknownDimensionError) as e:
        raise ManifestError(_describe(e)) from e


# Parquet stores ``meta`` as a JSON string (``meta_json``) and ``scores`` as a map.

def _encode_meta(row: dict[str, Any]) -> dict[str, Any]:
    """In place: ``meta`` -> ``meta_json`` (rows are fresh from :func:`sample_to_row`)."""
    meta = row.pop("meta")
    row["meta_json"] = json.dumps(meta, ensure_ascii=False) if meta else None
    return row


def _decode_meta(row: dict[str, Any]) -> dict[str, Any]:
    if "meta_json" in row:
        text = row.pop("meta_json")
        try:
            row["meta"] = json.loads(text) if text else None
        except json.JSONDecodeError as e:
            raise ManifestError(f"meta_json is not valid JSON ({e})") from e
    return row


def _decode_sample_row(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("scores") is not None:
        row["scores"] = dict(row["scores"])  # Arrow maps arrive as (key, value) pairs
    return _decode_meta(row)


def _encode_preference_row(row: dict[str, Any]) -> dict[str, Any]:
    for k in ("a", "b"):
        _encode_meta(row[k])
    return _encode_meta(row)


def _decode_preference_row(row: dict[str, Any]) -> dict[str, Any]:
    for k in ("a", "b"):
        if isinstance(row.get(k), dict):
            row[k] = _decode_sample_row(row[k])
    return _decode_meta(row)


# --------------------------------------------------------------------------- reading

def _raw_rows(path: Path, fmt: Format, batch_size: int) -> Iterator[tuple[int, Any]]:
    """``(1-based number, raw row)``: a line of text (JSONL) or a column dict (Parquet)."""
    if fmt == "jsonl":  # a UTF-8 BOM is accepted
        for lineno, line in text_lines(path, error=ManifestError):
            if line.strip():
                yield lineno, line
        return
    if fmt == "csv":
        reader = csv.DictReader(line for _, line in text_lines(path, error=ManifestError))
        for row in reader:  # extra cells sit under the key None (_csv_row rejects them)
            if any(v not in (None, "") for v in row.values()):
                yield reader.line_num, row
        return
    try:
        # Single-threaded, unbuffered decoding keeps the reader's footprint at about one
        # row group; Python-side parsing of each row costs far more than decoding anyway.
        with pq.ParquetFile(path, pre_buffer=False) as pf:
            rowno = 0
            for batch in pf.iter_batches(batch_size=batch_size, use_threads=False):
                for row in batch.to_pylist():
                    rowno += 1
                    yield rowno, row
    except pa.ArrowException as e:
        raise ManifestError(f"{path}: cannot read as Parquet ({e})") from e


def _csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """A CSV manifest row as a manifest row: empty cells are absent, a column named like a
    dimension is a score, any other unknown column goes to ``meta``; the id defaults to
    the edited path."""
    if None in row:
        raise ManifestError("more cells than header columns")
    out: dict[str, Any] = {}
    scores: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for key, value in row.items():
        if value in (None, ""):
            continue
        if key in _SAMPLE_KEYS - {"scores", "ratings", "meta", "bbox"}:
            out[key] = value
            continue
        try:
            scores[canonical_dimension(key)] = float(value)
        except UnknownDimensionError:
            meta[key] = value
        except ValueError:
            raise ManifestError(f"column {key!r} is a score and {value!r} is not a number") from None
    if scores:
        out["scores"] = scores
    if meta:
        out["meta"] = meta
    if "edited" in out:
        out.setdefault("id", out["edited"])
    return out


def _load_row(raw: Any, decode: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    if not isinstance(raw, str):
        return decode(raw)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise ManifestError(f"not valid JSON ({e})") from e


#: what a reader does with a malformed row: ``(path, unit, number, raw row, error)`` ->
#: an item to yield in its place, or None to skip it (it may also raise)
OnBadRow = Callable[[Path, str, int, Any, ManifestError], Any]


def _raise_bad_row(path: Path, unit: str, number: int, raw: Any, e: ManifestError) -> None:
    raise ManifestError(
        f"{path}, {unit} {number}: {e} (fix the row; ieqa score records such rows as errors "
        "and goes on, and in Python iter_manifest(path, strict=False) skips them)") from e


def _skip_bad_row(path: Path, unit: str, number: int, raw: Any, e: ManifestError) -> None:
    logger.warning("%s, %s %s: skipping malformed row: %s", path, unit, number, e)


def _iter_records(
    path: str | os.PathLike[str],
    parse: Callable[[Mapping[str, Any], str], T],
    decode: Callable[[dict[str, Any]], dict[str, Any]],
    *, format: str | None, batch_size: int, on_bad_row: OnBadRow,
) -> Iterator[Any]:
    path = Path(path)
    fmt = _detect_format(path, format)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not path.is_file():
        raise FileNotFoundError(f"manifest {path} does not exist (or is not a file)")
    base_dir = os.path.dirname(os.path.abspath(path))
    unit = "row" if fmt == "parquet" else "line"
    if fmt == "csv":
        decode = _csv_row

    def records() -> Iterator[Any]:
        for number, raw in _raw_rows(path, fmt, batch_size):
            try:
                record = parse(_load_row(raw, decode), base_dir)
            except ManifestError as e:
                record = on_bad_row(path, unit, number, raw, e)
                if record is None:
                    continue
            yield record

    return records()


def iter_manifest(
    path: str | os.PathLike[str], *, format: str | None = None,
    batch_size: int = 4096, strict: bool = True,
) -> Iterator[EditSample]:
    """Stream the samples of a manifest, one at a time, in file order.

    Memory stays bounded by one line (JSONL) or one Parquet record batch of
    ``batch_size`` rows (>= 1) plus the row group being decoded. Relative image paths are
    resolved against the manifest's folder. The format comes from the suffix
    (``.jsonl``, ``.jsonl.gz``, ``.parquet``) unless ``format`` names it.

    A malformed row (not JSON, unknown or missing fields, invalid values) raises
    :class:`ManifestError` naming the file and the 1-based line (JSONL) or row (Parquet)
    number when ``strict``; with ``strict=False`` it is skipped with a warning on the
    ``"ieqa"`` logger. Format problems and a missing file are raised at call time.
    """
    return _iter_records(path, row_to_sample, _decode_sample_row, format=format,
                         batch_size=batch_size,
                         on_bad_row=_raise_bad_row if strict else _skip_bad_row)


def _bad_row(path: Path, unit: str, number: int, raw: Any, e: ManifestError) -> BadRow:
    """A malformed row as a :class:`~ieqa.data.inputs.BadRow` with the fields it has."""
    where = f"{path.name}:{number}"
    fields: Any = raw
    if isinstance(raw, str):
        try:
            fields = json.loads(raw)
        except ValueError:
            fields = {}
    fields = fields if isinstance(fields, dict) else {}
    ident = fields.get("id") or fields.get("edited")
    keep = {k: fields[k] for k in ("source", "edited", "instruction", "editor", "task", "group_id")
            if isinstance(fields.get(k), str)}
    text = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str)
    return BadRow(ident if isinstance(ident, str) and ident else where,
                  f"{path}, {unit} {number}: {e}", bad_row_key(where, text), keep)


def iter_manifest_items(path: str | os.PathLike[str], *, format: str | None = None,
                        batch_size: int = 4096) -> Iterator[EditSample | BadRow]:
    """Like :func:`iter_manifest`, but a malformed row becomes a
    :class:`~ieqa.data.inputs.BadRow` (its id when readable, the file and 1-based line or
    row number, and the reason) in the stream instead of an exception, so a scoring run
    records it and goes on. Format problems and a missing file still raise at call time.
    """
    return _iter_records(path, row_to_sample, _decode_sample_row, format=format,
                         batch_size=batch_size, on_bad_row=_bad_row)


def read_manifest(path: str | os.PathLike[str], **kw: Any) -> list[EditSample]:
    """All samples of a manifest as a list (see :func:`iter_manifest` for the options)."""
    return list(iter_manifest(path, **kw))


def iter_preferences(
    path: str | os.PathLike[str], *, format: str | None = None,
    batch_size: int = 4096, strict: bool = True,
) -> Iterator[Preference]:
    """Stream the preferences of a preference file (options as in :func:`iter_manifest`)."""
    return _iter_records(path, _row_to_preference, _decode_preference_row, format=format,
                         batch_size=batch_size,
                         on_bad_row=_raise_bad_row if strict else _skip_bad_row)


def read_preferences(path: str | os.PathLike[str], **kw: Any) -> list[Preference]:
    """All preferences of a preference file as a list."""
    return list(iter_preferences(path, **kw))


# --------------------------------------------------------------------------- writing

class _RowWriter:
    """Streams rows to a temporary file next to ``path``; renames it into place on close."""

    _schema: pa.Schema = SAMPLE_SCHEMA
    _encode: Callable[[dict[str, Any]], dict[str, Any]] = staticmethod(_encode_meta)

    def __init__(
        self, path: str | os.PathLike[str], *, format: str | None = None,
        image_dir: str | os.PathLike[str] | None = None, row_group_size: int = 65536,
    ) -> None:
        if row_group_size < 1:
            raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")
        self.path = Path(path)
        self.format: Format = _detect_format(self.path, format)
        if self.format == "csv":
            raise ManifestError(f"{self.path}: ieqa reads CSV manifests but writes JSONL or Parquet; "
                                "name the output .jsonl or .parquet")
        self.row_group_size = row_group_size
        self.rows_written = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._base_dir = os.path.dirname(os.path.abspath(self.path))
        default_dir = self.path.parent / f"{_stem(self.path)}_images"
        self.images = ImageStore(default_dir if image_dir is None else image_dir)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}.tmp")
        self._tmp: Path | None = tmp
        self._buffer: list[dict[str, Any]] = []
        self._text: IO[str] | None = None
        self._parquet: pq.ParquetWriter | None = None
        try:
            if self.format == "jsonl":
                opener = gzip.open if _is_gzip(self.path) else open
                self._text = opener(tmp, "xt", encoding="utf-8")
            else:
                self._parquet = pq.ParquetWriter(str(tmp), self._schema)
        except BaseException:
            self.abort()
            raise

    def _write_row(self, row: dict[str, Any], what: str) -> None:
        if self._tmp is None:
            raise ManifestError(f"{self.path}: the writer is closed; open a new one to write more")
        try:
            if self._text is not None:
                line = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
            else:
                row = self._encode(row)
        except (TypeError, ValueError) as e:
            raise ManifestError(f"{what}: meta is not JSON-serialisable ({e})") from e
        if self._text is not None:
            self._text.write(line + "\n")
        else:
            self._buffer.append(row)
            if len(self._buffer) >= self.row_group_size:
                self._flush()
        self.rows_written += 1

    def _flush(self) -> None:
        if self._buffer and self._parquet is not None:
            table = pa.Table.from_pylist(self._buffer, schema=self._schema)
            self._buffer = []
            self._parquet.write_table(table, row_group_size=self.row_group_size)

    def close(self) -> Path:
        """Finish the file and move it to ``path`` (replacing any old file); returns ``path``."""
        if self._tmp is None:
            return self.path
        try:
            self._flush()
            if self._parquet is not None:
                self._parquet.close()
            if self._text is not None:
                self._text.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._tmp = None
        return self.path

    def abort(self) -> None:
        """Discard everything written; ``path`` is left as it was. Saved images are kept."""
        for handle in (self._text, self._parquet):
            try:
                if handle is not None:
                    handle.close()
            except Exception:  # noqa: BLE001 - best effort while discarding
                pass
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
        self._tmp, self._buffer = None, []

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class ManifestWriter(_RowWriter):
    """Writes samples to a manifest, streaming (use as a context manager).

    ``path``'s suffix picks the format unless ``format`` ("jsonl" | "parquet") is given.
    Rows go to a temporary file in the same folder, which replaces ``path`` only on a
    successful :meth:`close`: if the ``with`` block raises, ``path`` is left untouched.
    Parquet rows are buffered and written as row groups of ``row_group_size`` rows, all
    with :data:`SAMPLE_SCHEMA`. In-memory images are saved as content-named files in
    ``image_dir`` (default ``<manifest stem>_images/`` next to the manifest; created only
    when needed) and are not removed if the write is aborted.

    Examples:
        >>> from ieqa.data.schema import EditSample
        >>> samples = [EditSample(id="e1", source="s.png", edited="e.png", instruction="make it red")]
        >>> with ManifestWriter("data/train.parquet") as w:
        ...     w.write_many(samples)  # the number written
        1
        >>> [s.id for s in read_manifest("data/train.parquet")]
        ['e1']
    """

    def write(self, sample: EditSample) -> None:
        """Append one sample."""
        if not isinstance(sample, EditSample):
            raise TypeError(f"ManifestWriter.write takes an EditSample, got {type(sample).__name__}")
        self._write_row(sample_to_row(sample, self._base_dir, self.images), f"sample {sample.id!r}")

    def write_many(self, samples: Iterable[EditSample]) -> int:
        """Append every sample of ``samples``; returns how many were written."""
        n = 0
        for sample in samples:
            self.write(sample)
            n += 1
        return n


class _PreferenceWriter(_RowWriter):
    _schema = PREFERENCE_SCHEMA
    _encode = staticmethod(_encode_preference_row)

    def write(self, pref: Preference) -> None:
        if not isinstance(pref, Preference):
            raise TypeError(f"write_preferences takes Preference objects, got {type(pref).__name__}")
        row = _preference_to_row(pref, self._base_dir, self.images)
        self._write_row(row, f"preference ({pref.a.id!r}, {pref.b.id!r})")


def write_manifest(
    samples: Iterable[EditSample], path: str | os.PathLike[str], **kw: Any
) -> Path:
    """Write ``samples`` to a manifest at ``path`` (options as in :class:`ManifestWriter`)."""
    with ManifestWriter(path, **kw) as writer:
        writer.write_many(samples)
    return writer.path


def write_preferences(
    prefs: Iterable[Preference], path: str | os.PathLike[str], **kw: Any
) -> Path:
    """Write preferences to a JSONL or Parquet file (options as in :class:`ManifestWriter`)."""
    with _PreferenceWriter(path, **kw) as writer:
        for pref in prefs:
            writer.write(pref)
    return writer.path
