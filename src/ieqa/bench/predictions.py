"""Predictions files: an evaluator's per-edit scores, cached to be benchmarked later.

Formats (by suffix):

* **JSONL** (``.jsonl``, ``.jsonl.gz``): one object per line, ``{"id": ..., "<dim>": score,
  ...}``; the scores may also sit in a nested ``"scores"`` object (as in a manifest row).
* **CSV** (``.csv``): a header row with ``id`` and one column per dimension.
* **Parquet** (``.parquet``): an ``id`` column and one float column per dimension, e.g.
  the output of ``ieqa score`` (:mod:`ieqa.scorers.run`).

The format and its checks are those of every score file, :mod:`ieqa.data.scorefile` (one
reader for every command): dimension names are canonicalised (``"SC"`` ->
``instruction_alignment``); the inputs and result columns of an ``ieqa score`` or ``ieqa
explain`` output are not scores; a missing score (empty CSV cell, JSON ``null``) means "no
score for that dimension". A row whose ``error`` is set (it failed to score) and a row with
a ``NaN`` or infinite score are *failed*: they are not predictions, and
:attr:`Predictions.failed` lists them with the reason, so a benchmark counts them as missing
and says so. A missing or duplicate id, an unknown column, a non-numeric value, an empty
file and a file whose every row failed are errors — each
:class:`~ieqa.bench.errors.PredictionsError` names the file and the 1-based line (JSONL) or
row (CSV, header = row 1) and says what to do.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ieqa.bench.errors import PredictionsError
from ieqa.data.manifest import first_row_keys
from ieqa.data.scorefile import (
    JOIN_FIELDS,
    NON_SCORE_COLUMNS,
    ScoreFileError,
    ScoreRowChecker,
    iter_score_rows,
    looks_like_score_file,
)

__all__ = ["IGNORED_KEYS", "READINGS", "Predictions", "is_predictions_file", "read_predictions"]

#: which reading of a judge's answers :func:`read_predictions` returns: ``"ieqa"`` (the
#: score columns) or ``"released"`` (``raw["released"]["scores"]``, the released code's
#: reading that a published judge records beside its own, e.g. ``viescore``, ``editscore``)
READINGS = ("ieqa", "released")

#: Keys of a predictions row that are neither the id nor a score.
IGNORED_KEYS = NON_SCORE_COLUMNS - {"id"}


class Predictions(dict):
    """``{edit id: {canonical dimension: score}}`` read from a file, with ``failed``:
    ``{edit id: reason}`` of the rows that are in the file but are not predictions (their
    scoring failed, or a score is NaN or infinite), ``inputs``: ``{edit id: {"source",
    "edited", "editor"}}`` as the file gives them (for checking a join by id,
    :func:`ieqa.data.scorefile.check_join`; empty for a file without input columns),
    ``name``: the file, ``scorer``: the ``--from-scorer`` it was read with, and
    ``other_scorer_rows``: rows of other scorers left out."""

    def __init__(self, *args: Any, failed: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.failed: dict[str, str] = dict(failed or {})
        self.inputs: dict[str, dict[str, Any]] = {}
        self.name: str = "the predictions"
        self.scorer: str | None = None
        self.other_scorer_rows = 0


def is_predictions_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` looks like a predictions file rather than a manifest.

    ``.csv`` is always predictions; for Parquet the schema and for JSONL the first
    non-blank line decides: columns of a score file
    (:func:`ieqa.data.scorefile.looks_like_score_file`) are predictions, and otherwise a
    row with an ``edited`` image is a manifest row.
    """
    p = Path(path)
    if p.name.endswith(".csv"):
        return True
    keys = first_row_keys(p)
    if keys is not None and looks_like_score_file(keys):  # scores next to an id, maybe inputs
        return True
    if keys is None or "edited" in keys:
        return False
    return "id" in keys or not p.name.endswith(".parquet")


def read_predictions(path: str | os.PathLike[str], reading: str = "ieqa",
                     scorer: str | None = None) -> Predictions:
    """Read a predictions file into ``{edit id: {canonical dimension: score}}``.

    The file is read and checked by :func:`ieqa.data.scorefile.iter_score_rows`, the one
    score-file reader. Scores keep the file's scale. Rows that failed to score or hold a
    NaN/infinite score are left out of the mapping and listed in ``.failed`` (module
    docstring). With ``reading="released"`` the scores are each row's released reading
    (:data:`READINGS`); a row without one (the released code could not read its answers,
    or the scorer records none) is listed in ``.failed`` with the reason. Raises
    :class:`~ieqa.bench.errors.PredictionsError` with the reader's message (file, row and
    what to do) for malformed content, for a file with no rows, for one whose every row
    failed and for one with rows of two scorers (unless ``scorer`` says which to read:
    ``NAME@HASH``, ``NAME`` or ``"none"``).
    """
    if reading not in READINGS:
        raise PredictionsError(f"reading must be one of {', '.join(READINGS)}, got {reading!r}")
    p = Path(path)
    out = Predictions()
    out.name, out.scorer = str(p), scorer
    checker = ScoreRowChecker(p, scorer=scorer)
    try:
        for row in iter_score_rows(p, checker=checker):
            known = {f: row.inputs.get(f) for f in JOIN_FIELDS if row.inputs.get(f)}
            if known:
                out.inputs[row.id] = known
            if reading == "released":
                scores, why = released_scores(row.columns.get("raw"))
                if scores:
                    out[row.id] = scores
                else:
                    out.failed[row.id] = why
            elif row.failed is not None:
                out.failed[row.id] = row.failed
            else:
                out[row.id] = row.scores
    except ScoreFileError as exc:
        raise PredictionsError(str(exc)) from None
    out.other_scorer_rows = checker.n_other
    return out


def released_scores(raw: Any) -> tuple[dict[str, float], str]:
    """The released reading's ``{dimension: score}`` of one row's ``raw`` (empty when there
    is none) and, when empty, why."""
    released = raw.get("released") if isinstance(raw, dict) else None
    if not isinstance(released, dict):
        return {}, "no released reading recorded (the scorer records none, or the row was " \
                   "never judged)"
    scores = released.get("scores")
    if not isinstance(scores, dict) or not scores:
        why = released.get("reason") or released.get("status") or "unread"
        return {}, f"the released code reads no score: {why}"
    from ieqa.data.dimensions import canonical_dimension

    return {canonical_dimension(k): float(v) for k, v in scores.items()
            if v is not None and math.isfinite(float(v))}, ""
