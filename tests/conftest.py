"""Test-wide settings: tests never touch the network."""

import os
import sys

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Test files with a ``slow`` test first, in their usual order, then the others.
    pytest-xdist (``--dist loadfile``, with the reordering turned off in
    :func:`pytest_configure`) hands whole files to the workers in this order, one or two
    at a time, so the long files start first and the short ones fill the gaps at the end,
    instead of a long file starting last on one worker while the other waits."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the usual order otherwise
