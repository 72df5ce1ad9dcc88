"""Where the calibration tests find IQA-PyTorch's ``ResultsCalibra`` data.

In order: ``$IEQA_CALIBRA_DIR`` (alone, when set); ``pyiqa_calibra`` in the shared data
folder (``$IEQA_SHARED_DATA``, default ``../shared/data`` beside the clone: CI has it);
``.data/pyiqa_calibra`` of the repository, which ``make calibration-data`` fills
(``scripts/fetch_calibration_data.py``). The first folder holding ``results_official.csv``
is used; without one the tests skip and say how to get the data.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_data import shared_data

REPO = Path(__file__).resolve().parents[2]


def candidates() -> list[Path]:
    env = os.environ.get("IEQA_CALIBRA_DIR")
    if env:
        return [Path(env)]
    return [shared_data() / "pyiqa_calibra", REPO / ".data" / "pyiqa_calibra"]


def calibra_folder() -> Path | None:
    """The calibration data folder, or None when there is none."""
    return next((c for c in candidates() if (c / "results_official.csv").is_file()), None)


def require_calibra() -> Path:
    """The calibration data folder; skips the test, saying what to run, when there is none."""
    folder = calibra_folder()
    if folder is None:
        pytest.skip("IQA-PyTorch calibration data (results_official.csv and five TID2013 pairs) "
                    f"not found in {' or '.join(map(str, candidates()))}: run `make "
                    "calibration-data` to download it into .data/pyiqa_calibra (or set "
                    "IEQA_CALIBRA_DIR to a folder holding it)")
    return folder
