"""The heavy claim tests' record: they run once per tree, not once per CI run.

The tests marked both ``claim`` and ``slow`` (:func:`is_recorded`: the recipes that must
learn, GRPO, FDMPO, EPAIQA's stage 3, the classic scorer's agreement with ShapesEdit's and
AURORA's ground truth) are about forty percent of the suite's CPU time. ``make
test-claims`` runs exactly them (``--claims=run --write-claims-record``) and, when every
one passed, writes :data:`RECORD_PATH` (``tests/claims-record.json``): a digest of the
committed tree they ran on, the commit, the machine, the seed, and every test's seconds
and recorded numbers. Committed beside the code, it lets ``make test`` (and so CI) skip
those tests while the tree is the one they passed on:

* the digest (:func:`tree_digest`) covers every tracked file of ``HEAD`` but the record
  itself, so a change anywhere else — code, tests, constraints, data — voids the record;
* it applies only to a clean work tree (no change to a tracked file, no untracked file
  that is not ignored): local edits are not what the record ran on;
* its tests must be exactly the recorded tests collected now, under the same
  ``IEQA_TEST_SEED`` (a subset run with ``-k`` writes a record that never applies).

Where any of that fails, or with ``--claims=run``, the tests run as every other test
does, and the run's summary says why. Where it holds, each is reported as skipped with
the record's commit, date and machine, and the summary says so: nothing is hidden.
``scripts/test_machines.py`` always runs them (``--claims=run``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: where the record lives, relative to the repository root
RECORD_PATH = "tests/claims-record.json"
#: the seed the claim tests train with (tests/conftest.py's TEST_SEED)
_SEED = int(os.environ.get("IEQA_TEST_SEED", "0"))


def is_recorded(item_or_keywords: Any) -> bool:
    """Whether a test (an item, or a report's ``keywords``) is one of the recorded ones:
    marked both ``claim`` and ``slow``."""
    if isinstance(item_or_keywords, pytest.Item):
        return bool(item_or_keywords.get_closest_marker("claim")
                    and item_or_keywords.get_closest_marker("slow"))
    return "claim" in item_or_keywords and "slow" in item_or_keywords


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def tree_digest(root: Path) -> tuple[str | None, str, str]:
    """``(digest, commit, why not)``: the SHA-256 of ``git ls-tree -r HEAD`` without the
    record's own line, and ``HEAD``; ``(None, "", reason)`` when ``root`` is not a clean
    git work tree."""
    try:
        status = _git(root, "status", "--porcelain", "--untracked-files=normal")
        listing = _git(root, "ls-tree", "-r", "--full-tree", "HEAD")
        commit = _git(root, "rev-parse", "HEAD").strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return None, "", f"not a git work tree with a commit ({exc})"
    if status.strip():
        changed = [line[3:] for line in status.splitlines()[:3]]
        return None, commit, (f"the work tree has changes not committed ({', '.join(changed)}"
                              f"{', ...' if len(status.splitlines()) > 3 else ''})")
    lines = [line for line in listing.splitlines() if not line.endswith("\t" + RECORD_PATH)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest(), commit, ""


def load_record(root: Path) -> dict[str, Any] | None:
    path = root / RECORD_PATH
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def record_applies(record: dict[str, Any] | None, digest: str | None, why_not: str,
                   nodeids: set[str], seed: int) -> tuple[bool, str]:
    """Whether ``record`` stands for these recorded tests on this tree; if not, why."""
    if record is None:
        return False, f"no readable {RECORD_PATH}"
    if digest is None:
        return False, why_not
    if record.get("tree") != digest:
        return False, (f"the tree changed since {RECORD_PATH} was written (at commit "
                       f"{str(record.get('commit', '?'))[:12]})")
    if record.get("seed") != seed:
        return False, f"the record ran with IEQA_TEST_SEED={record.get('seed')}, this run {seed}"
    recorded = set(record.get("tests") or {})
    if recorded != nodeids:
        missing, extra = sorted(nodeids - recorded), sorted(recorded - nodeids)
        return False, (f"the record's tests are not the recorded tests collected now "
                       f"(not in it: {missing[:3]}; only in it: {extra[:3]})")
    return True, ""


def build_record(digest: str, commit: str, reports: dict[str, dict[str, Any]],
                 command: str, workers: int | None) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"tree": digest, "commit": commit, "seed": _SEED,
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": command,
            "machine": {"cpu": cpu, "cores": os.cpu_count(), "python": sys.version.split()[0],
                        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY"),
                        "xdist_workers": workers,
                        # tests/conftest.py: one thread per xdist worker, else every core
                        "torch_threads": 1 if workers else int(os.environ.get(
                            "IEQA_NUM_THREADS", os.cpu_count() or 1))},
            "tests": dict(sorted(reports.items()))}


# --- the pytest hooks (imported by tests/conftest.py) ---------------------------------

_STATE: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ieqa claims")
    group.addoption("--claims", choices=("auto", "run"), default="auto",
                    help="the tests marked claim and slow: 'auto' skips them where "
                         f"{RECORD_PATH} says they passed on this exact tree, 'run' always "
                         "runs them")
    group.addoption("--write-claims-record", action="store_true",
                    help=f"write {RECORD_PATH} when every recorded test that ran passed "
                         "(make test-claims)")


def claims_configure(config: pytest.Config) -> None:
    root = Path(str(config.rootpath))
    digest, commit, why_not = tree_digest(root)
    _STATE.update(root=root, digest=digest, commit=commit, why_not=why_not, reports={},
                  failed=False, applies=None)


def claims_modify_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    recorded = [item for item in items if is_recorded(item)]
    if not recorded or config.getoption("claims") == "run":
        return
    record = load_record(_STATE["root"])
    applies, why = record_applies(record, _STATE["digest"], _STATE["why_not"],
                                  {item.nodeid for item in recorded}, _SEED)
    _STATE.update(applies=applies, why=why, record=record, n=len(recorded))
    if not applies:
        return
    reason = (f"passed on this exact tree: {RECORD_PATH} (commit {record['commit'][:12]}, "
              f"{record['written']}, {record['machine']['cpu']}); --claims=run runs it")
    for item in recorded:
        item.add_marker(pytest.mark.skip(reason=reason))


_TAKEN_FROM_RECORD = "passed on this exact tree"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _STATE or not is_recorded(report.keywords):
        return
    if report.when == "setup":
        _STATE["seen"] = _STATE.get("seen", 0) + 1
    if report.skipped and _TAKEN_FROM_RECORD in str(report.longrepr):
        _STATE["taken"] = _STATE.get("taken", 0) + 1
    elif report.failed:
        _STATE["failed"] = True
    elif report.when == "call" and report.passed:
        _STATE["reports"][report.nodeid] = {
            "seconds": round(report.duration, 1),
            "properties": {k: v for k, v in report.user_properties}}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if (not _STATE or not session.config.getoption("write_claims_record")
            or os.environ.get("PYTEST_XDIST_WORKER")):
        return
    reports = _STATE["reports"]
    if _STATE["failed"] or exitstatus != 0:
        _STATE["written"] = "not written: " + ("a recorded test failed" if _STATE["failed"]
                                               else f"the run failed (exit {exitstatus})")
    elif not reports:
        _STATE["written"] = "not written: no test marked claim and slow ran and passed"
    elif _STATE["digest"] is None:
        _STATE["written"] = f"not written: {_STATE['why_not']}"
    else:
        workers = getattr(session.config.option, "numprocesses", None)
        record = build_record(_STATE["digest"], _STATE["commit"], reports,
                              shlex.join([Path(sys.executable).name, "-m", "pytest",
                                          *sys.argv[1:]]),
                              workers if isinstance(workers, int) and workers > 0 else None)
        (_STATE["root"] / RECORD_PATH).write_text(json.dumps(record, indent=1) + "\n",
                                                  encoding="utf-8")
        _STATE["written"] = (f"wrote {RECORD_PATH}: {len(reports)} tests passed on tree "
                             f"{_STATE['digest'][:12]} (commit {_STATE['commit'][:12]}); "
                             "commit it")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _STATE:
        return
    record = load_record(_STATE["root"])
    if _STATE.get("taken"):
        lines = [f"claims: {_STATE['taken']} tests marked claim and slow passed on this exact "
                 f"tree ({RECORD_PATH}: commit {record['commit'][:12]}, {record['written']}, "
                 f"{record['machine']['cpu']}) and were not run again; --claims=run runs them"]
    elif not _STATE.get("seen"):
        lines = []
    elif config.getoption("claims") == "run":
        lines = ["claims: the tests marked claim and slow that were selected ran (--claims=run)"]
    else:
        # under pytest-xdist this process did not collect: say why the record did not apply
        why = _STATE.get("why") or record_applies(
            record, _STATE["digest"], _STATE["why_not"],
            set((record or {}).get("tests") or {}), _SEED)[1]
        lines = [f"claims: the tests marked claim and slow that were selected ran"
                 f"{': ' + why if why else ''} (make test-claims writes the record)"]
    if "written" in _STATE:
        lines.append(f"claims: {_STATE['written']}")
    for line in lines:
        terminalreporter.write_line(line)
