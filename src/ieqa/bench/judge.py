"""GenAI-Bench judge result files (:class:`~ieqa.bench.genai_judge.JudgeResults`): the official
accuracy from ``model_vote`` with the exact rule of GenAI-Bench's ``parse_response`` (the
vote string must be exactly one of :data:`OFFICIAL_GENAI_VOTES`; ``[[A=B]]`` is right for
both tie kinds; ``null`` or any other string is wrong), the accuracy from re-parsing
``response`` with :func:`ieqa.prompts.answers.genai_bench_verdict`, how many items' verdicts differ, and
the coverage of the GenAI-Bench items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ieqa.bench._common import _MAX_MISSING_LISTED, _Settings, _settings
from ieqa.bench.errors import BenchError
from ieqa.bench.genai_judge import JudgeResults
from ieqa.bench.pairs import _Pairs, _with_subsets
from ieqa.bench.protocols import protocol_for
from ieqa.bench.results import BenchResult, Coverage, MetricRow
from ieqa.data.loaders.base import BenchmarkData
from ieqa.metrics import genai_bench_correct, pairwise_accuracy_genai
from ieqa.prompts.answers import genai_bench_verdict

__all__ = ["OFFICIAL_GENAI_VOTES", "evaluate_judge_results"]

#: The ``model_vote`` strings GenAI-Bench's ``parse_response`` compares against (exactly).
OFFICIAL_GENAI_VOTES = frozenset(
    ("[[A>B]]", "[[A>>B]]", "[[B>A]]", "[[B>>A]]", "[[A=B]]", "[[A=B=Good]]", "[[A=B=Bad]]"))


def _official_verdict(model_vote: str | None) -> str | None:
    """The normalised verdict of ``model_vote`` under GenAI-Bench's exact-string rule
    (``None`` unless the vote is one of :data:`OFFICIAL_GENAI_VOTES`)."""
    return genai_bench_verdict(model_vote) if model_vote in OFFICIAL_GENAI_VOTES else None


def evaluate_judge_results(results: JudgeResults, bench: BenchmarkData | None = None, *,
                           n_boot: int = 0, seed: int = 0, ci: float = 0.95) -> BenchResult:
    """GenAI-Bench leaderboard accuracy of a judge's result file, two ways.

    ``accuracy_official``: from ``model_vote`` with the exact rule of GenAI-Bench's
    ``parse_response`` (see the module docstring) — what the official leaderboard
    prints. ``accuracy_reparsed``: from each ``response`` re-parsed with
    :func:`ieqa.prompts.answers.genai_bench_verdict` (last bracketed verdict; spaces and case ignored).
    ``verdicts_differ``: items whose two normalised verdicts differ. Both accuracies are
    also given per human vote (``subset``). With ``bench`` (the GenAI-Bench items),
    coverage and the human votes are checked against it.
    """
    st = _settings("raise", 0.0, n_boot, seed, ci, None, True)
    specs, _ = protocol_for("genai-bench", "judge")
    votes = np.asarray(results.human_votes)
    official = np.asarray([_official_verdict(r.model_vote) for r in results], dtype=object)
    reparsed = np.asarray(results.verdicts(from_response=True), dtype=object)
    groups = np.asarray([str(r.idx) for r in results])
    pr = _Pairs(np.zeros(len(votes)), np.zeros(len(votes)), np.zeros(len(votes), np.int8), votes,
                groups, None, groups, groups)

    def acc_of(verdicts: np.ndarray) -> Callable[[np.ndarray, Any], float]:
        def acc(idx: np.ndarray, _ids: Any = None) -> float:
            return pairwise_accuracy_genai(votes[idx].tolist(), verdicts[idx].tolist())

        return acc

    rows = _with_subsets("accuracy_official", "overall", pr, st, acc_of(official), votes,
                         "model_vote, exact official strings")
    has_response = any(r.response is not None for r in results)
    if has_response:
        rows += _with_subsets("accuracy_reparsed", "overall", pr, st, acc_of(reparsed), votes,
                              "response re-parsed with ieqa.prompts.answers.genai_bench_verdict")
        differ = int(sum(a != b for a, b in zip(official, reparsed, strict=True)))
        rows.append(MetricRow("overall", "verdicts_differ", float(differ), n=len(votes),
                              note="items whose official and re-parsed verdicts differ",
                              unit="count"))
    else:
        st.notes.append("the results carry no 'response' text: only the official accuracy is "
                        "computed")
    _judge_notes(results, official, reparsed, has_response, st)
    coverage = _judge_coverage(results, bench, st)
    meta = {"n_boot": st.n_boot, "seed": st.seed, "ci": st.ci, "source": results.source,
            "official_votes": sorted(OFFICIAL_GENAI_VOTES),
            "bootstrap": "percentile over items" if st.n_boot else "off"}
    return BenchResult("genai-bench", "judge", rows, coverage, {}, specs, st.notes, meta)


def _judge_notes(results: JudgeResults, official: np.ndarray, reparsed: np.ndarray,
                 has_response: bool, st: _Settings) -> None:
    odd = [r.model_vote for r in results
           if r.model_vote is not None and r.model_vote not in OFFICIAL_GENAI_VOTES]
    if odd:
        lenient = sum(genai_bench_verdict(v) is not None for v in odd)
        st.notes.append(f"{len(odd)} model_vote values are not one of the official strings "
                        f"(e.g. {odd[0]!r}); the official rule counts them wrong ({lenient} of "
                        "them hold a verdict ieqa's parser would read)")
    n_null = sum(v is None for v in official)
    st.notes.append(f"no usable official verdict for {n_null} of {len(official)} items "
                    "(counted wrong)")
    if has_response:
        st.notes.append(f"no verdict found in the response of {sum(v is None for v in reparsed)} "
                        "items (counted wrong)")
    flags = [r.meta.get("correct") for r in results]
    if all(isinstance(f, bool) for f in flags):
        ours = [genai_bench_correct(r.human_vote, v)
                for r, v in zip(results, official, strict=True)]
        mismatch = sum(a != b for a, b in zip(ours, flags, strict=True))
        st.notes.append("the file's own 'correct' flags agree with the official rule on every item"
                        if not mismatch else
                        f"the file's own 'correct' flags disagree with the official rule on "
                        f"{mismatch} items")


def _judge_coverage(results: JudgeResults, bench: BenchmarkData | None, st: _Settings) -> Coverage:
    if bench is None:
        return Coverage(len(results), len(results))
    items = {p.meta.get("idx"): p for p in bench.preferences if p.meta.get("idx") is not None}
    if not items:
        raise BenchError(f"{bench.name} has no GenAI-Bench item indices (preference.meta['idx']); "
                         "judge results are matched to the items by idx")
    by_idx = results.by_idx()
    lost = sorted(i for i in items if i not in by_idx)
    unused = sum(1 for i in by_idx if i not in items)
    if lost:
        st.notes.append(f"{len(lost)} of {len(items)} GenAI-Bench items have no judge result")
    if unused:
        st.notes.append(f"{unused} judge results have an idx that is not an item of {bench.name}")
    clash = sum(1 for i, r in by_idx.items() if i in items
                and items[i].meta.get("vote_type", r.human_vote) != r.human_vote)
    if clash:
        st.notes.append(f"{clash} judge results carry a human_vote that differs from the item's "
                        "vote_type: are the results from another split?")
    listed = [str(i) for i in lost[:_MAX_MISSING_LISTED]]
    return Coverage(len(items), len(items) - len(lost), listed, len(lost), unused)
