"""MMRB2's official aggregation (facebookresearch/MMRB2 at 7ff0552,
``evaluate/compute_scores/compute_accuracy.py``, ``compute_task_accuracy``), and judgements
in its predictions format.

The predictions format: ``{pair_id: {"forward": [{"judgement": "A"|"B"|...}, ...],
"reverse": [...]}}``; ``forward`` judges the pair as presented (response A first),
``reverse`` with the two responses swapped, so a reverse ``"A"`` means the original B.

The rule, as released: a pair of the benchmark without an entry is *missing* and left out;
for each present pair, the first forward judgement, if it is a non-empty value, counts as
one evaluated judgement, right when it equals ``chosen``; the first reverse judgement
likewise after ``A``/``B`` are swapped (any other value stays as it is, so it is evaluated
and wrong). ``accuracy = correct / evaluated`` (0 when nothing was evaluated). The missing
pairs and the unread judgements (empty lists, ``None``, ``""``) are not in the accuracy:
:class:`MMRB2Accuracy` states them beside it, and ``accuracy_all`` counts them wrong
(``correct / (2 x pairs)``), so coverage is never silent.

A numeric scorer's judgements (:func:`judgements_from_scores`): forward ``A`` when
``score(A) - score(B) > eps``, ``B`` when ``< -eps``, else ``"tie"`` (evaluated and wrong,
as the rule treats any value that is not the chosen letter); the scorer sees each edit on
its own, so the reverse order gives the swapped letter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ieqa.bench.errors import BenchError

__all__ = ["MMRB2Accuracy", "judgements_from_scores", "load_predictions", "official_accuracy",
           "write_predictions"]


@dataclass(frozen=True)
class MMRB2Accuracy:
    """The numbers ``compute_task_accuracy`` returns, and ieqa's beside them.

    Attributes:
        total_pairs, evaluated_pairs, missing_pairs, total_correct, total_evaluated,
            accuracy: as released (``accuracy`` over the evaluated judgements only).
        unread: judgements of present pairs that were not read (empty list, ``None``, ``""``).
        accuracy_all: ``total_correct / (2 * total_pairs)``: missing pairs and unread
            judgements counted wrong (ieqa's number, the full coverage).
    """

    total_pairs: int
    evaluated_pairs: int
    missing_pairs: int
    total_correct: int
    total_evaluated: int
    accuracy: float
    unread: int
    accuracy_all: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _swap(judgement: Any) -> Any:
    return {"A": "B", "B": "A"}.get(judgement, judgement) if isinstance(judgement, str) \
        else judgement


def _first(entry: Mapping[str, Any], key: str) -> Any:
    values = entry.get(key)
    if not values:
        return None
    first = values[0]
    return first.get("judgement") if isinstance(first, Mapping) else None


def official_accuracy(predictions: Mapping[str, Mapping[str, Any]],
                      pairs: Sequence[Mapping[str, Any]]) -> MMRB2Accuracy:
    """MMRB2's ``compute_task_accuracy`` on ``predictions`` (the format above) and the
    benchmark's ``pairs`` (each with ``id`` and ``chosen``); see the module docstring."""
    evaluated_pairs = missing = correct = judged = unread = 0
    for pair in pairs:
        pid, chosen = str(pair["id"]), pair["chosen"]
        if pid not in predictions:
            missing += 1
            continue
        evaluated_pairs += 1
        entry = predictions[pid]
        for key, read in (("forward", lambda j: j), ("reverse", _swap)):
            judgement = _first(entry, key)
            if not judgement:  # the released `if judgement:`: None, "" and absent are skipped
                unread += 1
                continue
            judged += 1
            correct += int(read(judgement) == chosen)
    total = len(pairs)
    return MMRB2Accuracy(total, evaluated_pairs, missing, correct, judged,
                         correct / judged if judged else 0.0, unread,
                         correct / (2 * total) if total else 0.0)


def judgements_from_scores(score_a: float, score_b: float, *, eps: float = 0.0,
                           evaluator: str = "ieqa") -> dict[str, list[dict[str, Any]]]:
    """One pair's entry of the predictions format from a numeric scorer's two scores
    (higher better); see the module docstring."""
    delta = score_a - score_b
    forward = "A" if delta > eps else "B" if delta < -eps else "tie"
    meta = {"score_a": score_a, "score_b": score_b}
    return {"forward": [{"judgement": forward, "evaluator": evaluator, "metadata": meta}],
            "reverse": [{"judgement": _swap(forward), "evaluator": evaluator,
                         "metadata": {"score_a": score_b, "score_b": score_a}}]}


def load_predictions(path: str | Path) -> dict[str, dict[str, Any]]:
    """A predictions file in MMRB2's format (a JSON object keyed by pair id), checked."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BenchError(f"cannot read {path} as MMRB2 predictions JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BenchError(f"{path}: MMRB2 predictions are a JSON object keyed by pair id, got "
                         f"{type(data).__name__}")
    for pid, entry in data.items():
        if not isinstance(entry, dict) or not ({"forward", "reverse"} & set(entry)):
            raise BenchError(f"{path}: pair {pid!r} needs 'forward' and/or 'reverse' lists of "
                             "{'judgement': ...}")
        for key in ("forward", "reverse"):
            if key in entry and not isinstance(entry[key], list):
                raise BenchError(f"{path}: pair {pid!r}: {key} must be a list, got "
                                 f"{type(entry[key]).__name__}")
    return data


def write_predictions(path: str | Path, predictions: Mapping[str, Any]) -> Path:
    """Write ``predictions`` in MMRB2's format, for the authors' ``compute_accuracy.py``."""
    path = Path(path)
    path.write_text(json.dumps(predictions, indent=2) + "\n", encoding="utf-8")
    return path
