"""FDMPO: feedback-driven optimisation of a metric definition (DS-IEQA §3.2).

An *optimiser* LLM rewrites the definition of one dimension (the ``{definition}`` of a
digit template such as ``ds-ieqa-digits``) from the history of earlier trials and their
**Definition Value** V_d (DS-IEQA eq. 2, the probability mass the *feedback* model puts on
the ground-truth digits, in [0, 1.11]; computed by
:meth:`ieqa.scorers.vlm.digits.DigitsScorer.definition_value`, the ``vlm-digits``
readout's own formula), averaged over labelled samples. Every trial is kept; the result
is the definition with the highest V_d (ties: the earliest).

Examples:
    >>> from ieqa.prompts.fdmpo import render_optimizer_messages, Trial
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

import dataclasses
import json
import math
import random
import re
import string
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import IeqaError
from ieqa.prompts.templates import PromptTemplate

__all__ = [
    "OPTIMIZER_SYSTEM", "OPTIMIZER_PROMPT", "RETRY_NOTE", "RETRY_LINE", "FAILURE_KINDS", "FDMPOError",
    "OptimizerError", "OptimizerReply", "Trial", "Failure", "FDMPOResult", "ChatOptimizer",
    "LocalOptimizer", "optimize", "render_optimizer_messages", "parse_definition",
    "definition_template", "read_trajectory", "vd_validation_correlation", "plot_trajectory", "write_outputs",
    "load_definition", "TRAJECTORY_FILE", "BEST_TEMPLATE_FILE", "BEST_DEFINITION_FILE", "PLOT_FILE",
    "RESULT_FILE",
]

TRAJECTORY_FILE = "trajectory.jsonl"
BEST_TEMPLATE_FILE = "best_template.yaml"
BEST_DEFINITION_FILE = "best_definition.txt"
PLOT_FILE = "trajectory.png"
RESULT_FILE = "result.json"

#: kinds of optimiser failure recorded in the trajectory
FAILURE_KINDS: tuple[str, ...] = ("timeout", "http", "error", "empty", "duplicate", "too_long")

#: the optimiser's system message (DS-IEQA prints none; written for ieqa)
OPTIMIZER_SYSTEM = ("You improve the wording of evaluation criteria for an automatic image "
                    "editing quality assessor. You answer with one definition only.")

#: the optimiser's user message; placeholders: {dimension}, {Dimension}, {low}, {high},
#: {n_samples}, {history} (one "V_d = x: definition" line per trial, lowest V_d first),
#: {best_definition}, {best_value}, {n_trials}, {max_chars}
OPTIMIZER_PROMPT = """\
A multimodal model judges image edits. It sees a source image, the edited image and the \
editing instruction, and answers "{Dimension} score: X.XX" on a scale from {low} to {high}. \
Its system prompt holds a definition of {dimension}, and the wording of that definition \
changes how well the model's scores match human ratings.

Each definition below was measured by its Definition Value V_d (from 0 to 1.11, higher is \
better): the probability the model gives to the digits of the human ratings, averaged over \
{n_samples} rated edits.

The {n_trials} definitions tried so far, from the lowest V_d to the highest:
{history}

The best so far (V_d = {best_value}):
{best_definition}

