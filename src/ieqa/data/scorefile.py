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
  fingerprint), ``scorer`` (:data:`SCORER_COLUMN`: which scorer configuration wrote the row,
  ``NAME@HASH``) and, in an ``ieqa explain`` output, :data:`EXPLAIN_COLUMNS`.

Predictions from other tools are the same format with only ``id`` and the dimension
columns (JSONL rows may nest the scores in a ``scores`` object, as a manifest does).

:func:`iter_score_rows` reads a file row by row in bounded memory and checks it; every
problem is a :class:`ScoreFileError` naming the file, the line (JSONL: 1-based line;
CSV and Parquet: 1-based row, the CSV header being row 1) and what to do:

* a missing ``id`` column, or a row without an id;
* the same id twice (both lines are named);
* a score that is not a number (``"abc"``, ``true``) or a column that is neither a
  dimension nor one of the columns above (a misspelt dimension);
* a file with no rows, and a file whose every row failed (nothing to read);
* **rows of two scorers in one file** (two values of the ``scorer`` column, or rows with it
  next to rows without it, as when another tool's rows were appended): one file is one
  scorer's scores on one scale, so the reader refuses it at the first row of the second
  scorer, unless it is told which scorer to read (``scorer=`` here, ``--from-scorer`` on the
  command line), when it reads that scorer's rows only and counts the others
  (:attr:`ScoreRowChecker.n_other`).

Where a score file came from — the scorer's configuration and scales, the inputs it
scored — is in its metadata (:func:`read_provenance`). A command that joins a score
file with another file by id (human labels, a benchmark, a second score file) checks that
both describe the same edits (:func:`check_join`).

A row whose ``error`` is set, or with a NaN or infinite score, is not a prediction: it
is read with :attr:`ScoreRow.failed` saying why, so each command counts and reports it.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.textfile import json_lines, text_lines
from ieqa.errors import IeqaError, UnknownDimensionError

__all__ = ["EXPLAIN_COLUMNS", "INPUT_COLUMNS", "RESULT_COLUMN_TYPES", "output_schema", "JOIN_FIELDS", "JSON_COLUMNS",
           "NON_SCORE_COLUMNS", "NO_SCORER", "RESULT_COLUMNS", "SCORER_COLUMN",
           "SCORE_FILE_SUFFIXES", "JoinCheck", "ScoreFileError", "ScoreRow", "ScoreRowChecker",
           "check_join", "image_ref", "iter_score_rows", "join_fields", "looks_like_score_file",
           "other_scorer_note", "read_provenance", "same_image_ref", "scorer_matches"]

#: suffixes a score file may have
SCORE_FILE_SUFFIXES = (".jsonl", ".jsonl.gz", ".csv", ".parquet")
#: the input columns every ``ieqa score`` output carries next to the scores
INPUT_COLUMNS = ("source", "edited", "instruction", "editor", "task", "group_id")
#: what a scorer said of the edit besides the scores
#: the Arrow type each result column has in a score file ieqa writes (JSON objects as
#: JSON text; ``region`` a normalised centre/size box)
RESULT_COLUMN_TYPES: dict[str, pa.DataType] = {
    "flags": pa.list_(pa.string()), "sigma": pa.string(), "unavailable": pa.string(),
    "explanation": pa.string(),
    "region": pa.struct([("x", pa.float64()), ("y", pa.float64()), ("w", pa.float64()),
                         ("h", pa.float64())]),
    "raw": pa.string(), "error": pa.string()}
RESULT_COLUMNS = tuple(RESULT_COLUMN_TYPES)
#: the columns ``ieqa explain`` adds (how its critique parsed)
EXPLAIN_COLUMNS = ("format", "parse_status", "parse_error")
#: result columns stored as JSON text in Parquet
JSON_COLUMNS = ("sigma", "unavailable", "raw")
#: the column naming the scorer configuration that wrote a row: ``NAME@HASH``, HASH the
#: first 12 hex digits of the SHA-256 of the configuration that tells scorers apart
#: (``ieqa.scorers.run.scorer_id``)
SCORER_COLUMN = "scorer"
#: what the messages and ``--from-scorer`` call the rows of a file without a ``scorer`` value
#: (another tool's predictions, a score file of an ieqa before 0.1)
NO_SCORER = "none"
#: every column of a score file that is not a dimension score (manifest fields that a
#: predictions row may carry, ``meta`` and ``instruction_kind``, included)
NON_SCORE_COLUMNS = frozenset(("id", *INPUT_COLUMNS, *RESULT_COLUMNS, "input_key",
                               SCORER_COLUMN, *EXPLAIN_COLUMNS, "meta", "instruction_kind"))
#: the inputs a join by id compares (:func:`check_join`)
JOIN_FIELDS = ("source", "edited", "editor")


def output_schema(dimensions: Iterable[str]) -> pa.Schema:
    """The Arrow schema of a score file ieqa writes for a scorer with these dimensions:
    ``id``, :data:`INPUT_COLUMNS`, one float column per dimension, :data:`RESULT_COLUMNS`
    (:data:`RESULT_COLUMN_TYPES`), ``input_key`` and :data:`SCORER_COLUMN`."""
    fields = [pa.field("id", pa.string(), nullable=False)]
    fields += [pa.field(c, pa.string()) for c in INPUT_COLUMNS]
    fields += [pa.field(d, pa.float64()) for d in dimensions]
    fields += [pa.field(c, t) for c, t in RESULT_COLUMN_TYPES.items()]
    fields += [pa.field("input_key", pa.string()), pa.field(SCORER_COLUMN, pa.string())]
    return pa.schema(fields)


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
        scorer: the row's :data:`SCORER_COLUMN` (None where absent).
        dimensions: the dimension columns the row has, with a score or empty.
    """

    index: int
    where: str
    id: str
    scores: dict[str, float]
    failed: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)
    scorer: str | None = None
    dimensions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The row as a flat dict, as the file holds it: ``id``, the inputs, one key per
        dimension column (canonical names; None without a score, and for a failed row),
        the other columns (JSON columns decoded) and ``scorer``."""
        out: dict[str, Any] = {"id": self.id, **self.inputs,
                               **{d: self.scores.get(d) for d in self.dimensions},
                               **self.scores, **self.columns}
        if self.scorer is not None:
            out[SCORER_COLUMN] = self.scorer
        return out


def scorer_matches(value: str | None, wanted: str) -> bool:
    """Whether a row's ``scorer`` value is the scorer ``wanted`` names: ``NAME@HASH``
    exactly, a bare ``NAME`` any configuration of it, :data:`NO_SCORER` the rows without
    one."""
    if value is None:
        return wanted == NO_SCORER
    return value == wanted or ("@" not in wanted and value.partition("@")[0] == wanted)


def _shown(value: str | None) -> str:
    return NO_SCORER if value is None else value


class ScoreRowChecker:
    """Checks rows one at a time (:meth:`check`) and the file at the end (:meth:`finish`):
    the rules of the module docstring. :func:`iter_score_rows` uses it; a reader with its
    own batching (curation's passes over Parquet) uses it on its first full pass.

    Args:
        path: the file, for messages.
        unique_ids: refuse an id seen before (keeps one string per row in memory).
        scorer: read only the rows of this scorer (:func:`scorer_matches`): the others are
            counted in :attr:`n_other` and :meth:`check` returns None for them. None: the
            file must hold one scorer's rows.

    Attributes:
        n_rows: rows read (of the chosen scorer, with ``scorer``).
        n_other: rows of other scorers left out (``scorer`` given).
        scorers: ``{scorer value or NO_SCORER: rows}`` of every row seen.
    """

    def __init__(self, path: Path, unique_ids: bool = True, scorer: str | None = None) -> None:
        self.path = path
        self.unique_ids = unique_ids
        self.scorer = scorer
        self.n_rows = 0
        self.n_other = 0
        self.n_failed = 0
        self.scorers: dict[str, int] = {}
        self.first_failure: tuple[str, str] | None = None
        self._first_scorer: tuple[str | None, str] | None = None
        self._matched: set[str | None] = set()
        self._seen: dict[str, str] = {}
        self._canon: dict[str, str] = {}

    def _scorer_of(self, where: str, raw: Mapping[str, Any]) -> tuple[str | None, bool]:
        """The row's scorer and whether it is read (refuses a second scorer unless one
        was chosen)."""
        value = raw.get(SCORER_COLUMN)
        value = None if value is None or value == "" else str(value)
        shown = _shown(value)
        self.scorers[shown] = self.scorers.get(shown, 0) + 1
        if self.scorer is not None:
            if not scorer_matches(value, self.scorer):
                return value, False
            self._matched.add(value)
            if len(self._matched) > 1:
                names = ", ".join(sorted(_shown(v) for v in self._matched))
                raise ScoreFileError(
                    f"{where}: --from-scorer {self.scorer} matches more than one scorer configuration "
                    f"in {self.path} ({names}): name one of them in full (NAME@HASH)")
            return value, True
        if self._first_scorer is None:
            self._first_scorer = (value, where)
        elif value != self._first_scorer[0]:
            first, first_where = self._first_scorer
            raise ScoreFileError(
                f"{where}: rows of two scorers in one file: {_shown(value)!r} here, "
                f"{_shown(first)!r} from {first_where.rpartition(': ')[2]} on (a file holds "
                "one scorer's scores on one scale; rows appended from another scorer or tool "
                f"would be read on the wrong scale): pass --from-scorer {_shown(first)} (scorer= in "
                "Python) to read only those rows and leave the others out, or split the file")
        return value, True

    def check(self, index: int, where: str, raw: Mapping[str, Any]) -> ScoreRow | None:
        """The :class:`ScoreRow` of one raw row, or None for a row of another scorer than
        the one chosen; raises :class:`ScoreFileError`."""
        if isinstance(raw.get("scores"), Mapping):  # scores nested as in a manifest row
            raw = {**{k: v for k, v in raw.items() if k != "scores"}, **raw["scores"]}
        scorer, wanted = self._scorer_of(where, raw)
        if not wanted:
            self.n_other += 1
            return None
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
        dims: list[str] = []
        columns: dict[str, Any] = {}
        for key, value in raw.items():
            if key in NON_SCORE_COLUMNS:
                if key != "id" and key not in INPUT_COLUMNS:
                    columns[key] = _decoded(key, value)
                continue
            dim = self._canon.get(key)
            if dim is None:
                try:
                    dim = self._canon[key] = canonical_dimension(key)
                except UnknownDimensionError as exc:
                    raise ScoreFileError(
                        f"{where}: {exc} (column {key!r} is neither a dimension nor a "
                        "score-file column: rename it to a dimension or drop it)") from None
            if dim in dims:
                raise ScoreFileError(f"{where}: dimension {dim!r} given twice (as {key!r} "
                                     "and an alias); keep one column")
            dims.append(dim)
            if value is not None:
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
        return ScoreRow(index, where, ident, scores, failed, inputs, columns, scorer, tuple(dims))

    def finish(self) -> None:
        """Raise :class:`ScoreFileError` for a file with no rows (none of the chosen
        scorer) or whose every row failed."""
        if self.n_rows == 0 and self.scorer is not None and self.n_other:
            seen = ", ".join(f"{k} ({n} rows)" for k, n in sorted(self.scorers.items()))
            raise ScoreFileError(f"{self.path}: no row of scorer {self.scorer!r}; the file "
                                 f"holds {seen}: pass one of these to --from-scorer")
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


def iter_score_rows(path: str | os.PathLike[str], scorer: str | None = None, *,
                    checker: ScoreRowChecker | None = None,
                    require_predictions: bool = True) -> Iterator[ScoreRow]:
    """The checked rows of a score file (``.parquet``, ``.jsonl``, ``.jsonl.gz``,
    ``.csv``), in file order, one record batch or line at a time.

    Raises:
        ScoreFileError: the file is missing, unreadable or breaks a rule of the module
            docstring (raised at the offending row; a file with no rows or whose every
            row failed, after the last row).

    Args:
        path: the score file.
        scorer: read only this scorer's rows (``NAME@HASH``, ``NAME``, or
            :data:`NO_SCORER`); the others are left out. None: the file must hold one
            scorer's rows.
        checker: receives the counts (pass one to read ``n_other`` afterwards).
        require_predictions: refuse a file with no rows or whose every row failed (a
            command that reads a run's own output to report on its failures passes False).
    """
    p = Path(path)
    if not p.name.endswith(SCORE_FILE_SUFFIXES):
        raise ScoreFileError(f"{p}: a score file is {', '.join(SCORE_FILE_SUFFIXES[:-1])} or "
                             f"{SCORE_FILE_SUFFIXES[-1]}; convert it to one of them")
    if not p.is_file():
        raise ScoreFileError(f"{p}: no such file")
    if checker is None:
        checker = ScoreRowChecker(p, scorer=scorer)
    for index, (where, raw) in enumerate(_raw_rows(p)):
        row = checker.check(index, where, raw)
        if row is not None:
            yield row
    if require_predictions:
        checker.finish()


def _raw_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if p.name.endswith(".parquet"):
        yield from _parquet_rows(p)
        return
    if p.name.endswith(".csv"):
        yield from _csv_rows(text_lines(p, error=ScoreFileError), p)
    else:
        yield from _jsonl_rows(p)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for lineno, row in json_lines(path, error=ScoreFileError,
                                  hint="a score file has one JSON object per line"):
        yield f"{path}: line {lineno}", row


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


# --------------------------------------------------------------------------- provenance


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Where a score file of ``ieqa score`` came from, as its run record holds it (Parquet
    metadata ``ieqa.run``; JSONL: ``<file>.run.json`` beside it): ``scorer_id``
    (``NAME@HASH``, the value of every row's ``scorer`` column), ``scorer``, ``config``,
    ``dimensions``, ``scales`` (``{dimension: {"range": [low, high], "units": ...,
    "higher_better": ...}}``), ``inputs`` (``{"description": the manifest, folder or
    benchmark, "n": rows, "sha256": digest of the rows' input keys in input order}``) and
    ``ieqa`` (the version). ``{}`` for a file without a run record (another tool's
    predictions, a CSV).
    """
    p = Path(path)
    try:
        if p.name.endswith(".parquet"):
            meta = pq.read_schema(p).metadata or {}
            raw = meta.get(b"ieqa.run")
            return json.loads(raw) if raw else {}
        side = p.with_name(p.name + ".run.json")
        if side.is_file():
            record = json.loads(side.read_text(encoding="utf-8")).get("ieqa.run")
            return record if isinstance(record, dict) else {}
    except (OSError, ValueError, pa.ArrowException):
        return {}
    return {}


# --------------------------------------------------------------------------- joins


def same_image_ref(a: Any, b: Any) -> bool | None:
    """Whether two image paths name the same image: equal, or equal in their last path
    components (up to three, as many as the shorter has), so a dataset scored in another
    folder or on another machine still matches. None when either is unknown (an in-memory
    image, a file without the column)."""
    if not a or not b or not isinstance(a, str) or not isinstance(b, str):
        return None
    pa_, pb_ = (PurePosixPath(x.replace("\\", "/")).parts for x in (a, b))
    k = min(3, len(pa_), len(pb_))
    return pa_[-k:] == pb_[-k:]


def image_ref(ref: Any) -> str | None:
    """An image reference as the path text a score file holds (None for an in-memory
    image)."""
    return str(ref) if isinstance(ref, (str, os.PathLike)) else None


def join_fields(sample: Any) -> dict[str, Any]:
    """The :data:`JOIN_FIELDS` of an edit (an :class:`~ieqa.data.schema.EditSample` or any
    object with ``source``, ``edited`` and ``editor``), for :func:`check_join`."""
    return {"source": image_ref(sample.source), "edited": image_ref(sample.edited),
            "editor": sample.editor}


def other_scorer_note(n: int, scorer: str | None) -> str:
    """The line a command prints or reports for the rows ``--from-scorer`` left out."""
    return f"{n} rows of other scorers than {scorer} were left out (--from-scorer)"


def _same_field(name: str, a: Any, b: Any) -> bool | None:
    if name in ("source", "edited"):
        return same_image_ref(a, b)
    if a is None or b is None or str(a).strip() == "" or str(b).strip() == "":
        return None
    return str(a).strip() == str(b).strip()


@dataclass
class JoinCheck:
    """What :func:`check_join` found.

    Attributes:
        n_joined: ids in both files.
        n_compared: joined ids with at least one of :data:`JOIN_FIELDS` known on both sides.
        mismatched: ``{id: ["edited: 'A' vs 'B'", ...]}`` of the joined ids whose inputs
            differ.
        sides: the two files' names, for messages.
    """

    n_joined: int
    n_compared: int
    mismatched: dict[str, list[str]]
    sides: tuple[str, str]

    @property
    def share(self) -> float:
        """Mismatched share of the compared ids (0 when none could be compared)."""
        return len(self.mismatched) / self.n_compared if self.n_compared else 0.0

    def listing(self, limit: int = 5) -> str:
        """The first ``limit`` mismatched ids with what differs."""
        items = list(self.mismatched.items())
        shown = "; ".join(f"id {i!r}: {', '.join(d)}" for i, d in items[:limit])
        return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")

    def note(self) -> str | None:
        """One line for a report: what was compared and what differed (None when nothing
        could be compared)."""
        if not self.n_compared:
            return (f"{self.n_joined} edits joined by id between {self.sides[0]} and "
                    f"{self.sides[1]}; neither has the inputs of the other ("
                    f"{'/'.join(JOIN_FIELDS)}), so that they are the same edits is not checked")
        if not self.mismatched:
            return None
        return (f"{len(self.mismatched)} of {self.n_compared} edits joined by id between "
                f"{self.sides[0]} and {self.sides[1]} differ in their inputs "
                f"({self.share:.1%}, accepted by --max-mismatch): {self.listing()}")


def check_join(left: Mapping[str, Mapping[str, Any]], right: Mapping[str, Mapping[str, Any]],
               *, sides: tuple[str, str], max_mismatch: float = 0.0,
               error: type[IeqaError] = ScoreFileError) -> JoinCheck:
    """Check that the edits two files join by id are the same edits: per id, the
    :data:`JOIN_FIELDS` known on both sides must agree (images by :func:`same_image_ref`,
    the editor exactly). Raises ``error`` naming the mismatched ids and what differs when
    their share of the compared ids is above ``max_mismatch`` (0: any mismatch refuses).

    Args:
        left, right: ``{id: {field: value}}`` of each file (other keys are ignored).
        sides: the two files' names, for messages.
        max_mismatch: the share of mismatched ids accepted, in [0, 1].
        error: the exception class raised.
    """
    if not 0.0 <= max_mismatch <= 1.0:  # also refuses NaN
        raise error(f"--max-mismatch must be a share in [0, 1], got {max_mismatch}")
    joined = [i for i in left if i in right]
    compared = 0
    mismatched: dict[str, list[str]] = {}
    for i in joined:
        a, b = left[i], right[i]
        seen = False
        for f in JOIN_FIELDS:
            same = _same_field(f, a.get(f), b.get(f))
            if same is None:
                continue
            seen = True
            if not same:
                mismatched.setdefault(i, []).append(f"{f} {a.get(f)!r} vs {b.get(f)!r}")
        compared += seen
    check = JoinCheck(len(joined), compared, mismatched, sides)
    if mismatched and check.share > max_mismatch:
        raise error(
            f"{len(mismatched)} of {compared} edits joined by id between {sides[0]} and "
            f"{sides[1]} are not the same edit ({check.share:.1%}, more than --max-mismatch "
            f"{max_mismatch:g}): {check.listing()}. The two files likely come from different "
            "datasets whose ids coincide: join files scored from the same manifest, or pass "
            "--max-mismatch SHARE to accept up to that share of mismatched edits")
    return check
