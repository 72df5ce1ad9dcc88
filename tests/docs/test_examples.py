"""Every code block of the getting-started page and the how-tos runs (see ``runner.py``).

One test per block. The blocks of a page share one temporary folder and run in page
order; a test runs the page's earlier blocks first when they have not run yet, so any
single block can be selected with ``-k``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .judge_server import judge_server
from .runner import Block, Page, executed_pages, requirement_met, run_block, run_env

PAGES = executed_pages()
BLOCKS = [(page, block) for page in PAGES for block in page.blocks]


@dataclass
class _PageState:
    workdir: Path
    env: dict[str, str]
    url: str | None = None
    done: set[int] = field(default_factory=set)
    failed: str | None = None


_STATES: dict[str, _PageState] = {}
_EXIT = contextlib.ExitStack()


@pytest.fixture(scope="module", autouse=True)
def _close_fixtures():
    yield
    _EXIT.close()


def _state(page: Page, tmp_path_factory: pytest.TempPathFactory) -> _PageState:
    if page.name not in _STATES:
        workdir = tmp_path_factory.mktemp(page.name.replace("/", "-").removesuffix(".md"))
        state = _PageState(workdir, run_env(workdir))
        for fixture in page.fixtures:
            if fixture != "judge-server":
                raise ValueError(f"{page.name}: unknown fixture {fixture!r}")
            state.url = _EXIT.enter_context(judge_server())
        _STATES[page.name] = state
    return _STATES[page.name]


def _unmet(block: Block) -> str | None:
    if block.skip is not None:
        return block.skip
    missing = [desc for met, desc in map(requirement_met, block.requires) if not met]
    return f"pending: needs {', '.join(missing)}" if missing else None


def _run(page: Page, block: Block, state: _PageState) -> None:
    index = page.blocks.index(block)
    for earlier in page.blocks[:index]:
        if page.blocks.index(earlier) in state.done or _unmet(earlier) is not None:
            continue
        if state.failed is not None:
            break
        _run(page, earlier, state)
    if state.failed is not None:
        pytest.skip(f"an earlier block of the page failed: {state.failed}")
    try:
        run_block(block, state.workdir, state.env, state.url)
    except AssertionError:
        state.failed = block.label
        raise
    finally:
        state.done.add(index)


@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[b.label for _, b in BLOCKS])
def test_doc_block(page: Page, block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = _unmet(block)
    if reason is not None:
        pytest.skip(reason)
    state = _state(page, tmp_path_factory)
    if page.blocks.index(block) in state.done:  # ran before a later block selected first
        assert state.failed != block.label, f"{block.label} failed"
        return
    _run(page, block, state)


def test_every_executed_page_has_blocks() -> None:
    assert PAGES, "no executed pages found"
    for page in PAGES:
        assert page.blocks, f"{page.name} has no runnable block"
