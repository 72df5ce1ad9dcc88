"""The docs example runner's ``requires`` markers: only a feature that is cleanly absent
skips its blocks; a probe that errors, or an unknown requirement, fails them."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import runner
from .runner import Block, Page, precheck
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
    block = Block("t.md", 1, "bash", "true\n", skip="needs a GPU", requires=["crashes"])
    assert precheck(block) == ("skipped", "needs a GPU")
