"""What an FDMPO run records: trials, failures, the optimiser's replies and the result, and the
names of the files a run writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError
from ieqa.prompts.templates import PromptTemplate

TRAJECTORY_FILE = "trajectory.jsonl"
BEST_DEFINITION_FILE = "best_definition.txt"
PLOT_FILE = "trajectory.png"
RESULT_FILE = "result.json"

#: kinds of optimiser failure recorded in the trajectory
FAILURE_KINDS: tuple[str, ...] = ("timeout", "http", "error", "empty", "duplicate", "too_long")


class OptimizerError(IeqaError):
    """The optimiser failed to answer; ``kind`` is one of :data:`FAILURE_KINDS`
    (``timeout``, ``http`` or ``error`` for the callable's own failures)."""

    def __init__(self, message: str, kind: str = "error",
                 usage: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind if kind in FAILURE_KINDS else "error"
        self.usage = dict(usage) if usage else None


@dataclass
class OptimizerReply:
    """An optimiser's answer: the text and, when known, the token usage
    ``{"prompt_tokens": int, "completion_tokens": int}`` (``None``: unknown)."""

    text: str
    usage: dict[str, int] | None = None


@dataclass
class Trial:
    """One evaluated definition.

    Attributes:
        iteration: 0 for the initial definition, then 1, 2, ... per accepted proposal.
        definition: the definition text.
        v_d: mean Definition Value over the optimisation samples, in [0, 1.11].
        validation: ``{"srcc", "plcc", "score", "n"}`` on the validation set (score =
            (SRCC + PLCC) / 2, DS-IEQA eq. 6 for one dimension), or ``None``.
        source: ``"initial"`` or ``"optimizer"``.
        attempts: optimiser calls this proposal took (failed ones included).
        usage: tokens of those calls: ``prompt_tokens`` / ``completion_tokens`` summed
            over the calls that reported usage, ``calls`` and ``calls_without_usage``.
        seconds: wall time of the V_d (and validation) evaluation, in seconds.
    """

    iteration: int
    definition: str
    v_d: float
    validation: dict[str, float] | None = None
    source: str = "optimizer"
    attempts: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kind": "trial", **dataclasses.asdict(self)}


@dataclass
class Failure:
    """One rejected or failed optimiser call: ``kind`` (:data:`FAILURE_KINDS`), the
    message, the answer when there was one, and the call's usage (``None``: unknown)."""

    iteration: int
    attempt: int
    failure: str
    message: str
    answer: str | None = None
    usage: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": "failure", **dataclasses.asdict(self)}


@dataclass
class FDMPOResult:
    """The outcome of :func:`optimize`.

    Attributes:
        dimension: the canonical dimension optimised.
        trials: every trial, in order (``trials[0]`` is the initial definition).
        failures: every optimiser failure, in order.
        best: the trial with the highest V_d (the earliest among equals).
        template: the base template with ``best.definition`` in its ``definitions``.
        usage: token totals over all calls (see :attr:`Trial.usage`).
        complete: whether all requested iterations ran (``False``: the failure budget ran
            out first).
        out_dir: where the files were written (``None`` without ``out_dir``).
        notes: what could not be written (e.g. the plot without matplotlib).
    """

    dimension: str
    trials: list[Trial]
    failures: list[Failure]
    best: Trial
    template: PromptTemplate
    usage: dict[str, int]
    complete: bool
    out_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    def failure_counts(self) -> dict[str, int]:
        """Failures per kind."""
        counts: dict[str, int] = {}
        for f in self.failures:
            counts[f.failure] = counts.get(f.failure, 0) + 1
        return counts
