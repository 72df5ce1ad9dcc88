"""Dynamic batching across requests: :class:`Batcher`.

Requests put their items in one queue; a single worker task forms model batches of up to
``max_batch`` items, waiting at most ``max_wait_ms`` after the oldest queued item for
more to arrive, and runs the scoring function on one worker thread (a model is not
thread-safe, so there is one model call at a time). Items that share a key (source image
and instruction: a GRPO group) are taken together, so the transformers backend encodes
their shared prompt prefix once; a group larger than ``max_batch`` is split.

Scores do not depend on the batch a item lands in: each item is scored as
``score_fn([... item ...])`` would score it alone (the scorers' batched and unbatched
results agree to 1e-5; tested in ``tests/serve``).

Backpressure and time:

* the queue holds at most ``max_queue`` items; :meth:`Batcher.submit` raises
  :class:`QueueFull` (the server answers 429 with ``Retry-After``) rather than queueing
  more, and :class:`TooManyItems` for a request that could never fit (413);
* a request waits at most ``timeout_s`` (:class:`Timeout`, 504); its items still queued
  are dropped, a batch already running finishes and its results are discarded;
* :meth:`Batcher.stop` refuses new requests (:class:`ShuttingDown`, 503), lets the
  queued and running items finish, then stops the worker.

The class knows nothing about HTTP: a Ray Serve deployment can hold one per replica.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Batcher", "BatcherError", "QueueFull", "ShuttingDown", "Timeout", "TooManyItems"]


class BatcherError(Exception):
    """Base of the batcher's refusals (each maps to one HTTP status)."""


