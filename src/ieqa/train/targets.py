"""Training-target helpers: the observed score ranges that level targets are binned over.

The answer writers themselves (digits, levels, region, critique, EPAIQA stage 3) live with
their parsers in :mod:`ieqa.prompts.answers`, so that what training writes is what scoring
reads back. :class:`~ieqa.errors.TrainDataError` is the error of every target writer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import finite

__all__ = ["TrainDataError", "score_ranges"]


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
            v = finite(value, f"sample {sample.id!r} score {column!r}")
            lo, hi = ranges.get(column, (v, v))
            ranges[column] = (min(lo, v), max(hi, v))
    return ranges
