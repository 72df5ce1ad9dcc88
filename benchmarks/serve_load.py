"""Load test of the reward service (``ieqa serve``) on loopback: dynamic batching against
``--max-batch 1``, latency at fractions of capacity, exact answers, and 429s past capacity.

Everything runs in one process: the server (uvicorn on 127.0.0.1, a free port, in a thread,
via ``ieqa.testing.serve_in_thread``) and the clients (asyncio + httpx on the main thread);
the request bodies are encoded once up front, so a client costs little CPU. Or point it at a
running server with ``--url`` (then the scorer options here must match the server's, for the
offline reference). Phases, each bounded by ``--duration-s`` and ``--max-requests``:

1. **capacity, batched** — closed loop: ``--clients`` clients (default 16), each sending its
   next request as soon as the last one is answered, against the server with
   ``--max-batch B --max-wait-ms W``. Items/s answered = the capacity.
2. **latency at 25 %, 50 %, 100 % of that capacity** — OPEN loop on the batched server:
   requests start at a fixed rate (the fraction of the measured capacity in requests/s),
   whatever the answers, with at most ``--max-in-flight`` outstanding (requests over that
   are counted as ``client_dropped``, not sent). Latency counts from the scheduled start,
   so a late client does not hide queueing (no coordinated omission). p50/p95/p99 in ms.
3. **capacity, unbatched** — the same closed loop against the same scorer served with
   ``--max-batch 1``; the ratio batched / unbatched is printed.
4. **overload** — the batched server with a small ``--overload-queue``, driven by
   ``2 x --clients`` clients that retry a refused request after 10 ms: it must answer only
   200 or 429, and every 429 must carry a ``Retry-After`` of whole seconds >= 1.

Every 200 answer is checked item by item against ``scorer.score([item])`` computed offline
before the load (scores and sigma within ``--tol``: 1e-5, or 0.25 for a 16-bit ``--arch`` model, whose scores
change by rounding with the batch a row shares): ``mismatched`` counts the items that
differ, errored or came back under another id; ``lost`` counts the requests that got no
answer (connection error or ``--timeout-s``). The run exits with status 1 when any is > 0.

Models:

* ``--scorer classic`` (default);
* ``--tiny qwen2-vl`` — a tiny random VLM from ``ieqa.testing.build_tiny_vlm`` (CPU runs;
  scorer ``vlm-levels`` unless ``--scorer`` names another VLM readout);
* ``--arch qwen2.5-vl-7b`` (or another of ``vlm_throughput.py``'s) — the published
  architecture with RANDOM weights built on ``--device`` (GPU runs; nothing downloaded);
* ``--model PATH_OR_ID`` — a real checkpoint, with ``--scorer`` and ``-O key=value``.

Run::

    .venv/bin/python benchmarks/serve_load.py                           # classic, ~1 min
    .venv/bin/python benchmarks/serve_load.py --tiny qwen2-vl           # tiny VLM on CPU
    .venv/bin/python benchmarks/serve_load.py --arch qwen2.5-vl-7b --device cuda --image-size 448
    .venv/bin/python benchmarks/serve_load.py --url http://127.0.0.1:8000 --scorer classic
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml
from PIL import Image

import ieqa
from ieqa.scorers.base import Scorer
from ieqa.serve.app import ServeConfig, create_app
from ieqa.testing import build_tiny_vlm, serve_in_thread

INSTRUCTIONS = ("make the sky orange", "add a red umbrella", "turn it into a watercolor",
                "remove the person on the left", "make it winter", "turn the car blue")


# ----------------------------------------------------------------------------- workload
@dataclass
class Workload:
    """The requests the clients send (bodies encoded once) and the offline answers.

    Attributes:
        bodies: JSON request bodies of ``POST /v1/score`` (bytes), sent round-robin.
        ids: the item ids of each body, in order.
        expected: item id -> (scores, sigma) of ``scorer.score([item])`` offline.
        items: the items themselves (image bytes), for offline timing.
    """

    bodies: list[bytes]
    ids: list[list[str]]
    expected: dict[str, tuple[dict[str, float], dict[str, float]]]
    items: list[dict[str, Any]]

    @property
    def items_per_request(self) -> float:
        return statistics.fmean(len(i) for i in self.ids)


def offline_ceiling(scorer: Scorer, items: list[dict[str, Any]], max_batch: int
                    ) -> tuple[float, float, float | None]:
    """(items/s scoring ``items`` one at a time, items/s in batches of ``max_batch``, the
    FLOPs per item of the batched run: the transformers backend's count, None for other
    scorers) with
    ``scorer.score`` in this process, no server: the most that batching can give the
    server on this machine (one pass each, after one untimed batch)."""
    if hasattr(scorer, "batch_size"):
        scorer.batch_size = max_batch
    scorer.score(items[:max_batch])
    t0 = time.perf_counter()
    for item in items:
        scorer.score([item])
    alone = len(items) / (time.perf_counter() - t0)
    backend = getattr(scorer, "backend", None)
    before = getattr(backend, "flops_done", None)
    t0 = time.perf_counter()
    for start in range(0, len(items), max_batch):
        scorer.score(items[start:start + max_batch])
    batched = len(items) / (time.perf_counter() - t0)
    after = getattr(backend, "flops_done", None)
    per_item = (after.total - before.total) / len(items) if before and after else None
    return alone, batched, per_item


def _png(rng: np.random.Generator, size: int) -> bytes:
    base = np.tile(np.linspace(0, 255, size, dtype=np.uint8), (size, 1))
    arr = np.stack([base, base.T, np.full_like(base, 90)], -1).astype(np.int16)
    arr += rng.integers(-60, 60, arr.shape, dtype=np.int16)
    buf = io.BytesIO()
    Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def make_workload(scorer: Scorer, *, n_items: int = 64, items_per_request: int = 1,
                  group_size: int = 4, image_size: int = 96, seed: int = 0,
                  mixed_sizes: bool = False) -> Workload:
    """``n_items`` synthetic edits in groups of ``group_size`` sharing a source image and an
    instruction (GRPO groups), packed ``items_per_request`` to a request, each scored
    offline alone by ``scorer`` (the reference every answer is checked against).

    Args:
        scorer: the scorer the server serves (the same object, or one built the same way).
        n_items: distinct items (the clients cycle through them).
        items_per_request: items per ``POST /v1/score``.
        group_size: items per source image + instruction.
        image_size: width and height of every image (pixels).
        seed: the images' random seed.
        mixed_sizes: each group's images ``image_size``, 3/4 or 1/2 of it (cycled), so
            requests of different lengths meet in a batch (length bucketing).
    """
    import base64

    rng = np.random.default_rng(seed)
    items = []
    for i in range(n_items):
        if i % group_size == 0:
            g = i // group_size
            size = image_size * (4, 3, 2)[g % 3] // 4 if mixed_sizes else image_size
            source, instruction = _png(rng, size), INSTRUCTIONS[g % len(INSTRUCTIONS)]
        items.append({"id": f"item-{i}", "source": source, "edited": _png(rng, size),
                      "instruction": instruction})
    expected = {}
    for item in items:
        result = scorer.score([item])[0]
        if result.error is not None:
            raise SystemExit(f"the scorer failed offline on {item['id']}: {result.error}")
        expected[item["id"]] = (dict(result.scores), dict(result.sigma or {}))
    bodies, ids = [], []
    for start in range(0, n_items, items_per_request):
        chunk = items[start:start + items_per_request]
        bodies.append(json.dumps({"items": [
            {"id": it["id"], "instruction": it["instruction"],
             "source": base64.b64encode(it["source"]).decode(),
             "edited": base64.b64encode(it["edited"]).decode()} for it in chunk]}).encode())
        ids.append([it["id"] for it in chunk])
    return Workload(bodies, ids, expected, items)


# ------------------------------------------------------------------------------- phases
@dataclass
class Phase:
    """What one phase saw. Times in seconds, latencies in seconds."""

    name: str
    sent: int = 0
    answered: int = 0
    lost: int = 0
    items_ok: int = 0
    mismatched: int = 0
    client_dropped: int = 0
    statuses: Counter = field(default_factory=Counter)
    retry_after_ok: int = 0  # 429s with a valid Retry-After
    latencies: list[float] = field(default_factory=list)  # of 200 answers
    elapsed_s: float = 0.0
    target_rps: float | None = None
    problems: list[str] = field(default_factory=list)  # the first few, for the report
    max_diff: float = 0.0  # the largest |score - reference| of the answers compared

    @property
    def items_per_s(self) -> float:
        return self.items_ok / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.statuses[200] / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def other_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status not in (200, 429))

    def percentile_ms(self, q: float) -> float:
        if not self.latencies:
            return math.nan
        return 1000.0 * float(np.percentile(self.latencies, q))

    def note(self, text: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(text)


def check_answer(payload: dict[str, Any], ids: list[str], workload: Workload, tol: float,
                 phase: Phase) -> None:
    """Count the items of one 200 answer that differ from the offline reference."""
    results = payload.get("results", [])
    if len(results) != len(ids):
        phase.mismatched += len(ids)
        phase.note(f"{len(results)} results for {len(ids)} items")
        return
    for want_id, got in zip(ids, results, strict=True):
        scores, sigma = workload.expected[want_id]
        got_scores = got.get("scores") or {}
        for k, want in scores.items():
            if isinstance(got_scores.get(k), (int, float)) and want is not None:
                phase.max_diff = max(phase.max_diff, abs(got_scores[k] - want))
        ok = (got.get("id") == want_id and got.get("error") is None
              and _close(got.get("scores") or {}, scores, tol)
              and (not sigma or _close(got.get("sigma") or {}, sigma, tol)))
        if ok:
            phase.items_ok += 1
        else:
            phase.mismatched += 1
            phase.note(f"{want_id}: got {got}")


def _close(got: dict[str, float], want: dict[str, float], tol: float) -> bool:
    return got.keys() == want.keys() and all(
        got[k] is not None and math.isclose(got[k], want[k], abs_tol=tol) for k in want)


async def _send(client: httpx.AsyncClient, url: str, k: int, workload: Workload, tol: float,
                phase: Phase, started: float) -> int | None:
    """One request (body ``k`` mod the workload); records the outcome; returns the status
    (None: lost)."""
    j = k % len(workload.bodies)
    phase.sent += 1
    try:
        response = await client.post(f"{url}/v1/score", content=workload.bodies[j],
                                     headers={"Content-Type": "application/json"})
    except httpx.HTTPError as exc:
        phase.lost += 1
        phase.note(f"lost: {type(exc).__name__}: {exc}")
        return None
    phase.answered += 1
    phase.statuses[response.status_code] += 1
    if response.status_code == 200:
        phase.latencies.append(time.perf_counter() - started)
        check_answer(response.json(), workload.ids[j], workload, tol, phase)
    elif response.status_code == 429:
        retry = response.headers.get("Retry-After", "")
        if retry.isdigit() and int(retry) >= 1:
            phase.retry_after_ok += 1
        else:
            phase.note(f"429 without a valid Retry-After ({retry!r})")
    else:
        phase.note(f"status {response.status_code}: {response.text[:200]}")
    return response.status_code


def _client(clients: int, timeout_s: float, headers: dict[str, str]) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    return httpx.AsyncClient(timeout=timeout_s, limits=limits, headers=headers)


async def closed_loop(url: str, workload: Workload, *, name: str = "closed", clients: int = 16,
                      duration_s: float = 5.0, max_requests: int = 20_000,
                      timeout_s: float = 60.0, retry_429_s: float | None = None,
                      tol: float = 1e-5, headers: dict[str, str] | None = None) -> Phase:
    """``clients`` clients, each sending its next request when its last one is answered,
    until ``duration_s`` (seconds) have passed or ``max_requests`` were sent; requests in
    flight at the end are awaited (each at most ``timeout_s``). A 429 is retried after
    ``retry_429_s`` seconds (``None``: after the answer, like any other)."""
    phase = Phase(name)
    counter = iter(range(max_requests))
    t0 = time.perf_counter()
    deadline = t0 + duration_s

    async def one_client(client: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            k = next(counter, None)
            if k is None:
                return
            status = await _send(client, url, k, workload, tol, phase, time.perf_counter())
            if status == 429 and retry_429_s:
                await asyncio.sleep(retry_429_s)

    async with _client(clients, timeout_s, headers or {}) as client:
        await asyncio.gather(*(one_client(client) for _ in range(clients)))
    phase.elapsed_s = time.perf_counter() - t0
    return phase


async def open_loop(url: str, workload: Workload, *, rate_rps: float, name: str = "open",
                    duration_s: float = 5.0, max_requests: int = 20_000, max_in_flight: int = 256,
                    timeout_s: float = 60.0, tol: float = 1e-5,
                    headers: dict[str, str] | None = None) -> Phase:
    """Requests started at ``rate_rps`` per second (fixed interval) for ``duration_s``
    seconds or ``max_requests`` requests, whatever the answers; at most ``max_in_flight``
    outstanding (beyond: ``client_dropped``). Latency counts from the scheduled start."""
    if not rate_rps > 0:
        raise ValueError(f"rate_rps must be > 0, got {rate_rps}")
    phase = Phase(name, target_rps=rate_rps)
    n = min(max_requests, max(1, int(rate_rps * duration_s)))
    in_flight: set[asyncio.Task] = set()
    t0 = time.perf_counter()
    async with _client(max_in_flight, timeout_s, headers or {}) as client:
        for k in range(n):
            start = t0 + k / rate_rps
            delay = start - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if len(in_flight) >= max_in_flight:
                phase.client_dropped += 1
                continue
            task = asyncio.create_task(_send(client, url, k, workload, tol, phase, start))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        if in_flight:
            await asyncio.gather(*in_flight)
    phase.elapsed_s = time.perf_counter() - t0
    return phase


# ------------------------------------------------------------------------------- scorer
def build_scorer(args: argparse.Namespace, workdir: Path) -> tuple[Scorer, str]:
    """(scorer, description) from the command line."""
    options: dict[str, Any] = {}
    for item in args.option or []:  # values read as YAML scalars, as ieqa's -O does
        key, _, value = item.partition("=")
        options[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    if args.arch:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from vlm_throughput import ARCHS, arch_config, build_arch_model, torch_dtype_name

        from ieqa.backends.attention import use_fast_attention
        from ieqa.backends.processor import load_processor
        from ieqa.backends.transformers_vlm import TransformersVLM, resolve_device

        device = resolve_device(args.device)
        dtype = torch_dtype_name(args.dtype, device)
        family = ARCHS[args.arch]["family"]
        processor = load_processor(build_tiny_vlm(workdir / "processor", family,
                                                  max_pixels=args.image_size ** 2))
        model = build_arch_model(arch_config(args.arch, processor.tokenizer, args.layers, None),
                                 device, dtype, None, args.seed)
        use_fast_attention(model)  # as TransformersVLM does for a loaded checkpoint
        backend = TransformersVLM.from_model(model, processor, name=f"random-{args.arch}")
        name = args.scorer if args.scorer != "classic" else "vlm-levels"
        return (ieqa.create_scorer(name, backend=backend, **options),
                f"{name} on the {args.arch} architecture, RANDOM weights, {device} {dtype}"
                + (f", {args.layers} text layers (REDUCED)" if args.layers else ""))
    if args.tiny:
        path = build_tiny_vlm(workdir / "tiny", args.tiny, max_pixels=args.image_size ** 2)
        name = args.scorer if args.scorer != "classic" else "vlm-levels"
        options.setdefault("device", args.device)
        return (ieqa.create_scorer(name, model=str(path), **options),
                f"{name} on a tiny random {args.tiny} (ieqa.testing.build_tiny_vlm), {args.device}")
    if args.model:
        options.setdefault("device", args.device)
        return ieqa.create_scorer(args.scorer, model=args.model, **options), f"{args.scorer} on {args.model}"
    return ieqa.create_scorer(args.scorer, **options), args.scorer


def served(scorer: Scorer, config: ServeConfig, rule: str = "mean") -> Any:
    """A context manager serving ``scorer`` with ``config`` on 127.0.0.1 (yields the URL);
    the scorer's ``batch_size`` follows ``max_batch`` as under ``ieqa serve``."""
    if hasattr(scorer, "batch_size"):
        scorer.batch_size = config.max_batch
    return serve_in_thread(create_app(scorer, rule=rule, config=config), timeout_s=600)


