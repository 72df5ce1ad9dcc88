"""Pairwise preference accuracy: judge verdicts (GenAI-Bench), numeric score pairs with
or without human ties, tie-calibrated accuracy (EditReward) and strict accuracy (EditScore).

All accuracies are fractions in [0, 1] (multiply by 100 for the papers' percentages).
Labels for numeric pairs: ``+1`` = a is better, ``-1`` = b is better, ``0`` = human tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ieqa.metrics.checks import (
    MetricInputError,
    as_1d,
    as_1d_float,
    check_choice,
    check_same_length,
    finite_mask,
)

# ------------------------------------------------------------------------ GenAI-Bench

VERDICTS = ("A>B", "B>A", "A=B=Good", "A=B=Bad", "A=B")
HUMAN_VOTES = ("leftvote", "rightvote", "tievote", "bothbad_vote")
# The verdicts each human vote accepts; "A=B" (tie of unspecified kind) matches both ties.
_ACCEPTS = {
    "leftvote": {"A>B"},
    "rightvote": {"B>A"},
    "tievote": {"A=B=Good", "A=B"},
    "bothbad_vote": {"A=B=Bad", "A=B"},
}


def _normalise_verdict(model_verdict: str | None) -> str | None:
    if model_verdict is None or model_verdict in VERDICTS:
        return model_verdict
    raise MetricInputError(
        f"model_verdict must be one of {', '.join(VERDICTS)} or None, got {model_verdict!r}: "
        "read a judge's text first with ieqa.prompts.answers.genai_bench_verdict "
        "(GenAI-Bench's re-parse) or parse_verdict (ieqa's reading)")


def genai_bench_correct(human_vote: str, model_verdict: str | None) -> bool:
    """Whether a judge verdict matches a GenAI-Bench human vote.

    ``human_vote`` is one of ``leftvote`` (A better), ``rightvote`` (B better), ``tievote``
    (both good) or ``bothbad_vote``. ``model_verdict`` is a normalised verdict (one of
    :data:`VERDICTS`; a judge's text is read first by
    :func:`ieqa.prompts.answers.genai_bench_verdict`). ``"A=B"`` is right for both tie
    kinds; ``None`` (unparsed) is always wrong.
    """
    if human_vote not in _ACCEPTS:
        raise MetricInputError(f"human_vote must be one of {HUMAN_VOTES}, got {human_vote!r}")
    verdict = _normalise_verdict(model_verdict)
    return verdict is not None and verdict in _ACCEPTS[human_vote]


def pairwise_accuracy_genai(
    human_votes: Sequence[str], model_verdicts: Sequence[str | None]
) -> float:
    """GenAI-Bench accuracy in [0, 1]: mean of :func:`genai_bench_correct` over items
    (unparsed verdicts count as wrong and stay in the denominator)."""
    votes, verdicts = list(human_votes), list(model_verdicts)
    if len(votes) != len(verdicts):
        raise MetricInputError(
            f"length mismatch: human_votes={len(votes)}, model_verdicts={len(verdicts)}"
        )
    if not votes:
        raise MetricInputError("human_votes is empty")
    correct = sum(genai_bench_correct(h, m) for h, m in zip(votes, verdicts, strict=True))
    return correct / len(votes)


# ----------------------------------------------------------------- numeric score pairs


def _labels(label: object, name: str = "label") -> np.ndarray:
    lab = as_1d_float(label, name)
    if not np.isin(lab, (-1.0, 0.0, 1.0)).all():
        raise MetricInputError(f"{name} values must be +1 (a better), -1 (b better) or 0 (tie)")
    return lab.astype(np.int8)


def pairwise_accuracy(
    score_a: object,
    score_b: object,
    label: object,
    *,
    ties: Literal["drop", "half", "wrong"] = "drop",
    pred_ties: Literal["wrong", "half"] = "wrong",
    higher_better: bool = True,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> float:
    """Fraction in [0, 1] of pairs whose human ``label`` the scores reproduce.

    A pair with ``label`` ±1 is right when ``sign(score_a - score_b) == label``; an exact
    prediction tie there counts 0 (``pred_ties="wrong"``, default) or 0.5 (``"half"``).
    Human ties (``label == 0``): ``ties="drop"`` leaves them out of the denominator
    (the usual "accuracy without ties"), ``"half"`` gives each 0.5 credit, ``"wrong"``
    keeps them as errors (a scalar score has no tie class; for a tie-aware threshold use
    :func:`tie_calibrated_accuracy`). NaN scores: see ``nan_policy``.
    """
    check_choice(ties, "ties", ("drop", "half", "wrong"))
    check_choice(pred_ties, "pred_ties", ("wrong", "half"))
    a, b = as_1d_float(score_a, "score_a"), as_1d_float(score_b, "score_b")
    lab = _labels(label)
    check_same_length({"score_a": a, "score_b": b, "label": lab})
    keep = finite_mask({"score_a": a, "score_b": b}, nan_policy)
    if keep is not None:
        a, b, lab = a[keep], b[keep], lab[keep]
    delta = a - b if higher_better else b - a
    sign = np.sign(delta)
    decisive = lab != 0
    credit = np.where(
        sign == lab, 1.0, np.where(sign == 0, 0.5 if pred_ties == "half" else 0.0, 0.0)
    )
    credit = np.where(decisive, credit, 0.5 if ties == "half" else 0.0)
    counted = decisive if ties == "drop" else np.ones_like(decisive)
    n = int(counted.sum())
    if n == 0:
        raise MetricInputError("no pairs left to score (all human ties with ties='drop'?)")
    return float(credit[counted].sum() / n)


def _delta_label(delta: object, label: object, names: tuple[str, str]) -> tuple:
    d = as_1d_float(delta, names[0])
    lab = _labels(label, names[1])
    check_same_length({names[0]: d, names[1]: lab})
    finite_mask({names[0]: d}, "raise")
    if len(d) == 0:
        raise MetricInputError(f"{names[0]} is empty")
    return d, lab


def tie_aware_accuracy(delta: object, label: object, eps: float) -> float:
    """Accuracy in [0, 1] when the model calls a tie for ``|delta| <= eps`` and otherwise
    prefers a (``delta > eps``) or b; ``delta = score_a - score_b``; ``label`` in {+1, 0, -1}."""
    d, lab = _delta_label(delta, label, ("delta", "label"))
    if not eps >= 0:
        raise MetricInputError(f"eps must be >= 0, got {eps!r}")
    pred = np.where(np.abs(d) <= eps, 0, np.sign(d)).astype(np.int8)
    return float(np.mean(pred == lab))


def _best_threshold(d: np.ndarray, lab: np.ndarray, *,
                    prefixes: bool = False) -> tuple[float, float]:
    """``(eps, accuracy)`` maximising :func:`tie_aware_accuracy` over the candidates
    {0} ∪ {|d|}; the smallest such eps on equal accuracy. O(n log n).

    ``prefixes=True`` follows the sweep of EditReward's released ``calc_accuracy_with_ties``
    instead: pairs sorted by ``|d|`` (stable) become model ties one at a time, and the
    accuracy is taken after each one (so at least one pair is always a model tie, and
    pairs of equal ``|d|`` are switched one by one); ``eps`` is the last switched ``|d|``."""
    a = np.abs(d)
    order = np.argsort(a, kind="stable")
    a_sorted = a[order]
    tie_ok = (lab[order] == 0).astype(np.int64)
    dir_ok = ((lab[order] != 0) & (np.sign(d[order]) == lab[order])).astype(np.int64)
    cum_tie = np.concatenate(([0], np.cumsum(tie_ok)))
    cum_dir = np.concatenate(([0], np.cumsum(dir_ok)))
    if prefixes:
        m = np.arange(1, len(d) + 1)  # pairs called ties after each step
        candidates = a_sorted
    else:
        candidates = np.unique(np.concatenate(([0.0], a_sorted)))
        m = np.searchsorted(a_sorted, candidates, side="right")  # pairs called ties at eps
    correct = cum_tie[m] + (cum_dir[-1] - cum_dir[m])
    best = int(np.argmax(correct))
    return float(candidates[best]), float(correct[best] / len(d))


def tie_calibrated_accuracy(
    delta_cal: object, label_cal: object, delta_test: object, label_test: object
) -> tuple[float, float]:
    """EditReward-style tie-aware accuracy: ``(test_accuracy, eps)``.

    A model tie is ``|delta| <= eps``; ``eps`` maximises accuracy on the calibration split
    (``delta_cal = score_a - score_b``, ``label_cal``), searched over 0 and every observed
    ``|delta_cal|`` (smallest eps wins ties), then applied to the test split. Accuracy in
    [0, 1]; ``eps`` in the score's units.
    """
    d_cal, lab_cal = _delta_label(delta_cal, label_cal, ("delta_cal", "label_cal"))
    d_test, lab_test = _delta_label(delta_test, label_test, ("delta_test", "label_test"))
    eps, _ = _best_threshold(d_cal, lab_cal)
    return tie_aware_accuracy(d_test, lab_test, eps), eps


def tie_calibrated_accuracy_optimistic(delta: object, label: object) -> tuple[float, float]:
    """``(accuracy, eps)`` with ``eps`` fitted on the evaluated pairs themselves.

    An optimistic upper bound of :func:`tie_calibrated_accuracy` (the threshold has seen
    the test labels); report it as such, or use a separate calibration split. It is the
    number EditReward's released ``calc_accuracy_with_ties_for_edit_reward_bench`` returns
    (same candidates, smallest eps on equal accuracy).
    """
    d, lab = _delta_label(delta, label, ("delta", "label"))
    eps, acc = _best_threshold(d, lab)
    return acc, eps


def accuracy_with_ties_released(delta: object, label: object) -> tuple[float, float]:
    """``(accuracy, eps)`` as TIGER-AI-Lab/EditReward's released ``calc_accuracy_with_ties``
    (``evaluate/eval_bench.py``; the "paper metric" of its GenAI-Bench and AURORA-Bench
    pairwise evaluations) computes it, for reproducing published numbers.

    Like :func:`tie_calibrated_accuracy_optimistic` the threshold is fitted on the
    evaluated pairs themselves (an optimistic number), but by a sweep: the pairs, sorted
    by ``|delta|`` (stable), become model ties one at a time and the best accuracy seen
    after any step is kept. Hence at least one pair is always a model tie, and pairs of
    equal ``|delta|`` are tried one by one (a state no single threshold gives).
    ``delta = score_a - score_b``; ``label`` in {+1, 0, -1}; accuracy in [0, 1].
    """
    d, lab = _delta_label(delta, label, ("delta", "label"))
    eps, acc = _best_threshold(d, lab, prefixes=True)
    return acc, eps


def strict_accuracy(
    score_preferred: object,
    score_other: object,
    *,
    task: object | None = None,
    higher_better: bool = True,
    nan_policy: Literal["raise", "omit", "wrong"] = "raise",
) -> float:
    """EditScore-style accuracy in [0, 1]: a pair is right only if the human-preferred
    output scores strictly higher (``score_preferred > score_other``); ties are wrong.

    With ``task`` (one label per pair) the result is the macro-average over tasks (each task
    weighs the same); without it, the mean over pairs. ``nan_policy``: ``"raise"``,
    ``"omit"`` (drop the pair) or ``"wrong"`` (an unscored pair counts as an error).
    """
    check_choice(nan_policy, "nan_policy", ("raise", "omit", "wrong"))
    s0 = as_1d_float(score_preferred, "score_preferred")
    s1 = as_1d_float(score_other, "score_other")
    arrays = {"score_preferred": s0, "score_other": s1}
    tasks = as_1d(task, "task") if task is not None else None
    check_same_length(arrays if tasks is None else {**arrays, "task": tasks})
    keep = finite_mask(arrays, "raise" if nan_policy == "raise" else "omit")
    correct = (s0 > s1) if higher_better else (s0 < s1)  # NaN compares False -> wrong
    if keep is not None and nan_policy == "omit":
        correct = correct[keep]
        tasks = tasks[keep] if tasks is not None else None
    if len(correct) == 0:
        raise MetricInputError("no pairs to score")
    if tasks is None:
        return float(correct.mean())
    _, inverse = np.unique(tasks, return_inverse=True)
    per_task = np.bincount(inverse, weights=correct) / np.bincount(inverse)
    return float(per_task.mean())
