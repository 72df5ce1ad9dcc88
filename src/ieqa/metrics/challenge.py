"""Challenge scores: the NTIRE 2026 X-AIGC Track 2 (image editing quality) final score.

DS-IEQA (seed 000, eqs. 6-7): for each subset, ``S = mean over dimensions of
(SRCC + PLCC) / 2``; ``Final = 0.7 * S_in + 0.3 * S_out`` (in-distribution and
out-of-distribution editors). The paper states plain PLCC between predictions and MOS,
with no logistic fit, so ``plcc_fit="none"`` is the default; pass ``"logistic4"`` to
compare with VQEG-style reporting.
"""

from __future__ import annotations

from collections.abc import Mapping

from ieqa.metrics.checks import MetricInputError
from ieqa.metrics.correlation import Fit, plcc, srcc


def _check_dimensions(pred_by_dim: Mapping, target_by_dim: Mapping, subset: str) -> list:
    if not pred_by_dim:
        raise MetricInputError(f"pred_by_dim_{subset} has no dimensions")
    missing = set(pred_by_dim) ^ set(target_by_dim)
    if missing:
        raise MetricInputError(
            f"pred_by_dim_{subset} and target_by_dim_{subset} must have the same dimensions; "
            f"only in one of them: {sorted(missing, key=str)}"
        )
    return list(pred_by_dim)


def ntire_subset_score(
    pred_by_dim: Mapping[str, object],
    target_by_dim: Mapping[str, object],
    *,
    plcc_fit: Fit = "none",
    subset: str = "in",
) -> dict:
    """``{"score": S, "dimensions": {dim: {"srcc", "plcc", "score"}}}`` for one subset,
    S = mean over dimensions of (SRCC + PLCC) / 2, in [-1, 1]."""
    per_dim = {}
    for dim in _check_dimensions(pred_by_dim, target_by_dim, subset):
        s = srcc(pred_by_dim[dim], target_by_dim[dim])
        p = plcc(pred_by_dim[dim], target_by_dim[dim], fit=plcc_fit)
        per_dim[dim] = {"srcc": s, "plcc": p, "score": (s + p) / 2.0}
    score = sum(d["score"] for d in per_dim.values()) / len(per_dim)
    return {"score": score, "dimensions": per_dim}


def ntire_score(
    pred_by_dim_in: Mapping[str, object],
    target_by_dim_in: Mapping[str, object],
    pred_by_dim_out: Mapping[str, object],
    target_by_dim_out: Mapping[str, object],
    *,
    plcc_fit: Fit = "none",
    weight_in: float = 0.7,
) -> dict:
    """NTIRE 2026 IEQA final score: ``{"final", "s_in", "s_out", "in", "out",
    "plcc_fit"}`` with ``final = weight_in * s_in + (1 - weight_in) * s_out`` (0.7 / 0.3).

    Each ``*_by_dim_*`` maps a dimension name to a 1-D array (pred and target of one
    subset must share dimension names). ``"in"``/``"out"`` hold the per-dimension SRCC,
    PLCC and (SRCC + PLCC) / 2. PLCC is raw unless ``plcc_fit`` says otherwise.
    """
    if not 0.0 <= weight_in <= 1.0:
        raise MetricInputError(f"weight_in must lie in [0, 1], got {weight_in!r}")
    part_in = ntire_subset_score(pred_by_dim_in, target_by_dim_in, plcc_fit=plcc_fit, subset="in")
    part_out = ntire_subset_score(
        pred_by_dim_out, target_by_dim_out, plcc_fit=plcc_fit, subset="out"
    )
    final = weight_in * part_in["score"] + (1.0 - weight_in) * part_out["score"]
    return {
        "final": final,
        "s_in": part_in["score"],
        "s_out": part_out["score"],
        "in": part_in["dimensions"],
        "out": part_out["dimensions"],
        "plcc_fit": plcc_fit,
    }