def mean_batch(url: str, headers: dict[str, str]) -> tuple[float, float] | None:
    """(sum, count) of the server's batch-size histogram (``/metrics``), or None."""
    try:
        text = httpx.get(f"{url}/metrics", headers=headers, timeout=10).text
    except httpx.HTTPError:
        return None
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("ieqa_batch_size_sum", "ieqa_batch_size_count"):
            values[name] = float(value)
    if len(values) < 2:
        return None
    return values["ieqa_batch_size_sum"], values["ieqa_batch_size_count"]


# ------------------------------------------------------------------------------ reports
def row(phase: Phase) -> str:
    target = f"{phase.target_rps:7.1f}" if phase.target_rps else "      -"
    return (f"{phase.name:<22} {target} {phase.requests_per_s:8.1f} {phase.items_per_s:8.1f} "
            f"{phase.percentile_ms(50):8.1f} {phase.percentile_ms(95):8.1f} "
            f"{phase.percentile_ms(99):8.1f} {phase.sent:6d} {phase.statuses[200]:6d} "
            f"{phase.statuses[429]:5d} {phase.other_errors:5d} {phase.lost:5d} "
            f"{phase.mismatched:5d} {phase.client_dropped:5d}")


HEADER = (f"{'phase':<22} {'target':>7} {'req/s':>8} {'items/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'p99 ms':>8} {'sent':>6} {'200':>6} {'429':>5} {'other':>5} {'lost':>5} "
          f"{'mism':>5} {'drop':>5}")


