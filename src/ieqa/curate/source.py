"""Reading scored edits for curation, streaming: a score file or a manifest, one row at a time.

Both kinds of file are inputs of ``ieqa curate``, ``ieqa best-of-n`` and ``ieqa dpo-pairs``:

* a **score file** of ``ieqa score`` (Parquet or JSONL; it has an ``input_key`` column):
  the edit's inputs next to the predicted scores, sigma, flags and error;
* a **manifest** (JSONL, JSONL.gz, Parquet or CSV): its ``scores`` (ground truth, human
  MOS, or predictions written into it) are the scores; it has no sigma, flags or errors.
  For ShapesEdit the manifest carries the exact ground truth, so it is the oracle score
  file.

:class:`ScoredSource` reads either kind in bounded memory — one Parquet record batch or one
JSONL line at a time — and can re-read it as often as an algorithm needs passes, reading
only the rows it asks for (:meth:`ScoredSource.rows` with ``select``). Each row is a
:class:`ScoredRow`: its 0-based position in the file, the inputs, the
:class:`~ieqa.scorers.base.ScoreResult` and the :class:`~ieqa.rewards.rule.Reward`
under the caller's :class:`~ieqa.rewards.rule.RewardRule` (the one reward rule of
ieqa, the same as in ``ieqa serve``).

Ordering: every command that picks "the best" uses :func:`order_key` — reward (high
first), then the rule's sigma (low first; unknown sigma after every known one), then the
id (ascending) — so ties are broken the same way everywhere, and independently of the
row order of the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.data.manifest import first_row_keys, iter_manifest
from ieqa.data.schema import EditSample
from ieqa.data.scorefile import SCORER_COLUMN, ScoreRowChecker, looks_like_score_file
from ieqa.data.textfile import text_lines
from ieqa.errors import IeqaError
from ieqa.rewards.rule import Reward, RewardRule, order_key
from ieqa.scorers.base import ScoreResult
from ieqa.scorers.run import row_to_result

__all__ = ["CurateError", "ScoredRow", "ScoredSource", "order_key"]

#: score-file columns curation never reads (dimension-free, so leaving them out changes
#: no check of the score-file reader)
_UNUSED = frozenset(("region", "raw", "explanation", "unavailable", "input_key",
                     "format", "parse_status", "parse_error"))
#: rows per Parquet record batch read at a time
BATCH_ROWS = 8192


class CurateError(IeqaError):
    """A curation input or option that cannot be used (the message says what to do)."""


@dataclass
class ScoredRow:
    """One scored edit.

    Attributes:
        index: 0-based position of the row in its file.
        id: the edit's id.
        fields: the inputs ``source``, ``edited``, ``instruction``, ``editor``, ``task``,
            ``group_id`` (strings or None).
        result: the scores, sigma, flags and error of the edit.
        reward: ``rule(result)``: the number curation acts on (``reward.reward`` is None
            for a row that failed to score or that the rule cannot combine).
        sample: the manifest row itself (manifest inputs only; None for score files).
    """

    index: int
    id: str
    fields: dict[str, Any]
    result: ScoreResult
    reward: Reward
    sample: EditSample | None = None

    @property
    def ok(self) -> bool:
        """True when the row has a reward."""
        return self.reward.reward is not None

    def to_sample(self) -> EditSample:
        """The edit as an :class:`EditSample` for a manifest: the manifest's own row (its
        ``scores`` unchanged), or for a score-file row the inputs with the predicted
        scores as ``scores``. ``meta`` gets ``reward``, ``reward_sigma`` and, when set,
        ``flags`` and ``score_sigma`` (per-dimension sigma)."""
        extra: dict[str, Any] = {"reward": self.reward.reward, "reward_sigma": self.reward.sigma}
        if self.result.flags:
            extra["flags"] = list(self.result.flags)
        if self.result.sigma:
            extra["score_sigma"] = dict(self.result.sigma)
        if self.sample is not None:
            return self.sample.model_copy(update={"meta": {**self.sample.meta, **extra}})
        f = self.fields
        if not f.get("edited"):
            raise CurateError(f"row {self.id!r} of the score file has no edited image path (it was "
                              "scored from an in-memory image); curate manifests need paths")
        return EditSample(id=self.id, source=f.get("source"), edited=f["edited"],
                          instruction=f.get("instruction") or "", task=f.get("task"),
                          editor=f.get("editor"), group_id=f.get("group_id"),
                          scores=dict(self.result.scores), meta=extra)


Kind = Literal["scores", "manifest"]


class ScoredSource:
    """A score file or manifest, read in passes (see the module docstring).

    Args:
        path: ``.parquet`` or ``.jsonl`` score file of ``ieqa score``, or a manifest
            (``.jsonl``, ``.jsonl.gz``, ``.parquet``, ``.csv``).
        rule: the reward rule (default: ``RewardRule("overall")``).
        scorer: read only this scorer's rows of a score file that holds several
            (:func:`ieqa.data.scorefile.scorer_matches`); :attr:`n_other` counts the others
            after a full pass. None: a file with rows of two scorers is refused.

    Raises:
        CurateError: the file does not exist or is neither a score file nor a manifest.
    """

    def __init__(self, path: str | os.PathLike[str], rule: RewardRule | None = None,
                 scorer: str | None = None) -> None:
        self.path = Path(path)
        self.rule = rule if rule is not None else RewardRule("overall")
        self.scorer = scorer
        #: rows of other scorers left out (``scorer`` given; known after a full pass)
        self.n_other = 0
        if not self.path.is_file():
            raise CurateError(f"{self.path} does not exist: give a score file of ieqa score "
                              "(.parquet or .jsonl) or a manifest with scores")
        keys = first_row_keys(self.path)
        if keys is None:
            raise CurateError(f"{self.path} is empty or not a score file / manifest ieqa reads "
                              "(.parquet, .jsonl, .jsonl.gz or .csv with one row per edit)")
        if looks_like_score_file(keys) and "edited" in keys:
            if not self.path.name.endswith((".parquet", ".jsonl", ".jsonl.gz")):
                raise CurateError(f"{self.path}: curation reads score files as .parquet, "
                                  ".jsonl or .jsonl.gz; convert this one to one of them")
            self.kind: Kind = "scores"
        elif "edited" in keys:
            self.kind = "manifest"
            if scorer is not None:
                raise CurateError(f"{self.path} is a manifest, which holds one set of scores: "
                                  "--from-scorer chooses among the scorers of a score file; drop it")
        else:
            raise CurateError(
                f"{self.path} has no edited image column: give the score file of `ieqa score "
                "MANIFEST -o scores.parquet` (it carries the inputs next to the scores) or a "
                "manifest with scores, not a bare predictions file")
        self._n_rows: int | None = None  # rows in the file
        self._mine: np.ndarray | None = None  # file positions of --from-scorer rows

    # ------------------------------------------------------------------ reading
    def rows(self, select: np.ndarray | None = None) -> Iterator[ScoredRow]:
        """Every row in file order, or with ``select`` (a boolean array over the rows'
        positions) only the selected ones — those are the only rows decoded.

        A score file's rows are checked by the one score-file reader's rules
        (:class:`~ieqa.data.scorefile.ScoreRowChecker`); a pass over every row also
        refuses duplicate ids and a file whose every row failed. With ``scorer``, the rows
        of the other scorers are left out: positions (``ScoredRow.index``, ``select``,
        :attr:`n_rows`) then count the chosen scorer's rows only.

        Raises:
            ScoreFileError: a row or the file breaks those rules (file, row, what to do).
        """
        if self.kind == "manifest":
            yield from self._manifest_rows(select)
            return
        mine = self._positions()
        if mine is None:
            yield from self._file_rows(select)
            return
        file_select = np.zeros(self._n_file_rows(), dtype=bool)
        file_select[mine if select is None else mine[np.asarray(select, dtype=bool)[:len(mine)]]] = True
        for row in self._file_rows(file_select):
            row.index = int(np.searchsorted(mine, row.index))
            yield row

    def _file_rows(self, select: np.ndarray | None) -> Iterator[ScoredRow]:
        checker = ScoreRowChecker(self.path, unique_ids=select is None, scorer=self.scorer)
        if self.path.name.endswith(".parquet"):
            yield from self._parquet_rows(select, checker)
        else:
            yield from self._jsonl_rows(select, checker)
        if select is None:
            checker.finish()
            self.n_other = checker.n_other

    def _positions(self) -> np.ndarray | None:
        """The file positions of the chosen scorer's rows (None without ``scorer``): one
        pass over the ids and scorers (Parquet: those two columns only), which also checks
        the file (duplicate ids, no row of that scorer)."""
        if self.scorer is None:
            return None
        if self._mine is None:
            checker = ScoreRowChecker(self.path, scorer=self.scorer)
            mask: list[bool] = []
            if self.path.name.endswith(".parquet"):
                try:
                    with pq.ParquetFile(self.path, pre_buffer=False) as pf:
                        cols = [c for c in ("id", SCORER_COLUMN) if c in pf.schema_arrow.names]
                        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=cols,
                                                     use_threads=False):
                            for raw in batch.to_pylist():
                                where = f"{self.path}: row {len(mask) + 1}"
                                mask.append(checker.check(len(mask), where, raw) is not None)
                except pa.ArrowException as exc:
                    raise CurateError(f"{self.path}: cannot read as Parquet ({exc})") from None
            else:
                for i, where, raw in self._json_objects():
                    mask.append(checker.check(i, where, raw) is not None)
            if not any(mask):
                checker.finish()  # names the scorers the file holds
            self.n_other = checker.n_other
            self._n_rows = len(mask)
            self._mine = np.flatnonzero(np.array(mask, dtype=bool))
        return self._mine

    def _n_file_rows(self) -> int:
        if self._n_rows is None:
            if self.path.name.endswith(".parquet"):
                self._n_rows = pq.ParquetFile(self.path).metadata.num_rows
            else:
                self._n_rows = sum(1 for _ in self._raw_lines())
        return self._n_rows

    @property
    def n_rows(self) -> int:
        """Number of rows (Parquet: from the footer; otherwise counted once); with
        ``scorer``, of that scorer's rows."""
        mine = self._positions()
        return self._n_file_rows() if mine is None else len(mine)

    def ids(self, select: np.ndarray) -> dict[int, str]:
        """``{row position: id}`` of the selected rows (reads only the id column of a
        Parquet score file)."""
        if self.kind == "scores" and self.path.name.endswith(".parquet") and self.scorer is None:
            out: dict[int, str] = {}
            start = 0
            with pq.ParquetFile(self.path, pre_buffer=False) as pf:
                for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=["id"], use_threads=False):
                    end = start + batch.num_rows
                    hits = np.flatnonzero(select[start:end])
                    if hits.size:
                        col = batch.column(0).take(pa.array(hits)).to_pylist()
                        out.update(zip((start + hits).tolist(), col, strict=True))
                    start = end
            return out
        return {row.index: row.id for row in self.rows(select)}

    def _row(self, index: int, raw: dict[str, Any], checker: ScoreRowChecker,
             where: str | None = None) -> ScoredRow | None:
        checked = checker.check(index, where or f"{self.path}: row {index + 1}", raw)
        if checked is None:  # a row of another scorer than --from-scorer
            return None
        result = row_to_result(checked)
        return ScoredRow(index, result.id, checked.inputs, result, self.rule(result))

    def _parquet_rows(self, select: np.ndarray | None, checker: ScoreRowChecker
                      ) -> Iterator[ScoredRow]:
        try:
            with pq.ParquetFile(self.path, pre_buffer=False) as pf:
                columns = [n for n in pf.schema_arrow.names if n not in _UNUSED]
                start = 0
                for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
                    end = start + batch.num_rows
                    if select is None:
                        positions = range(start, end)
                        rows = batch.to_pylist()
                    else:
                        hits = np.flatnonzero(select[start:end])
                        if not hits.size:
                            start = end
                            continue
                        positions = (start + hits).tolist()
                        rows = batch.take(pa.array(hits)).to_pylist()
                    for i, raw in zip(positions, rows, strict=True):
                        row = self._row(i, raw, checker)
                        if row is not None:
                            yield row
                    start = end
        except pa.ArrowException as exc:
            raise CurateError(f"{self.path}: cannot read as Parquet ({exc})") from None
        self._n_rows = start

    def _raw_lines(self) -> Iterator[tuple[int, str]]:
        """``(1-based line number, line)`` of the non-blank lines."""
        for lineno, line in text_lines(self.path, error=CurateError):
            if line.strip():
                yield lineno, line

    def _json_objects(self, select: np.ndarray | None = None
                      ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """``(0-based position, "FILE: line N", object)`` of the JSONL rows (with ``select``,
        the selected ones only; every line is still counted)."""
        n = 0
        for i, (lineno, line) in enumerate(self._raw_lines()):
            n = i + 1
            if select is not None and (i >= len(select) or not select[i]):
                continue
            where = f"{self.path}: line {lineno}"
            try:
                raw = json.loads(line)
            except ValueError as exc:
                raise CurateError(f"{where}: not valid JSON ({exc})") from None
            if not isinstance(raw, dict):
                raise CurateError(f"{where}: expected a JSON object, got {type(raw).__name__}")
            yield i, where, raw
        self._n_rows = n

    def _jsonl_rows(self, select: np.ndarray | None, checker: ScoreRowChecker
                    ) -> Iterator[ScoredRow]:
        for i, where, raw in self._json_objects(select):
            row = self._row(i, raw, checker, where)
            if row is not None:
                yield row

    def _manifest_rows(self, select: np.ndarray | None) -> Iterator[ScoredRow]:
        n = 0
        for i, sample in enumerate(iter_manifest(self.path)):
            n = i + 1
            if select is not None and (i >= len(select) or not select[i]):
                continue
            result = ScoreResult(id=sample.id, scores=dict(sample.scores))
            fields = {"source": None if sample.source is None else str(sample.source),
                      "edited": str(sample.edited), "instruction": sample.instruction,
                      "editor": sample.editor, "task": sample.task, "group_id": sample.group_id}
            yield ScoredRow(i, sample.id, fields, result, self.rule(result), sample)
        self._n_rows = n
