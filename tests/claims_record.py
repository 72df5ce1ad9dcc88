"""The heavy claim tests' record: they run once per tree, not once per CI run.

The tests marked both ``claim`` and ``slow`` (:func:`is_recorded_item`: the recipes that
must learn, GRPO, FDMPO, EPAIQA's stage 3, the classic scorer's agreement with
ShapesEdit's and AURORA's ground truth) are about forty percent of the suite's CPU time.
``make test-claims`` runs exactly them (``--claims=run --write-claims-record``) and, when
every one of them passed, writes :data:`RECORD_PATH` (``tests/claims-record.json``): a
digest of the committed tree they ran on, the commit, the seed, what they ran with
(Python, the versions of :data:`PACKAGES`, a digest of each of :data:`EXTERNAL_INPUTS`),
the machine, and every test's seconds (its call, not its fixtures) and recorded numbers.
Committed beside the code, it lets ``make test`` (and so CI) skip those tests while
everything they ran on is what this run has:

* the tree digest (:func:`tree_digest`) covers every tracked file of ``HEAD`` but the
  record itself, so a change to any other file (code, tests, ``constraints.txt``, docs)
  voids the record; the record's commit must have that tree;
* the work tree is clean: no change to a tracked file (nor one git is told to overlook:
  ``assume-unchanged``, ``skip-worktree``), no untracked file that is not ignored;
* the same Python, package versions and external inputs (the shared AURORA subset);
* exactly the recorded tests collected now, under the same ``IEQA_TEST_SEED``.

Where any of that fails, or with ``--claims=run``, the tests run as every other test
does, and the run's closing ``claims:`` line says why. Where it holds, each is reported as
skipped with the record's commit, date and machine, and the closing line says so.

What a record cannot show is that the run it describes happened: like any committed
file, it is trusted as far as the commit that adds it is (reviewed, on the protected
branch); CI checks everything a record states that a clean clone can check.
``scripts/test_machines.py`` and ``make test-latest`` always run the claims
(``--claims=run``).
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
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from shared_data import shared_data

#: where the record lives, relative to the repository root
RECORD_PATH = "tests/claims-record.json"
#: the keyword :func:`claims_modify_items` gives the recorded tests (their reports carry it)
KEYWORD = "ieqa_claims_recorded"
#: the installed packages whose versions the claims' numbers depend on
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "numpy",
            "scipy", "pillow", "scikit-learn")
#: what the recorded tests read from outside the repository
EXTERNAL_INPUTS = {"shared/aurora_subset": lambda: shared_data() / "aurora_subset"}
#: the tests' training seed (tests/conftest.py's TEST_SEED)
_SEED = int(os.environ.get("IEQA_TEST_SEED", "0"))


def is_recorded_item(item: pytest.Item) -> bool:
    """Whether a test is one of the recorded ones: marked both ``claim`` and ``slow``."""
    return bool(item.get_closest_marker("claim") and item.get_closest_marker("slow"))


def is_recorded_report(report: pytest.TestReport) -> bool:
    return KEYWORD in report.keywords


class GitError(RuntimeError):
    pass


def _git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git {args[0]}: {exc}") from exc
    if proc.returncode != 0:
        raise GitError(f"git {args[0]}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return proc.stdout


def _listing_digest(listing: str) -> str:
    lines = [line for line in listing.splitlines() if not line.endswith("\t" + RECORD_PATH)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def tree_digest(root: Path) -> tuple[str | None, str, str]:
    """``(digest, commit, why not)``: the SHA-256 of ``git ls-tree -r HEAD`` without the
    record's own line, and ``HEAD``; ``(None, commit or "", reason)`` when ``root`` is not a
    clean git work tree (the record file itself may differ from ``HEAD``'s: it is not part
    of the digest)."""
    try:
        commit = _git(root, "rev-parse", "HEAD").strip()
        status = _git(root, "status", "--porcelain=v1", "--untracked-files=normal",
                      "--ignore-submodules=none")
        flags = _git(root, "ls-files", "-v")
        listing = _git(root, "ls-tree", "-r", "--full-tree", "HEAD")
    except GitError as exc:
        return None, "", f"not a git work tree with a commit ({exc})"
    changed = [line[3:] for line in status.splitlines() if line[3:] != RECORD_PATH]
    if changed:
        return None, commit, (f"the work tree has changes not committed ({', '.join(changed[:3])}"
                              f"{', ...' if len(changed) > 3 else ''})")
    # `git update-index --assume-unchanged` (lower-case tag) and --skip-worktree (S) hide a
    # file's changes from `git status`
    hidden = [line[2:] for line in flags.splitlines()
              if line[:1].islower() or line[:1] == "S"]
    if hidden:
        return None, commit, (f"git is told to overlook changes to {', '.join(hidden[:3])} "
                              "(assume-unchanged or skip-worktree)")
    return _listing_digest(listing), commit, ""


def commit_digest(root: Path, commit: str) -> str | None:
    """The tree digest of ``commit``; None when this clone does not have it."""
    try:
        return _listing_digest(_git(root, "ls-tree", "-r", "--full-tree", commit))
    except GitError:
        return None


def _folder_digest(folder: Path) -> str:
    if not folder.is_dir():
        return "absent"
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def environment() -> dict[str, Any]:
    """What the recorded tests ran with, beyond the tree: Python, the versions of
    :data:`PACKAGES` and a digest of each of :data:`EXTERNAL_INPUTS`."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": platform.python_version(), "packages": versions,
            "inputs": {name: _folder_digest(where()) for name, where in EXTERNAL_INPUTS.items()}}


