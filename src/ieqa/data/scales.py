"""The scale of a dataset's scores: the observed range of each column (:func:`score_ranges`)
and the data scale training and FDMPO map targets from (:func:`data_scale`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError

__all__ = ["data_scale", "finite_number", "score_ranges"]


def finite_number(value: object, name: str) -> float:
    """``value`` as a finite float; :class:`~ieqa.errors.TrainDataError` naming ``name`` otherwise
    (booleans, text, NaN and infinities are refused)."""
    if isinstance(value, bool):
        raise TrainDataError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TrainDataError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise TrainDataError(f"{name} must be finite, got {x}")
    return x


def score_ranges(samples: Sequence[EditSample]) -> dict[str, tuple[float, float]]:
    """The observed ``(min, max)`` of each score column over ``samples``, keyed by the
    column name as it appears in ``sample.scores``.

    These are EditHF's level ranges (§4.2 textual learning: each dimension is binned over
    its own range) and Q-Align's (the range of the dataset's scores); a sample without a
    column does not count for it. ``{}`` when no sample has a score.

    Examples:
        >>> from ieqa.data.schema import EditSample
        >>> scored = [{"instruction_alignment": 0, "visual_quality": 40},
        ...           {"instruction_alignment": 100, "visual_quality": 90}]
        >>> rows = [EditSample(id=str(i), source="s.png", edited="e.png", instruction="x",
        ...                    scores=sc) for i, sc in enumerate(scored)]
        >>> score_ranges(rows)
        {'instruction_alignment': (0.0, 100.0), 'visual_quality': (40.0, 90.0)}
    """
    ranges: dict[str, tuple[float, float]] = {}
    for sample in samples:
        for column, value in sample.scores.items():
            v = finite_number(value, f"sample {sample.id!r} score {column!r}")
            lo, hi = ranges.get(column, (v, v))
            ranges[column] = (min(lo, v), max(hi, v))
    return ranges


def data_scale(samples: Sequence[EditSample], given: tuple[float, float] | None,
           ranges: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    """The data scale ``(low, high)`` of ``samples``: ``given``, else the samples' meta
    ``score_scale``, else the pooled observed range ``ranges`` (:func:`score_ranges`).
    Raises :class:`~ieqa.errors.TrainDataError` when none of them is known."""
    if given is not None:
        return (float(given[0]), float(given[1]))
    for s in samples:
        if "score_scale" in s.meta:
            lo, hi = s.meta["score_scale"]
            return (float(lo), float(hi))
    if not ranges:
        raise TrainDataError("the training samples carry no scores; compute scores from raw ratings "
                             "with `ieqa mos RATINGS --scale LO,HI -o scored.jsonl --manifest SAMPLES` "
                             "and train on that, or train on a scored dataset")
    return (min(lo for lo, _ in ranges.values()), max(hi for _, hi in ranges.values()))
