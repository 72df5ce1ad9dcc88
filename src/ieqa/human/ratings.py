"""Long-form human ratings and their item x rater matrices.

A :class:`RatingTable` holds one row per rating — ``(item, rater, dimension, value)`` —
as four parallel numpy arrays. It is built from :class:`~ieqa.data.schema.EditSample`
ratings (:meth:`RatingTable.from_samples`) or from a long-form CSV/TSV file
(:meth:`RatingTable.from_csv`), and turned into the ``(n_items, n_raters)`` matrix every
function of :mod:`ieqa.human` takes (:meth:`RatingTable.to_matrix`), with ``NaN`` where a
rater did not rate an item.

Conventions used across :mod:`ieqa.human`:

* matrices are **items x raters** (rows are edits, columns are raters), like
  :func:`ieqa.metrics.leave_one_out_ceiling`;
* ``NaN`` means "no rating"; ``±inf`` is always an error;
* dimension names are canonicalised through :func:`ieqa.data.dimensions.canonical_dimension`.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.data.textfile import text_lines
from ieqa.metrics.checks import MetricInputError, as_float_array

__all__ = ["DuplicateRatingsError", "RatingTable", "as_rating_matrix", "csv_columns"]

Duplicates = Literal["raise", "mean", "first", "last"]


class DuplicateRatingsError(MetricInputError):
    """A rater rated one item more than once on one dimension.

    Attributes:
        dimension: the canonical dimension.
        pairs: the first (up to 5) ``(item, rater)`` pairs rated more than once.
        count: how many ``(item, rater)`` pairs are rated more than once.
    """

    def __init__(self, dimension: str, pairs: list[tuple[str, str]], count: int) -> None:
        self.dimension, self.pairs, self.count = dimension, pairs, count
        super().__init__(f"{count} (item, rater) pair(s) rated more than once on {dimension!r}, "
                         f"e.g. {self.named()}; pass duplicates='mean', 'first' or 'last'")

    def named(self) -> str:
        """The example pairs as ``('item', 'rater'), ...``."""
        return ", ".join(f"({item!r}, {rater!r})" for item, rater in self.pairs)

#: Cell texts of a CSV value column read as "no rating" (case-insensitive, stripped).
MISSING_TOKENS: frozenset[str] = frozenset({"", "na", "n/a", "nan", "null", "none"})


def as_rating_matrix(matrix: object, name: str = "matrix", *, min_raters: int = 1) -> np.ndarray:
    """``matrix`` as a float64 ``(n_items, n_raters)`` array; NaN = missing, ``±inf`` raises.

    Raises :class:`MetricInputError` naming ``name`` when the input is not numeric, not
    2-D, has fewer than ``min_raters`` columns, no rows, or infinite values.
    """
    m = as_float_array(matrix, name, ndim=2, what="(n_items, n_raters)")
    if m.shape[0] == 0:
        raise MetricInputError(f"{name} has no items (shape {m.shape})")
    if m.shape[1] < min_raters:
        raise MetricInputError(f"{name} needs at least {min_raters} rater column(s), got shape {m.shape}")
    n_inf = int(np.isinf(m).sum())
    if n_inf:
        raise MetricInputError(f"{name} has {n_inf} infinite value(s); use NaN for a missing rating")
    return m


def _first_appearance_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques in order of first appearance, code of every value)``."""
    uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[inverse.ravel()]


