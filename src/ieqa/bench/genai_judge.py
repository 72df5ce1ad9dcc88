"""GenAI-Bench judge results (``pairwise.jsonl``: idx, human_vote, model_vote per row), as the
GenAI-Bench repository writes them: :func:`load_judge_results` reads them and
:meth:`JudgeResults.accuracy` scores them with GenAI-Bench's rule
(:func:`ieqa.metrics.pairwise_accuracy_genai`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    PathLike,
    read_records,
    row_error,
    row_guard,
)
from ieqa.data.loaders.genai_bench import JUDGE_FIELDS
from ieqa.metrics.preference import (
    HUMAN_VOTES,
    genai_bench_correct,
    pairwise_accuracy_genai,
)
from ieqa.prompts.answers import genai_bench_verdict

__all__ = ["JudgeRecord", "JudgeResults", "load_judge_results"]


@dataclass(frozen=True)
class JudgeRecord:
    """One judged GenAI-Bench item: the human vote, the official parser's ``model_vote``
    (e.g. ``"[[A>B]]"``, or ``None`` when it found no verdict) and the judge's full text."""

    idx: int
    human_vote: str
    model_vote: str | None
    response: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        """``model_vote`` normalised (``"A>B"``, ``"B>A"``, ``"A=B=Good"``, ``"A=B=Bad"``,
        ``"A=B"``), or ``None`` when it holds no verdict."""
        return genai_bench_verdict(self.model_vote)

    @property
    def correct(self) -> bool:
        """Whether ``model_vote`` matches the human vote (``None`` counts as wrong)."""
        return genai_bench_correct(self.human_vote, self.verdict)


@dataclass
class JudgeResults:
    """A judge's answers on GenAI-Bench, ready for :func:`pairwise_accuracy_genai`."""

    records: list[JudgeRecord]
    source: str | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[JudgeRecord]:
        return iter(self.records)

    @property
    def human_votes(self) -> list[str]:
        return [r.human_vote for r in self.records]

    def verdicts(self, from_response: bool = False) -> list[str | None]:
        """Normalised verdicts, from ``model_vote`` or (``from_response=True``) re-parsed
        from each full ``response`` with ieqa's parser (the last bracketed verdict)."""
        if from_response:
            return [genai_bench_verdict(r.response) for r in self.records]
        return [r.verdict for r in self.records]

    def accuracy(self, from_response: bool = False) -> float:
        """GenAI-Bench accuracy in [0, 1]; unparsed verdicts count as wrong."""
        return pairwise_accuracy_genai(self.human_votes, self.verdicts(from_response))

    def by_idx(self) -> dict[int, JudgeRecord]:
        return {r.idx: r for r in self.records}


def load_judge_results(path: PathLike) -> JudgeResults:
    """Read a GenAI-Bench judge result file (``pairwise.jsonl`` or ``pairwise.json``).

    Each record needs ``idx`` (int), ``human_vote`` (one of ``leftvote``, ``rightvote``,
    ``tievote``, ``bothbad_vote``) and ``model_vote`` (a verdict string or ``null``);
    ``response`` is kept when present and other fields go to ``meta``. Raises
    :class:`BenchmarkFormatError` naming the file and row of a malformed record, or of a
    repeated ``idx``.
    """
    path = Path(path)
    records: list[JudgeRecord] = []
    seen: set[int] = set()
    for where, row in read_records(path):
        with row_guard(path, where):
            if not isinstance(row, Mapping) or any(k not in row for k in JUDGE_FIELDS):
                got = sorted(row) if isinstance(row, Mapping) else type(row).__name__
                raise row_error(path, where, f"a judge result needs fields {list(JUDGE_FIELDS)} "
                                             f"(model_vote may be null), got {got}")
            idx = row["idx"]
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise row_error(path, where, f"idx must be an integer, got {idx!r}")
            if idx in seen:
                raise row_error(path, where, f"idx {idx} appears twice")
            seen.add(idx)
            vote = row["human_vote"]
            if vote not in HUMAN_VOTES:
                raise row_error(path, where, f"human_vote must be one of {list(HUMAN_VOTES)}, got {vote!r}")
            model_vote = row["model_vote"]
            if model_vote is not None and not isinstance(model_vote, str):
                raise row_error(path, where, f"model_vote must be a string or null, got {model_vote!r}")
            response = row.get("response")
            meta = {k: v for k, v in row.items() if k not in (*JUDGE_FIELDS, "response")}
            records.append(JudgeRecord(idx, vote, model_vote, None if response is None else str(response), meta))
    if not records:
        raise BenchmarkFormatError(f"{path}: no judge results found")
    return JudgeResults(records, str(path))
