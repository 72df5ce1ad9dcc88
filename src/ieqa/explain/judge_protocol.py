"""EPAIQA's LLM-judge protocol for explanations (EPAIQA (001) appendix F).

A judge model compares each model explanation with the standard answer and gives four
scores, each 0, 1 or 2 by the rubric of the ``epaiqa-explain-judge`` template:

* **PA** — prompt-completion judgment; **LNA** — local-naturalness analysis;
* **GHA** — global-harmony analysis; **Overall** — overall level and reasoning.

Per sample the judge is asked ``votes`` times (5 in the paper; sampled, temperature 1 by
default). Per dimension the sample's score is the mode of its votes; when two values are
equally frequent (the 2/2/1 split of five votes) the highest of them is taken
(:func:`vote_mode`). LNA and GHA are left out for samples whose standard answer has no
naturalness / harmony analysis (the paper's Type-1 samples, where the edit did not follow
the prompt); they are still asked (one prompt gives all four) but not counted. The final
number per dimension is the mean over the samples counted, on the 0-2 scale; EPAIQA's
Table 4 prints values in [0, 1], consistent with that mean divided by 2 (ieqa's reading,
reported as ``mean_unit``).

A vote that cannot be read (no JSON object, a missing key, a value other than 0/1/2, a
backend error) is a recorded failure of that vote and that dimension — never guessed.
A sample's dimension is scored only when at least ``min_votes`` votes of it were readable
(default: all of them, the paper's protocol); otherwise it is a failure, counted, and
the coverage per dimension says how many counted samples got a score.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ieqa.errors import IeqaError
from ieqa.prompts.answers.judge_vote import JUDGE_DIMENSIONS, parse_judge_vote

__all__ = [
    "JUDGE_DIMENSIONS", "JUDGE_TEMPLATE", "SKIPPABLE", "JudgeItem", "JudgeProtocolError",
    "JudgeProtocolResult", "SampleJudgement", "aggregate_judgements", "judge_sample",
    "parse_judge_vote", "run_judge_protocol", "vote_mode",
]

#: The dimensions left out when the standard answer lacks that analysis -> the analysis.
SKIPPABLE: dict[str, str] = {"LNA": "naturalness", "GHA": "harmony"}
#: The prompt template the protocol uses by default.
JUDGE_TEMPLATE = "epaiqa-explain-judge"

Status = Literal["scored", "skipped", "failed"]


class JudgeProtocolError(IeqaError, ValueError):
    """The judge protocol cannot run with these arguments."""


def vote_mode(votes: Sequence[int]) -> int:
    """The most frequent vote; among equally frequent values the highest.

    With five votes on 0-2 the only tie is the 2/2/1 split, where EPAIQA takes "the
    highest score that appears twice": ``vote_mode([2, 2, 1, 1, 0]) == 2``,
    ``vote_mode([0, 0, 1, 1, 2]) == 1``.

    Raises:
        JudgeProtocolError: ``votes`` is empty.
    """
    if not votes:
        raise JudgeProtocolError("vote_mode needs at least one vote")
    counts = Counter(int(v) for v in votes)
    top = max(counts.values())
    return max(v for v, n in counts.items() if n == top)


@dataclass(frozen=True)
class JudgeItem:
    """One explanation to judge.

    Attributes:
        id: the sample id.
        response: the model's explanation.
        reference: the standard answer (ground-truth explanation).
        instruction: the editing instruction, shown to the judge when known.
        has_naturalness: whether the standard answer analyses local naturalness (else LNA
            is left out for this sample).
        has_harmony: whether the standard answer analyses harmony (else GHA is left out).
    """

    id: str
    response: str
    reference: str
    instruction: str | None = None
    has_naturalness: bool = True
    has_harmony: bool = True

    def applicable(self, dimension: str) -> bool:
        """Whether ``dimension`` counts for this sample (the skip rule)."""
        if dimension == "LNA":
            return self.has_naturalness
        if dimension == "GHA":
            return self.has_harmony
        return True


@dataclass
class SampleJudgement:
    """The protocol's outcome for one sample.

    Attributes:
        id: the sample id.
        votes: per dimension, every vote in order (``None``: unreadable).
        scores: per dimension, the mode of the votes, or ``None`` (skipped or failed).
        status: per dimension ``"scored"``, ``"skipped"`` (no such analysis in the
            standard answer) or ``"failed"`` (fewer readable votes than ``min_votes``).
        errors: why each unreadable vote failed, as ``"vote K: DIM: reason"``.
        answers: the judge's raw answers, one per vote.
    """

    id: str
    votes: dict[str, list[int | None]]
    scores: dict[str, int | None]
    status: dict[str, Status]
    errors: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return asdict(self)


def judge_sample(item: JudgeItem, answers: Sequence[str], *, answer_errors: Sequence[str | None]
                 | None = None, min_votes: int | None = None,
                 dimensions: Sequence[str] = JUDGE_DIMENSIONS) -> SampleJudgement:
    """Apply the voting rule and the skip rule to one sample's judge answers.

    Args:
        item: the sample (its ``has_*`` flags drive the skip rule).
        answers: the judge's answers, one per vote.
        answer_errors: per answer, a backend error (the vote then fails) or ``None``.
        min_votes: readable votes a dimension needs to be scored (default: all answers).
        dimensions: the dimensions to read.
    """
    n = len(answers)
    need = n if min_votes is None else int(min_votes)
    if need < 1:
        raise JudgeProtocolError(f"min_votes must be >= 1, got {min_votes}")
    errs = list(answer_errors) if answer_errors is not None else [None] * n
    if len(errs) != n:
        raise JudgeProtocolError("answer_errors needs one entry per answer")
    votes: dict[str, list[int | None]] = {d: [] for d in dimensions}
    messages: list[str] = []
    for k, (text, err) in enumerate(zip(answers, errs, strict=True), start=1):
        if err is not None:
            for d in dimensions:
                votes[d].append(None)
            messages.append(f"vote {k}: backend error: {err}")
            continue
        scores, problems = parse_judge_vote(text, dimensions)
        for d in dimensions:
            votes[d].append(scores.get(d))
        messages.extend(f"vote {k}: {d}: {why}" for d, why in problems.items())
    result_scores: dict[str, int | None] = {}
    status: dict[str, Status] = {}
    for d in dimensions:
        readable = [v for v in votes[d] if v is not None]
        if not item.applicable(d):
            result_scores[d], status[d] = None, "skipped"
        elif len(readable) >= need and readable:
            result_scores[d], status[d] = vote_mode(readable), "scored"
        else:
            result_scores[d], status[d] = None, "failed"
    return SampleJudgement(item.id, votes, result_scores, status, messages, list(answers))


@dataclass
class JudgeProtocolResult:
    """Per-dimension means of the protocol and what they rest on.

    Attributes:
        mean: per dimension, the mean score over the scored samples (0-2), ``nan`` if none.
        mean_unit: ``mean / 2`` in [0, 1] (the scale of EPAIQA's Table 4, ieqa's reading).
        n_scored / n_skipped / n_failed: samples per dimension in each status.
        coverage: per dimension, scored / (scored + failed), i.e. the share of the samples
            that count for that dimension which got a score.
        votes_total / votes_failed: judge answers asked and answers with at least one
            unreadable dimension (or a backend error).
        samples: the per-sample judgements.
        config: the settings (judge backend, template, votes, min_votes, temperature, seed).
    """

    mean: dict[str, float]
    mean_unit: dict[str, float]
    n_scored: dict[str, int]
    n_skipped: dict[str, int]
    n_failed: dict[str, int]
    coverage: dict[str, float]
    votes_total: int
    votes_failed: int
    samples: list[SampleJudgement]
    config: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: coverage per dimension and the failed votes."""
        parts = [f"{d} {self.n_scored[d]}/{self.n_scored[d] + self.n_failed[d]}"
                 + (f" ({self.n_skipped[d]} skipped)" if self.n_skipped[d] else "")
                 for d in self.mean]
        return (f"judge coverage: {', '.join(parts)}; {self.votes_failed} of "
                f"{self.votes_total} votes unreadable")

    def to_dict(self, with_samples: bool = True) -> dict[str, Any]:
        """JSON-serialisable (``nan`` -> ``None``)."""
        def clean(d: Mapping[str, float]) -> dict[str, float | None]:
            return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in d.items()}
        out: dict[str, Any] = {
            "mean": clean(self.mean), "mean_unit": clean(self.mean_unit),
            "n_scored": self.n_scored, "n_skipped": self.n_skipped, "n_failed": self.n_failed,
            "coverage": clean(self.coverage), "votes_total": self.votes_total,
            "votes_failed": self.votes_failed, "config": self.config}
        if with_samples:
            out["samples"] = [s.to_dict() for s in self.samples]
        return out


