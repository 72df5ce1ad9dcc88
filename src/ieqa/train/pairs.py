"""Preference pairs for pairwise training, built from pointwise-scored groups.

EditHF (002) §4.2 trains its pairwise stage on pairs derived from group rankings: every two
edits of one (source, instruction) group form a pair labelled by which scored higher.
EditReward (003) §3.3 additionally splits an overall *tie* whose per-dimension scores
disagree (one edit better on instruction following, the other on visual quality) into two
opposite samples. :func:`build_pairs` does both on :class:`~ieqa.data.schema.EditSample`
lists, reusing :func:`ieqa.human.pairs.ranking_to_pairs` and
:func:`ieqa.human.pairs.disentangle_ties`; its :class:`TrainPair` rows index into the
sample list, and their ``gap`` feeds :func:`ieqa.train.samplers.curriculum_order`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ieqa.data.combine import COMBINE_RULES, combine_dimensions
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.human.pairs import disentangle_ties, ranking_to_pairs

__all__ = ["PairLabel", "TrainPair", "build_pairs"]

PairLabel = Literal["a>b", "b>a", "tie"]
_LABELS = frozenset({"a>b", "b>a", "tie"})


@dataclass(frozen=True)
class TrainPair:
    """One pairwise training sample.

    Attributes:
        a, b: indices into the sample list the pair was built from (``a != b``).
        label: ``"a>b"`` (``a`` is better), ``"b>a"`` or ``"tie"``.
        gap: ``|score_a - score_b|`` on the ranking dimension, in the data's score units
            (>= 0; EditHF's curriculum trains large gaps first).
        weight: loss weight (> 0); 1.0 except for the halves of a split tie.
        split_tie: the row is one of the two opposite samples made from a tie whose
            dimensions disagree (EditReward §3.3).
    """

    a: int
    b: int
    label: PairLabel
    gap: float
    weight: float = 1.0
    split_tie: bool = False

    def __post_init__(self) -> None:
        if self.label not in _LABELS:
            raise TrainDataError(f"label must be one of 'a>b', 'b>a', 'tie', got {self.label!r}")
        if self.a == self.b:
            raise TrainDataError(f"a pair needs two different samples, got a = b = {self.a}")
        if not (math.isfinite(self.gap) and self.gap >= 0):
            raise TrainDataError(f"gap must be finite and >= 0, got {self.gap!r}")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise TrainDataError(f"weight must be finite and > 0, got {self.weight!r}")

    @property
    def winner(self) -> int | None:
        """Index of the preferred sample; ``None`` for a tie."""
        return {"a>b": self.a, "b>a": self.b}.get(self.label)

    @property
    def loser(self) -> int | None:
        """Index of the other sample; ``None`` for a tie."""
        return {"a>b": self.b, "b>a": self.a}.get(self.label)


def _missing(samples: Sequence[EditSample], dim: str) -> list[str]:
    return [s.id for s in samples if dim not in s.scores]




def build_pairs(
    samples: Sequence[EditSample],
    dimension: str | Sequence[str] = "overall",
    *,
    aggregation: Literal["mean", "sum", "min"] = "mean",
    tie_eps: float = 0.0,
    disentangle_dimensions: Sequence[str] | None = None,
    keep_ties: bool = True,
    tie_weight: float = 1.0,
) -> list[TrainPair]:
    """Every within-group pair of ``samples``, labelled by ``scores[dimension]``.

    ``dimension`` may list several dimensions: pairs are then labelled by their
    ``aggregation`` (``"mean"``, ``"sum"`` or ``"min"`` of the sample's scores on them,
    e.g. for data without an ``overall`` score, ranked the way a multi-dimension head's
    outputs are aggregated in training).

    Samples sharing a ``group_id`` form a group; a group of K gives K(K-1)/2 pairs
    ``(a, b)`` with ``a < b`` (input positions), labelled ``"a>b"`` when ``a`` has the
    higher score (higher is better), ``"b>a"`` when lower, ``"tie"`` when the scores differ
    by at most ``tie_eps`` (score units, >= 0). Pairs come ordered by group (first
    appearance), then ``a``, then ``b`` (:func:`ieqa.human.pairs.ranking_to_pairs`).

    With ``disentangle_dimensions`` (e.g. ``["instruction_alignment", "visual_quality"]``),
    a tie on ``dimension`` where one listed dimension favours ``a`` and another favours
    ``b`` (margins beyond the same ``tie_eps``) becomes two rows, ``a>b`` then ``b>a``,
    each with ``weight=tie_weight`` (1.0 as in EditReward §3.3, which doubles such pairs;
    0.5 keeps the pair's total weight) and ``split_tie=True``
    (:func:`ieqa.human.pairs.disentangle_ties`). ``tie_weight`` affects only those rows.
    Ties that remain are kept (weight 1) when ``keep_ties``, else dropped.

    Raises :class:`~ieqa.errors.TrainDataError` naming the samples that lack a
    ``group_id``, a ``dimension`` score or a score on a listed dimension, and for bad
    ``tie_eps`` / ``tie_weight``. Returns an empty list when no group has two samples.
    """
    samples = list(samples)
    if aggregation not in COMBINE_RULES:
        raise TrainDataError(f"aggregation must be mean, sum or min, got {aggregation!r}")
    ranking = [dimension] if isinstance(dimension, str) else list(dimension)
    if not ranking:
        raise TrainDataError("dimension is empty: name the dimension(s) pairs are ranked by")
    ranking = list(dict.fromkeys(canonical_dimension(d) for d in ranking))
    if isinstance(tie_eps, bool) or not (isinstance(tie_eps, (int, float))
                                         and math.isfinite(tie_eps) and tie_eps >= 0):
        raise TrainDataError(f"tie_eps must be a finite number >= 0, got {tie_eps!r}")
    if isinstance(tie_weight, bool) or not (isinstance(tie_weight, (int, float))
                                            and math.isfinite(tie_weight) and tie_weight > 0):
        raise TrainDataError(f"tie_weight must be a finite number > 0, got {tie_weight!r}")
    if not samples:
        return []
    no_group = [s.id for s in samples if s.group_id is None]
    if no_group:
        raise TrainDataError(f"{len(no_group)} sample(s) have no group_id, e.g. {no_group[:5]}; "
                             "pairs are built inside groups")
    for dim in ranking:
        unscored = _missing(samples, dim)
        if unscored:
            raise TrainDataError(f"{len(unscored)} sample(s) have no {dim!r} score, e.g. "
                                 f"{unscored[:5]}")
    dims: list[str] = []
    if disentangle_dimensions is not None:
        if isinstance(disentangle_dimensions, str):
            raise TrainDataError("disentangle_dimensions must be a list of names, not one string")
        dims = list(dict.fromkeys(canonical_dimension(d) for d in disentangle_dimensions))
        if not dims:
            raise TrainDataError("disentangle_dimensions is empty; pass None to keep ties whole")
        for d in dims:
            lacking = _missing(samples, d)
            if lacking:
                raise TrainDataError(f"tie disentanglement needs {d!r} scores; "
                                     f"{len(lacking)} sample(s) lack one, e.g. {lacking[:5]}")

    values = np.asarray([[s.scores[d] for d in ranking] for s in samples], dtype=np.float64)
    score = combine_dimensions(values, aggregation)
    ranked = ranking_to_pairs([s.group_id for s in samples], score.tolist(),
                              higher_better=True, tie_eps=float(tie_eps))
    if len(ranked.a) == 0:
        return []
    if dims:
        table = np.asarray([[s.scores[d] for d in dims] for s in samples], dtype=np.float64)
        out = disentangle_ties(table[ranked.a] - table[ranked.b], ranked.label,
                               eps=float(tie_eps), tie_weight=float(tie_weight))
        rows = zip(out.pair.tolist(), out.label.tolist(), out.weight.tolist(),
                   out.disentangled.tolist(), strict=True)
    else:
        rows = ((i, lab, 1.0, False) for i, lab in enumerate(ranked.label.tolist()))
    a, b, gap = ranked.a.tolist(), ranked.b.tolist(), ranked.gap.tolist()
    return [TrainPair(a=a[i], b=b[i], label=lab, gap=float(gap[i]), weight=float(w),
                      split_tie=bool(split))
            for i, lab, w, split in rows if keep_ties or lab != "tie"]
