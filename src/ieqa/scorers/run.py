"""Score a stream of samples into a score file: streaming, parallel decoding, resumable.

:func:`score_to_file` is what ``ieqa score`` runs. Images are decoded on a thread pool
ahead of the scorer; the scorer gets batches of ``batch_size`` samples. Every finished
batch is written atomically as one Parquet part file in ``<out>.parts/``, so a run that is
killed loses at most the batch in flight. When the input is done, ``<out>`` is written
(rows in input order) and the parts folder removed.

**Re-running the same command** keeps every row already scored whose inputs did not
change and scores the rest: rows are matched by their content key
(:func:`ieqa.data.inputs.input_key`: fields, image files' size and mtime), not by their
position, so a re-run after an interruption, after a manifest line was fixed, or after
rows were added, removed or reordered scores only what is new or changed. Rows that
errored (server down, HTTP errors, a bad image) are scored again unless
``retry_errors=False``. Only a different scorer configuration needs ``overwrite=True``.
While a run writes ``<out>``, it holds ``<out>.lock``; a second run on the same output
stops at once with the holder's PID.

A row that cannot be scored (a malformed manifest line, an image that does not load, a
sample the scorer rejects) is written with its ``error`` and no scores, never dropped
and never given a score.

Output columns (Parquet, or one JSON object per line for ``.jsonl``)::

    id            str
    source        str | null        the inputs, so a score file stands alone
    edited        str | null        (image paths; null for in-memory images)
    instruction   str | null
    editor        str | null
    task          str | null
    group_id      str | null
    <dimension>   float64 | null    one column per dimension of the scorer, in its units
    flags         [str]             degenerate output: blank, transparent, tiny, no_op,
                                    unrelated (:mod:`ieqa.scorers.flags`)
    sigma         JSON object | null        per-dimension uncertainty, when given
    unavailable   JSON object | null        dimension -> why it is missing, what to use
    explanation   str | null
    region        {x, y, w, h} | null       normalised centre/size box of the edit
    raw           JSON object | null        scorer-specific extras
    error         str | null                why the row has no scores
    input_key     str                       content key of the row's inputs (for re-runs)
    scorer        str                       the scorer configuration, NAME@HASH (scorer_id)

In JSONL the JSON-object columns are inline objects. The Parquet file's metadata holds
the scorer (name, configuration, info) under ``ieqa.scorer`` and the run under
``ieqa.run``; a JSONL output keeps the run in ``<out>.run.json`` beside it. The run
record is the file's provenance (:func:`ieqa.data.scorefile.read_provenance`): the scorer,
its configuration and ``scorer_id``, each dimension's scale, and the inputs (their
description, count and a SHA-256 over their input keys). Such a file can be given to
``ieqa bench --predictions`` and ``ieqa rank-editors`` as is.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
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

from ieqa.backends.judge_log import JUDGE_LOG, JudgeLog
from ieqa.data.images import iter_load_images
from ieqa.data.inputs import BadRow, InputItem, input_key
from ieqa.data.schema import EditSample
from ieqa.data.scorefile import (
    INPUT_COLUMNS,
    JSON_COLUMNS,
    NON_SCORE_COLUMNS,
    SCORER_COLUMN,
    ScoreRow,
    ScoreRowChecker,
    image_ref,
    iter_score_rows,
    output_schema,
)
from ieqa.progress import progress_bar
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult
from ieqa.version import __version__

__all__ = ["attach_judge_log", "detach_judge_log", "judge_log_path", "judge_logged", "INPUT_COLUMNS", "NON_SCORE_COLUMNS", "OUTPUT_SUFFIXES", "OutputLockedError", "ScoreRun",
           "ScoreRunSummary", "output_lock", "output_schema", "read_scores", "results_to_rows",
           "row_to_result", "score_items", "score_loaded", "score_to_file", "scorer_id",
           "scorer_state"]

#: what ``ieqa score`` writes (a score file may also be .jsonl.gz or .csv: ieqa.data.scorefile)
OUTPUT_SUFFIXES = (".parquet", ".jsonl")
_STATE = "state.json"
_INDEX = "_index"
_MAX_LISTED_ERRORS = 5


class OutputLockedError(ScorerError):
    """Another process is writing the same output."""


@dataclass
class ScoreRunSummary:
    """What a :func:`score_to_file` call did.

    Attributes:
        out: the output file (complete when the call returned).
        n_rows: rows in the output.
        n_scored: rows scored by this call (retried ones included).
        n_resumed: rows kept from an earlier run (their inputs did not change).
        n_retried: rows that had an error in an earlier run and were scored again.
        n_errors: rows with an ``error`` in the whole output.
        n_input_errors: of those, rows that could not be read from the input (a malformed
            manifest line, an edited image with no source or instruction).
        seconds: wall time of this call.
        errors: the first few ``(id, error)`` pairs, to show the user.
        flags: rows per degenerate-output flag, over the whole output.
        stats: per dimension of the scorer, over the whole output: ``n`` scored,
            ``mean``/``min``/``max`` (None when ``n`` is 0) and ``unavailable`` (rows that
            report the dimension unavailable).
        flops: the FLOPs the scorer's transformers backend computed in this call
            (:mod:`ieqa.backends.flops`; None for other backends and models it does not
            count).
        padding: the share of the token positions of this call's model batches that were
            padding (None where not counted).
        device: the backend's device name (``torch.cuda.get_device_name``) on a GPU, else
            None.
    """

    out: Path
    n_rows: int = 0
    n_scored: int = 0
    n_resumed: int = 0
    n_retried: int = 0
    n_errors: int = 0
    n_input_errors: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)
    flags: dict[str, int] = field(default_factory=dict)
    stats: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    flops: float | None = None
    padding: float | None = None
    device: str | None = None

    @property
    def ok(self) -> bool:
        """True when every row was scored."""
        return self.n_errors == 0


def _fill_totals(summary: ScoreRunSummary, table: pa.Table, dims: Iterable[str]) -> None:
    """Row, error, flag and per-dimension counts of a finished output table."""
    summary.n_rows = table.num_rows
    errors = table.column("error")
    summary.n_errors = table.num_rows - errors.null_count
    summary.errors = []
    if summary.n_errors:
        failed = table.filter(pc.is_valid(errors)).slice(0, _MAX_LISTED_ERRORS)
        summary.errors = list(zip(failed.column("id").to_pylist(),
                                  failed.column("error").to_pylist(), strict=True))
    summary.flags = {}
    for flags in table.column("flags").to_pylist():
        for f in flags or ():
            summary.flags[f] = summary.flags.get(f, 0) + 1
    unavailable = [json.loads(u) for u in table.column("unavailable").drop_null().to_pylist()]
    for dim in dims:
        col = table.column(dim)
        n = len(col) - col.null_count
        mm = pc.min_max(col)
        summary.stats[dim] = {
            "n": n, "mean": pc.mean(col).as_py(), "min": mm["min"].as_py(),
            "max": mm["max"].as_py(), "unavailable": sum(dim in u for u in unavailable)}


def _json_or_none(d: dict[str, Any]) -> str | None:
    return json.dumps(d, sort_keys=True, allow_nan=True) if d else None


def _input_fields(item: InputItem | None) -> dict[str, Any]:
    if item is None:
        return dict.fromkeys(INPUT_COLUMNS)
    if isinstance(item, BadRow):
        return {c: item.fields.get(c) for c in INPUT_COLUMNS}
    return {"source": image_ref(item.source), "edited": image_ref(item.edited),
            "instruction": item.instruction, "editor": item.editor, "task": item.task,
            "group_id": item.group_id}


def results_to_rows(results: Iterable[ScoreResult], dimensions: Iterable[str],
                    inputs: Iterable[InputItem | None] | None = None,
                    keys: Iterable[str | None] | None = None) -> list[dict[str, Any]]:
    """Flat output rows (the Parquet layout: JSON-object columns as strings); ``inputs``
    (the samples, in the same order) fill the input columns, ``keys`` the input keys."""
    dims = list(dimensions)
    results = list(results)
    inputs = list(inputs) if inputs is not None else [None] * len(results)
    keys = list(keys) if keys is not None else [None] * len(results)
    rows = []
    for r, item, key in zip(results, inputs, keys, strict=True):
        row: dict[str, Any] = {"id": r.id, **_input_fields(item)}
        for d in dims:
            row[d] = r.scores.get(d)
        extra = sorted(set(r.scores) - set(dims))
        raw = dict(r.raw)
        if extra:  # a scorer returned a dimension it does not declare: keep it visible
            raw["undeclared_scores"] = {d: r.scores[d] for d in extra}
        row["flags"] = list(r.flags)
        row["sigma"] = _json_or_none(r.sigma)
        row["unavailable"] = _json_or_none(r.unavailable)
        row["explanation"] = r.explanation
        row["region"] = None if r.region is None else r.region.model_dump()
        row["raw"] = _json_or_none(raw)
        row["error"] = r.error
        row["input_key"] = key
        row[SCORER_COLUMN] = None  # the run's scorer_id, set on the whole output at the end
        rows.append(row)
    return rows


class _Lock:
    """``<out>.lock``: an exclusive ``flock`` held for the whole run (released by the
    kernel if the process dies), holding the holder's PID."""

    def __init__(self, out: Path) -> None:
        self.path = out.with_name(out.name + ".lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                try:
                    holder = self.path.read_text(encoding="utf-8").strip() or "unknown"
                except OSError:
                    holder = "unknown"
                raise OutputLockedError(
                    f"another ieqa process (PID {holder}) is writing {self.path.name[:-5]}; wait "
                    f"for it to finish or stop it (kill {holder}), or write to another output "
                    "with -o") from None
            try:  # the file we locked must still be the one at the path (not unlinked)
                if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                    os.close(fd)
                    continue
            except FileNotFoundError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            self.fd = fd
            return

    def release(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


class _Parts:
    """The ``<out>.parts`` folder of an unfinished run: part files of every run that
    worked on it (``part-<run>-<first index>.parquet``)."""

    def __init__(self, out: Path) -> None:
        self.dir = out.with_name(out.name + ".parts")
        self.run = f"{time.time_ns():020d}"

    def exists(self) -> bool:
        return self.dir.is_dir()

    def state(self) -> dict[str, Any] | None:
        p = self.dir / _STATE
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None

    def start(self, state: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_bytes(self.dir / _STATE, json.dumps(state, indent=1, sort_keys=True).encode())

    def files(self, run: str | None = None) -> list[Path]:
        return sorted(self.dir.glob(f"part-{run or '*'}-*.parquet"))

    def write(self, table: pa.Table) -> None:
        """Write one part atomically: output rows plus their input positions (``_index``)."""
        name = f"part-{self.run}-{pc.min(table.column(_INDEX)).as_py():012d}.parquet"
        tmp = self.dir / f".{name}.{uuid.uuid4().hex}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)

    def read(self, schema: pa.Schema, run: str | None = None) -> pa.Table:
        files = self.files(run)
        if not files:
            return schema.empty_table().append_column(_INDEX, pa.array([], pa.int64()))
        return pa.concat_tables([_conform(pq.read_table(f), schema, extra=(_INDEX,))
                                 for f in files])

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _conform(table: pa.Table, schema: pa.Schema, extra: tuple[str, ...] = ()) -> pa.Table:
    """``table`` with ``schema``'s columns (missing ones null) plus the ``extra`` ones."""
    cols = [table.column(f.name).cast(f.type) if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type) for f in schema]
    fields = list(schema)
    for name in extra:
        cols.append(table.column(name))
        fields.append(table.schema.field(name))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _check_out(out: Path) -> str:
    for suffix in OUTPUT_SUFFIXES:
        if out.name.endswith(suffix):
            return suffix
    raise ScorerError(f"{out}: the output must end in {' or '.join(OUTPUT_SUFFIXES)}")


def _sidecar(out: Path) -> Path:
    return out.with_name(out.name + ".run.json")


def _write_output(table: pa.Table, out: Path, suffix: str, metadata: dict[str, str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
    try:
        if suffix == ".parquet":
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
            pq.write_table(table, tmp)
        else:
            _atomic_write_bytes(_sidecar(out), json.dumps(
                {k: json.loads(v) for k, v in metadata.items()}, indent=1).encode())
            with open(tmp, "w", encoding="utf-8") as fh:
                for row in table.to_pylist():
                    for key in JSON_COLUMNS:
                        if row[key] is not None:
                            row[key] = json.loads(row[key])
                    fh.write(json.dumps(row, allow_nan=True) + "\n")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _read_output(out: Path, suffix: str, schema: pa.Schema) -> tuple[dict[str, Any] | None, pa.Table | None]:
    """``(run state, table)`` of an existing output; ``(None, None)`` when it is not an
    ieqa score file (no run state or unreadable)."""
    try:
        if suffix == ".parquet":
            table = pq.read_table(out)
            raw = (table.schema.metadata or {}).get(b"ieqa.run")
            state = json.loads(raw) if raw else None
        else:
            side = _sidecar(out)
            state = json.loads(side.read_text(encoding="utf-8")).get("ieqa.run") if side.is_file() else None
            rows = []
            with open(out, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        row = json.loads(line)
                        for key in JSON_COLUMNS:
                            if isinstance(row.get(key), dict):
                                row[key] = json.dumps(row[key], sort_keys=True, allow_nan=True)
                        rows.append(row)
            table = pa.Table.from_pylist(rows) if rows else schema.empty_table()
    except (OSError, ValueError, pa.ArrowException):
        return None, None
    if state is None or "input_key" not in table.column_names:
        return None, None
    return state, _conform(table, schema)


def _load(items: Iterator[tuple[int, InputItem]], workers: int | None
          ) -> Iterator[tuple[int, InputItem, EditSample | None, str | None]]:
    """``(index, item, sample with decoded images, load error)`` in input order, decoding
    ahead on threads; a :class:`BadRow` passes through with ``None`` for the sample."""
    queue: deque[tuple[int, InputItem]] = deque()

    def refs() -> Iterator[object]:
        for entry in items:
            queue.append(entry)
            item = entry[1]
            if isinstance(item, BadRow):
                yield item  # not an image: costs a quick "bad type" result, ignored
                continue
            if item.source is not None:
                yield item.source
            yield item.edited

    loaded = iter_load_images(refs(), workers=workers)
    try:
        for result in loaded:
            index, item = queue.popleft()
            if isinstance(item, BadRow):
                yield index, item, None, None
                continue
            source = None
            if item.source is not None:
                source, result = result, next(loaded)
            bad = next((r for r in (source, result) if r is not None and not r.ok), None)
            if bad is not None:
                yield index, item, None, f"{type(bad.error).__name__}: {bad.error}"
                continue
            update = {"edited": result.image}
            if source is not None:
                update["source"] = source.image
            yield index, item, item.model_copy(update=update), None
    finally:
        loaded.close()


def _item_key(item: InputItem) -> str:
    return item.key if isinstance(item, BadRow) else input_key(item)


def judge_log_path(out: str | os.PathLike[str]) -> Path:
    """Where ``ieqa score -o OUT`` writes its judge log: ``OUT.judge_log.jsonl``."""
    out = Path(out)
    return out.with_name(out.name + "." + JUDGE_LOG)


def attach_judge_log(scorer: Any, path: str | os.PathLike[str], *,
                     replay: str | os.PathLike[str] | None = None,
                     overwrite: bool = False, mode: str = "resume") -> JudgeLog | None:
    """Attach a judge log (:mod:`ieqa.backends.judge_log`) at ``path`` to the server
    backend of ``scorer`` (a scorer, or anything with a ``backend``): ``resume`` mode (a
    re-run takes the answers recorded there first; ``overwrite`` starts a new log),
    ``record`` (every request is sent and written; FDMPO's optimiser, whose own
    trajectory resumes), or ``replay`` from ``replay`` (a log file, or a folder holding
    ``judge_log.jsonl``). None when it sends no requests to a server.
    :func:`detach_judge_log` takes it off.

    Raises:
        ScorerError: ``replay`` for a scorer without a server backend, a replay source
            that holds no log, or a replay that would write over a log.
    """
    backend = getattr(scorer, "backend", None)
    path = Path(path)
    if hasattr(backend, "reset_stop"):
        backend.reset_stop()  # a new run: the stop rule counts afresh
    if not hasattr(backend, "judge_log"):
        if replay is not None:
            raise ScorerError(f"--replay needs a judge on an OpenAI-compatible server; "
                              f"{getattr(scorer, 'name', scorer)} sends it no requests")
        return None
    if replay is not None:
        source = Path(replay)
        source = source / JUDGE_LOG if source.is_dir() else source
        if not source.is_file():
            raise ScorerError(f"--replay {replay}: no judge log there (a run with a server "
                              f"judge writes {JUDGE_LOG} in its output folder, or "
                              f"OUT.{JUDGE_LOG} beside ieqa score's OUT)")
        if path.exists():
            raise ScorerError(f"--replay writes a new run: pass another -o ({path} exists)")
        log = JudgeLog(path, mode="replay", source=source)
    else:
        if overwrite:
            path.unlink(missing_ok=True)
        log = JudgeLog(path, mode=mode)
    backend.judge_log = log
    return log


def detach_judge_log(scorer: Any) -> None:
    """Take the judge log off ``scorer``'s backend (see :func:`attach_judge_log`)."""
    backend = getattr(scorer, "backend", None)
    if hasattr(backend, "judge_log"):
        backend.judge_log = None


@contextlib.contextmanager
def judge_logged(path: str | os.PathLike[str], *scorers: Any,
                 **options: Any) -> Iterator[list[JudgeLog | None]]:
    """The judge log at ``path`` attached to each of ``scorers`` for the ``with`` block
    (:func:`attach_judge_log` with ``options``), taken off again however the block ends;
    yields what each attach returned."""
    attached: list[Any] = []
    try:
        logs = []
        for scorer in scorers:
            logs.append(attach_judge_log(scorer, path, **options))
            attached.append(scorer)
        yield logs
    finally:
        for scorer in attached:
            detach_judge_log(scorer)


def scorer_state(scorer: Scorer) -> dict[str, Any]:
    """What identifies a scorer configuration in a run record (name, config, dimensions),
    as reading it back from JSON gives it."""
    state = {"scorer": scorer.name, "config": scorer.config(),
             "dimensions": list(scorer.dimensions)}
    return json.loads(json.dumps(state, default=str))


#: server-backend settings that change how long a request is waited for, not its answer
#: (and ``base_url`` is compared with this machine's names written one way: _same_host)
_PATIENCE = frozenset({"timeout_s", "max_retries", "backoff_s", "max_backoff_s",
                       "max_concurrency", "max_consecutive_failures"})


def scorer_id(state: dict[str, Any]) -> str:
    """``NAME@HASH`` of a scorer configuration (a :func:`scorer_state` or run record): HASH is
    the first 12 hex digits of the SHA-256 of what tells configurations apart (the same
    parts that decide whether a run resumes: not how long requests wait, nor where
    hash-checked files were read from). Every row of a score file carries it in its
    ``scorer`` column."""
    text = json.dumps(_identity(state), sort_keys=True, default=str)
    return f"{state.get('scorer')}@{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _scales(info: dict[str, Any], dims: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each dimension's scale as the scorer's info states it."""
    rng = info.get("score_range")
    return {d: {"range": list(rng) if rng is not None else None, "units": info.get("units"),
                "higher_better": info.get("higher_better")} for d in dims}


def _same_scorer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two run records come from the same scorer configuration. A config's
    ``provenance`` entry (where identical, hash-checked files were read from: the cache or a
    ``--prompts`` copy) and how its server backend waits and retries (:data:`_PATIENCE`:
    ``-O timeout=S`` raised to resume a run) are recorded but do not tell configurations
    apart: they change no answer."""
    return not _identity_changes(a, b)


def _identity(state: dict[str, Any]) -> dict[str, Any]:
    """The parts of a run record that tell scorer configurations apart (see
    :func:`_same_scorer`)."""
    config = state.get("config")
    if isinstance(config, dict):
        config = {k: v for k, v in config.items() if k != "provenance"}
        backend = config.get("backend")
        if isinstance(backend, dict):
            config["backend"] = {k: _same_host(v) if k == "base_url" else v
                                 for k, v in backend.items() if k not in _PATIENCE}
    return {"scorer": state.get("scorer"), "config": config, "dimensions": state.get("dimensions")}


def _same_host(url: Any) -> Any:
    """A server URL with the names of this machine written one way (``localhost``,
    ``127.0.0.1``, ``[::1]``, ``0.0.0.0`` are the same server to a client here) and without a
    trailing slash: a re-run that writes the address another way is the same run."""
    if not isinstance(url, str):
        return url
    import re

    return re.sub(r"^(\w+://)(localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0)(?=[:/]|$)",
                  r"\g<1>127.0.0.1", url.rstrip("/"))


def _identity_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``"key: A -> B"`` for each setting that differs between two run records (nested keys
    dotted, ``config.`` dropped)."""
    out: list[str] = []
    absent = object()  # a key one record lacks differs from one set to None

    def walk(x: Any, y: Any, where: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                walk(x.get(k, absent), y.get(k, absent), f"{where}.{k}" if where else str(k))
        elif x is absent or y is absent or x != y:
            shown = ["(not set)" if v is absent else repr(v) for v in (x, y)]
            out.append(f"{where.removeprefix('config.')}: {shown[0]} -> {shown[1]}")

    walk(_identity(a), _identity(b), "")
    return out


def _changes_text(previous: dict[str, Any], state: dict[str, Any]) -> str:
    changes = _identity_changes(previous, state)
    shown = "; ".join(changes[:8]) + (f"; and {len(changes) - 8} more" if len(changes) > 8 else "")
    verb = "setting differs" if len(changes) == 1 else "settings differ"
    return f"{len(changes)} {verb}: {shown}"


def _previous_rows(out: Path, suffix: str, parts: _Parts, state: dict[str, Any],
                   schema: pa.Schema, overwrite: bool) -> pa.Table:
    """The rows of earlier runs of this scorer configuration on ``out`` (finished output
    first, then the parts of unfinished runs, oldest first)."""
    if overwrite:
        parts.remove()
        out.unlink(missing_ok=True)
        _sidecar(out).unlink(missing_ok=True)
    tables = []
    if out.exists():
        previous, table = _read_output(out, suffix, schema)
        if previous is None:
            raise ScorerError(f"{out} exists and is not an ieqa score file of this version (no run "
                              "record or no input_key column); pass --overwrite to replace it, or "
                              "choose another output with -o")
        if not _same_scorer(previous, state):
            changes = _changes_text(previous, state)
            raise ScorerError(
                f"{out} was written by another scorer configuration ({changes}): write this "
                "one to another output with -o (both are kept), or pass "
                "--overwrite to replace it (its rows are lost; how long requests wait, "
                "-O timeout and retries, may change without it)")
        tables.append(table)
    if parts.exists():
        previous = parts.state()
        if previous is not None and not _same_scorer(previous, state):
            raise ScorerError(
                f"{parts.dir} holds an unfinished run of another scorer configuration "
                f"({_changes_text(previous, state)}): write this one to another output with "
                "-o, or pass --overwrite to discard the unfinished rows")
        tables.append(parts.read(schema).drop_columns([_INDEX]))
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


class ScoreRun:
    """One run on ``out``, whichever engine scores: what the earlier runs left (the
    finished output and the parts of unfinished runs), which input rows still need
    scoring (:meth:`todo`), the part files of this run (:attr:`parts`) and the final
    output (:meth:`finish`). :func:`score_to_file` (in process) and
    :func:`ieqa.scale.raydata.score_to_ray` (Ray Data) both run through it, so their
    resume rules and outputs are the same. The caller holds ``out``'s lock (:func:`output_lock`).

    Args:
        out: the output file (``.parquet`` or ``.jsonl``).
        state: the scorer's :func:`scorer_state`.
        info: the scorer's ``info.to_dict()`` (recorded in the output).
        input_id: a description of the input (recorded).
    """

    def __init__(self, out: Path, state: dict[str, Any], info: dict[str, Any], *,
                 overwrite: bool, retry_errors: bool, input_id: str | None) -> None:
        self.t0 = time.perf_counter()
        self.out = out
        self.suffix = _check_out(out)
        self.state = {**state, "input": input_id, "ieqa": __version__}
        self.info = info
        self.dims = tuple(state["dimensions"])
        self.scorer_id = scorer_id(state)
        self.schema = output_schema(self.dims)
        self.summary = ScoreRunSummary(out)
        self.parts = _Parts(out)
        self.previous = _previous_rows(out, self.suffix, self.parts, self.state, self.schema,
                                       overwrite)
        # the latest row per key: kept when it has scores (or errors, without retry)
        self._keep: dict[str, int] = {}
        self._errored: set[str] = set()
        for i, (key, err) in enumerate(zip(self.previous.column("input_key").to_pylist(),
                                           self.previous.column("error").to_pylist(), strict=True)):
            if key is None:
                continue
            if err is None or not retry_errors:
                self._keep[key] = i
                self._errored.discard(key)
            else:
                self._keep.pop(key, None)
                self._errored.add(key)
        self.parts.start(self.state)
        self._reused: list[tuple[int, int]] = []  # (input index, row of `previous`)
        #: input position -> content key of every row seen by :meth:`todo`
        self.keys: dict[int, str] = {}

    def todo(self, samples: Iterable[InputItem],
             advance: Any = None) -> Iterator[tuple[int, InputItem]]:
        """``(input position, item)`` of the rows to score, in input order; rows kept
        from earlier runs are counted (``advance(1)`` each) and skipped.

        Raises:
            ScorerError: an id occurs twice.
        """
        seen: set[str] = set()
        summary = self.summary
        for i, item in enumerate(samples):
            if item.id in seen:
                raise ScorerError(f"sample id {item.id!r} occurs twice in the input; ids must be "
                                  "unique (give each row its own id)")
            seen.add(item.id)
            key = _item_key(item)
            self.keys[i] = key
            bad = isinstance(item, BadRow)
            if key in self._keep and not bad:
                self._reused.append((i, self._keep[key]))
                summary.n_resumed += 1
                if advance is not None:
                    advance(1)
                continue
            if key in self._errored:
                summary.n_retried += 1
            if bad:
                summary.n_input_errors += 1
            else:
                summary.n_scored += 1
            yield i, item

    def finish(self) -> ScoreRunSummary:
        """Merge this run's parts with the kept rows into ``out`` (input order), remove
        the parts folder and return the summary."""
        new = self.parts.read(self.schema, self.parts.run)
        if self._reused:
            idx, rows = zip(*self._reused, strict=True)
            old = self.previous.take(pa.array(rows, pa.int64())).append_column(
                new.schema.field(_INDEX), pa.array(idx, pa.int64()))
            new = pa.concat_tables([new, old])
        table = new.sort_by(_INDEX).drop_columns([_INDEX])
        # every row is this configuration's (resume refuses another), rows of an older
        # output without the column included
        table = table.set_column(table.schema.get_field_index(SCORER_COLUMN), SCORER_COLUMN,
                                 pa.array([self.scorer_id] * table.num_rows, pa.string()))
        _fill_totals(self.summary, table, self.dims)
        digest = hashlib.sha256("\n".join(k or "" for k in table.column("input_key").to_pylist())
                                .encode()).hexdigest()
        record = {**self.state, "scorer_id": self.scorer_id,
                  "scales": _scales(self.info, self.dims),
                  "inputs": {"description": self.state.get("input"), "n": table.num_rows,
                             "sha256": digest}}
        meta = {"ieqa.run": json.dumps(record), "ieqa.scorer": json.dumps(self.info)}
        _write_output(table, self.out, self.suffix, meta)
        self.parts.remove()
        self.summary.seconds = time.perf_counter() - self.t0
        return self.summary


def output_lock(out: str | os.PathLike[str]) -> _Lock:
    """The ``<out>.lock`` of a run (``acquire()`` / ``release()``); the output's suffix
    is checked first."""
    out = Path(out)
    _check_out(out)
    return _Lock(out)


def score_to_file(
    scorer: Scorer,
    samples: Iterable[InputItem],
    out: str | os.PathLike[str],
    *,
    total: int | None = None,
    batch_size: int = 8,
    workers: int | None = None,
    overwrite: bool = False,
    retry_errors: bool = True,
    progress: bool = True,
    fail_fast: bool = False,
    input_id: str | None = None,
) -> ScoreRunSummary:
    """Score ``samples`` with ``scorer`` into ``out`` (``.parquet`` or ``.jsonl``).

    Args:
        scorer: any :class:`~ieqa.scorers.base.Scorer`.
        samples: the samples, streamed once in order (ids must be unique); a
            :class:`~ieqa.data.inputs.BadRow` in the stream becomes an error row.
        out: the output file; ``<out>.parts/`` holds the progress of an unfinished run
            and ``<out>.lock`` marks a run in progress.
        total: number of samples, for the progress bar (None: unknown).
        batch_size: samples per call to ``scorer.score`` and per part file (>= 1).
        workers: image-decoding threads (default ``min(8, cpu_count)``).
        overwrite: discard an existing output or unfinished run and start again (needed
            only when the scorer or its configuration changed).
        retry_errors: score again the rows that errored in an earlier run (default);
            False keeps their errors.
        progress: draw a progress bar on stderr (a periodic line when not a terminal).
        fail_fast: raise :class:`ScorerError` at the first row that fails instead of
            recording it.
        input_id: a description of the input, recorded in the run state (informational).

    Raises:
        OutputLockedError: another process is writing ``out``.
        ScorerError: bad arguments, duplicate ids, or an output (or unfinished run) made
            with another scorer configuration (pass ``overwrite=True``).
    """
    if batch_size < 1:
        raise ScorerError(f"batch_size must be >= 1, got {batch_size}")
    out = Path(out)
    lock = output_lock(out)
    lock.acquire()
    try:
        run = ScoreRun(out, scorer_state(scorer), scorer.info.to_dict(), overwrite=overwrite,
                       retry_errors=retry_errors, input_id=input_id)
        before = _compute(scorer)
        with progress_bar(f"Scoring with {scorer.name}", total, enabled=progress) as advance:
            batch: list[tuple[int, InputItem, EditSample | None, str | None]] = []
            for entry in _load(run.todo(samples, advance), workers):
                batch.append(entry)
                if len(batch) >= batch_size:
                    run.parts.write(score_loaded(scorer, batch, run.keys, fail_fast))
                    advance(len(batch))
                    batch = []
            if batch:
                run.parts.write(score_loaded(scorer, batch, run.keys, fail_fast))
                advance(len(batch))
        summary = run.finish()
        _count_compute(summary, scorer, before)
        return summary
    finally:
        lock.release()


def _compute(scorer: Scorer) -> tuple[float, int, int] | None:
    """``(FLOPs, padding positions, positions)`` the scorer's backend has computed so far,
    or None where it does not count them."""
    backend = getattr(scorer, "backend", None)
    flops = getattr(backend, "flops_done", None)
    padding = getattr(backend, "padding_done", None)
    if flops is None or padding is None:
        return None
    return flops.total, padding[0], padding[1]


def _count_compute(summary: ScoreRunSummary, scorer: Scorer,
                   before: tuple[float, int, int] | None) -> None:
    after = _compute(scorer)
    if before is None or after is None:
        return
    summary.flops = after[0] - before[0]
    positions = after[2] - before[2]
    summary.padding = (after[1] - before[1]) / positions if positions else None
    device = str(getattr(scorer.backend, "input_device", ""))
    if device.startswith("cuda"):
        import torch

        summary.device = torch.cuda.get_device_name(torch.device(device))


def score_items(scorer: Scorer, entries: Iterable[tuple[int, InputItem]], keys: dict[int, str],
                *, workers: int | None = None, fail_fast: bool = False) -> pa.Table:
    """Score ``(input position, item)`` entries in one batch: decode their images on
    ``workers`` threads, then :func:`score_loaded`."""
    return score_loaded(scorer, list(_load(iter(entries), workers)), keys, fail_fast)


def score_loaded(scorer: Scorer, batch: list[tuple[int, InputItem, EditSample | None, str | None]],
                 keys: dict[int, str], fail_fast: bool) -> pa.Table:
    """One batch of loaded entries (``(position, item, decoded sample or None, load
    error)``) as output rows with their positions (the ``_index`` column): a
    :class:`BadRow` or an image that did not load becomes an error row."""
    good = [s for _, _, s, _ in batch if s is not None]
    scored = iter(scorer.score(good) if good else [])
    results = []
    for _, item, sample, err in batch:
        if isinstance(item, BadRow):
            r = ScoreResult.failed(item.id, item.error)
        elif sample is None:
            r = ScoreResult.failed(item.id, err or "could not load the images")
        else:
            r = next(scored)
        if r.id != item.id:
            raise ScorerError(f"scorer {scorer.name!r} returned results out of order "
                              f"({r.id!r} for {item.id!r})")
        if r.error is not None and fail_fast:
            raise ScorerError(f"sample {item.id!r}: {r.error}")
        results.append(r)
    rows = results_to_rows(results, scorer.dimensions, [item for _, item, _, _ in batch],
                           [keys[i] for i, _, _, _ in batch])
    table = pa.Table.from_pylist(rows, schema=output_schema(scorer.dimensions))
    return table.append_column(_INDEX, pa.array([i for i, _, _, _ in batch], pa.int64()))


def read_scores(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of an output file as dicts (:meth:`ieqa.data.scorefile.ScoreRow.to_dict`),
    read and checked by the one score-file reader
    (:func:`ieqa.data.scorefile.iter_score_rows`); a file whose every row failed is read
    too (its rows carry their errors)."""
    return [row.to_dict() for row in iter_score_rows(path, require_predictions=False)]


def row_to_result(row: dict[str, Any] | ScoreRow) -> ScoreResult:
    """The :class:`ScoreResult` of one score-file row — the inverse of
    :func:`results_to_rows` for ``scores``, ``sigma``, ``unavailable``, ``flags``,
    ``explanation``, ``raw`` and ``error``.

    ``row`` is a :class:`~ieqa.data.scorefile.ScoreRow` of the one score-file reader
    (:func:`ieqa.data.scorefile.iter_score_rows`), or a raw row (as :func:`read_scores`
    returns it, or with its JSON columns still JSON text as in Parquet), which is first
    checked by the same rules: a score that is not a number or a column that is not a
    dimension raises :class:`~ieqa.data.scorefile.ScoreFileError`. A row whose score is NaN
    or infinite (not something ``ieqa score`` writes) becomes a failed result saying so,
    never a score.
    """
    if not isinstance(row, ScoreRow):
        row = ScoreRowChecker(Path("score file"), unique_ids=False).check(0, "a row", row)
    extra = row.columns
    flags = list(extra.get("flags") or ())

    def obj(key: str) -> dict[str, Any]:
        value = extra.get(key)
        return dict(value) if isinstance(value, dict) else {}

    if extra.get("error") is not None:
        return ScoreResult(id=row.id, error=str(extra["error"]), flags=flags)
    if row.failed is not None:
        return ScoreResult(id=row.id, flags=flags, error=f"{row.failed} in the score file")
    return ScoreResult(id=row.id, scores=dict(row.scores), sigma=obj("sigma"),
                       unavailable=obj("unavailable"), explanation=extra.get("explanation"),
                       raw=obj("raw"), flags=flags)
