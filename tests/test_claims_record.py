"""The heavy claims' record (tests/claims_record.py): written only when every recorded test
passed on a clean tree, honoured only on exactly that tree, seed and set of tests.

Each case runs pytest in a throwaway git repository whose conftest loads the same hooks
as tests/conftest.py, with two tests marked ``claim`` and ``slow`` that log each run to a
file outside the repository (so a skipped test is seen not to have run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

CONFTEST = '''
from claims_record import (claims_configure, claims_modify_items, pytest_addoption,
                           pytest_runtest_logreport, pytest_sessionfinish,
                           pytest_terminal_summary, pytest_testnodedown)


def pytest_configure(config):
    claims_configure(config)


def pytest_collection_modifyitems(config, items):
    claims_modify_items(config, items)
'''

TESTS = '''
import os
import subprocess
import pytest


def _ran(name):
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(name + "\\n")


@pytest.mark.claim
@pytest.mark.slow
def test_learns(record_property):
    _ran("learns")
    record_property("srcc", 0.625)
    if os.environ.get("MOVE_HEAD"):  # another terminal commits while the claims run
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c",
                        "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "x"],
                       check=True)


@pytest.mark.slow
@pytest.mark.claim
def test_agrees():
    if os.environ.get("SKIP_CLAIM"):
        pytest.skip("no data")
    _ran("agrees")
    assert not os.environ.get("FAIL_CLAIM"), "the claim failed"


@pytest.mark.claim
@pytest.mark.parametrize("size", ["slow", "fast"])
def test_quick_claim(size):
    _ran("quick")


def test_plain():
    _ran("plain")
'''

ALL = ["agrees", "learns", "plain", "quick", "quick"]
UNRECORDED = ["plain", "quick", "quick"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c",
                           "commit.gpgsign=false", *args], cwd=repo, check=True,
                          capture_output=True, text=True, timeout=60).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    for name in ("claims_record.py", "shared_data.py"):
        shutil.copy(HERE / name, repo / "tests" / name)
    (repo / "tests" / "conftest.py").write_text(CONFTEST)
    (repo / "tests" / "test_x.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\naddopts = -ra\n"
                                     "markers =\n    slow: s\n    claim: c\n")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (tmp_path / "shared" / "aurora_subset").mkdir(parents=True)
    (tmp_path / "shared" / "aurora_subset" / "pairs.json").write_text("[]")
    _git(repo, "init", "-q")
    _commit(repo, "one")
    return repo


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def _run(repo: Path, *args: str, **env: str) -> tuple[int, str, list[str]]:
    log = repo.parent / "ran.log"
    log.unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items()
               if k not in ("IEQA_TEST_SEED", "PYTEST_ADDOPTS")
               and not k.startswith("PYTEST_XDIST")}
    # only the plugins these runs use (the installed ones would take seconds to load)
    environ.update(RAN_LOG=str(log), PYTHONDONTWRITEBYTECODE="1",
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                   IEQA_SHARED_DATA=str(repo.parent / "shared"), **env)
    plugins = ("-p", "xdist.plugin") if "-n" in args else ()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugins,
                           *args], cwd=repo, env=environ, capture_output=True, text=True,
                          timeout=120)
    ran = sorted(log.read_text().split()) if log.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, ran


RECORD = "tests/claims-record.json"
WRITE = ("-m", "claim and slow", "--claims=run", "--write-claims-record")
TAKEN = "2 tests marked claim and slow passed on this exact tree"


def test_no_record_runs_every_claim_and_says_why(repo):
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == ALL
    assert f"ran (no {RECORD}; make test-claims writes the record)" in out


@pytest.mark.parametrize("env, why", [
    ({"FAIL_CLAIM": "1"}, "not written: a recorded test failed"),
    ({"SKIP_CLAIM": "1"}, "not written: 1 of the 2 tests marked claim and slow did not run "
                          "and pass here (skipped, deselected or xfailed: "
                          "tests/test_x.py::test_agrees)"),
    ({"MOVE_HEAD": "1"}, "not written: the tree or HEAD changed during the run")])
def test_a_run_that_is_not_all_passes_on_one_tree_writes_no_record(repo, env, why):
    rc, out, ran = _run(repo, *WRITE, **env)
    assert why in out
    assert not (repo / RECORD).exists()


def test_a_run_of_some_of_the_claims_writes_no_record(repo):
    rc, out, ran = _run(repo, *WRITE, "-k", "learns")
    assert rc == 0 and ran == ["learns"]
    assert "not written: 1 of the 2 tests" in out and not (repo / RECORD).exists()


def test_the_record_holds_only_for_the_tree_and_inputs_it_ran_on(repo):
    rc, out, ran = _run(repo, *WRITE)
    assert rc == 0 and ran == ["agrees", "learns"] and f"wrote {RECORD}" in out
    record = json.loads((repo / RECORD).read_text())
    assert set(record["tests"]) == {"tests/test_x.py::test_learns", "tests/test_x.py::test_agrees"}
    assert record["tests"]["tests/test_x.py::test_learns"]["properties"] == {"srcc": 0.625}
    assert record["seed"] == 0 and len(record["tree"]) == 64
    assert record["environment"]["packages"]["numpy"] and record["environment"]["python"]
    # the record file is not part of the tree it describes: uncommitted, it applies already
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == UNRECORDED and TAKEN in out
    _commit(repo, "the claims' record")
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == UNRECORDED and TAKEN in out
    assert out.count("SKIPPED [1] tests/test_x.py") == 2
    assert out.count(f"passed on this exact tree: {RECORD}") == 2
    # asked to, they run
    rc, out, ran = _run(repo, "--claims=run")
    assert ran == ALL and "ran (--claims=run" in out
    # another seed is another claim
    rc, out, ran = _run(repo, IEQA_TEST_SEED="1")
    assert ran == ALL and "the record ran with IEQA_TEST_SEED=0, this run 1" in out
    # another version of an input outside the repository
    data = repo.parent / "shared" / "aurora_subset" / "pairs.json"
    data.write_text("[1]")
    rc, out, ran = _run(repo)
    assert ran == ALL and "the record ran with other inputs (inputs.shared/aurora_subset:" in out
    data.write_text("[]")
    # an untracked file; a change git is told to overlook; a local edit, then its commit
    (repo / "notes.txt").write_text("x")
    rc, out, ran = _run(repo)
    assert ran == ALL and "changes not committed (notes.txt)" in out
    (repo / "notes.txt").unlink()
    (repo / "pytest.ini").write_text((repo / "pytest.ini").read_text() + "\n")
    rc, out, ran = _run(repo)
    assert ran == ALL and "changes not committed (pytest.ini)" in out
    _git(repo, "update-index", "--assume-unchanged", "pytest.ini")
    rc, out, ran = _run(repo)
    assert ran == ALL and "git is told to overlook changes to pytest.ini" in out
    _git(repo, "update-index", "--no-assume-unchanged", "pytest.ini")
    _commit(repo, "an edit")
    rc, out, ran = _run(repo)
    assert ran == ALL and f"the tree changed since {RECORD} was written" in out


def test_a_record_must_name_the_commit_it_ran_on_and_be_whole(repo):
    first = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "more.txt").write_text("x")
    _commit(repo, "two")
    rc, out, ran = _run(repo, *WRITE)
    record = json.loads((repo / RECORD).read_text())
    # a record whose commit is not the one with its tree (by hand, or an old one kept)
    (repo / RECORD).write_text(json.dumps({**record, "commit": first}))
    rc, out, ran = _run(repo)
    assert ran == ALL and f"the record's commit {first[:12]} has another tree" in out
    # a record of fewer tests than are marked claim and slow (by hand, or one added since)
    partial = {**record, "tests": {k: v for k, v in record["tests"].items()
                                   if k.endswith("::test_learns")}}
    (repo / RECORD).write_text(json.dumps(partial))
    rc, out, ran = _run(repo)
    assert ran == ALL and "not in it: ['tests/test_x.py::test_agrees']" in out
    # a record that lacks a field fails nothing but itself
    del record["machine"]
    (repo / RECORD).write_text(json.dumps(record))
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == ALL and f"{RECORD} lacks or mistypes machine" in out


def test_under_xdist_the_record_is_written_honoured_and_explained(repo):
    pytest.importorskip("xdist")
    rc, out, ran = _run(repo, "-n", "2")
    assert rc == 0 and ran == ALL and f"ran (no {RECORD};" in out, out
    rc, out, ran = _run(repo, *WRITE, "-n", "2", "-k", "learns")
    assert "not written: 1 of the 2 tests" in out, out
    rc, out, ran = _run(repo, *WRITE, "-n", "2")
    assert rc == 0 and ran == ["agrees", "learns"], out
    record = json.loads((repo / RECORD).read_text())
    assert record["tests"]["tests/test_x.py::test_learns"]["properties"] == {"srcc": 0.625}
    assert record["machine"]["xdist_workers"] == 2 and record["machine"]["torch_threads"] == 1
    assert "--write-claims-record" in record["command"]
    _commit(repo, "the claims' record")
    rc, out, ran = _run(repo, "-n", "2")
    assert rc == 0 and ran == UNRECORDED and TAKEN in out, out
