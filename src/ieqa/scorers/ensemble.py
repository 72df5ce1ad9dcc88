"""``ensemble``: the mean of several scorers' normalised scores (as DS-IEQA averages two backbones).

Each member's score is mapped to [0, 1] through the member's declared range
(``(s - low) / (high - low)``; ``1 - that`` for a lower-is-better scorer), then the
ensemble reports, per dimension, the weighted mean over the members that scored that
dimension for the sample. A member with an open-ended range (PSNR, a regression head)
cannot be normalised that way: give it explicit bounds with ``ranges=``. A sample that
any member failed on is a recorded failure (the error names the member).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ieqa.data.schema import EditSample
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult

__all__ = ["EnsembleScorer", "normalise_score"]


def normalise_score(value: float, low: float, high: float, higher_better: bool = True) -> float:
    """``value`` on ``[low, high]`` mapped to [0, 1], 1 = best."""
    if not high > low:
        raise ScorerError(f"a score range needs high > low, got ({low}, {high})")
    unit = (value - low) / (high - low)
    return unit if higher_better else 1.0 - unit


class EnsembleScorer(Scorer):
    """Mean of normalised member scores (see the module docstring).

    Args:
        members: built scorers, registered names, or ``{"name": ..., **arguments}`` dicts.
        weights: one weight per member (default equal).
        ranges: ``{member index or name: (low, high)}`` for members without a finite
            declared range.
    """

    def __init__(self, members: Sequence[Any],
                 weights: Sequence[float] | None = None,
                 ranges: Mapping[Any, Sequence[float]] | None = None) -> None:
        from ieqa.scorers.catalog import create_scorer

        if len(members) < 2:
            raise ScorerError("an ensemble needs at least two members")
        built: list[Scorer] = []
        for m in members:
            if isinstance(m, Scorer):
                built.append(m)
            elif isinstance(m, str):
                built.append(create_scorer(m))
            elif isinstance(m, Mapping) and "name" in m:
                built.append(create_scorer(m["name"], **{k: v for k, v in m.items() if k != "name"}))
            else:
                raise ScorerError(f"ensemble member {m!r}: give a scorer, a name or a dict with 'name'")
        self.members = built
        self.weights = [float(w) for w in (weights or [1.0] * len(built))]
        if len(self.weights) != len(built) or any(w < 0 for w in self.weights) or not sum(self.weights):
            raise ScorerError("weights: one non-negative weight per member, not all zero")
        self.ranges: list[tuple[float, float]] = []
        for i, member in enumerate(built):
            given = (ranges or {}).get(i, (ranges or {}).get(member.name))
            low, high = given if given is not None else member.score_range
            if low is None or high is None:
                raise ScorerError(f"member {member.name!r} has an open score range {member.score_range}; "
                                  f"give ranges={{{i}: (low, high)}}")
            self.ranges.append((float(low), float(high)))

    @property
    def dimensions(self) -> tuple[str, ...]:
        dims: list[str] = []
        for m in self.members:
            dims += [d for d in m.dimensions if d not in dims]
        return tuple(dims)

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        return (0.0, 1.0)

    @property
    def higher_better(self) -> bool:
        return True

    def config(self) -> dict[str, Any]:
        return {"members": [{"name": m.name, **m.config()} for m in self.members],
                "weights": self.weights, "ranges": [list(r) for r in self.ranges]}

    def score_sample(self, sample: EditSample) -> ScoreResult:
        return self.score([sample])[0]

    def score_batch(self, samples: Sequence[EditSample]) -> list[ScoreResult]:
        per_member = [m.score(samples) for m in self.members]
        out = []
        for k, sample in enumerate(samples):
            rows = [results[k] for results in per_member]
            failed = [(m.name, r.error) for m, r in zip(self.members, rows, strict=True) if not r.ok]
            if failed:
                out.append(ScoreResult.failed(sample.id, "; ".join(f"{n}: {e}" for n, e in failed)))
                continue
            sums: dict[str, float] = {}
            weights: dict[str, float] = {}
            raw: dict[str, Any] = {}
            for m, r, w, (low, high) in zip(self.members, rows, self.weights, self.ranges, strict=True):
                norm = {d: normalise_score(v, low, high, m.higher_better) for d, v in r.scores.items()}
                raw[m.name] = norm
                for d, v in norm.items():
                    sums[d] = sums.get(d, 0.0) + w * v
                    weights[d] = weights.get(d, 0.0) + w
            scores = {d: sums[d] / weights[d] for d in sums if weights[d] > 0}
            unavailable = {d: f"no member scored {d}" for d in self.dimensions if d not in scores}
            out.append(ScoreResult(id=sample.id, scores=scores, unavailable=unavailable,
                                   raw={"normalised": raw}))
        return out
