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
                           pytest_terminal_summary)


def pytest_configure(config):
    claims_configure(config)


def pytest_collection_modifyitems(config, items):
    claims_modify_items(config, items)
'''

TESTS = '''
import os
import pytest


def _ran(name):
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(name + "\\n")


@pytest.mark.claim
@pytest.mark.slow
def test_learns(record_property):
    _ran("learns")
    record_property("srcc", 0.625)


@pytest.mark.slow
@pytest.mark.claim
def test_agrees():
    _ran("agrees")
    assert not os.environ.get("FAIL_CLAIM"), "the claim failed"


@pytest.mark.claim
def test_quick_claim():
    _ran("quick")


def test_plain():
    _ran("plain")
'''


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(HERE / "claims_record.py", repo / "tests" / "claims_record.py")
    (repo / "tests" / "conftest.py").write_text(CONFTEST)
    (repo / "tests" / "test_x.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\naddopts = -ra\n"
                                     "markers =\n    slow: s\n    claim: c\n")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return repo


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def _run(repo: Path, *args: str, **env: str) -> tuple[int, str, list[str]]:
    log = repo.parent / "ran.log"
    log.unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items()
               if k not in ("IEQA_TEST_SEED", "FAIL_CLAIM", "PYTEST_ADDOPTS")
               and not k.startswith("PYTEST_XDIST")}
    # only the plugins these runs use (the installed ones would take seconds to load)
    environ.update(RAN_LOG=str(log), PYTHONDONTWRITEBYTECODE="1",
                   PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **env)
    plugins = ("-p", "xdist.plugin") if "-n" in args else ()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugins,
                           *args], cwd=repo, env=environ,
                          capture_output=True, text=True, timeout=120)
    ran = sorted(log.read_text().split()) if log.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, ran


RECORD = "tests/claims-record.json"
WRITE = ("-m", "claim and slow", "--claims=run", "--write-claims-record")


def test_no_record_runs_every_claim_and_says_why(repo):
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == ["agrees", "learns", "plain", "quick"]
    assert f"ran: no readable {RECORD}" in out


def test_a_failed_claim_writes_no_record(repo):
    rc, out, ran = _run(repo, *WRITE, FAIL_CLAIM="1")
    assert rc == 1 and ran == ["agrees", "learns"]
    assert "not written: a recorded test failed" in out
    assert not (repo / RECORD).exists()


def test_the_record_holds_only_for_the_tree_it_ran_on(repo):
    rc, out, ran = _run(repo, *WRITE)
    assert rc == 0 and ran == ["agrees", "learns"] and "wrote tests/claims-record.json" in out
    record = json.loads((repo / RECORD).read_text())
    assert set(record["tests"]) == {"tests/test_x.py::test_learns", "tests/test_x.py::test_agrees"}
    assert record["tests"]["tests/test_x.py::test_learns"]["properties"] == {"srcc": 0.625}
    assert record["seed"] == 0 and len(record["tree"]) == 64
    # not committed yet: the work tree is not the one recorded
    rc, out, ran = _run(repo)
    assert ran == ["agrees", "learns", "plain", "quick"]
    assert "changes not committed (tests/claims-record.json)" in out
    _commit(repo, "the claims' record")
    rc, out, ran = _run(repo)
    assert rc == 0 and ran == ["plain", "quick"]  # the quick claim is not recorded: it runs
    assert "2 tests marked claim and slow passed on this exact tree" in out
    assert out.count("SKIPPED [1] tests/test_x.py") == 2 and out.count("passed on this exact tree: tests/claims-record.json") == 2
    # asked to, they run
    rc, out, ran = _run(repo, "--claims=run")
    assert ran == ["agrees", "learns", "plain", "quick"]
    # another seed is another claim
    rc, out, ran = _run(repo, IEQA_TEST_SEED="1")
    assert ran == ["agrees", "learns", "plain", "quick"]
    assert "the record ran with IEQA_TEST_SEED=0, this run 1" in out
    # a local edit of any tracked file, then a commit of it: the record no longer applies
    (repo / "pytest.ini").write_text((repo / "pytest.ini").read_text() + "\n")
    rc, out, ran = _run(repo)
    assert ran == ["agrees", "learns", "plain", "quick"] and "changes not committed (pytest.ini)" in out
    _commit(repo, "an edit")
    rc, out, ran = _run(repo)
    assert ran == ["agrees", "learns", "plain", "quick"]
    assert "the tree changed since tests/claims-record.json was written" in out


def test_a_record_of_some_of_the_claims_never_applies(repo):
    rc, out, ran = _run(repo, *WRITE, "-k", "learns")
    assert rc == 0 and ran == ["learns"]
    _commit(repo, "a partial record")
    rc, out, ran = _run(repo)
    assert ran == ["agrees", "learns", "plain", "quick"]
    assert "not in it: ['tests/test_x.py::test_agrees']" in out


def test_under_xdist_the_record_is_written_and_honoured(repo):
    pytest.importorskip("xdist")
    rc, out, ran = _run(repo, *WRITE, "-n", "2")
    assert rc == 0 and ran == ["agrees", "learns"], out
    record = json.loads((repo / RECORD).read_text())
    assert record["tests"]["tests/test_x.py::test_learns"]["properties"] == {"srcc": 0.625}
    assert record["machine"]["xdist_workers"] == 2 and record["machine"]["torch_threads"] == 1
    assert "--write-claims-record" in record["command"]
    _commit(repo, "the claims' record")
    rc, out, ran = _run(repo, "-n", "2")
    assert rc == 0 and ran == ["plain", "quick"], out
    assert "2 tests marked claim and slow passed on this exact tree" in out
