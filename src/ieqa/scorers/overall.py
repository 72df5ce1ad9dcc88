"""Rules that combine per-dimension scores into ``overall``.

* ``"viescore"`` — VIEScore / EditScore: ``sqrt(SC * PQ)`` with SC = instruction
  alignment and PQ = visual quality (both already the min of their sub-scores).
* ``"reasonedit"`` — ReasonEdit's released code: ``0.3 VQ + 0.4 IA + 0.3 CP``.
* ``"min"``, ``"mean"``, ``"sum"`` — EditReward's aggregations over every given dimension.

Dimension names may be aliases (``SC``, ``PQ``, ...); ``overall`` itself is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ieqa.data.dimensions import canonical_dimension
from ieqa.errors import IeqaError

__all__ = ["overall_score", "OVERALL_RULES", "REASONEDIT_WEIGHTS"]

REASONEDIT_WEIGHTS: dict[str, float] = {"visual_quality": 0.3, "instruction_alignment": 0.4,
                                        "content_preservation": 0.3}
OVERALL_RULES: tuple[str, ...] = ("viescore", "reasonedit", "min", "mean", "sum")


def overall_score(scores: Mapping[str, float], rule: str) -> float:
    """The overall score of one edit under ``rule`` (see the module docstring).

    Raises:
        IeqaError: unknown rule, a dimension the rule needs is missing, or (viescore) a
            negative sub-score.
    """
    dims = {canonical_dimension(k): float(v) for k, v in scores.items()}
    dims.pop("overall", None)
    if rule == "viescore":
        need = ("instruction_alignment", "visual_quality")
        _require(dims, need, rule)
        sc, pq = dims["instruction_alignment"], dims["visual_quality"]
        if sc < 0 or pq < 0:
            raise IeqaError(f"viescore overall needs non-negative SC and PQ, got {sc}, {pq}")
        return math.sqrt(sc * pq)
    if rule == "reasonedit":
        _require(dims, tuple(REASONEDIT_WEIGHTS), rule)
        return sum(w * dims[d] for d, w in REASONEDIT_WEIGHTS.items())
    if rule in ("min", "mean", "sum"):
        if not dims:
            raise IeqaError("no dimension scores to aggregate")
        values = list(dims.values())
        return min(values) if rule == "min" else sum(values) / len(values) if rule == "mean" else sum(values)
    raise IeqaError(f"unknown overall rule {rule!r}; choose one of {', '.join(OVERALL_RULES)}")


def _require(dims: Mapping[str, float], need: tuple[str, ...], rule: str) -> None:
    missing = [d for d in need if d not in dims]
    if missing:
        raise IeqaError(f"the {rule} overall needs {', '.join(missing)}")
