"""Test-wide settings: tests never touch the network."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# rich wraps CLI output at the terminal width (80 without a terminal); tests read phrases
# out of that output, so give them one wide, fixed width whatever the CI shell says.
os.environ["COLUMNS"] = "200"

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

    ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False,
             log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