class QueueFull(BatcherError):
    """The queue has no room for the request's items; retry after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooManyItems(BatcherError):
    """The request has more items than the whole queue holds."""


class Timeout(BatcherError):
    """The request was not scored within its timeout."""


class ShuttingDown(BatcherError):
    """The batcher is stopping and takes no new requests."""


@dataclass
class _Job:
    item: Any
    key: Hashable
    future: asyncio.Future = field(repr=False)
    queued_at: float = field(default_factory=time.monotonic)  # monotonic seconds


class Batcher:
    """Dynamic batching (see the module docstring).

    Args:
        score_fn: scores a list of items, one result per item in order; called on one
            worker thread, one call at a time. An exception fails the batch's items with
            ``on_error(item, exc)``.
        max_batch: most items per ``score_fn`` call (>= 1).
        max_wait_ms: longest wait, in milliseconds, after the oldest queued item before a
            batch that is not full is run (>= 0).
        max_queue: most items waiting in the queue (>= 1).
        timeout_s: longest time, in seconds, a request waits for its results (> 0).
        on_error: the result of an item whose batch raised (default: re-raise).
        on_batch: called after each batch with ``(n_items, seconds)``.

    Use it from one event loop: ``await start()``, then ``await submit(items, keys)``
    from request handlers, and ``await stop()``.
    """

    def __init__(self, score_fn: Callable[[list[Any]], Sequence[Any]], *, max_batch: int = 8,
                 max_wait_ms: float = 5.0, max_queue: int = 256, timeout_s: float = 60.0,
                 on_error: Callable[[Any, BaseException], Any] | None = None,
                 on_batch: Callable[[int, float], None] | None = None) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if not math.isfinite(max_wait_ms) or max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be a finite number >= 0, got {max_wait_ms}")
        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, got {max_queue}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.score_fn = score_fn
        self.max_batch = int(max_batch)
        self.max_wait_s = float(max_wait_ms) / 1000.0
        self.max_queue = int(max_queue)
        self.timeout_s = float(timeout_s)
        self.on_error = on_error
        self.on_batch = on_batch
        self._queue: list[_Job] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._running = 0  # items in the batch being scored
        self._closing = False
        self._seconds_per_item = 0.0  # running average, for Retry-After

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the worker (on the running event loop)."""
        if self._worker is not None:
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ieqa-score")
        self._wakeup = asyncio.Event()
        self._closing = False
        self._worker = asyncio.get_running_loop().create_task(self._run(), name="ieqa-batcher")

    async def run_exclusive(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` on the scoring thread (e.g. a warm-up call), between batches."""
        if self._executor is None:
            raise RuntimeError("start() the batcher first")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def stop(self, drain_timeout_s: float = 30.0) -> None:
        """Refuse new requests, finish the queued and running items (at most
        ``drain_timeout_s`` seconds), then stop the worker and its thread."""
        self._closing = True
        deadline = time.monotonic() + drain_timeout_s
        while (self._queue or self._running) and time.monotonic() < deadline:
            self._notify()
            await asyncio.sleep(0.01)
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None
        for job in self._queue:
            if not job.future.done():
                job.future.set_exception(ShuttingDown("the server stopped before this item was "
                                                      "scored; send it again"))
        self._queue.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    # ------------------------------------------------------------------ state
    @property
    def queued_items(self) -> int:
        """Items waiting for a batch."""
        return len(self._queue)

    @property
    def running_items(self) -> int:
        """Items in the batch being scored."""
        return self._running

    @property
    def closing(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._closing

    def retry_after_s(self) -> int:
        """Seconds (>= 1) a refused client should wait: the queue's estimated drain time."""
        backlog = len(self._queue) + self._running
        return max(1, math.ceil(backlog * self._seconds_per_item))

    # ------------------------------------------------------------------ submitting
    def check_size(self, n_items: int) -> None:
        """Raise :class:`TooManyItems` when a request of ``n_items`` could never be queued."""
        if n_items > self.max_queue:
            raise TooManyItems(f"the request has {n_items} items, more than the server's "
                               f"queue holds ({self.max_queue}, --max-queue); split it into "
                               f"requests of at most {self.max_queue} items")

    async def submit(self, items: Sequence[Any], keys: Sequence[Hashable] | None = None,
                     timeout_s: float | None = None) -> list[Any]:
        """Queue ``items`` and wait for their results (in order).

        Args:
            items: the items for ``score_fn``.
            keys: one grouping key per item (items with equal keys are batched together);
                default: each item its own key.
            timeout_s: this request's timeout (default: the batcher's).

        Raises:
            QueueFull: no room in the queue now (retry later).
            TooManyItems: more items than ``max_queue``.
            Timeout: not done within the timeout.
            ShuttingDown: :meth:`stop` was called.
        """
        if self._worker is None or self._closing:
            raise ShuttingDown("the server is shutting down and takes no new requests; send "
                               "the request to another replica or retry once it is back")
        if not items:
            return []
        self.check_size(len(items))
        if len(self._queue) + len(items) > self.max_queue:
            retry = self.retry_after_s()
            raise QueueFull(f"the server's queue is full ({len(self._queue)} of {self.max_queue} "
                            f"items waiting); retry after {retry} s, or send fewer items at "
                            "once", retry)
        loop = asyncio.get_running_loop()
        keys = list(keys) if keys is not None else [object() for _ in items]
        if len(keys) != len(items):
            raise ValueError(f"{len(keys)} keys for {len(items)} items")
        jobs = [_Job(item, key, loop.create_future()) for item, key in zip(items, keys, strict=True)]
        self._queue.extend(jobs)
        self._notify()
        futures = [j.future for j in jobs]
        try:
            return await asyncio.wait_for(asyncio.gather(*futures),
                                          self.timeout_s if timeout_s is None else timeout_s)
        except asyncio.TimeoutError:
            raise Timeout(f"the request was not scored within {timeout_s or self.timeout_s:g} s "
                          "(--timeout-s); send fewer items per request, or retry when the "
                          "server is less busy") from None
        finally:
            for f in futures:
                f.cancel()  # no-op when done; queued jobs of a failed request are dropped

    def _notify(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    # ------------------------------------------------------------------ worker
    def _drop_cancelled(self) -> None:
        if any(j.future.done() for j in self._queue):
            self._queue = [j for j in self._queue if not j.future.done()]

    def _take_batch(self) -> list[_Job]:
        """Whole key groups in order of their first queued item, up to max_batch items;
        a group larger than max_batch is split."""
        order: dict[Hashable, list[_Job]] = {}
        for job in self._queue:
            order.setdefault(job.key, []).append(job)
        batch: list[_Job] = []
        for group in order.values():
            room = self.max_batch - len(batch)
            if len(group) <= room:
                batch.extend(group)
            elif not batch:
                batch.extend(group[:room])
            if len(batch) >= self.max_batch or len(group) > room:
                break
        taken = {id(j) for j in batch}
        self._queue = [j for j in self._queue if id(j) not in taken]
        return batch

    async def _run(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            self._drop_cancelled()
            if not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            # wait for a full batch or for max_wait after the oldest item
            remaining = self._queue[0].queued_at + self.max_wait_s - time.monotonic()
            if len(self._queue) < self.max_batch and remaining > 0 and not self._closing:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except asyncio.TimeoutError:
                    pass
                continue
            batch = self._take_batch()
            self._running = len(batch)
            t0 = time.perf_counter()
            try:
                results = await loop.run_in_executor(self._executor, self.score_fn,
                                                      [j.item for j in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"the scoring function returned {len(results)} results "
                                       f"for {len(batch)} items")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - recorded on every item of the batch
                if self.on_error is None:
                    for job in batch:
                        if not job.future.done():
                            job.future.set_exception(exc)
                    results = None
                else:
                    results = [self.on_error(j.item, exc) for j in batch]
            finally:
                self._running = 0
            seconds = time.perf_counter() - t0
            self._seconds_per_item = 0.8 * self._seconds_per_item + 0.2 * seconds / len(batch) \
                if self._seconds_per_item else seconds / len(batch)
            if results is not None:
                for job, result in zip(batch, results, strict=True):
                    if not job.future.done():
                        job.future.set_result(result)
            if self.on_batch is not None:
                self.on_batch(len(batch), seconds)
