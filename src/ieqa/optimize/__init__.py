"""FDMPO: feedback-driven optimisation of a metric definition (DS-IEQA §3.2).

An *optimiser* LLM rewrites the definition of one dimension (the ``{definition}`` of a
digit template such as ``ds-ieqa-digits``) from the history of earlier trials and their
**Definition Value** V_d (DS-IEQA eq. 2, the probability mass the *feedback* model puts on
the ground-truth digits, in [0, 1.11]; computed by
:meth:`ieqa.scorers.vlm.digits.DigitsScorer.definition_value`, the ``vlm-digits``
readout's own formula), averaged over labelled samples. Every trial is kept; the result
is the definition with the highest V_d (ties: the earliest).

Examples:
    >>> from ieqa.optimize import render_optimizer_messages, Trial
    >>> msgs = render_optimizer_messages(
    ...     "visual_quality", [Trial(0, "Looks good.", 0.41), Trial(1, "Sharp and clean.", 0.52)],
    ...     n_samples=8)
    >>> "V_d = 0.5200: Sharp and clean." in msgs[1]["content"]
    True

Robustness: an optimiser answer that fails (timeout, HTTP error, exception), is empty,
repeats an earlier definition or is longer than ``max_definition_chars`` is recorded in
``trajectory.jsonl`` as a ``failure`` line with its kind and retried (the retry prompt
lists the answers rejected so far for this proposal and why) until ``max_failures`` failures in all have
been spent. An accepted answer is written (``proposal``) before its V_d is measured.
Given the optimiser's answers the run is deterministic, and a run resumed
from its ``trajectory.jsonl`` continues exactly as the uninterrupted one would.

The optimiser is any callable ``optimizer(messages) -> str | OptimizerReply`` taking
chat messages (``[{"role": "system", ...}, {"role": "user", ...}]``);
:class:`ChatOptimizer` (an OpenAI-compatible server, with the backend's timeouts and
retries) and :class:`LocalOptimizer` (a local transformers causal LM) are provided.
"""

from __future__ import annotations

from ieqa.optimize.loop import optimize
from ieqa.optimize.messages import (
    OPTIMIZER_PROMPT,
    OPTIMIZER_SYSTEM,
    RETRY_LINE,
    RETRY_NOTE,
    render_optimizer_messages,
)
from ieqa.optimize.optimizers import ChatOptimizer, LocalOptimizer
from ieqa.optimize.outputs import plot_trajectory, vd_validation_correlation, write_outputs
from ieqa.optimize.records import (
    BEST_DEFINITION_FILE,
    FAILURE_KINDS,
    PLOT_FILE,
    RESULT_FILE,
    TRAJECTORY_FILE,
    Failure,
    FDMPOResult,
    OptimizerError,
    OptimizerReply,
    Trial,
)
from ieqa.optimize.trajectory import read_trajectory
from ieqa.prompts.answers.definition import parse_definition
from ieqa.prompts.redefine import (
    BEST_TEMPLATE_FILE,
    FDMPOError,
    definition_template,
    load_definition,
)

__all__ = [
    "OPTIMIZER_SYSTEM", "OPTIMIZER_PROMPT", "RETRY_NOTE", "RETRY_LINE", "FAILURE_KINDS", "FDMPOError",
    "OptimizerError", "OptimizerReply", "Trial", "Failure", "FDMPOResult", "ChatOptimizer",
    "LocalOptimizer", "optimize", "render_optimizer_messages", "parse_definition",
    "definition_template", "read_trajectory", "vd_validation_correlation", "plot_trajectory", "write_outputs",
    "load_definition", "TRAJECTORY_FILE", "BEST_TEMPLATE_FILE", "BEST_DEFINITION_FILE", "PLOT_FILE",
    "RESULT_FILE",
]
