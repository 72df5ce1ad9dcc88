"""Score a manifest on a Ray cluster with Ray Data: ``ieqa score ... --engine ray``.

The same run as :func:`ieqa.scorers.run.score_to_file` (the local engine), on a pool of
Ray actors, each holding one scorer (one model):

1. **Plan (driver).** The input is read with ieqa's own readers, exactly as the local
   engine reads it (:func:`ieqa.data.manifest.iter_manifest_items` for a JSONL, Parquet
   or CSV manifest, :func:`ieqa.data.inputs.iter_folder` for a folder), so ids, malformed
   rows (:class:`~ieqa.data.inputs.BadRow`, with their line numbers), content keys and
   the resume decision are the local engine's (:class:`ieqa.scorers.run.ScoreRun`). The
   rows still to score become Arrow blocks of ``(input position, content key, row)``
   and a Ray Dataset (``ray.data.from_arrow``); no image is opened on the driver.
   Ray Data's own readers (``read_json``/``read_parquet``) are not used: they give no
   input position (the output keeps the input order) and fail on a malformed line
   instead of recording it.
2. **Score (actors).** ``Dataset.map_batches`` runs a callable class on an
   ``ActorPoolStrategy(size=replicas)`` pool; each actor builds its scorer once, in the
   actor, from a zero-argument builder (the CLI passes the scorer name, options, model
   and checkpoint: a model is never pickled from the driver), with ``num_gpus`` /
   ``num_cpus`` per actor. Each call decodes ``batch_size`` rows' images (threads) and
   returns them as output rows (:func:`ieqa.scorers.run.score_items`, the local
   engine's code).
3. **Write (driver).** Finished blocks stream back to the driver, which writes each one
   atomically as a Parquet part in ``<out>.parts/`` (the local engine's folder and
   format), then merges them with the rows kept from earlier runs into ``out`` in input
   order. A killed run (driver, actor or cluster) loses only the blocks in flight; the
   same command, with either engine, keeps the finished parts and scores the rest.

Image paths are opened by the actors: on a multi-node cluster they (and ``out``'s
folder, which only the driver writes) must be on storage every node sees at the same
path.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ieqa.data.inputs import InputItem
from ieqa.errors import IeqaError
from ieqa.progress import progress_bar
from ieqa.ray_cluster import start_ray
from ieqa.scorers.base import Scorer, ScorerError
from ieqa.scorers.run import ScoreRun, ScoreRunSummary, output_lock, score_items, scorer_state

__all__ = ["INSTALL_HINT", "RayScoring", "score_to_ray"]

INSTALL_HINT = "install it with pip install 'ieqa[ray]'"
#: rows per planned block (one actor call handles ``batch_size`` of them at a time)
MAX_BLOCK_ROWS = 512
_INDEX = "_index"
_PLAN_SCHEMA = pa.schema([(_INDEX, pa.int64()), ("input_key", pa.string()), ("item", pa.binary())])


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the Ray Data part of the extra
    except ImportError as exc:
        raise IeqaError(f"--engine ray needs Ray Data, which is not installed ({exc}); "
                        f"{INSTALL_HINT}, or use --engine local") from None
    return ray


class RayScoring:
    """Where and how the actors run.

    Args:
        replicas: actors in the pool (each holds one scorer), >= 1.
        gpus_per_replica: GPUs Ray reserves per actor (0 on CPU; a fraction shares one).
        cpus_per_replica: CPUs Ray reserves per actor (> 0).
        address: the Ray cluster (``"auto"``, ``"ray://host:10001"``, ...); None: the Ray
            this process is connected to, else a new local one (stopped at the end).
    """

    def __init__(self, replicas: int = 1, gpus_per_replica: float = 0.0,
                 cpus_per_replica: float = 1.0, address: str | None = None) -> None:
        if replicas < 1:
            raise IeqaError(f"--replicas must be at least 1, got {replicas}")
        if not gpus_per_replica >= 0:
            raise IeqaError(f"--gpus-per-replica must be >= 0, got {gpus_per_replica}")
        if not cpus_per_replica > 0:
            raise IeqaError(f"--cpus-per-replica must be > 0, got {cpus_per_replica}")
        self.replicas = replicas
        self.gpus_per_replica = float(gpus_per_replica)
        self.cpus_per_replica = float(cpus_per_replica)
        self.address = address


class _ScorerActor:
    """The Ray Data callable class: one scorer per actor, a plan batch in, output rows out."""

    def __init__(self, build_scorer: Callable[[], Scorer], workers: int | None) -> None:
        self.scorer = build_scorer()
        self.workers = workers

    def __call__(self, batch: pa.Table) -> pa.Table:
        positions = batch.column(_INDEX).to_pylist()
        keys = dict(zip(positions, batch.column("input_key").to_pylist(), strict=True))
        items = [pickle.loads(b) for b in batch.column("item").to_pylist()]
        # --fail-fast is checked by the driver on the returned rows: an exception raised
        # here reaches the driver as Ray's UserCodeException, without its message
        return score_items(self.scorer, zip(positions, items, strict=True), keys,
                           workers=self.workers)


def _describe(build_scorer: Callable[[], Scorer]) -> tuple[dict[str, Any], dict[str, Any]]:
    scorer = build_scorer()
    return scorer_state(scorer), scorer.info.to_dict()


def _plan_blocks(todo: Iterator[tuple[int, InputItem]], keys: dict[int, str],
                 block_rows: int) -> list[pa.Table]:
    blocks, chunk = [], []
    for i, item in todo:
        chunk.append((i, keys[i], pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)))
        if len(chunk) >= block_rows:
            blocks.append(chunk)
            chunk = []
    if chunk:
        blocks.append(chunk)
    return [pa.Table.from_arrays([pa.array(c, t) for c, t in zip(zip(*b, strict=True),
                                                                    (pa.int64(), pa.string(), pa.binary()),
                                                                    strict=True)],
                                 schema=_PLAN_SCHEMA) for b in blocks]


def _rebalance(blocks: list[pa.Table], batch_size: int, replicas: int) -> list[pa.Table]:
    """Blocks of a whole number of batches, small enough that every actor gets work
    (about four blocks per actor) and at most :data:`MAX_BLOCK_ROWS` rows."""
    n = sum(b.num_rows for b in blocks)
    if not n:
        return []
    per_block = min(MAX_BLOCK_ROWS, math.ceil(n / (4 * replicas)))
    per_block = max(batch_size, math.ceil(per_block / batch_size) * batch_size)
    table = pa.concat_tables(blocks)
    return [table.slice(s, per_block) for s in range(0, n, per_block)]


def _raise_first_error(table: pa.Table) -> None:
    """``--fail-fast``: :class:`ScorerError` for the first row (in input order) with an error."""
    failed = table.filter(pc.is_valid(table.column("error")))
    if failed.num_rows:
        row = failed.sort_by(_INDEX).slice(0, 1).to_pylist()[0]
        raise ScorerError(f"sample {row['id']!r}: {row['error']}")


def _unwrap(exc: BaseException) -> BaseException:
    """The user's exception inside Ray's wrappers (RayTaskError, UserCodeException)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ScorerError, IeqaError)):
            return exc
        cause = getattr(exc, "cause", None) or exc.__cause__
        if cause is None:
            break
        exc = cause
    return exc


