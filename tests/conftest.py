"""Test-wide settings: tests never touch the network."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# rich wraps CLI output at the terminal width (80 without a terminal); tests read phrases
# out of that output, so give them one wide, fixed width whatever the CI shell says.
os.environ["COLUMNS"] = "200"

from chat_server import server  # noqa: E402,F401 - the local chat-completions server fixture
from tiny_models import tiny_models  # noqa: E402,F401 - tiny offline VLM checkpoints