async def run(args: argparse.Namespace, scorer: Scorer, workload: Workload) -> list[Phase]:
    """All phases (see the module docstring); prints each row as it finishes."""
    common = dict(duration_s=args.duration_s, max_requests=args.max_requests,
                  timeout_s=args.timeout_s, tol=args.tol, headers=args.headers)
    phases: list[Phase] = []

    def report(phase: Phase) -> Phase:
        phases.append(phase)
        print(row(phase), flush=True)
        for problem in phase.problems:
            print(f"    ! {problem}", flush=True)
        return phase

    async def warm(url: str) -> None:  # first calls (allocations, caches) are not timed
        await closed_loop(url, workload, clients=args.clients, duration_s=min(2.0, args.duration_s),
                          max_requests=4 * args.clients, timeout_s=args.timeout_s, tol=args.tol,
                          headers=args.headers)

    async def batched_phases(url: str) -> Phase:
        await warm(url)
        before = mean_batch(url, args.headers)
        capacity = report(await closed_loop(url, workload, name=f"capacity max_batch={args.max_batch}",
                                            clients=args.clients, **common))
        after = mean_batch(url, args.headers)
        if before and after and after[1] > before[1]:
            print(f"    mean batch size {(after[0] - before[0]) / (after[1] - before[1]):.1f} items "
                  "(server's ieqa_batch_size histogram)", flush=True)
        for fraction in (0.25, 0.5, 1.0):
            rate = fraction * capacity.requests_per_s
            if rate > 0:
                report(await open_loop(url, workload, rate_rps=rate, name=f"open {fraction:.0%} capacity",
                                       max_in_flight=args.max_in_flight, **common))
        return capacity

    print(HEADER, flush=True)
    config = ServeConfig(max_batch=args.max_batch, max_wait_ms=args.max_wait_ms, max_queue=args.max_queue,
                         timeout_s=args.timeout_s, max_pixels=None)
    if args.url:
        capacity = await batched_phases(args.url)
    else:
        with served(scorer, config) as url:
            capacity = await batched_phases(url)
    unbatched = None
    if args.url_unbatched or not args.url:
        async def unbatched_phase(url: str) -> Phase:
            await warm(url)
            return report(await closed_loop(url, workload, name="capacity max_batch=1",
                                            clients=args.clients, **common))
        if args.url_unbatched:
            unbatched = await unbatched_phase(args.url_unbatched)
        else:
            one = ServeConfig(max_batch=1, max_wait_ms=0, max_queue=args.max_queue,
                              timeout_s=args.timeout_s, max_pixels=None)
            with served(scorer, one) as url:
                unbatched = await unbatched_phase(url)
    if not args.url:
        small = ServeConfig(max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                            max_queue=args.overload_queue, timeout_s=args.timeout_s, max_pixels=None)
        with served(scorer, small) as url:
            report(await closed_loop(url, workload, name=f"overload max_queue={args.overload_queue}",
                                     clients=2 * args.clients, retry_429_s=0.01, **common))
    else:
        print("(overload phase skipped: it needs a server this script starts, with a small "
              "--max-queue; run without --url)")
    if unbatched is not None and unbatched.items_per_s > 0:
        print(f"\ndynamic batching: {capacity.items_per_s:.1f} items/s with --max-batch "
              f"{args.max_batch} vs {unbatched.items_per_s:.1f} items/s with --max-batch 1: "
              f"ratio {capacity.items_per_s / unbatched.items_per_s:.2f}x")
    return phases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    model = parser.add_argument_group("model (default: --scorer classic)")
    model.add_argument("--scorer", default="classic", help="scorer name (default classic; "
                       "vlm-levels with --tiny/--arch)")
    model.add_argument("-O", "--option", action="append", help="scorer argument key=value")
    model.add_argument("--tiny", metavar="FAMILY", help="a tiny random VLM: qwen2-vl, qwen2.5-vl, qwen3-vl")
    model.add_argument("--arch", help="a published architecture with random weights "
                       "(qwen2-vl-7b, qwen2.5-vl-7b, qwen3-vl-8b; see vlm_throughput.py)")
    model.add_argument("--layers", type=int, help="--arch: fewer text layers (smoke runs)")
    model.add_argument("--model", help="a real checkpoint (folder or hub id) for --scorer")
    model.add_argument("--device", default="cpu", help="VLM device (cpu, cuda, auto)")
    model.add_argument("--dtype", default="auto", help="--arch dtype (auto: bf16 on cuda)")
    load = parser.add_argument_group("load")
    load.add_argument("--url", help="load a running server instead of starting one")
    load.add_argument("--url-unbatched", help="with --url: the same scorer served with --max-batch 1")
    load.add_argument("--token", help="bearer token for --url")
    load.add_argument("--clients", type=int, default=16, help="closed-loop clients (default 16)")
    load.add_argument("--duration-s", type=float, default=5.0, help="seconds per phase (default 5)")
    load.add_argument("--max-requests", type=int, default=5000, help="most requests per phase")
    load.add_argument("--max-in-flight", type=int, default=256, help="open loop: most outstanding")
    load.add_argument("--items", type=int, default=64, help="distinct items (default 64)")
    load.add_argument("--items-per-request", type=int, default=1)
    load.add_argument("--group-size", type=int, default=4, help="items per source+instruction")
    load.add_argument("--image-size", type=int, default=96, help="image width = height (pixels)")
    load.add_argument("--mixed-sizes", action="store_true",
                      help="groups of images at --image-size, 3/4 and 1/2 of it (cycled)")
    load.add_argument("--seed", type=int, default=0)
    load.add_argument("--tol", type=float, default=None,
                      help="largest |score difference| allowed (default 1e-5; 0.25 for an --arch "
                           "model in 16 bit, where the batch a row shares changes its scores by "
                           "rounding)")
    server = parser.add_argument_group("server")
    server.add_argument("--max-batch", type=int, default=16)
    server.add_argument("--max-wait-ms", type=float, default=10.0)
    server.add_argument("--max-queue", type=int, default=1024)
    server.add_argument("--overload-queue", type=int, default=4, help="--max-queue of the overload phase")
    server.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    if min(args.clients, args.items, args.items_per_request, args.max_requests, args.max_batch) < 1:
        parser.error("--clients, --items, --items-per-request, --max-requests and --max-batch must be >= 1")
    if not 0 < args.duration_s <= 600:
        parser.error("--duration-s must be in (0, 600]")
    args.headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}

    import torch

    print(f"ieqa {ieqa.__version__}, python {platform.python_version()}, torch {torch.__version__}, "
          f"{platform.machine()}, {torch.get_num_threads()} torch threads")
    with tempfile.TemporaryDirectory(prefix="ieqa-serve-load-") as tmp:
        scorer, description = build_scorer(args, Path(tmp))
        if args.tol is None:
            sixteen_bit = "bfloat16" in description or "float16" in description
            args.tol = 0.25 if sixteen_bit else 1e-5
        t0 = time.perf_counter()
        workload = make_workload(scorer, n_items=args.items, items_per_request=args.items_per_request,
                                 group_size=args.group_size, image_size=args.image_size, seed=args.seed,
                                 mixed_sizes=args.mixed_sizes)
        print(f"model: {description}\nworkload: {args.items} items, {args.items_per_request} per "
              f"request, groups of {args.group_size}, {args.image_size}x{args.image_size} images; "
              f"offline reference in {time.perf_counter() - t0:.1f} s\n"
              f"server: --max-batch {args.max_batch} --max-wait-ms {args.max_wait_ms}; "
              f"{args.clients} clients, {args.duration_s} s per phase\n")
        alone, batched, flops_per_item = offline_ceiling(scorer, workload.items, args.max_batch)
        padding = getattr(getattr(scorer, "backend", None), "padding_done", None)
        if padding and padding[1]:
            print(f"padding: {100 * padding[0] / padding[1]:.1f} % of the token positions the "
                  "offline runs computed (length bucketing, shared prefixes)")
        print(f"offline scorer.score, no server: {alone:.1f} items/s one at a time, {batched:.1f} "
              f"items/s in batches of {args.max_batch}: ratio {batched / alone:.2f}x (the ceiling "
              "for the server's ratio below)\n")
        if args.url:
            info = httpx.get(f"{args.url}/v1/info", headers=args.headers, timeout=30).json()
            if info.get("scorer") != scorer.name:
                raise SystemExit(f"{args.url} serves {info.get('scorer')!r}, the reference here is "
                                 f"{scorer.name!r}: pass the server's --scorer/--model/-O")
        phases = asyncio.run(run(args, scorer, workload))
    capacity = next((p for p in phases if p.name.startswith("capacity max_batch=")
                     and p.name != "capacity max_batch=1"), None)
    if capacity is not None and batched > 0:
        ratio = capacity.items_per_s / batched
        print(f"\nserve vs offline at batch {args.max_batch}: {capacity.items_per_s:.1f} / "
              f"{batched:.1f} items/s = {ratio:.2f}x ({args.clients} closed-loop clients; "
              f"target >= 0.9x{'' if ratio >= 0.9 else ': BELOW'})")
    if capacity is not None and flops_per_item is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from vlm_throughput import device_peak, peak_note

        from ieqa.backends.flops import describe_rate

        peak = device_peak(args.device)
        for name, rate in (("offline", batched), ("served", capacity.items_per_s)):
            per, achieved, share = describe_rate(flops_per_item, rate, peak)
            print(f"  {name}: {per} TFLOP/item, {achieved} TFLOP/s, {share} % of peak")
        print(f"  {peak_note(peak)}")
    half = next((p for p in phases if p.name.startswith("open 50%")), None)
    if half is not None:
        print(f"latency at half load ({half.target_rps:.1f} req/s, open loop): p50 "
              f"{half.percentile_ms(50):.1f} ms, p99 {half.percentile_ms(99):.1f} ms")
    bad = sum(p.lost + p.mismatched + p.other_errors + (p.statuses[429] - p.retry_after_ok)
              for p in phases)
    print(f"\nlargest |score - offline reference| of the answers: "
          f"{max(p.max_diff for p in phases):.3g} (tolerance --tol {args.tol:g})")
    print(f"lost {sum(p.lost for p in phases)}, mismatched {sum(p.mismatched for p in phases)}, "
          f"other errors {sum(p.other_errors for p in phases)}, 429 without Retry-After "
          f"{sum(p.statuses[429] - p.retry_after_ok for p in phases)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
