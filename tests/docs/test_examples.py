"""Every code block of the getting-started page and the how-tos runs (see ``runner.py``).

One test per block. The blocks of a page share one temporary folder and run in page
order; after a failing block the rest of its page is skipped. Pages are independent, so
they run two at a time (``IEQA_DOCS_WORKERS`` changes that; 1 runs them one by one) when
the first block test starts; each test then reports its own block. Selecting tests with
``-k`` runs only the pages they are on.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from ports import free_port
from ray_lock import ray_lock

from .runner import (
    Block,
    Page,
    executed_pages,
    fork_server,
    fork_server_log,
    link_checkout,
    port_replacements,
    precheck,
    run_block,
    run_env,
    start_background,
)

pytestmark = pytest.mark.slow  # minutes of CPU time in all (see docs/development.md)

PAGES = executed_pages()
#: code that starts a local Ray (or Ray Serve)
_STARTS_RAY = re.compile(r"import ray\b|--engine ray|--replicas|rayserve")
BLOCKS = [(page, block) for page in PAGES for block in page.blocks]
#: how many commands the fork server ran (served) and left to run as they stand (refused)
FORKED: dict[str, int] = {}


@dataclass
class Result:
    status: str  # passed | failed | skipped
    message: str = ""
    seconds: float = 0.0


def _run_page(page: Page, workdir: Path, verdicts: dict[str, tuple[str, str] | None],
              env: dict[str, str] | None = None) -> dict[str, Result]:
    """Run a page's blocks in order; ``verdicts`` holds what :func:`precheck` said of each;
    ``env`` is the blocks' environment (:func:`run_env` of ``workdir`` by default)."""
    results: dict[str, Result] = {}
    env = run_env(workdir) if env is None else env
    failed: str | None = None
    with contextlib.ExitStack() as stack:
        replace: dict[str, str] = {}
        for fixture in page.fixtures:
            if fixture == "checkout":
                link_checkout(workdir)
            elif fixture.startswith("free-port "):
                replace.update(port_replacements(free_port(), int(fixture.split()[1])))
            else:
                raise ValueError(f"{page.name}: unknown fixture {fixture!r}")
        for block in page.blocks:
            verdict = verdicts[block.label]
            if verdict is not None and verdict[0] == "skipped":
                results[block.label] = Result("skipped", verdict[1])
            elif failed is not None:
                results[block.label] = Result("skipped", f"an earlier block failed: {failed}")
            elif verdict is not None:  # a requires that cannot be decided
                failed = block.label
                results[block.label] = Result("failed", verdict[1])
            else:
                t0 = time.perf_counter()
                try:
                    # one Ray at a time (tests/ray_lock.py): for a block that starts Ray, until
                    # it ends, or for a background one until the page ends
                    starts_ray = _STARTS_RAY.search(block.code) is not None
                    # a server, or a local Ray, runs as it stands: not forked from the
                    # fork server (see forkserver.py), which holds torch's and numpy's state
                    own = env if block.background is None and not starts_ray else {
                        k: v for k, v in env.items() if k != "IEQA_DOCS_FORKSERVER"}
                    if block.background is not None:
                        if starts_ray:
                            stack.enter_context(ray_lock())
                        stack.callback(start_background(block, workdir, own, replace))
                    else:
                        with ray_lock() if starts_ray else contextlib.nullcontext():
                            run_block(block, workdir, own, replace)
                except AssertionError as exc:
                    failed = block.label
                    results[block.label] = Result("failed", str(exc), time.perf_counter() - t0)
                except Exception:  # noqa: BLE001 - the block's failure, not the whole session's
                    failed = block.label
                    results[block.label] = Result("failed", traceback.format_exc(),
                                                  time.perf_counter() - t0)
                else:
                    results[block.label] = Result("passed", "", time.perf_counter() - t0)
    return results


@pytest.fixture(scope="session")
def block_results(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    """Run the pages of the selected block tests, in parallel; results by block label."""
    selected = {item.callspec.params["page"].name for item in request.session.items
                if item.originalname == "test_doc_block"}
    pages = [p for p in PAGES if p.name in selected]
    # probes run here, once, before any thread starts
    verdicts = {b.label: precheck(b) for p in pages for b in p.blocks}
    workers = int(os.environ.get("IEQA_DOCS_WORKERS", "2"))
    folders = {p.name: tmp_path_factory.mktemp(p.name.replace("/", "-").removesuffix(".md"))
               for p in pages}
    results: dict[str, Result] = {}
    # one environment for every page, so that one fork server serves them all
    with fork_server(run_env(tmp_path_factory.mktemp("tools"))) as env, \
            ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        # longest pages first, so the two workers finish together
        order = sorted(pages, key=lambda p: -len(p.blocks) - 20 * ("train" in p.name))
        for page_results in pool.map(lambda p: _run_page(p, folders[p.name], verdicts, env),
                                     order):
            results.update(page_results)
        served = fork_server_log(env)
    FORKED.update(served=sum("served" in line for line in served),
                  refused=sum("refused" in line for line in served))
    return results


@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[b.label for _, b in BLOCKS])
def test_doc_block(page: Page, block: Block, block_results: dict[str, Result],
                   record_property: Callable[[str, object], None]) -> None:
    result = block_results[block.label]
    record_property("seconds", round(result.seconds, 2))  # in --junitxml: where the time goes
    if result.status == "skipped":
        pytest.skip(result.message)
    if result.status == "failed":
        pytest.fail(result.message, pytrace=False)


def test_every_executed_page_has_blocks() -> None:
    assert PAGES, "no executed pages found"
    for page in PAGES:
        assert page.blocks, f"{page.name} has no runnable block"