def score_to_ray(
    build_scorer: Callable[[], Scorer],
    samples: Iterable[InputItem],
    out: str | os.PathLike[str],
    *,
    scaling: RayScoring | None = None,
    total: int | None = None,
    batch_size: int = 8,
    workers: int | None = None,
    overwrite: bool = False,
    retry_errors: bool = True,
    progress: bool = True,
    fail_fast: bool = False,
    input_id: str | None = None,
) -> ScoreRunSummary:
    """Score ``samples`` into ``out`` on Ray Data (module docstring): the output, the
    resume rules and the arguments are those of :func:`ieqa.scorers.run.score_to_file`.

    Args:
        build_scorer: zero-argument callable that builds the scorer; called once in a Ray
            task (to record the scorer's configuration) and once in every actor. It must
            be picklable (e.g. ``functools.partial(ieqa.create_scorer, "classic")``).
        scaling: actors, resources and cluster (:class:`RayScoring`; default one actor,
            one CPU, a local Ray).
        workers: image-decoding threads per actor.

    Raises:
        IeqaError: Ray Data is not installed, or a bad scaling argument.
        OutputLockedError, ScorerError: as :func:`~ieqa.scorers.run.score_to_file`.
    """
    if batch_size < 1:
        raise ScorerError(f"batch_size must be >= 1, got {batch_size}")
    scaling = scaling or RayScoring()
    ray = _ray()
    out = Path(out)
    lock = output_lock(out)
    lock.acquire()
    started = False
    try:
        started = start_ray(scaling.address, num_gpus=scaling.gpus_per_replica,
                            num_cpus=scaling.cpus_per_replica, include_dashboard=False,
                            logging_level=logging.WARNING, log_to_driver=True)
        return _run(ray, build_scorer, samples, out, scaling, total=total,
                    batch_size=batch_size, workers=workers, overwrite=overwrite,
                    retry_errors=retry_errors, progress=progress, fail_fast=fail_fast,
                    input_id=input_id)
    finally:
        lock.release()
        if started:
            ray.shutdown()