def aggregate_judgements(samples: Iterable[SampleJudgement],
                         dimensions: Sequence[str] = JUDGE_DIMENSIONS,
                         config: Mapping[str, Any] | None = None) -> JudgeProtocolResult:
    """Average the per-sample scores per dimension (skipped and failed samples left out)."""
    samples = list(samples)
    mean, unit, n_sc, n_sk, n_f, cov = {}, {}, {}, {}, {}, {}
    for d in dimensions:
        scored = [s.scores[d] for s in samples if s.status.get(d) == "scored"]
        n_sc[d] = len(scored)
        n_sk[d] = sum(s.status.get(d) == "skipped" for s in samples)
        n_f[d] = sum(s.status.get(d) == "failed" for s in samples)
        mean[d] = math.fsum(scored) / len(scored) if scored else math.nan  # type: ignore[arg-type]
        unit[d] = mean[d] / 2
        counted = n_sc[d] + n_f[d]
        cov[d] = n_sc[d] / counted if counted else math.nan
    total = sum(len(s.answers) for s in samples)
    failed = 0
    for s in samples:
        for k in range(len(s.answers)):
            if any(s.votes[d][k] is None for d in dimensions):
                failed += 1
    return JudgeProtocolResult(mean, unit, n_sc, n_sk, n_f, cov, total, failed, samples,
                               dict(config or {}))


