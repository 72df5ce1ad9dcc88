"""The docs example runner's markers: only a feature that is cleanly absent skips its
blocks (a probe that errors, or an unknown requirement, fails them), and a ``skip`` marker
skips only with one of the allowed categories (gpu, network, hours); any other fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import runner
from .runner import SKIP_CATEGORIES, Block, Page, executed_pages, parse_page, precheck
from .test_examples import _run_page


@pytest.fixture(autouse=True)
def _fresh_probes(monkeypatch: pytest.MonkeyPatch):
    runner._requirement.cache_clear()
    monkeypatch.setattr(runner, "FEATURES", dict(runner.FEATURES))
    yield
    runner._requirement.cache_clear()


def _probe_raises() -> bool:
    raise RuntimeError("ieqa score crashed: Traceback ...")


def _feature(name: str, probe) -> None:  # noqa: ANN001
    runner.FEATURES[name] = (f"the {name} feature", probe)


def _page(*requires: list[str]) -> Page:
    blocks = [Block("t.md", 10 * (i + 1), "python", f"print({i})\n", requires=list(r))
              for i, r in enumerate(requires)]
    return Page("t.md", blocks, [])


def _run(page: Page, tmp_path: Path) -> dict[str, tuple[str, str]]:
    verdicts = {b.label: precheck(b) for b in page.blocks}
    return {label: (r.status, r.message) for label, r in _run_page(page, tmp_path, verdicts).items()}


def test_an_erroring_probe_fails_the_block_with_its_message(tmp_path: Path) -> None:
    _feature("crashes", _probe_raises)
    _feature("here", lambda: True)
    results = _run(_page(["here", "crashes"], []), tmp_path)
    status, message = results["t.md:10-python"]
    assert status == "failed"
    assert "crashes" in message and "ieqa score crashed" in message
    assert results["t.md:20-python"] == ("skipped", "an earlier block failed: t.md:10-python")


def test_a_probe_answering_no_bool_fails(tmp_path: Path) -> None:
    _feature("vague", lambda: None)
    assert _run(_page(["vague"]), tmp_path)["t.md:10-python"][0] == "failed"


def test_a_cleanly_absent_feature_skips_and_the_page_goes_on(tmp_path: Path) -> None:
    _feature("absent", lambda: False)
    results = _run(_page(["absent"], []), tmp_path)
    assert results["t.md:10-python"] == ("skipped", "pending: needs the absent feature")
    assert results["t.md:20-python"][0] == "passed"


def test_a_present_feature_runs(tmp_path: Path) -> None:
    _feature("present", lambda: True)
    assert _run(_page(["present"]), tmp_path)["t.md:10-python"][0] == "passed"


def test_unknown_requirement_fails() -> None:
    verdict = precheck(_page(["no such thing"]).blocks[0])
    assert verdict is not None and verdict[0] == "failed" and "unknown requirement" in verdict[1]


def test_commands_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    assert precheck(_page(["command score"]).blocks[0]) is None
    assert precheck(_page(["option score --scorer"]).blocks[0]) is None
    assert precheck(_page(["command no-such-command"]).blocks[0]) == (
        "skipped", "pending: needs the `ieqa no-such-command` command")
    assert precheck(_page(["option score --no-such-option"]).blocks[0])[0] == "skipped"
    runner._requirement.cache_clear()

    def broken_cli():  # noqa: ANN202
        raise ImportError("cannot import name 'app' from 'ieqa.cli'")

    monkeypatch.setattr(runner, "_cli_root", broken_cli)
    verdict = precheck(_page(["command score"]).blocks[0])
    assert verdict is not None and verdict[0] == "failed" and "cannot import" in verdict[1]


def test_a_skip_marker_wins_without_probing() -> None:
    _feature("crashes", _probe_raises)
    block = Block("t.md", 1, "bash", "true\n", skip="gpu: needs a GPU", requires=["crashes"])
    assert precheck(block) == ("skipped", "gpu: needs a GPU")


def _marked_page(tmp_path: Path, *markers: str) -> Page:
    """A page of three python blocks, the second one preceded by ``markers``."""
    text = "\n".join(["# t", "", "```python", "print(1)", "```", "", *markers, "```python",
                      "print(2)", "```", "", "```python", "print(3)", "```", ""])
    (tmp_path / "docs").mkdir()
    path = tmp_path / "docs" / "t.md"
    path.write_text(text, encoding="utf-8")
    return parse_page(path)


@pytest.fixture
def _docs_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "DOCS", tmp_path / "docs")


@pytest.mark.usefixtures("_docs_here")
@pytest.mark.parametrize("category", sorted(SKIP_CATEGORIES))
def test_a_skip_with_a_category_skips(tmp_path: Path, category: str) -> None:
    page = _marked_page(tmp_path, f"<!-- skip: {category}: the reason -->")
    results = _run(page, tmp_path)
    assert [r[0] for r in results.values()] == ["passed", "skipped", "passed"]
    assert results["t.md:8-python"] == ("skipped", f"{category}: the reason")


@pytest.mark.usefixtures("_docs_here")
@pytest.mark.parametrize("reason", ["starts a Ray cluster", "about ten minutes on a CPU",
                                    "GPU: capitalised", "gpu:", "gpus: not a category",
                                    "needs a gpu: wrong place"])
def test_a_skip_without_a_category_fails_saying_what_to_do(tmp_path: Path, reason: str) -> None:
    page = _marked_page(tmp_path, f"<!-- skip: {reason} -->")
    results = _run(page, tmp_path)
    status, message = results["t.md:8-python"]
    assert status == "failed", results
    assert repr(reason) in message and "Make the block run" in message
    assert all(f"'{c}: ...'" in message for c in SKIP_CATEGORIES)
    assert results["t.md:3-python"][0] == "passed"


@pytest.mark.usefixtures("_docs_here")
def test_every_skip_marker_of_a_block_needs_a_category(tmp_path: Path) -> None:
    page = _marked_page(tmp_path, "<!-- skip: gpu: wants a GPU -->", "<!-- skip: slow -->")
    status, message = precheck(page.blocks[1])
    assert status == "failed" and "'slow'" in message


def test_the_pages_skip_only_with_a_category() -> None:
    """The executed pages' own skip markers (checked without running any page)."""
    bad = {b.label: precheck(b)[1] for p in executed_pages() for b in p.blocks
           if b.skip is not None and precheck(b)[0] == "failed"}
    assert not bad, bad