def _run(ray: Any, build_scorer: Callable[[], Scorer], samples: Iterable[InputItem], out: Path,
         scaling: RayScoring, *, total: int | None, batch_size: int, workers: int | None,
         overwrite: bool, retry_errors: bool, progress: bool, fail_fast: bool,
         input_id: str | None) -> ScoreRunSummary:
    resources = {"num_cpus": scaling.cpus_per_replica, "num_gpus": scaling.gpus_per_replica}
    try:
        state, info = ray.get(ray.remote(_describe).options(**resources).remote(build_scorer))
    except Exception as exc:  # noqa: BLE001 - Ray wraps the builder's error
        cause = _unwrap(exc)
        if isinstance(cause, (ScorerError, IeqaError)):
            raise cause from None
        raise ScorerError(f"the scorer could not be built on the Ray cluster: {cause}") from None
    run = ScoreRun(out, state, info, overwrite=overwrite, retry_errors=retry_errors,
                   input_id=input_id)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # ieqa draws its own
    context.print_on_execution_start = False
    with progress_bar(f"Scoring with {state['scorer']} on Ray", total,
                      enabled=progress) as advance:
        blocks = _rebalance(_plan_blocks(run.todo(samples, advance), run.keys, MAX_BLOCK_ROWS),
                            batch_size, scaling.replicas)
        if blocks:
            dataset = ray.data.from_arrow(blocks).map_batches(
                _ScorerActor, batch_size=batch_size, batch_format="pyarrow",
                compute=ray.data.ActorPoolStrategy(size=min(scaling.replicas, len(blocks))),
                fn_constructor_kwargs={"build_scorer": build_scorer, "workers": workers},
                **resources)
            del blocks
            try:
                for table in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                    if not table.num_rows:
                        continue
                    run.parts.write(table.select([*run.schema.names, _INDEX]))
                    advance(table.num_rows)
                    if fail_fast:
                        _raise_first_error(table)
            except (KeyboardInterrupt, SystemExit, ScorerError):
                raise
            except Exception as exc:  # noqa: BLE001 - Ray wraps the actors' errors
                cause = _unwrap(exc)
                if isinstance(cause, (ScorerError, IeqaError)):
                    raise cause from None
                raise ScorerError(
                    f"the Ray run stopped ({type(cause).__name__}: {cause}); the finished parts "
                    f"are kept in {run.parts.dir}: run the same command again to score the rest"
                ) from exc
    return run.finish()
