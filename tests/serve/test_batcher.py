"""The dynamic batcher alone (no HTTP): batch formation, groups kept together, waiting,
refusals and draining."""

from __future__ import annotations

import asyncio
import time

import pytest

from ieqa.serve.batcher import Batcher, QueueFull, ShuttingDown, Timeout, TooManyItems


class Recorder:
    """A scoring function that records its batches and answers ``item * 10``."""

    def __init__(self, pause_s: float = 0.0) -> None:
        self.batches: list[list] = []
        self.pause_s = pause_s

    def __call__(self, items):
        self.batches.append(list(items))
        time.sleep(self.pause_s)
        return [x * 10 for x in items]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_requests_are_merged_up_to_max_batch_and_answered_in_order():
    rec = Recorder()

    async def main():
        b = Batcher(rec, max_batch=4, max_wait_ms=50)
        await b.start()
        out = await asyncio.gather(b.submit([1, 2]), b.submit([3]), b.submit([4, 5, 6]))
        await b.stop()
        return out

    assert run(main()) == [[10, 20], [30], [40, 50, 60]]
    assert [len(x) for x in rec.batches] == [3, 3] or [len(x) for x in rec.batches] == [4, 2]
    assert sorted(x for batch in rec.batches for x in batch) == [1, 2, 3, 4, 5, 6]


def test_items_sharing_a_key_stay_in_one_batch():
    rec = Recorder()

    async def main():
        b = Batcher(rec, max_batch=4, max_wait_ms=30)
        await b.start()
        await asyncio.gather(b.submit([1, 2], keys=["a", "b"]), b.submit([3, 4], keys=["c", "a"]),
                             b.submit([5, 6], keys=["b", "c"]))
        await b.stop()

    run(main())
    # groups in order of first arrival: a = {1, 4}, b = {2, 5}, c = {3, 6}
    assert rec.batches == [[1, 4, 2, 5], [3, 6]]


def test_a_group_larger_than_max_batch_is_split():
    rec = Recorder()

    async def main():
        b = Batcher(rec, max_batch=2, max_wait_ms=10)
        await b.start()
        out = await b.submit([1, 2, 3], keys=["g", "g", "g"])
        await b.stop()
        return out

    assert run(main()) == [10, 20, 30]
    assert rec.batches == [[1, 2], [3]]


def test_a_lone_item_waits_at_most_max_wait():
    rec = Recorder()

    async def main():
        b = Batcher(rec, max_batch=64, max_wait_ms=40)
        await b.start()
        t0 = time.perf_counter()
        await b.submit([1])
        waited = time.perf_counter() - t0
        await b.stop()
        return waited

    waited = run(main())
    assert 0.03 <= waited < 1.0


def test_queue_full_too_many_items_and_timeout():
    rec = Recorder(pause_s=0.3)

    async def main():
        b = Batcher(rec, max_batch=1, max_wait_ms=0, max_queue=2, timeout_s=5)
        await b.start()
        with pytest.raises(TooManyItems, match="--max-queue"):
            await b.submit([1, 2, 3])
        first = asyncio.ensure_future(b.submit([1]))
        await asyncio.sleep(0.05)  # running now; the queue is empty
        second = asyncio.ensure_future(b.submit([2, 3]))
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull) as refused:
            await b.submit([4])
        assert refused.value.retry_after_s >= 1
        assert await first == [10] and await second == [20, 30]
        slow = asyncio.ensure_future(b.submit([5]))
        await asyncio.sleep(0.05)  # 5 is running for 0.3 s
        with pytest.raises(Timeout, match="--timeout-s"):
            await b.submit([6], timeout_s=0.05)
        assert await slow == [50]
        await b.stop()

    run(main())
    # the timed-out item was dropped from the queue, never scored
    assert [x for batch in rec.batches for x in batch] == [1, 2, 3, 5]


def test_a_raising_batch_fails_its_items_with_on_error():
    def broken(items):
        raise RuntimeError("model crashed")

    async def main():
        b = Batcher(broken, max_batch=4, max_wait_ms=0,
                    on_error=lambda item, exc: f"{item}: {exc}")
        await b.start()
        out = await b.submit(["x", "y"])
        await b.stop()
        return out

    assert run(main()) == ["x: model crashed", "y: model crashed"]


def test_stop_drains_queued_items_and_refuses_new_ones():
    rec = Recorder(pause_s=0.05)

    async def main():
        b = Batcher(rec, max_batch=1, max_wait_ms=0)
        await b.start()
        pending = [asyncio.ensure_future(b.submit([i])) for i in range(4)]
        await asyncio.sleep(0.01)
        await b.stop()
        with pytest.raises(ShuttingDown):
            await b.submit([9])
        return [await p for p in pending]

    assert run(main()) == [[0], [10], [20], [30]]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="max_batch"):
        Batcher(Recorder(), max_batch=0)
    with pytest.raises(ValueError, match="max_wait_ms"):
        Batcher(Recorder(), max_wait_ms=-1)
    with pytest.raises(ValueError, match="timeout_s"):
        Batcher(Recorder(), timeout_s=0)
