"""Score files: the one column list and the one validating reader.

A score file is what ``ieqa score`` (and ``ieqa explain``) writes and what every command
downstream reads: ``bench``, ``rank-editors``, ``curate``, ``best-of-n``, ``dpo-pairs`` and
``baseline``. docs/reference/files.md documents it; this module is that page in code.

Columns (:data:`NON_SCORE_COLUMNS` lists every column that is not a score):

* ``id`` — the edit's id, unique in the file;
* the inputs :data:`INPUT_COLUMNS` (``source``, ``edited``, ``instruction``, ``editor``,
  ``task``, ``group_id``);
* one number column per dimension (canonical names or their aliases, see
  :mod:`ieqa.data.dimensions`); empty (``null``, an empty CSV cell) means "no score";
* the result columns :data:`RESULT_COLUMNS` (``flags``, ``sigma``, ``unavailable``,
  ``explanation``, ``region``, ``raw``, ``error``), ``input_key`` (the run's input
  fingerprint) and, in an ``ieqa explain`` output, :data:`EXPLAIN_COLUMNS`.

Predictions from other tools are the same format with only ``id`` and the dimension
columns (JSONL rows may nest the scores in a ``scores`` object, as a manifest does).

:func:`iter_score_rows` reads a file row by row in bounded memory and checks it; every
problem is a :class:`ScoreFileError` naming the file, the line (JSONL: 1-based line;
CSV and Parquet: 1-based row, the CSV header being row 1) and what to do:

* a missing ``id`` column, or a row without an id;
* the same id twice (both lines are named);
* a score that is not a number (``"abc"``, ``true``) or a column that is neither a
  dimension nor one of the columns above (a misspelt dimension);
* a file with no rows, and a file whose every row failed (nothing to read).

A row whose ``error`` is set, or with a NaN or infinite score, is not a prediction: it
is read with :attr:`ScoreRow.failed` saying why, so each command counts and reports it.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.textfile import text_lines
from ieqa.errors import IeqaError, UnknownDimensionError

__all__ = ["EXPLAIN_COLUMNS", "INPUT_COLUMNS", "JSON_COLUMNS", "NON_SCORE_COLUMNS",
           "RESULT_COLUMNS", "SCORE_FILE_SUFFIXES", "ScoreFileError", "ScoreRow",
           "ScoreRowChecker", "iter_score_rows", "looks_like_score_file"]

#: suffixes a score file may have
SCORE_FILE_SUFFIXES = (".jsonl", ".jsonl.gz", ".csv", ".parquet")
#: the input columns every ``ieqa score`` output carries next to the scores
INPUT_COLUMNS = ("source", "edited", "instruction", "editor", "task", "group_id")
#: what a scorer said of the edit besides the scores
RESULT_COLUMNS = ("flags", "sigma", "unavailable", "explanation", "region", "raw", "error")
#: the columns ``ieqa explain`` adds (how its critique parsed)
EXPLAIN_COLUMNS = ("format", "parse_status", "parse_error")
#: result columns stored as JSON text in Parquet
JSON_COLUMNS = ("sigma", "unavailable", "raw")
#: every column of a score file that is not a dimension score (manifest fields that a
#: predictions row may carry, ``meta`` and ``instruction_kind``, included)
NON_SCORE_COLUMNS = frozenset(("id", *INPUT_COLUMNS, *RESULT_COLUMNS, "input_key",
                               *EXPLAIN_COLUMNS, "meta", "instruction_kind"))


class ScoreFileError(IeqaError, ValueError):
    """A score file that cannot be read as one: the message names the file, the line and
    what to do."""


@dataclass
class ScoreRow:
    """One checked row of a score file.

    Attributes:
        index: 0-based position of the row in the file.
        where: ``"FILE: line N"`` (JSONL) or ``"FILE: row N"`` (CSV, Parquet), for messages.
        id: the edit's id.
        scores: canonical dimension -> score (finite; the file's scale).
        failed: why the row is not a prediction (its ``error``, or a NaN/infinite score),
            else None; ``scores`` is then empty.
        inputs: the :data:`INPUT_COLUMNS` (None where absent).
        columns: the row's other non-score columns as stored (JSON columns decoded).
    """

    index: int
    where: str
    id: str
    scores: dict[str, float]
    failed: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)


class ScoreRowChecker:
    """Checks rows one at a time (:meth:`check`) and the file at the end (:meth:`finish`):
    the rules of the module docstring. :func:`iter_score_rows` uses it; a reader with its
    own batching (curation's passes over Parquet) uses it on its first full pass.

    Args:
        path: the file, for messages.
        unique_ids: refuse an id seen before (keeps one string per row in memory).
    """

    def __init__(self, path: Path, unique_ids: bool = True) -> None:
        self.path = path
        self.unique_ids = unique_ids
        self.n_rows = 0
        self.n_failed = 0
        self.first_failure: tuple[str, str] | None = None
        self._seen: dict[str, str] = {}
        self._canon: dict[str, str] = {}

    def check(self, index: int, where: str, raw: Mapping[str, Any]) -> ScoreRow:
        """The :class:`ScoreRow` of one raw row; raises :class:`ScoreFileError`."""
        if isinstance(raw.get("scores"), Mapping):  # scores nested as in a manifest row
            raw = {**{k: v for k, v in raw.items() if k != "scores"}, **raw["scores"]}
        ident = raw.get("id")
        if ident is None or (isinstance(ident, str) and not ident.strip()):
            raise ScoreFileError(f"{where}: missing 'id': every row needs the edit's id (the "
                                 "id of its manifest row), in an 'id' column")
        ident = str(ident)
        if self.unique_ids:
            if ident in self._seen:
                raise ScoreFileError(f"{where}: duplicate id {ident!r} (first at "
                                     f"{self._seen[ident].rpartition(': ')[2]}): each edit "
                                     "has one row; remove the duplicate rows or give them "
                                     "their own ids")
            self._seen[ident] = where
        scores: dict[str, float] = {}
        columns: dict[str, Any] = {}
        for key, value in raw.items():
            if key in NON_SCORE_COLUMNS:
                if key != "id" and key not in INPUT_COLUMNS:
                    columns[key] = _decoded(key, value)
                continue
            if value is None:
                continue
            dim = self._canon.get(key)
            if dim is None:
                try:
                    dim = self._canon[key] = canonical_dimension(key)
                except UnknownDimensionError as exc:
                    raise ScoreFileError(
                        f"{where}: {exc} (column {key!r} is neither a dimension nor a "
                        "score-file column: rename it to a dimension or drop it)") from None
            if dim in scores:
                raise ScoreFileError(f"{where}: dimension {dim!r} given twice (as {key!r} "
                                     "and an alias); keep one column")
            scores[dim] = _number(value, key, where)
        failed = None
        if raw.get("error"):
            failed = f"failed to score: {raw['error']}"
        else:
            bad = sorted(d for d, v in scores.items() if not math.isfinite(v))
            if bad:
                failed = "; ".join(f"score {d!r} is {scores[d]}" for d in bad)
        self.n_rows += 1
        if failed is not None:
            scores = {}
            self.n_failed += 1
            if self.first_failure is None:
                self.first_failure = (where, failed)
        inputs = {c: raw.get(c) for c in INPUT_COLUMNS}
        return ScoreRow(index, where, ident, scores, failed, inputs, columns)

    def finish(self) -> None:
        """Raise :class:`ScoreFileError` for a file with no rows or whose every row
        failed."""
        if self.n_rows == 0:
            raise ScoreFileError(f"{self.path}: no predictions in the file; a score file has "
                                 "one row per edit (write one with `ieqa score MANIFEST -o "
                                 "FILE`)")
        if self.n_failed == self.n_rows and self.first_failure is not None:
            where, why = self.first_failure
            raise ScoreFileError(f"{self.path}: all {self.n_rows} rows failed to score, so "
                                 f"there is nothing to read (first: {where}: {why}); fix the "
                                 "cause and re-run `ieqa score` on the same output, which "
                                 "retries the failed rows")


def looks_like_score_file(keys: set[str]) -> bool:
    """True when a file with these column names (its first row's keys) is a score file
    rather than a manifest: it has a score-file result column or a column named like a
    dimension, and no nested ``scores`` object (a manifest's). A missing ``id`` does not
    make it a manifest: the reader then says the id is missing."""
    if "scores" in keys:
        return False
    if keys & {"input_key", "error", "flags", "sigma", "unavailable"}:
        return True
    for key in keys - NON_SCORE_COLUMNS:
        try:
            canonical_dimension(key)
        except UnknownDimensionError:
            continue
        return True
    return False


def iter_score_rows(path: str | os.PathLike[str]) -> Iterator[ScoreRow]:
    """The checked rows of a score file (``.parquet``, ``.jsonl``, ``.jsonl.gz``,
    ``.csv``), in file order, one record batch or line at a time.

    Raises:
        ScoreFileError: the file is missing, unreadable or breaks a rule of the module
            docstring (raised at the offending row; a file with no rows or whose every
            row failed, after the last row).
    """
    p = Path(path)
    if not p.name.endswith(SCORE_FILE_SUFFIXES):
        raise ScoreFileError(f"{p}: a score file is {', '.join(SCORE_FILE_SUFFIXES[:-1])} or "
                             f"{SCORE_FILE_SUFFIXES[-1]}; convert it to one of them")
    if not p.is_file():
        raise ScoreFileError(f"{p}: no such file")
    checker = ScoreRowChecker(p)
    for index, (where, raw) in enumerate(_raw_rows(p)):
        yield checker.check(index, where, raw)
    checker.finish()


def _raw_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if p.name.endswith(".parquet"):
        yield from _parquet_rows(p)
        return
    lines = text_lines(p, error=ScoreFileError)
    yield from (_csv_rows(lines, p) if p.name.endswith(".csv") else _jsonl_rows(lines, p))


def _jsonl_rows(lines: Iterator[tuple[int, str]],
                path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for lineno, line in lines:
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreFileError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ScoreFileError(f"{where}: expected a JSON object, got {type(row).__name__}")
        yield where, row


def _csv_rows(lines: Iterator[tuple[int, str]],
              path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(line for _, line in lines)
    if not reader.fieldnames or "id" not in reader.fieldnames:
        raise ScoreFileError(f"{path}: the CSV header needs an 'id' column (the edit's id), "
                             f"got {reader.fieldnames}")
    for rowno, row in enumerate(reader, 2):
        if None in row:
            raise ScoreFileError(f"{path}: row {rowno}: more cells than header columns")
        yield f"{path}: row {rowno}", {k: (None if v == "" else v) for k, v in row.items()}


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ScoreFileError(f"{path}: not a readable Parquet file ({exc})") from None
    if "id" not in pf.schema_arrow.names:
        raise ScoreFileError(f"{path}: no 'id' column (the edit's id); columns: "
                             f"{pf.schema_arrow.names}")
    rowno = 0
    for batch in pf.iter_batches():
        for row in batch.to_pylist():
            rowno += 1
            yield f"{path}: row {rowno}", row


def _number(value: Any, key: str, where: str) -> float:
    """The float of a score cell (NaN and infinities pass: the row is then failed)."""
    if isinstance(value, bool):
        raise ScoreFileError(f"{where}: {key}={value!r} is not a number; scores are numbers")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ScoreFileError(f"{where}: {key}={value!r} is not a number; scores are numbers "
                             "(leave the cell empty for no score)") from None


def _decoded(key: str, value: Any) -> Any:
    if key in JSON_COLUMNS and isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
