"""``trajectory.jsonl``: one line per run header, proposal, trial and failure, appended as the
run goes, so that an interrupted run resumes exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.optimize.records import Failure, Trial
from ieqa.prompts.redefine import FDMPOError


# ------------------------------------------------------------------------ trajectory
def read_trajectory(path: str | Path) -> tuple[dict[str, Any] | None, list[Trial], list[Failure]]:
    """``(header, trials, failures)`` of a ``trajectory.jsonl``; a last line cut off by
    an interrupted write is ignored, any other bad line raises :class:`FDMPOError`."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header, trials, failures = None, [], []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                break  # a write cut short by the interruption
            raise FDMPOError(f"{path}:{n}: not JSON; fix or delete the line, or start fresh "
                             "(--fresh)") from None
        kind = row.pop("kind", None)
        if kind == "run":
            header = row
        elif kind == "trial":
            trials.append(Trial(**row))
        elif kind == "failure":
            failures.append(Failure(**row))
        elif kind == "proposal":
            continue  # an accepted answer; its trial line follows once V_d is measured
        else:
            raise FDMPOError(f"{path}:{n}: unknown line kind {kind!r}")
    return header, trials, failures


def pending_proposal(path: Path, n_trials: int) -> dict[str, Any] | None:
    """The accepted proposal of iteration ``n_trials`` (the next one) when the run
    stopped before its V_d was measured, else ``None``."""
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if '"proposal"' in line:
            row = json.loads(line)
            if row.get("kind") == "proposal" and row["iteration"] == n_trials:
                found = row
    return found


def append_line(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` to the trajectory as one JSON line, flushed at once."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.flush()


def add_usage(total: dict[str, int], usage: Mapping[str, int] | None) -> None:
    """Add one optimiser call's token ``usage`` (or a call without one) to ``total``."""
    total["calls"] = total.get("calls", 0) + 1
    if usage is None:
        total["calls_without_usage"] = total.get("calls_without_usage", 0) + 1
        return
    for key in ("prompt_tokens", "completion_tokens"):
        total[key] = total.get(key, 0) + int(usage[key])


def empty_usage() -> dict[str, int]:
    """Token usage of a run before its first call."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "calls_without_usage": 0}
