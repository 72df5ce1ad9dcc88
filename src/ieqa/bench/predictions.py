"""Predictions files: an evaluator's per-edit scores, cached to be benchmarked later.

Formats (by suffix):

* **JSONL** (``.jsonl``, ``.jsonl.gz``): one object per line, ``{"id": ..., "<dim>": score,
  ...}``; the scores may also sit in a nested ``"scores"`` object (as in a manifest row).
* **CSV** (``.csv``): a header row with ``id`` and one column per dimension.
* **Parquet** (``.parquet``): an ``id`` column and one float column per dimension, e.g.
  the output of ``ieqa score`` (:mod:`ieqa.scorers.run`).

Dimension names are canonicalised (``"SC"`` -> ``instruction_alignment``). The keys
``editor``, ``group_id``, ``task``, ``instruction``, ``explanation``, ``meta`` and the
other columns of ``ieqa score`` output (``sigma``, ``unavailable``, ``region``, ``raw``,
``error``, ``flags``, ``source``, ``edited``, ``input_key``) are allowed and ignored (they
are not scores). A missing score (empty CSV cell, JSON ``null``) means "no score for that
dimension". A row whose ``error`` is set (it failed to score) and a row with a ``NaN`` or
infinite score are *failed*: they are not predictions, and :attr:`Predictions.failed`
lists them with the reason, so a benchmark counts them as missing and says so. A missing
or duplicate id, an unknown dimension and a non-numeric value are errors —
each :class:`~ieqa.bench.errors.PredictionsError` names the file and the 1-based line
(JSONL) or row (CSV, header = row 1).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.bench.errors import PredictionsError
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.manifest import first_row_keys
from ieqa.errors import UnknownDimensionError

__all__ = ["IGNORED_KEYS", "Predictions", "is_predictions_file", "read_predictions"]

#: Keys of a predictions row that are neither the id nor a score.
IGNORED_KEYS = frozenset(("editor", "group_id", "task", "instruction", "explanation", "meta",
                          "sigma", "unavailable", "region", "raw", "error", "flags", "source",
                          "edited", "input_key", "instruction_kind"))


class Predictions(dict):
    """``{edit id: {canonical dimension: score}}`` read from a file, with ``failed``:
    ``{edit id: reason}`` of the rows that are in the file but are not predictions (their
    scoring failed, or a score is NaN or infinite)."""

    def __init__(self, *args: Any, failed: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.failed: dict[str, str] = dict(failed or {})
_SUFFIXES = (".jsonl", ".jsonl.gz", ".csv", ".parquet")


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8", newline="")


def _kind(path: Path) -> str:
    for suffix in _SUFFIXES:
        if path.name.endswith(suffix):
            return suffix.lstrip(".") if suffix in (".csv", ".parquet") else "jsonl"
    raise PredictionsError(f"{path}: predictions must be .jsonl, .jsonl.gz, .csv or .parquet files")


def is_predictions_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` looks like a predictions file rather than a manifest.

    ``.csv`` is always predictions; for Parquet the schema and for JSONL the first
    non-blank line decides: a row with an ``edited`` image is a manifest row.
    """
    p = Path(path)
    if p.name.endswith(".csv"):
        return True
    keys = first_row_keys(p)
    if keys is not None and "input_key" in keys:  # an ieqa score output (it lists its inputs)
        return True
    if keys is None or "edited" in keys:
        return False
    return "id" in keys or not p.name.endswith(".parquet")


def _jsonl_rows(fh: IO[str], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for lineno, line in enumerate(fh, 1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PredictionsError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise PredictionsError(f"{where}: expected a JSON object, got {type(row).__name__}")
        if isinstance(row.get("scores"), Mapping):
            row = {**{k: v for k, v in row.items() if k != "scores"}, **row["scores"]}
        yield where, row


def _csv_rows(fh: IO[str], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(fh)
    if not reader.fieldnames or "id" not in reader.fieldnames:
        raise PredictionsError(f"{path}: the CSV header must have an 'id' column, got {reader.fieldnames}")
    for rowno, row in enumerate(reader, 2):
        if None in row:
            raise PredictionsError(f"{path}: row {rowno}: more cells than header columns")
        yield f"{path}: row {rowno}", {k: (None if v == "" else v) for k, v in row.items()}


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise PredictionsError(f"{path}: not a readable Parquet file ({exc})") from None
    if "id" not in pf.schema_arrow.names:
        raise PredictionsError(f"{path}: a Parquet predictions file needs an 'id' column, got "
                               f"{pf.schema_arrow.names}")
    rowno = 0
    for batch in pf.iter_batches():
        for row in batch.to_pylist():
            rowno += 1
            yield f"{path}: row {rowno}", row


def _score(value: Any, key: str, where: str) -> float:
    """The float of a score cell (NaN and infinities pass; the caller fails the row)."""
    if isinstance(value, bool):
        raise PredictionsError(f"{where}: {key}={value!r} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PredictionsError(f"{where}: {key}={value!r} is not a number") from None


def _parse_row(row: dict[str, Any], where: str, canon: dict[str, str]) -> tuple[str, dict[str, float]]:
    ident = row.get("id")
    if ident is None or (isinstance(ident, str) and not ident.strip()):
        raise PredictionsError(f"{where}: missing 'id'")
    scores: dict[str, float] = {}
    for key, value in row.items():
        if key == "id" or key in IGNORED_KEYS or value is None:
            continue
        if key not in canon:
            try:
                canon[key] = canonical_dimension(key)
            except UnknownDimensionError as exc:
                raise PredictionsError(f"{where}: {exc}") from None
        dim = canon[key]
        if dim in scores:
            raise PredictionsError(f"{where}: dimension {dim!r} given twice (as {key!r} and an alias)")
        scores[dim] = _score(value, key, where)
    return str(ident), scores


def read_predictions(path: str | os.PathLike[str]) -> Predictions:
    """Read a predictions file into ``{edit id: {canonical dimension: score}}``.

    Scores keep the file's scale. Rows that failed to score or hold a NaN/infinite score
    are left out of the mapping and listed in ``.failed`` (module docstring). Raises
    :class:`~ieqa.bench.errors.PredictionsError` naming the file and row for malformed
    content, and when the file holds no rows.
    """
    p = Path(path)
    kind = _kind(p)
    if not p.is_file():
        raise PredictionsError(f"{p}: no such file")
    out = Predictions()
    canon: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if kind == "parquet":
            rows = _parquet_rows(p)
        else:
            fh = stack.enter_context(_open_text(p))
            rows = (_csv_rows if kind == "csv" else _jsonl_rows)(fh, p)
        for where, row in rows:
            ident, scores = _parse_row(row, where, canon)
            if ident in out or ident in out.failed:
                raise PredictionsError(f"{where}: duplicate id {ident!r}")
            bad = sorted(d for d, v in scores.items() if not math.isfinite(v))
            if row.get("error"):
                out.failed[ident] = f"failed to score: {row['error']}"
            elif bad:
                out.failed[ident] = f"non-finite prediction for {', '.join(bad)}"
            else:
                out[ident] = scores
    if not out and not out.failed:
        raise PredictionsError(f"{p}: no predictions in the file")
    return out