Write one new definition of {dimension} that you expect to reach a higher V_d than every \
definition above. It must differ from all of them and be at most {max_chars} characters \
long. Reply with the definition only, between <definition> and </definition>."""

#: appended to the user message after rejected answers: the header, then one
#: :data:`RETRY_LINE` per rejected answer of this proposal
RETRY_NOTE = "\n\nYour previous answers were rejected; write a different definition:"
#: one rejected answer; {attempt}, {kind}, {reason}
RETRY_LINE = "\n- attempt {attempt} was rejected ({kind}): {reason}"

_PROMPT_FIELDS = frozenset({"dimension", "Dimension", "low", "high", "n_samples", "history",
                            "best_definition", "best_value", "n_trials", "max_chars"})
_TAGGED = re.compile(r"<definition>(.*?)(?:</definition>|$)", re.S | re.I)


class FDMPOError(IeqaError, ValueError):
    """FDMPO cannot run as asked (the message says what to change)."""


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


# ------------------------------------------------------------------------ optimisers
def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, Mapping):
        return None
    p, c = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if isinstance(p, int) and isinstance(c, int):
        return {"prompt_tokens": p, "completion_tokens": c}
    return None


class ChatOptimizer:
    """An optimiser served by an OpenAI-compatible ``/chat/completions`` endpoint.

    Uses :class:`ieqa.backends.OpenAICompatBackend` (its per-request timeout, retries with
    backoff on timeouts / 429 / 5xx, and error messages). Token usage comes from the
    answer's ``usage`` field; a server without one leaves it unknown.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1``.
        model: the served model's name.
        timeout_s: limit of each network operation, in seconds (> 0).
        max_retries: transport retries of one call (>= 0) before it counts as a failure.
        max_new_tokens: most tokens of one answer.
        temperature: sampling temperature (0: greedy, the deterministic choice).
        seed: sampling seed sent with each call (``None``: none).
        backend_options: further :class:`OpenAICompatBackend` arguments.
    """

    def __init__(self, base_url: str, model: str, *, timeout_s: float = 120.0,
                 max_retries: int = 2, max_new_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None, backend_options: Mapping[str, Any] | None = None
                 ) -> None:
        from ieqa.backends.openai_compat import OpenAICompatBackend

        self.backend = OpenAICompatBackend(base_url, model, timeout_s=timeout_s,
                                           max_retries=max_retries, max_concurrency=1,
                                           **dict(backend_options or {}))
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.seed = seed

    def config(self) -> dict[str, Any]:
        return {"kind": "chat", **self.backend.config(), "max_new_tokens": self.max_new_tokens,
                "temperature": self.temperature, "seed": self.seed}

    def __call__(self, messages: Sequence[Mapping[str, str]]) -> OptimizerReply:
        from ieqa.backends.base import Prompt

        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        gen = self.backend.generate([Prompt(parts=(user,), system=system)],
                                    max_new_tokens=self.max_new_tokens,
                                    temperature=self.temperature, seed=self.seed)[0][0]
        usage = _usage(gen.raw.get("usage"))
        if gen.error is not None:
            kind = "timeout" if "timeout" in gen.error.lower() else "http"
            raise OptimizerError(gen.error, kind, usage)
        return OptimizerReply(gen.text, usage)

    def close(self) -> None:
        self.backend.close()


class LocalOptimizer:
    """An optimiser run in-process: a transformers causal LM from a local folder (or a hub
    id where the network allows), greedy decoding, exact token counts as usage.

    Args:
        path: the model folder (``config.json``, weights, tokenizer).
        max_new_tokens: most tokens of one answer.
        device: ``"cpu"``, ``"cuda"``... (default: CUDA when available).
    """

    def __init__(self, path: str | Path, *, max_new_tokens: int = 512,
                 device: str | None = None) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - torch/transformers are core here
            raise FDMPOError(f"--optimizer-local needs torch and transformers ({exc})") from None
        self.path = str(path)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
            self.model = AutoModelForCausalLM.from_pretrained(self.path).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise FDMPOError(f"cannot load the optimiser model {self.path!r} as a causal LM: "
                             f"{exc}") from None
        self.max_new_tokens = int(max_new_tokens)

    def config(self) -> dict[str, Any]:
        return {"kind": "local", "path": self.path, "max_new_tokens": self.max_new_tokens}

    def __call__(self, messages: Sequence[Mapping[str, str]]) -> OptimizerReply:
        import torch

        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template([dict(m) for m in messages], tokenize=False,
                                           add_generation_prompt=True)
        else:
            text = "\n\n".join(m["content"] for m in messages) + "\n\n"
        ids = tok(text, return_tensors="pt", add_special_tokens=False).to(self.device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, pad_token_id=pad)
        new = out[0, ids["input_ids"].shape[1]:]
        return OptimizerReply(tok.decode(new, skip_special_tokens=True),
                              {"prompt_tokens": int(ids["input_ids"].shape[1]),
                               "completion_tokens": int(new.shape[0])})


# ------------------------------------------------------------------------ prompts
def _check_prompt(prompt: str) -> None:
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(prompt) if n is not None}
    except ValueError as exc:
        raise FDMPOError(f"optimiser prompt: {exc} (write literal braces as '{{{{' and "
                         "'}}}}')") from None
    unknown = sorted(names - _PROMPT_FIELDS)
    if unknown:
        raise FDMPOError(f"optimiser prompt: unknown placeholder(s) {unknown}; known: "
                         f"{', '.join(sorted(_PROMPT_FIELDS))}")
    if "history" not in names:
        raise FDMPOError("optimiser prompt: it must show the trials through {history}")


def _ranked(trials: Sequence[Trial]) -> list[Trial]:
    """Trials from the lowest V_d to the highest (ties: later iterations first, so the
    earliest of equals, the one selected, comes last)."""
    return sorted(trials, key=lambda t: (t.v_d, -t.iteration))


def render_optimizer_messages(dimension: str, trials: Sequence[Trial], *, n_samples: int,
                              scale: tuple[float, float] = (1, 5),
                              prompt: str = OPTIMIZER_PROMPT, system: str = OPTIMIZER_SYSTEM,
                              max_history: int = 20, max_chars: int = 2000,
                              label: str | None = None,
                              rejected: Sequence[Failure] = ()) -> list[dict[str, str]]:
    """The optimiser's chat messages for the next proposal.

    Args:
        dimension: the dimension (canonical name or alias).
        trials: the trials so far (at least one).
        n_samples: samples V_d is averaged over (shown to the optimiser).
        scale: the template's score range.
        prompt, system: the user and system texts (see :data:`OPTIMIZER_PROMPT`).
        max_history: show only the best this many trials (>= 1).
        max_chars: the longest definition accepted.
        label: the dimension's display name (default from the dimension).
        rejected: the failed attempts of this proposal, listed after :data:`RETRY_NOTE`
            (so a greedy optimiser sees a different prompt on each retry).
    """
    if not trials:
        raise FDMPOError("the optimiser needs at least one evaluated trial")
    _check_prompt(prompt)
    label = label or canonical_dimension(dimension).replace("_", " ")
    shown = _ranked(trials)[-max(1, max_history):]
    best = shown[-1]
    lo, hi = (f"{v:g}" for v in scale)
    user = prompt.format(
        dimension=label, Dimension=label[:1].upper() + label[1:], low=lo, high=hi,
        n_samples=n_samples, n_trials=len(trials), max_chars=max_chars,
        history="\n".join(f"V_d = {t.v_d:.4f}: {t.definition}" for t in shown),
        best_definition=best.definition, best_value=f"{best.v_d:.4f}")
    if rejected:
        user += RETRY_NOTE + "".join(RETRY_LINE.format(attempt=f.attempt, kind=f.failure,
                                                       reason=f.message) for f in rejected)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_definition(answer: str) -> str:
    """The definition in an optimiser answer: the text between ``<definition>`` and
    ``</definition>`` when the tag is there, else the whole answer; surrounding
    whitespace and quotes removed, inner whitespace runs collapsed to one space."""
    m = _TAGGED.search(answer)
    text = m.group(1) if m else answer
    text = " ".join(text.split())
    return text.strip().strip('"\u201c\u201d\'').strip()


def _norm(definition: str) -> str:
    return " ".join(definition.lower().split()).rstrip(".")


def definition_template(template: PromptTemplate, dimension: str, definition: str,
                        *, name: str | None = None) -> PromptTemplate:
    """``template`` with ``definition`` as its definition of ``dimension`` (in
    :attr:`PromptTemplate.definitions`); ``name`` renames it."""
    canon = canonical_dimension(dimension)
    changes: dict[str, Any] = {"definitions": {**template.definitions, canon: definition}}
    if name is not None:
        changes["name"] = name
    return dataclasses.replace(template, **changes)


def load_definition(source: str | Path, dimension: str) -> str:
    """The definition of ``dimension`` stored in an FDMPO output: its folder (read
    ``best_template.yaml``), a template file (``.yaml``/``.yml``/``.json``, its
    ``definitions`` entry) or a plain text file (``.txt``, the whole text).

    Raises :class:`FDMPOError` saying what is missing.
    """
    from ieqa.prompts.loading import load_template

    path = Path(source)
    canon = canonical_dimension(dimension)
    if path.is_dir():
        path = path / BEST_TEMPLATE_FILE
    if not path.exists():
        raise FDMPOError(f"{path}: no such file; point at the --out folder of `ieqa "
                         f"optimize-prompt --dimension {canon}` or at its {BEST_TEMPLATE_FILE}")
    if path.suffix.lower() == ".txt":
        text = " ".join(path.read_text(encoding="utf-8").split())
        if not text:
            raise FDMPOError(f"{path}: the definition file is empty")
        return text
    template = load_template(path)
    if canon not in template.definitions:
        have = ", ".join(template.definitions) or "none"
        raise FDMPOError(f"{path}: the template defines no {canon!r} (it defines: {have}); "
                         f"run `ieqa optimize-prompt --dimension {canon}` and point at its "
                         "output")
    return template.definitions[canon]


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


def _pending_proposal(path: Path, n_trials: int) -> dict[str, Any] | None:
    """The accepted proposal of iteration ``n_trials`` (the next one) when the run
    stopped before its V_d was measured, else ``None``."""
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if '"proposal"' in line:
            row = json.loads(line)
            if row.get("kind") == "proposal" and row["iteration"] == n_trials:
                found = row
    return found


def _append(path: Path, row: Mapping[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.flush()


def _add_usage(total: dict[str, int], usage: Mapping[str, int] | None) -> None:
    total["calls"] = total.get("calls", 0) + 1
    if usage is None:
        total["calls_without_usage"] = total.get("calls_without_usage", 0) + 1
        return
    for key in ("prompt_tokens", "completion_tokens"):
        total[key] = total.get(key, 0) + int(usage[key])


def _empty_usage() -> dict[str, int]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "calls_without_usage": 0}


# ------------------------------------------------------------------------ evaluation
class _Feedback:
    """V_d (and validation correlations) of candidate definitions with one scorer."""

    def __init__(self, scorer: Any, dimension: str, samples: Sequence[EditSample],
                 validation: Sequence[EditSample] | None, data_scale: tuple[float, float],
                 template: PromptTemplate) -> None:
        from ieqa.prompts.answers import digits_target

        self.scorer, self.dimension, self.template = scorer, dimension, template
        if tuple(getattr(scorer, "score_dimensions", (dimension,))) != (dimension,):
            from ieqa.scorers.catalog import create_scorer

            # V_d of the optimised dimension only (the others need no ground truth)
            self.scorer = create_scorer("vlm-digits", backend=scorer.backend,
                                        template=template, dimensions=[dimension],
                                        batch_size=scorer.batch_size)
        scale = template.scale or (1, 5)
        self.samples = list(samples)
        self.targets = {s.id: {dimension: float(digits_target(
            s.scores[dimension], scale=data_scale, template_scale=scale))}
            for s in self.samples}
        self.validation = list(validation or [])

    def evaluate(self, definition: str) -> tuple[float, dict[str, float] | None]:
        from ieqa.metrics.correlation import plcc, srcc
        from ieqa.scorers.catalog import create_scorer

        candidate = definition_template(self.template, self.dimension, definition)
        vd = self.scorer.definition_value(self.samples, self.targets, template=candidate)
        if not self.validation:
            return vd.mean, None
        judge = create_scorer("vlm-digits", backend=self.scorer.backend, template=candidate,
                              dimensions=[self.dimension], batch_size=self.scorer.batch_size)
        results = judge.score(self.validation)
        pairs = [(r.scores[self.dimension], s.scores[self.dimension])
                 for r, s in zip(results, self.validation, strict=True) if r.ok]
        if len(pairs) < 3:
            errors = sorted({r.error for r in results if not r.ok})[:3]
            raise FDMPOError(f"only {len(pairs)} of {len(results)} validation samples could "
                             f"be scored ({'; '.join(map(str, errors))})")
        pred, truth = [p for p, _ in pairs], [t for _, t in pairs]
        s, p = _corr(srcc, pred, truth), _corr(plcc, pred, truth)
        score = (s + p) / 2 if s is not None and p is not None else None
        return vd.mean, {"srcc": s, "plcc": p, "score": score, "n": len(pairs),
                         "errors": len(results) - len(pairs)}


def _corr(fn: Callable[..., float], pred: Sequence[float], truth: Sequence[float]
          ) -> float | None:
    """``fn(pred, truth)``, or ``None`` when it is undefined (a constant input)."""
    from ieqa.metrics._checks import MetricInputError

    try:
        value = fn(pred, truth)
    except MetricInputError:
        return None
    return None if math.isnan(value) else float(value)


def _data_scale(samples: Sequence[EditSample], dimension: str,
                given: tuple[float, float] | None) -> tuple[float, float]:
    from ieqa.train.data import _scale

    values = [float(s.scores[dimension]) for s in samples if dimension in s.scores
              and not math.isnan(float(s.scores[dimension]))]
    ranges = {dimension: (min(values), max(values))} if values else {}
    return _scale(samples, given, ranges)


def _pick(samples: Sequence[EditSample], dimension: str, n: int | None, seed: int,
          what: str) -> list[EditSample]:
    labelled = [s for s in samples if dimension in s.scores
                and not math.isnan(float(s.scores[dimension]))]
    if not labelled:
        raise FDMPOError(f"the {what} samples carry no {dimension!r} scores; FDMPO needs "
                         "samples rated on the optimised dimension")
    if n is not None and n < len(labelled):
        labelled = random.Random(seed).sample(labelled, n)
    return labelled


# ------------------------------------------------------------------------ the loop
def optimize(scorer: Any, optimizer: Callable[[list[dict[str, str]]], str | OptimizerReply],
             samples: Sequence[EditSample], *, dimension: str, iterations: int = 10,
             n_samples: int | None = 64, validation: Sequence[EditSample] | None = None,
             initial_definition: str | None = None, template: Any = None,
             out_dir: str | Path | None = None, resume: bool = True,
             max_failures: int = 10, max_definition_chars: int = 2000,
             max_history: int = 20, optimizer_prompt: str = OPTIMIZER_PROMPT,
             optimizer_system: str = OPTIMIZER_SYSTEM,
             data_scale: tuple[float, float] | None = None, seed: int = 0,
             plot: bool = True, on_event: Callable[[dict[str, Any]], None] | None = None,
             ) -> FDMPOResult:
    """Run FDMPO for one dimension (see the module docstring).

    Args:
        scorer: the feedback model: a :class:`~ieqa.scorers.vlm.digits.DigitsScorer`
            (anything with its ``definition_value(samples, targets, template=...)``).
        optimizer: ``optimizer(messages) -> str | OptimizerReply``; raise
            :class:`OptimizerError` (or any exception; ``TimeoutError`` counts as a
            timeout) when it cannot answer.
        samples: labelled samples; V_d is averaged over ``n_samples`` of them (chosen
            once with ``seed``; ``None``: all) that carry a ``dimension`` score.
        dimension: the dimension whose definition is optimised.
        iterations: proposals to evaluate after the initial definition (>= 0).
        validation: held-out labelled samples; each trial's SRCC / PLCC / (SRCC+PLCC)/2
            of the readout on them is recorded (optional, costs one scoring pass).
        initial_definition: the starting definition (default: the template's).
        template: base template (name, file, dict or object; default: the scorer's). It
            must use ``{definition}``.
        out_dir: folder for ``trajectory.jsonl`` (appended as the run goes), the plot,
            ``best_template.yaml``, ``best_definition.txt`` and ``result.json``.
        resume: continue the ``trajectory.jsonl`` in ``out_dir`` when there is one
            (its settings must match); ``False`` starts it afresh.
        max_failures: optimiser failures allowed over the whole run (>= 0); when they
            run out the loop stops early (``complete=False``).
        max_definition_chars: longest accepted definition, in characters.
        max_history: trials shown to the optimiser (the best ones).
        optimizer_prompt, optimizer_system: the optimiser's texts (see
            :data:`OPTIMIZER_PROMPT` for the placeholders).
        data_scale: ``(low, high)`` of the samples' scores (default: their meta
            ``score_scale``, else the observed range); rescaled onto the template's scale.
        seed: seed of the sample choice.
        plot: draw ``trajectory.png`` (needs matplotlib; skipped with a note otherwise).
        on_event: called with each trial / failure record as it happens.

    Raises:
        FDMPOError: bad arguments, a template without ``{definition}``, or a trajectory
            that belongs to another run.
    """
    from ieqa.scorers.vlm.base import resolve_template

    if iterations < 0 or max_failures < 0 or max_definition_chars < 1:
        raise FDMPOError("iterations and max_failures must be >= 0 and "
                         "max_definition_chars >= 1")
    if n_samples is not None and n_samples < 1:
        raise FDMPOError(f"n_samples must be >= 1 (or None for all), got {n_samples}")
    _check_prompt(optimizer_prompt)
    dim = canonical_dimension(dimension)
    base = resolve_template(template) if template is not None else scorer.template
    if "definition" not in base.placeholders:
        raise FDMPOError(f"template {base.name!r} has no {{definition}} placeholder, so the "
                         "definition cannot change the prompt; use ds-ieqa-digits or add "
                         "{definition} to your template")
    if base.output != "digits":
        raise FDMPOError(f"template {base.name!r} answers {base.output!r}; V_d reads the "
                         "digits of 'X.XX' answers: use a digits template (ds-ieqa-digits)")
    chosen = _pick(samples, dim, n_samples, seed, "optimisation")
    valid = _pick(validation, dim, None, seed, "validation") if validation else None
    scale = _data_scale([*samples, *(validation or [])], dim, data_scale)
    start = " ".join((initial_definition or base.definition(dim)).split())
    feedback = _Feedback(scorer, dim, chosen, valid, scale, base)

    header = {"dimension": dim, "template": base.name, "template_digest": base.digest,
              "initial_definition": start, "samples": sorted(s.id for s in chosen),
              "validation": sorted(s.id for s in valid) if valid else [],
              "data_scale": list(scale), "iterations": iterations,
              "max_failures": max_failures, "max_definition_chars": max_definition_chars,
              "seed": seed, "scorer": _scorer_config(scorer)}
    trials: list[Trial] = []
    failures: list[Failure] = []
    pending: dict[str, Any] | None = None
    traj: Path | None = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        traj = out / TRAJECTORY_FILE
        if resume and traj.exists():
            text = traj.read_text(encoding="utf-8")
            if text and not text.endswith("\n"):  # a line cut short by an interruption
                traj.write_text(text[:text.rfind("\n") + 1], encoding="utf-8")
            old, trials, failures = read_trajectory(traj)
            _check_header(old, header, traj)
            pending = _pending_proposal(traj, len(trials))
        else:
            traj.write_text(json.dumps({"kind": "run", **header}, ensure_ascii=False) + "\n",
                            encoding="utf-8")

    def record(item: Trial | Failure) -> None:
        (trials if isinstance(item, Trial) else failures).append(item)  # type: ignore[arg-type]
        row = item.to_json()
        if traj is not None:
            _append(traj, row)
        if on_event is not None:
            on_event(row)

    if not trials:
        t0 = time.perf_counter()
        vd, val = feedback.evaluate(start)
        record(Trial(0, start, vd, val, "initial", 0, _empty_usage(),
                     round(time.perf_counter() - t0, 3)))

    complete = True
    while len(trials) <= iterations:
        iteration = len(trials)
        usage = _empty_usage()
        attempt, rejected = 0, []
        for f in failures:  # resumed mid-iteration: its failures count as attempts
            if f.iteration == iteration:
                attempt += 1
                rejected.append(f)
                _add_usage(usage, f.usage)
        accepted = None
        if pending is not None:  # accepted before an interruption; V_d still to measure
            accepted, attempt, usage = pending["definition"], pending["attempt"], pending["usage"]
            pending = None
        while accepted is None:
            if len(failures) >= max_failures:
                break
            messages = render_optimizer_messages(
                dim, trials, n_samples=len(chosen), scale=base.scale or (1, 5),
                prompt=optimizer_prompt, system=optimizer_system, max_history=max_history,
                max_chars=max_definition_chars, label=base.label(dim), rejected=rejected)
            attempt += 1
            answer, call_usage = None, None
            try:
                reply = optimizer(messages)
                if isinstance(reply, OptimizerReply):
                    answer, call_usage = reply.text, reply.usage
                else:
                    answer = reply
                if not isinstance(answer, str):
                    raise OptimizerError(f"the optimiser returned {type(answer).__name__}, "
                                         "not text")
            except OptimizerError as exc:
                fail = Failure(iteration, attempt, exc.kind, str(exc), answer, exc.usage)
            except TimeoutError as exc:
                fail = Failure(iteration, attempt, "timeout", f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # a user's client: recorded, never silent
                fail = Failure(iteration, attempt, "error", f"{type(exc).__name__}: {exc}")
            else:
                fail = _check_answer(answer, trials, iteration, attempt, max_definition_chars,
                                     call_usage)
                if fail is None:
                    _add_usage(usage, call_usage)
                    accepted = parse_definition(answer)
                    if traj is not None:  # a resumed run measures it without asking again
                        _append(traj, {"kind": "proposal", "iteration": iteration,
                                       "attempt": attempt, "definition": accepted,
                                       "usage": usage})
                    break
            _add_usage(usage, fail.usage)
            record(fail)
            rejected.append(fail)
        if accepted is None:
            complete = False
            break
        t0 = time.perf_counter()
        vd, val = feedback.evaluate(accepted)
        record(Trial(iteration, accepted, vd, val, "optimizer", attempt, usage,
                     round(time.perf_counter() - t0, 3)))

    best = _ranked(trials)[-1]
    best_template = definition_template(
        base, dim, best.definition, name=_best_name(base.name, dim))
    total = _empty_usage()
    for t in trials[1:]:
        for key in total:
            total[key] += t.usage.get(key, 0)
    for f in failures:
        if f.iteration >= len(trials):  # failures of the iteration that never finished
            _add_usage(total, f.usage)
    result = FDMPOResult(dim, trials, failures, best, best_template, total, complete)
    if out_dir is not None:
        result.out_dir = Path(out_dir)
        result.notes.extend(write_outputs(result, plot=plot))
    return result


def _check_answer(answer: str, trials: Sequence[Trial], iteration: int, attempt: int,
                  limit: int, usage: dict[str, int] | None) -> Failure | None:
    definition = parse_definition(answer)
    if not definition:
        return Failure(iteration, attempt, "empty", "the answer holds no definition",
                       answer, usage)
    if len(definition) > limit:
        return Failure(iteration, attempt, "too_long",
                       f"the definition has {len(definition)} characters, over the limit of "
                       f"{limit}", answer[:limit + 200], usage)
    key = _norm(definition)
    for t in trials:
        if _norm(t.definition) == key:
            return Failure(iteration, attempt, "duplicate",
                           f"the definition repeats trial {t.iteration} (V_d = {t.v_d:.4f})",
                           answer, usage)
    return None


def _best_name(base: str, dim: str) -> str:
    return re.sub(r"[^a-z0-9_.\-]", "-", f"{base}-fdmpo-{dim}".lower())


def _scorer_config(scorer: Any) -> dict[str, Any]:
    try:
        config = scorer.config()
    except Exception:  # noqa: BLE001 - a user's scorer without a usable config
        return {"type": type(scorer).__name__}
    backend = config.get("backend", {}) if isinstance(config, dict) else {}
    return {"readout": config.get("readout"), "model": backend.get("model_id")
            or backend.get("model") or backend.get("name")}


def _check_header(old: dict[str, Any] | None, new: dict[str, Any], path: Path) -> None:
    if old is None:
        raise FDMPOError(f"{path} has no run header line; start fresh (--fresh) or use "
                         "another --out folder")
    keys = ("dimension", "template_digest", "initial_definition", "samples", "validation",
            "data_scale", "max_definition_chars", "seed")
    changed = [k for k in keys if old.get(k) != new.get(k)]
    if changed:
        raise FDMPOError(f"{path} belongs to a run with other settings ({', '.join(changed)} "
                         "differ); resume with the same settings, use another --out folder, "
                         "or start fresh (--fresh)")


# ------------------------------------------------------------------------ outputs
def vd_validation_correlation(trials: Sequence[Trial]) -> dict[str, float | None] | None:
    """How V_d tracks the held-out performance over the trials: Spearman and Pearson
    correlation between each trial's V_d and its validation SRCC (``None`` entries when
    undefined; ``None`` with fewer than 3 validated trials)."""
    from ieqa.metrics.correlation import plcc, srcc

    vals = [(t.v_d, t.validation["srcc"]) for t in trials
            if t.validation and t.validation.get("srcc") is not None]
    if len(vals) < 3:
        return None
    a, b = [x for x, _ in vals], [y for _, y in vals]
    return {"spearman": _corr(srcc, a, b), "pearson": _corr(plcc, a, b), "trials": len(vals)}


def plot_trajectory(result: FDMPOResult, path: str | Path) -> Path:
    """PNG of V_d per iteration (best marked) and, when recorded, the validation
    (SRCC+PLCC)/2 and SRCC on a second axis. Needs matplotlib (the ``plot`` extra)."""
    from ieqa.bench.report import _new_figure

    fig = _new_figure((7.0, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    its = [t.iteration for t in result.trials]
    ax.plot(its, [t.v_d for t in result.trials], "o-", color="tab:blue", label="V_d")
    ax.plot([result.best.iteration], [result.best.v_d], "*", color="tab:red", markersize=14,
            label=f"best V_d (iteration {result.best.iteration})")
    ax.set_xlabel("iteration")
    ax.set_ylabel("Definition Value V_d", color="tab:blue")
    handles, labels = ax.get_legend_handles_labels()
    if any(t.validation for t in result.trials):
        ax2 = ax.twinx()
        pts = [(t.iteration, t.validation) for t in result.trials if t.validation]
        nan = float("nan")
        ax2.plot([i for i, _ in pts], [nan if v["score"] is None else v["score"] for _, v in pts],
                 "s--", color="tab:green", label="validation (SRCC+PLCC)/2")
        ax2.plot([i for i, _ in pts], [nan if v["srcc"] is None else v["srcc"] for _, v in pts],
                 "^:", color="tab:olive", label="validation SRCC")
        ax2.set_ylabel("validation correlation", color="tab:green")
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
              fontsize=8, frameon=False)
    ax.set_title(f"FDMPO trajectory: {result.dimension}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    return path


def write_outputs(result: FDMPOResult, *, plot: bool = True) -> list[str]:
    """Write ``best_template.yaml``, ``best_definition.txt``, ``result.json`` and (with
    ``plot``) ``trajectory.png`` into ``result.out_dir``; returns notes (e.g. a plot
    skipped because matplotlib is missing)."""
    import yaml

    if result.out_dir is None:
        raise FDMPOError("the result has no out_dir")
    out = result.out_dir
    notes = []
    data = result.template.to_dict()
    data["description"] = (f"{data['description']} FDMPO: definition of {result.dimension} "
                           f"optimised (V_d {result.best.v_d:.4f} at iteration "
                           f"{result.best.iteration} of {len(result.trials) - 1}).").strip()
    (out / BEST_TEMPLATE_FILE).write_text(
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    (out / BEST_DEFINITION_FILE).write_text(result.best.definition + "\n", encoding="utf-8")
    summary = {"dimension": result.dimension, "best": dataclasses.asdict(result.best),
               "initial": dataclasses.asdict(result.trials[0]), "trials": len(result.trials),
               "complete": result.complete, "failures": result.failure_counts(),
               "usage": result.usage, "template": BEST_TEMPLATE_FILE}
    summary["vd_validation_correlation"] = vd_validation_correlation(result.trials)
    (out / RESULT_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    if plot:
        try:
            plot_trajectory(result, out / PLOT_FILE)
        except IeqaError as exc:  # matplotlib missing
            notes.append(f"no plot: {exc}")
    return notes