@dataclass(frozen=True)
class RatingTable:
    """Ratings in long form: ``item[r]`` got ``value[r]`` from ``rater[r]`` on ``dimension[r]``.

    All four arrays have one entry per rating; ``item``, ``rater`` and ``dimension`` are
    string arrays, ``value`` is float64 (``NaN`` = the cell was empty: counted by
    :attr:`n_missing`, ignored by :meth:`to_matrix`). Dimension names are canonical.
    """

    item: np.ndarray
    rater: np.ndarray
    dimension: np.ndarray
    value: np.ndarray

    def __post_init__(self) -> None:
        arrays = {}
        for field in ("item", "rater", "dimension"):
            arr = np.asarray(getattr(self, field))
            if arr.ndim != 1:
                raise MetricInputError(f"{field} must be 1-D, got shape {arr.shape}")
            arrays[field] = arr.astype(str) if arr.size else np.asarray([], dtype=str)
        try:
            val = np.asarray(self.value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise MetricInputError(f"value must be numeric: {exc}") from None
        if val.ndim != 1:
            raise MetricInputError(f"value must be 1-D, got shape {val.shape}")
        lengths = {k: len(v) for k, v in {**arrays, "value": val}.items()}
        if len(set(lengths.values())) > 1:
            raise MetricInputError("length mismatch: " + ", ".join(f"{k}={v}" for k, v in lengths.items()))
        if np.isinf(val).any():
            raise MetricInputError(f"value has {int(np.isinf(val).sum())} infinite entries")
        canon = {d: canonical_dimension(d) for d in np.unique(arrays["dimension"])}
        if any(k != v for k, v in canon.items()):
            arrays["dimension"] = np.asarray([canon[d] for d in arrays["dimension"]], dtype=str)
        for field, arr in arrays.items():
            object.__setattr__(self, field, arr)
        object.__setattr__(self, "value", val)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_samples(cls, samples: Iterable[EditSample]) -> RatingTable:
        """One row per :class:`~ieqa.data.schema.Rating` of each sample; item = ``sample.id``."""
        items: list[str] = []
        raters: list[str] = []
        dims: list[str] = []
        values: list[float] = []
        for s in samples:
            for r in s.ratings:
                items.append(s.id)
                raters.append(r.rater)
                dims.append(r.dimension)
                values.append(r.value)
        return cls(np.asarray(items, dtype=str), np.asarray(raters, dtype=str),
                   np.asarray(dims, dtype=str), np.asarray(values, dtype=np.float64))

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        item_col: str = "item",
        rater_col: str = "rater",
        value_col: str = "value",
        dimension_col: str | None = None,
        *,
        dimension: str = "overall",
        delimiter: str | None = None,
    ) -> RatingTable:
        """Read a long-form CSV/TSV with a header row: one rating per line.

        ``dimension_col=None`` gives every rating the dimension ``dimension``. The
        delimiter is ``delimiter`` when given, a tab for ``.tsv``/``.tab`` files, a comma
        for ``.csv``, and sniffed otherwise. A value cell that is empty or one of
        ``NA``, ``N/A``, ``NaN``, ``null``, ``None`` is read as a missing rating (NaN,
        counted by :attr:`n_missing`); any other non-numeric value raises naming the
        line. A missing column raises naming it and the columns that exist.
        """
        path = Path(path)
        lines, delimiter = _csv_lines(path, delimiter)
        reader = csv.DictReader(lines, delimiter=delimiter)
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        wanted = {"item_col": item_col, "rater_col": rater_col, "value_col": value_col}
        if dimension_col is not None:
            wanted["dimension_col"] = dimension_col
        missing = [f"{opt}={col!r}" for opt, col in wanted.items() if col not in header]
        if missing:
            raise MetricInputError(
                f"{path}: column(s) not found: {', '.join(missing)}; the file has columns {header}"
            )
        items, raters, dims, values = [], [], [], []
        for line, row in enumerate(reader, start=2):
            items.append(_cell(row, item_col, path, line))
            raters.append(_cell(row, rater_col, path, line))
            dims.append(_cell(row, dimension_col, path, line) if dimension_col else dimension)
            values.append(_parse_value(row.get(value_col), path, line, value_col))
        return cls(np.asarray(items, dtype=str), np.asarray(raters, dtype=str),
                   np.asarray(dims, dtype=str), np.asarray(values, dtype=np.float64))

    # ------------------------------------------------------------------ views

    def outside(self, lo: float, hi: float) -> np.ndarray:
        """Row indices whose value lies outside ``[lo, hi]`` (empty cells never do)."""
        with np.errstate(invalid="ignore"):
            return np.flatnonzero((self.value < lo) | (self.value > hi))

    def clipped(self, lo: float, hi: float) -> RatingTable:
        """The table with every value clipped into ``[lo, hi]`` (NaN stays NaN)."""
        return RatingTable(self.item, self.rater, self.dimension, np.clip(self.value, lo, hi))

    def __len__(self) -> int:
        return len(self.value)

    @property
    def n_missing(self) -> int:
        """Rows whose value is NaN (empty cells): ignored when building matrices."""
        return int(np.isnan(self.value).sum())

    @property
    def dimensions(self) -> list[str]:
        """Canonical dimension names, in order of first appearance."""
        return [str(d) for d in _first_appearance_codes(self.dimension)[0]] if len(self) else []

    def select(self, dimension: str) -> RatingTable:
        """The rows of one dimension (any alias accepted)."""
        keep = self.dimension == canonical_dimension(dimension)
        return RatingTable(self.item[keep], self.rater[keep], self.dimension[keep], self.value[keep])

    def to_matrix(
        self,
        dimension: str | None = None,
        *,
        duplicates: Duplicates = "raise",
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(items, raters, matrix)`` for one dimension: ``matrix[i, j]`` is rater
        ``raters[j]``'s rating of ``items[i]`` (float64), NaN where there is none.

        Items and raters are in order of first appearance among that dimension's rows
        with a value (NaN rows are ignored). ``dimension=None`` is allowed when the table
        holds exactly one dimension. A rater who rated one item twice on the dimension
        raises :class:`DuplicateRatingsError` (``duplicates="raise"``, naming the first
        pairs), or is averaged (``"mean"``), or the earlier row (``"first"``) or the
        later row (``"last"``) in file order wins.
        """
        if duplicates not in ("raise", "mean", "first", "last"):
            raise MetricInputError(f"duplicates must be 'raise', 'mean', 'first' or 'last', got {duplicates!r}")
        dims = self.dimensions
        if dimension is None:
            if len(dims) != 1:
                raise MetricInputError(f"dimension must be given: the table holds dimensions {dims}")
            dimension = dims[0]
        dim = canonical_dimension(dimension)
        rows = (self.dimension == dim) & ~np.isnan(self.value)
        if not rows.any():
            raise MetricInputError(f"no ratings for dimension {dim!r}; the table holds {dims}")
        items, ii = _first_appearance_codes(self.item[rows])
        raters, jj = _first_appearance_codes(self.rater[rows])
        vals = self.value[rows]
        key = ii * len(raters) + jj
        counts = np.bincount(key, minlength=len(items) * len(raters))
        if duplicates == "raise" and (counts > 1).any():
            dup = np.flatnonzero(counts > 1)[:5]
            pairs = [(str(items[k // len(raters)]), str(raters[k % len(raters)])) for k in dup]
            raise DuplicateRatingsError(dim, pairs, int((counts > 1).sum()))
        flat = np.full(len(items) * len(raters), np.nan)
        if duplicates == "mean":
            sums = np.bincount(key, weights=vals, minlength=flat.size)
            np.divide(sums, counts, out=flat, where=counts > 0)
        else:  # the first (or last) row of each (item, rater) in file order
            order = np.arange(len(key)) if duplicates == "first" else np.arange(len(key))[::-1]
            cells, first = np.unique(key[order], return_index=True)
            flat[cells] = vals[order[first]]
        return items, raters, flat.reshape(len(items), len(raters))


def _csv_lines(path: Path, delimiter: str | None) -> tuple[list[str], str]:
    """The lines of a CSV/TSV ratings file and its delimiter (guessed when not given)."""
    if not path.is_file():
        raise MetricInputError(f"ratings file {path} does not exist")
    lines = [line for _, line in text_lines(path)]
    return lines, _guess_delimiter(path, lines) if delimiter is None else delimiter


def csv_columns(path: str | os.PathLike[str], *, delimiter: str | None = None) -> list[str]:
    """The header of a CSV/TSV ratings file (delimiter chosen as in :meth:`RatingTable.from_csv`)."""
    lines, delimiter = _csv_lines(Path(path), delimiter)
    header = next(csv.reader(lines, delimiter=delimiter), [])
    return [h.strip() for h in header]


def _guess_delimiter(path: Path, lines: list[str]) -> str:
    name = path.name.lower()
    if name.endswith((".tsv", ".tab")):
        return "\t"
    if name.endswith(".csv"):
        return ","
    sample = "".join(lines)[:4096]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",\t;|").delimiter
    except csv.Error:
        return ","


def _cell(row: dict, col: str, path: Path, line: int) -> str:
    val = row.get(col)
    if val is None or not val.strip():
        raise MetricInputError(f"{path}:{line}: column {col!r} is empty; every row needs one (remove "
                               "the row if it holds no rating)")
    return val.strip()


def _parse_value(text: str | None, path: Path, line: int, col: str) -> float:
    if text is None or text.strip().lower() in MISSING_TOKENS:
        return math.nan
    try:
        v = float(text)
    except ValueError:
        raise MetricInputError(f"{path}:{line}: column {col!r} is not a number: {text!r}; write a number, "
                               "or leave the cell empty for a missing rating") from None
    if math.isinf(v):
        raise MetricInputError(f"{path}:{line}: column {col!r} is infinite: {text!r}; write a finite "
                               "rating, or leave the cell empty for a missing rating")
    return v