def run_judge_protocol(items: Sequence[JudgeItem], backend: Any, *, votes: int = 5,
                       min_votes: int | None = None, temperature: float = 1.0,
                       max_new_tokens: int = 512, seed: int | None = None,
                       template: Any = JUDGE_TEMPLATE) -> JudgeProtocolResult:
    """Run EPAIQA's judge protocol over ``items`` with any :class:`~ieqa.backends.VLMBackend`.

    Args:
        items: the explanations with their standard answers.
        backend: the judge (``OpenAICompatBackend`` for o3-mini-like APIs or a local
            server, ``TransformersVLM`` for a local checkpoint); built with
            :func:`ieqa.backends.make_backend`.
        votes: judge answers per sample (5 in the paper), >= 1.
        min_votes: readable votes a dimension needs (default: ``votes``); 1 <= min_votes
            <= votes.
        temperature: sampling temperature of the votes (> 0 so that votes can differ;
            1.0, the default of the paper's o3-mini).
        max_new_tokens: answer length limit (tokens).
        seed: sampling seed passed to the backend (``None``: none).
        template: a template name or :class:`~ieqa.prompts.PromptTemplate` with
            ``{reference}``, ``{response}`` and ``{instruction}`` placeholders and no images.

    Returns:
        A :class:`JudgeProtocolResult`; unreadable votes are counted there, never guessed.
    """
    from ieqa.prompts import PromptTemplate, get_template

    if votes < 1:
        raise JudgeProtocolError(f"votes must be >= 1, got {votes}")
    if min_votes is not None and not 1 <= min_votes <= votes:
        raise JudgeProtocolError(f"min_votes must lie in [1, votes={votes}], got {min_votes}")
    if temperature < 0:
        raise JudgeProtocolError(f"temperature must be >= 0, got {temperature}")
    tpl = template if isinstance(template, PromptTemplate) else get_template(template)
    if tpl.images:
        raise JudgeProtocolError(f"template {tpl.name!r} shows images {list(tpl.images)}; the "
                                 "explanation judge is text-only")
    prompts = [tpl.render(instruction=it.instruction or tpl.defaults.get("instruction", ""),
                          images={}, reference=it.reference, response=it.response)
               for it in items]
    generations = backend.generate(prompts, max_new_tokens=max_new_tokens,
                                   temperature=temperature, num_samples=votes, seed=seed) \
        if prompts else []
    samples = []
    for item, gens in zip(items, generations, strict=True):
        samples.append(judge_sample(item, [g.text for g in gens],
                                    answer_errors=[g.error for g in gens], min_votes=min_votes))
    config = {"backend": getattr(backend, "name", type(backend).__name__), "template": tpl.name,
              "template_digest": tpl.digest, "votes": votes,
              "min_votes": votes if min_votes is None else min_votes,
              "temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed,
              "tie_rule": "mode; ties -> highest of the most frequent (EPAIQA 2/2/1 rule)",
              "skip_rule": "LNA/GHA left out where the reference has no naturalness/harmony "
                           "analysis"}
    return aggregate_judgements(samples, config=config)
