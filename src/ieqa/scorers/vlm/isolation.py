"""Failure isolation for VLM batches: :func:`run_isolated`.

A batch of prompts can fail because of one row: an instruction of 340 000 characters
makes the whole batch run out of memory, or one prompt is longer than the model's
context. :func:`run_isolated` runs a batch and, when it fails that way (a *resource*
failure, :func:`resource_failure`), frees what memory it can and retries the batch in two
halves, recursively, down to single rows. Only a row that fails *alone* gets an error;
the others are scored in the smaller batches (their scores equal scoring them alone,
within the batched-vs-unbatched tolerance of the readouts, about 1e-5 in float32).

A batch that fails any other way the caller records (``recorded``) fails as a whole, as
before: such failures (a broken checkpoint, a server that is down) repeat for every row,
and splitting would only multiply the model calls.

:class:`~ieqa.scorers.vlm.base.VLMScorer` routes every readout's model calls through
here (``score`` and ``PairwiseJudge.compare``).
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from ieqa.backends.processor import PromptTooLongError
from ieqa.errors import IeqaError, RunStopped

__all__ = ["run_isolated", "resource_failure", "resource_message", "release_memory",
           "MEMORY", "LENGTH", "RECORDED"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: a batch ran out of (GPU or host) memory
MEMORY = "memory"
#: a prompt is longer than the model's context
LENGTH = "length"
#: failures recorded for the whole (sub-)batch instead of aborting the run
RECORDED: tuple[type[BaseException], ...] = (IeqaError, RuntimeError, ValueError)

# lower-case fragments of allocation failures raised as plain RuntimeError (older CUDA
# builds, MPS, the CPU allocator, cuBLAS workspaces)
_OOM_MESSAGES = ("out of memory", "can't allocate memory", "cublas_status_alloc_failed")


def resource_failure(exc: BaseException) -> str | None:
    """:data:`MEMORY`, :data:`LENGTH` or ``None`` (any other failure).

    Memory: :class:`MemoryError`, ``torch.OutOfMemoryError`` (CUDA, and
    ``torch.cuda.OutOfMemoryError`` which is the same class), and ``RuntimeError``\\ s
    whose message reports a failed allocation. Length:
    :class:`~ieqa.backends.PromptTooLongError`.
    """
    if isinstance(exc, PromptTooLongError):
        return LENGTH
    if isinstance(exc, MemoryError):
        return MEMORY
    torch = sys.modules.get("torch")  # a torch error needs torch imported already
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom is not None and isinstance(exc, oom):
        return MEMORY
    if isinstance(exc, RuntimeError) and any(m in str(exc).lower() for m in _OOM_MESSAGES):
        return MEMORY
    return None


def resource_message(kind: str, detail: str) -> str:
    """The error recorded for a row that fails alone (``detail``: the exception)."""
    if kind == LENGTH:
        return (f"the prompt does not fit the model's context even with this sample alone: "
                f"{detail} (scorer options: -O max_pixels=N for fewer image tokens)")
    return (f"out of memory even with this sample alone ({detail}); lower the image pixel "
            "budget with -O max_pixels=N, shorten the instruction, or run on a device with "
            "more memory (-O device=DEVICE)")


def release_memory() -> None:
    """Collect garbage and return cached accelerator memory after a failed batch."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch, "mps", None)
    if mps is not None and torch.backends.mps.is_available():
        mps.empty_cache()


def _describe(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else ''}".rstrip(": ")


def run_isolated(rows: Sequence[T], run: Callable[[Sequence[T]], list[R]],
                 fail: Callable[[T, str], R], *,
                 recorded: tuple[type[BaseException], ...] = RECORDED,
                 label: str = "VLM") -> list[R]:
    """``run(rows)``, isolating the rows that cannot be run (see the module docstring).

    Args:
        rows: the batch (any row type: loaded samples, prompts, ...).
        run: scores a batch; returns one result per row, in order.
        fail: the result of a row that failed, from the row and the error message.
        recorded: failures recorded for every row of the (sub-)batch they hit; other
            exceptions propagate.
        label: who runs, for log messages.

    Returns:
        One result per row, in order.
    """
    if not rows:
        return []
    try:
        return run(rows)
    except Exception as exc:  # noqa: BLE001 - classified below; the rest is re-raised
        kind = resource_failure(exc)
        if kind is None:
            if not isinstance(exc, recorded) or isinstance(exc, RunStopped):
                raise
            log.warning("%s: a batch of %d failed: %s", label, len(rows), exc)
            message = f"{type(exc).__name__}: {exc}"
            return [fail(row, message) for row in rows]
        detail = str(exc) if kind == LENGTH else _describe(exc)
        # leaving the except block drops the exception and the frames holding tensors
    release_memory()
    if len(rows) == 1:
        log.warning("%s: a row failed alone (%s): %s", label, kind, detail)
        return [fail(rows[0], resource_message(kind, detail))]
    mid = (len(rows) + 1) // 2
    log.warning("%s: a batch of %d failed (%s: %s); retrying it as %d + %d rows", label,
                len(rows), kind, detail, mid, len(rows) - mid)
    return (run_isolated(rows[:mid], run, fail, recorded=recorded, label=label)
            + run_isolated(rows[mid:], run, fail, recorded=recorded, label=label))