_SCHEMA = {"tree": str, "commit": str, "seed": int, "written": str, "command": str,
           "environment": dict, "machine": dict, "tests": dict}


def load_record(root: Path) -> tuple[dict[str, Any] | None, str]:
    """The record and ``""``, or None and why it cannot be used."""
    path = root / RECORD_PATH
    if not path.is_file():
        return None, f"no {RECORD_PATH}"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{RECORD_PATH} is not readable JSON ({exc})"
    bad = [k for k, kind in _SCHEMA.items()
           if not isinstance(record, dict) or not isinstance(record.get(k), kind)]
    if bad:
        return None, f"{RECORD_PATH} lacks or mistypes {', '.join(bad)}"
    return record, ""


def record_applies(record: dict[str, Any] | None, load_why: str, digest: str | None,
                   why_not: str, nodeids: set[str], seed: int, env: dict[str, Any],
                   commit_tree: str | None) -> tuple[bool, str]:
    """Whether ``record`` stands for these recorded tests on this tree; if not, why.
    ``commit_tree`` is the tree digest of the record's commit (None: not in this clone)."""
    if record is None:
        return False, load_why
    if digest is None:
        return False, why_not
    if record["tree"] != digest:
        return False, (f"the tree changed since {RECORD_PATH} was written (at commit "
                       f"{record['commit'][:12]})")
    if commit_tree is not None and commit_tree != digest:
        return False, (f"the record's commit {record['commit'][:12]} has another tree than "
                       "the one it names")
    if record["seed"] != seed:
        return False, f"the record ran with IEQA_TEST_SEED={record['seed']}, this run {seed}"
    differ = [k for k in sorted(set(env) | set(record["environment"]))
              if env.get(k) != record["environment"].get(k)]
    if differ:
        detail = []
        for k in differ:
            was, now = record["environment"].get(k), env.get(k)
            if isinstance(was, dict) and isinstance(now, dict):
                detail += [f"{k}.{n}: {was.get(n)} -> {now.get(n)}"
                           for n in sorted(set(was) | set(now)) if was.get(n) != now.get(n)]
            else:
                detail.append(f"{k}: {was} -> {now}")
        return False, f"the record ran with other inputs ({'; '.join(detail[:3])})"
    recorded = set(record["tests"])
    if recorded != nodeids:
        missing, extra = sorted(nodeids - recorded), sorted(recorded - nodeids)
        return False, (f"the record's tests are not the recorded tests collected now "
                       f"(not in it: {missing[:3]}; only in it: {extra[:3]})")
    return True, ""


def build_record(digest: str, commit: str, reports: dict[str, dict[str, Any]],
                 command: str, workers: int | None, env: dict[str, Any]) -> dict[str, Any]:
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
            "command": command, "environment": env,
            "machine": {"cpu": cpu, "cores": os.cpu_count(),
                        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY"),
                        "xdist_workers": workers,
                        # tests/conftest.py: one thread per xdist worker, else every core
                        "torch_threads": 1 if workers else int(os.environ.get(
                            "IEQA_NUM_THREADS", os.cpu_count() or 1))},
            "tests": dict(sorted(reports.items()))}


# --- the pytest hooks (tests/conftest.py imports them) --------------------------------

_STATE: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ieqa claims")
    group.addoption("--claims", choices=("auto", "run"), default="auto",
                    help="the tests marked claim and slow: 'auto' skips them where "
                         f"{RECORD_PATH} says they passed on exactly this tree, 'run' "
                         "always runs them")
    group.addoption("--write-claims-record", action="store_true",
                    help=f"write {RECORD_PATH} when every test marked claim and slow ran "
                         "and passed on a clean tree (make test-claims)")


def claims_configure(config: pytest.Config) -> None:
    _STATE.clear()
    root = Path(str(config.rootpath))
    digest, commit, why_not = tree_digest(root)
    _STATE.update(root=root, digest=digest, commit=commit, why_not=why_not, reports={},
                  failed=False, taken=0, seen=0, collected=None, why="")


