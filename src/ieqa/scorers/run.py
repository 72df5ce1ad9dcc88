"""Score a stream of samples into an output file: streaming, parallel decoding, resumable.

:func:`score_to_file` is what ``ieqa score`` runs. Images are decoded on a thread pool
ahead of the scorer; the scorer gets batches of ``batch_size`` samples. Every finished
batch is written atomically as one Parquet part file in ``<out>.parts/``, so a run that is
killed loses at most the batch in flight. Running the same command again skips the rows
already in the parts and, once every row is done, writes ``<out>`` (rows in input order)
and removes the parts folder; the result is the same as that of one uninterrupted run.
A row that cannot be scored (an image that does not load, a sample the scorer rejects)
is written with its ``error`` and no scores, never dropped and never given a score.

Output columns (Parquet, or one JSON object per line for ``.jsonl``)::

    id            str
    <dimension>   float64 | null   one column per dimension of the scorer, in its units
    sigma         JSON object | null        per-dimension uncertainty, when given
    unavailable   JSON object | null        dimension -> why it is missing, what to use
    explanation   str | null
    region        {x, y, w, h} | null       normalised centre/size box of the edit
    raw           JSON object | null        scorer-specific extras
    error         str | null                why the row has no scores

In JSONL the JSON-object columns are inline objects. The Parquet file's metadata holds
the scorer (name, configuration, info) under ``ieqa.scorer``. Such a file can be given
to ``ieqa bench --predictions`` as is.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import ieqa
from ieqa.data.images import iter_load_images
from ieqa.data.schema import EditSample
from ieqa.progress import progress_bar
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult

__all__ = ["OUTPUT_SUFFIXES", "ScoreRunSummary", "output_schema", "read_scores", "score_to_file",
           "results_to_rows"]

OUTPUT_SUFFIXES = (".parquet", ".jsonl")
_REGION = pa.struct([("x", pa.float64()), ("y", pa.float64()), ("w", pa.float64()),
                     ("h", pa.float64())])
_STATE = "state.json"
_INDEX = "_index"


@dataclass
class ScoreRunSummary:
    """What a :func:`score_to_file` call did.

    Attributes:
        out: the output file (complete when the call returned).
        n_rows: rows in the output.
        n_scored: rows scored by this call.
        n_resumed: rows taken from an earlier, interrupted run.
        n_errors: rows with an ``error`` (in the whole output).
        seconds: wall time of this call.
        errors: the first few ``(id, error)`` pairs, to show the user.
        stats: per dimension of the scorer, over the whole output: ``n`` scored,
            ``mean``/``min``/``max`` (None when ``n`` is 0) and ``unavailable`` (rows that
            report the dimension unavailable).
    """

    out: Path
    n_rows: int = 0
    n_scored: int = 0
    n_resumed: int = 0
    n_errors: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)
    stats: dict[str, dict[str, float | int | None]] = field(default_factory=dict)


def _fill_totals(summary: ScoreRunSummary, table: pa.Table, dims: Iterable[str]) -> None:
    """Row, error and per-dimension counts of a finished output table."""
    summary.n_rows = table.num_rows
    summary.n_errors = table.num_rows - table.column("error").null_count
    unavailable = [json.loads(u) for u in table.column("unavailable").drop_null().to_pylist()]
    for dim in dims:
        col = table.column(dim)
        n = len(col) - col.null_count
        mm = pc.min_max(col)
        summary.stats[dim] = {
            "n": n, "mean": pc.mean(col).as_py(), "min": mm["min"].as_py(),
            "max": mm["max"].as_py(), "unavailable": sum(dim in u for u in unavailable)}


def output_schema(dimensions: Iterable[str]) -> pa.Schema:
    """The Arrow schema of an output file for a scorer with these dimensions."""
    fields = [pa.field("id", pa.string(), nullable=False)]
    fields += [pa.field(d, pa.float64()) for d in dimensions]
    fields += [pa.field("sigma", pa.string()), pa.field("unavailable", pa.string()),
               pa.field("explanation", pa.string()), pa.field("region", _REGION),
               pa.field("raw", pa.string()), pa.field("error", pa.string())]
    return pa.schema(fields)


def _json_or_none(d: dict[str, Any]) -> str | None:
    return json.dumps(d, sort_keys=True, allow_nan=True) if d else None


def results_to_rows(results: Iterable[ScoreResult], dimensions: Iterable[str]) -> list[dict[str, Any]]:
    """Flat output rows (the Parquet layout: JSON-object columns as strings)."""
    dims = list(dimensions)
    rows = []
    for r in results:
        row: dict[str, Any] = {"id": r.id}
        for d in dims:
            row[d] = r.scores.get(d)
        extra = sorted(set(r.scores) - set(dims))
        raw = dict(r.raw)
        if extra:  # a scorer returned a dimension it does not declare: keep it visible
            raw["undeclared_scores"] = {d: r.scores[d] for d in extra}
        row["sigma"] = _json_or_none(r.sigma)
        row["unavailable"] = _json_or_none(r.unavailable)
        row["explanation"] = r.explanation
        row["region"] = None if r.region is None else r.region.model_dump()
        row["raw"] = _json_or_none(raw)
        row["error"] = r.error
        rows.append(row)
    return rows


class _Parts:
    """The ``<out>.parts`` folder of an unfinished run."""

    def __init__(self, out: Path) -> None:
        self.dir = out.with_name(out.name + ".parts")

    def exists(self) -> bool:
        return self.dir.is_dir()

    def state(self) -> dict[str, Any] | None:
        p = self.dir / _STATE
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None

    def start(self, state: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_bytes(self.dir / _STATE, json.dumps(state, indent=1, sort_keys=True).encode())

    def files(self) -> list[Path]:
        return sorted(self.dir.glob("part-*.parquet"))

    def done(self) -> dict[int, str]:
        """``{input index: id}`` of the rows already written."""
        out: dict[int, str] = {}
        for f in self.files():
            t = pq.read_table(f, columns=[_INDEX, "id"])
            out.update(zip(t.column(_INDEX).to_pylist(), t.column("id").to_pylist(), strict=True))
        return out

    def write(self, rows: list[dict[str, Any]], indices: list[int], schema: pa.Schema) -> None:
        table = pa.Table.from_pylist(rows, schema=schema)
        table = table.append_column(_INDEX, pa.array(indices, pa.int64()))
        name = f"part-{indices[0]:012d}.parquet"
        tmp = self.dir / f".{name}.{uuid.uuid4().hex}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)

    def read_all(self, schema: pa.Schema) -> pa.Table:
        files = self.files()
        if not files:
            return schema.empty_table().append_column(_INDEX, pa.array([], pa.int64()))
        table = pa.concat_tables([pq.read_table(f) for f in files])
        return table.sort_by(_INDEX)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _check_out(out: Path) -> str:
    for suffix in OUTPUT_SUFFIXES:
        if out.name.endswith(suffix):
            return suffix
    raise ScorerError(f"{out}: the output must end in {' or '.join(OUTPUT_SUFFIXES)}")


def _write_output(table: pa.Table, out: Path, suffix: str, metadata: dict[str, str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
    try:
        if suffix == ".parquet":
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
            pq.write_table(table, tmp)
        else:
            with open(tmp, "w", encoding="utf-8") as fh:
                for row in table.to_pylist():
                    for key in ("sigma", "unavailable", "raw"):
                        if row[key] is not None:
                            row[key] = json.loads(row[key])
                    fh.write(json.dumps(row, allow_nan=True) + "\n")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _existing_state(out: Path, suffix: str) -> dict[str, Any] | None:
    if suffix != ".parquet":
        return None
    try:
        meta = pq.read_schema(out).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    raw = meta.get(b"ieqa.run")
    return json.loads(raw) if raw else None


def _load(samples: Iterator[tuple[int, EditSample]], workers: int | None
          ) -> Iterator[tuple[int, EditSample, str | None]]:
    """``(index, sample with decoded images, load error)`` in input order, decoding ahead."""
    queue: deque[tuple[int, EditSample]] = deque()

    def refs() -> Iterator[object]:
        for item in samples:
            queue.append(item)
            if item[1].source is not None:
                yield item[1].source
            yield item[1].edited

    loaded = iter_load_images(refs(), workers=workers)
    try:
        for result in loaded:
            index, sample = queue.popleft()
            source = None
            if sample.source is not None:
                source, result = result, next(loaded)
            bad = next((r for r in (source, result) if r is not None and not r.ok), None)
            if bad is not None:
                yield index, sample, f"{type(bad.error).__name__}: {bad.error}"
                continue
            update = {"edited": result.image}
            if source is not None:
                update["source"] = source.image
            yield index, sample.model_copy(update=update), None
    finally:
        loaded.close()


def score_to_file(
    scorer: Scorer,
    samples: Iterable[EditSample],
    out: str | os.PathLike[str],
    *,
    input_id: str,
    total: int | None = None,
    batch_size: int = 8,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    fail_fast: bool = False,
) -> ScoreRunSummary:
    """Score ``samples`` with ``scorer`` into ``out`` (``.parquet`` or ``.jsonl``).

    Args:
        scorer: any :class:`~ieqa.scorers.base.Scorer`.
        samples: the samples, streamed once in order (ids must be unique).
        out: the output file; ``<out>.parts/`` holds the progress of an unfinished run.
        input_id: identifies the input (e.g. manifest path, size and mtime); a resumed
            run must have the same input and scorer configuration as the interrupted one.
        total: number of samples, for the progress bar (None: unknown).
        batch_size: samples per call to ``scorer.score`` and per part file (>= 1).
        workers: image-decoding threads (default ``min(8, cpu_count)``).
        overwrite: discard an existing output or unfinished run and start again.
        progress: draw a progress bar on stderr.
        fail_fast: raise :class:`ScorerError` at the first row that fails instead of
            recording it.

    Raises:
        ScorerError: bad arguments, duplicate ids, or an unfinished run (or a finished
            output) made from another input or scorer configuration (pass
            ``overwrite=True``).
    """
    if batch_size < 1:
        raise ScorerError(f"batch_size must be >= 1, got {batch_size}")
    out = Path(out)
    suffix = _check_out(out)
    t0 = time.perf_counter()
    state = {"input": input_id, "scorer": scorer.name, "config": scorer.config(),
             "dimensions": list(scorer.dimensions), "ieqa": ieqa.__version__}
    state = json.loads(json.dumps(state, default=str))  # what reading it back gives
    summary = ScoreRunSummary(out)
    parts = _Parts(out)
    if overwrite:
        parts.remove()
        out.unlink(missing_ok=True)
    elif parts.exists():
        if parts.state() not in (None, state):
            raise ScorerError(f"{parts.dir} holds an unfinished run of another input or scorer "
                              f"configuration ({parts.state()}); pass --overwrite to start again")
    elif out.exists():
        previous = _existing_state(out, suffix)
        if previous is not None and _same_run(previous, state):
            dims = list(scorer.dimensions)
            _fill_totals(summary, pq.read_table(out, columns=[*dims, "unavailable", "error"]), dims)
            summary.n_resumed = summary.n_rows
            summary.seconds = time.perf_counter() - t0
            return summary
        raise ScorerError(f"{out} exists; pass --overwrite to replace it")
    parts.start(state)
    done = parts.done()
    schema = output_schema(scorer.dimensions)
    seen: set[str] = set()

    def todo() -> Iterator[tuple[int, EditSample]]:
        for i, s in enumerate(samples):
            if s.id in seen:
                raise ScorerError(f"sample id {s.id!r} occurs twice in the input; ids must be unique")
            seen.add(s.id)
            if i in done:
                if done[i] != s.id:
                    raise ScorerError(f"{parts.dir}: row {i} was {done[i]!r} in the interrupted run "
                                      f"and is {s.id!r} now; the input changed: pass --overwrite")
                summary.n_resumed += 1
                advance(1)
                continue
            yield i, s

    dims = scorer.dimensions
    with progress_bar(f"Scoring with {scorer.name}", total, enabled=progress) as advance:
        batch: list[tuple[int, EditSample, str | None]] = []
        for item in _load(todo(), workers):
            batch.append(item)
            if len(batch) >= batch_size:
                _score_batch(scorer, batch, parts, schema, dims, summary, fail_fast)
                advance(len(batch))
                batch = []
        if batch:
            _score_batch(scorer, batch, parts, schema, dims, summary, fail_fast)
            advance(len(batch))
    if done and max(done) >= len(seen):
        raise ScorerError(f"{parts.dir} holds rows beyond the end of the input (the input "
                          "changed): pass --overwrite")
    table = parts.read_all(schema).drop_columns([_INDEX])
    _fill_totals(summary, table, dims)
    meta = {"ieqa.run": json.dumps(state), "ieqa.scorer": json.dumps(scorer.info.to_dict())}
    _write_output(table, out, suffix, meta)
    parts.remove()
    summary.seconds = time.perf_counter() - t0
    return summary


def _same_run(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("input", "scorer", "config", "dimensions")
    return all(a.get(k) == b.get(k) for k in keys)


def _score_batch(scorer: Scorer, batch: list[tuple[int, EditSample, str | None]], parts: _Parts,
                 schema: pa.Schema, dims: tuple[str, ...], summary: ScoreRunSummary,
                 fail_fast: bool) -> None:
    good = [s for _, s, err in batch if err is None]
    scored = iter(scorer.score(good) if good else [])
    results = []
    for _, s, err in batch:
        r = ScoreResult.failed(s.id, err) if err is not None else next(scored)
        if r.id != s.id:
            raise ScorerError(f"scorer {scorer.name!r} returned results out of order "
                              f"({r.id!r} for {s.id!r})")
        if r.error is not None:
            if fail_fast:
                raise ScorerError(f"sample {s.id!r}: {r.error}")
            if len(summary.errors) < 5:
                summary.errors.append((s.id, r.error))
        results.append(r)
    parts.write(results_to_rows(results, dims), [i for i, _, _ in batch], schema)
    summary.n_scored += len(batch)


def read_scores(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of an output file as dicts (JSON-object columns decoded)."""
    path = Path(path)
    suffix = _check_out(path)
    if suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        for key in ("sigma", "unavailable", "raw"):
            if row.get(key) is not None:
                row[key] = json.loads(row[key])
    return rows