def test_a_port_held_by_another_program_fails_only_that_page(tmp_path: Path) -> None:
    """CI once saw Ray's gRPC answer (not HTTP) on the port a page's server was to use: the
    runner's poll raised ``BadStatusLine`` and took every docs block of the session down."""
    import socket
    import threading

    from ports import free_port

    port = free_port()
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()

    def answer_garbage() -> None:
        while True:
            try:
                conn, _ = holder.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x04\x00@\x00\x00\r\n")

    threading.Thread(target=answer_garbage, daemon=True).start()
    server = Block("t.md", 10, "bash", f"exec {sys.executable} -m http.server {port} "
                   "--bind 127.0.0.1\n", background=f"http://127.0.0.1:{port}/")
    after = Block("t.md", 20, "python", "print(1)\n")
    try:
        results = _run(Page("t.md", [server, after], []), tmp_path)
    finally:
        holder.close()
    status, message = results["t.md:10-bash"]
    assert status == "failed" and "exited" in message, message
    assert results["t.md:20-python"] == ("skipped", "an earlier block failed: t.md:10-bash")


def test_a_block_that_runs_over_is_stopped_with_what_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block past its time limit is killed with its whole process group (a local Ray's
    processes would otherwise outlive it), and its output so far is in the failure."""
    import os
    import time

    monkeypatch.setattr(runner, "BLOCK_TIMEOUT_S", 3)
    block = Block("howto/x.md", 1, "bash", "sleep 120 &\necho $! > child.pid\necho started\n"
                  "sleep 120\n")
    with pytest.raises(runner.BlockFailed, match=r"(?s)ran over 3 s.*started"):
        runner.run_block(block, tmp_path, dict(os.environ), {})
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(50):  # bounded: 5 s for the kernel to reap it
        try:
            os.kill(child, 0)
            with open(f"/proc/{child}/stat") as fh:  # a zombie (reaped later by init) is gone too
                if fh.read().split()[2] == "Z":
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the block's child {child} outlived it")