def claims_modify_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Runs on every item collected, before ``-k``/``-m`` deselect any."""
    recorded = [item for item in items if is_recorded_item(item)]
    for item in recorded:
        item.keywords[KEYWORD] = 1
    _STATE["collected"] = sorted(item.nodeid for item in recorded)
    if not recorded or config.getoption("claims") == "run":
        return
    root = _STATE["root"]
    record, load_why = load_record(root)
    commit_tree = commit_digest(root, record["commit"]) if record else None
    applies, why = record_applies(record, load_why, _STATE["digest"], _STATE["why_not"],
                                  set(_STATE["collected"]), _SEED, environment(), commit_tree)
    _STATE["why"] = why
    if not applies:
        return
    reason = (f"passed on this exact tree: {RECORD_PATH} (commit {record['commit'][:12]}, "
              f"{record['written']}, {record['machine'].get('cpu')}); --claims=run runs it")
    for item in recorded:
        item.add_marker(pytest.mark.skip(reason=reason))


_TAKEN_FROM_RECORD = "passed on this exact tree"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _STATE or not is_recorded_report(report):
        return
    if report.when == "setup":
        _STATE["seen"] += 1
    if report.skipped and _TAKEN_FROM_RECORD in str(report.longrepr):
        _STATE["taken"] += 1
    elif report.failed:
        _STATE["failed"] = True
    elif report.when == "call" and report.passed:
        _STATE["reports"][report.nodeid] = {
            "seconds": round(report.duration, 1),
            "properties": {k: v for k, v in report.user_properties}}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: what a worker collected and why the record did not apply
    (the controller collects nothing itself)."""
    out = (getattr(node, "workeroutput", None) or {}).get(KEYWORD)
    if not _STATE or not out:
        return
    if _STATE["collected"] is None:
        _STATE["collected"] = out["collected"]
    elif _STATE["collected"] != out["collected"]:
        _STATE["collected_differ"] = True
    _STATE["why"] = _STATE["why"] or out["why"]


def _write(session: pytest.Session, exitstatus: int) -> str:
    reports, collected = _STATE["reports"], _STATE["collected"] or []
    if _STATE["failed"] or exitstatus != 0:
        return "not written: " + ("a recorded test failed" if _STATE["failed"]
                                  else f"the run failed (exit {exitstatus})")
    if _STATE.get("collected_differ"):
        return "not written: the workers collected different tests"
    if not collected or set(reports) != set(collected):
        missing = sorted(set(collected) - set(reports))
        return (f"not written: {len(missing)} of the {len(collected)} tests marked claim and "
                f"slow did not run and pass here (skipped, deselected or xfailed: "
                f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"
                if collected else "not written: no test is marked claim and slow")
    if _STATE["digest"] is None:
        return f"not written: {_STATE['why_not']}"
    digest, commit, why_not = tree_digest(_STATE["root"])
    if (digest, commit) != (_STATE["digest"], _STATE["commit"]):
        return ("not written: the tree or HEAD changed during the run "
                f"({why_not or f'HEAD {commit[:12]}, tree {str(digest)[:12]}'})")
    option = session.config.option
    workers = len(getattr(option, "tx", None) or []) or None
    record = build_record(digest, commit, reports,
                          shlex.join([Path(sys.executable).name, "-m", "pytest",
                                      *sys.argv[1:]]), workers, environment())
    text = json.dumps(record, indent=1, default=lambda o: o.item() if hasattr(o, "item")
                      else str(o))
    (_STATE["root"] / RECORD_PATH).write_text(text + "\n", encoding="utf-8")
    return (f"wrote {RECORD_PATH}: {len(reports)} tests passed on tree {digest[:12]} "
            f"(commit {commit[:12]}); commit it")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _STATE:
        return
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: tell the controller
        workeroutput[KEYWORD] = {"collected": _STATE["collected"], "why": _STATE["why"]}
        return
    if session.config.getoption("write_claims_record"):
        _STATE["written"] = _write(session, int(exitstatus))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _STATE:
        return
    lines = []
    if _STATE["taken"]:
        record, _ = load_record(_STATE["root"])
        lines.append(f"claims: {_STATE['taken']} tests marked claim and slow passed on this "
                     f"exact tree ({RECORD_PATH}: commit {record['commit'][:12]}, "
                     f"{record['written']}, {record['machine'].get('cpu')}) and were not run "
                     "again; --claims=run runs them")
    elif _STATE["seen"]:
        why = ("--claims=run" if config.getoption("claims") == "run" else _STATE["why"])
        lines.append(f"claims: the tests marked claim and slow that were selected ran ({why}; "
                     "make test-claims writes the record)")
    if "written" in _STATE:
        lines.append(f"claims: {_STATE['written']}")
    for line in lines:
        terminalreporter.write_line(line)
