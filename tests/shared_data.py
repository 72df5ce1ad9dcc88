"""Where the tests find the shared data folder (never committed): ``$IEQA_SHARED_DATA``, or
``../shared/data`` beside the clone (CI has it there)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    env = os.environ.get("IEQA_SHARED_DATA")
    if env:
        return Path(env)
    return (REPO / ".." / "shared" / "data").resolve()
