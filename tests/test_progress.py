"""Progress on any terminal: plain lines at a steady interval when stderr is no terminal."""

from __future__ import annotations

import re
import time

import pytest

from ieqa.errors import IeqaError
from ieqa.progress import format_duration, format_progress, progress_bar, progress_interval_s


def test_format_progress_by_hand():
    line = format_progress("Scoring with classic", 120, 300, 15.0)
    assert line == "Scoring with classic: 120/300 (40%), 8/s, 15 s elapsed, ~22 s left"
    assert format_progress("train stage", 50, 500, 125.0, unit="steps", status="loss 0.41") == (
        "train stage: 50/500 steps (10%), 0.4 steps/s, 2 min 05 s elapsed, ~18 min 45 s left, "
        "loss 0.41")
    assert format_progress("x", 300, 300, 30.0) == "x: 300/300 (100%), 10/s, 30 s elapsed, done"
    assert format_progress("x", 7, None, 2.0) == "x: 7, 3.5/s, 2 s elapsed"
    assert format_progress("x", 0, 10, 2.0) == "x: 0/10 (0%), 2 s elapsed"
    assert format_progress("x", 3, 10, 2.0, stopped=True).endswith("2 s elapsed, stopped")
    assert format_duration(3725) == "1 h 02 min"


def test_lines_come_at_the_interval_even_during_a_slow_step(monkeypatch, capsys):
    monkeypatch.setenv("IEQA_PROGRESS_INTERVAL", "0.1")
    with progress_bar("work", 3, unit="items") as advance:
        advance(1, status="loss 1.5")
        time.sleep(0.55)  # one slow step: the timer keeps reporting
        advance(2)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) >= 4, lines  # about five timer lines and the final one
    assert all(line.startswith("work: ") for line in lines)
    assert re.match(r"work: 1/3 items \(33%\), [\d.]+ items/s, 0 s elapsed, ~\d+ s left, "
                    r"loss 1.5$", lines[0]), lines[0]
    assert lines[-1].startswith("work: 3/3 items (100%)") and "done, loss 1.5" in lines[-1]


def test_a_failed_loop_says_stopped_and_disabled_prints_nothing(monkeypatch, capsys):
    monkeypatch.setenv("IEQA_PROGRESS_INTERVAL", "60")
    with pytest.raises(KeyError), progress_bar("work", 10) as advance:
        advance(4)
        raise KeyError("boom")
    assert capsys.readouterr().err.strip().endswith("elapsed, stopped")
    with progress_bar("quiet", 2, enabled=False) as advance:
        advance(2)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_interval_says_what_to_do(monkeypatch, value):
    monkeypatch.setenv("IEQA_PROGRESS_INTERVAL", value)
    with pytest.raises(IeqaError, match="unset it for the default of 10 s"):
        progress_interval_s()
    monkeypatch.setenv("IEQA_PROGRESS_INTERVAL", "2.5")
    assert progress_interval_s() == 2.5
