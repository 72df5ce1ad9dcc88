"""Test-wide settings: tests never touch the network."""

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# rich wraps CLI output at the terminal width (80 without a terminal); tests read phrases
# out of that output, so give them one wide, fixed width whatever the CI shell says.
os.environ["COLUMNS"] = "200"
# ieqa's commands give torch the cores that are idle when they start (ieqa.threads), so an
# in-process CLI call on a busy machine would leave torch with fewer threads for the tests
# after it, and their numbers (float sums in another order) would depend on the load. Pin
# the count the commands pick, and restore torch's count after every test.
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one of pytest-xdist's workers (make test runs one per core): one thread each, so the
    # workers do not fight over the cores, and waiting threads sleep (ieqa.threads)
    for var in ("IEQA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("IEQA_NUM_THREADS", str(os.cpu_count() or 1))

import pytest  # noqa: E402

from chat_server import server  # noqa: E402,F401 - the local chat-completions server fixture
from claims_record import (  # noqa: E402,F401 - the heavy claims' record (make test-claims)
    claims_configure,
    claims_modify_items,
    pytest_addoption,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
)
from tiny_models import tiny_models  # noqa: E402,F401 - tiny offline VLM checkpoints


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray for one test module (2 CPUs, an 80 MiB object store, no dashboard),
    shut down after the module; skipped where Ray is not installed."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ieqa[ray]'; "
                                      "make setup installs it)")
    import ray

    from ray_lock import ray_lock

    with ray_lock():
        ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False,
                 log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


#: seeds every test's global random generators (see _seed_global_rngs) and the training
#: seed of the claim tests (the ``claim_seed`` fixture); change it to check that no test
#: passes only for one draw (scripts/test_machines.py --seeds)
TEST_SEED = int(os.environ.get("IEQA_TEST_SEED", "0"))


@pytest.fixture(scope="session")
def claim_seed() -> int:
    """The training seed of the tests that claim learning: ``IEQA_TEST_SEED`` (default 0).
    Their bars hold for the seeds their spread was measured over (see each test)."""
    return TEST_SEED


@pytest.fixture(autouse=True)
def _seed_global_rngs(request: pytest.FixtureRequest) -> None:
    """Seed Python's, NumPy's and torch's global generators from the test's own id before
    it runs, so what a test draws without a generator of its own does not depend on the
    tests that ran before it in its process (random order, another xdist worker, ``-k``).
    numpy's global generator is otherwise seeded from the OS at import: a test relying on
    it would draw differently on every run."""
    import random
    import zlib

    import numpy as np

    seed = (zlib.crc32(request.node.nodeid.encode()) + TEST_SEED) % 2**32
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """Undo a test's change of torch's thread count (see IEQA_NUM_THREADS above)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


def pytest_configure(config: pytest.Config) -> None:
    """Keep the file order below under pytest-xdist. By default ``--dist loadfile`` reorders
    the files by their number of tests (``--loadscope-reorder``), which puts the GRPO test
    file (one test, about four minutes) among the last files. ``--no-loadscope-reorder``
    on the command line does the same. (Measured on a clean clone: the run's time did not
    change with it; the CPU, not the order, was the limit.)"""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    claims_configure(config)


#: the longest test files and their seconds on a 2-core machine, one worker each
#: (``IEQA_TEST_TIMELINE``, 2026-11-29): only their order matters. They start first, the
#: longest first, so that the two workers end together instead of one waiting for the
#: last long file of the other (the training claims alone are two thirds of the run).
LONG_FILES = {
    "tests/train/test_recipes_learn.py": 299, "tests/train/test_grpo.py": 201,
    "tests/scorers/test_classic.py": 179, "tests/docs/test_examples.py": 178,
    "tests/train/test_fdmpo_demo.py": 88, "tests/scale/test_raydata.py": 63,
    "tests/explain/test_stage3.py": 43, "tests/scorers/test_vlm_readouts.py": 50,
    "tests/test_ray_cluster.py": 36, "tests/scorers/test_vlm_isolation.py": 28,
    "tests/test_manifest.py": 27, "tests/test_cli.py": 24, "tests/test_gpu_check.py": 41,
    "tests/train/test_data_parallel.py": 47, "tests/scale/test_raygen.py": 30,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The :data:`LONG_FILES`, longest first, then the other files with a ``slow`` test,
    then the rest, each in the usual order. pytest-xdist (``--dist loadfile``, with its
    reordering turned off in :func:`pytest_configure`) hands whole files to the workers in
    this order, one or two at a time, so the long files start first and the short ones fill
    the gaps at the end, instead of a long file starting last on one worker while the
    other waits."""
    root = Path(str(config.rootpath))
    slow = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> tuple[int, float]:
        seconds = LONG_FILES.get(Path(item.path).relative_to(root).as_posix())
        if seconds is not None:
            return 0, -seconds
        return (1 if item.path in slow else 2), 0.0

    items.sort(key=rank)  # stable: the usual order within a rank
    claims_modify_items(config, items)


#: ``IEQA_TEST_TIMELINE=FILE``: each test's worker, start and end (seconds since the epoch)
#: appended to FILE as a JSON line, to see where a run's workers wait (docs/development.md)
_TIMELINE = os.environ.get("IEQA_TEST_TIMELINE")
_STARTED: dict[str, float] = {}
_UNDER_XDIST = "-n" in sys.argv or any(a.startswith(("-n", "--numprocesses")) for a in sys.argv)


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    # in the process that runs the test (xdist's controller gets these hooks too)
    if _TIMELINE and (os.environ.get("PYTEST_XDIST_WORKER") or not _UNDER_XDIST):
        import time

        _STARTED[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    if _TIMELINE and nodeid in _STARTED:
        import json
        import time

        line = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "test": nodeid,
                "start": round(_STARTED.pop(nodeid), 3), "end": round(time.time(), 3)}
        with open(_TIMELINE, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
