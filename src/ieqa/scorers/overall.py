"""Moved to :mod:`ieqa.data.combine`, the one home of combining dimensions; this module
re-exports it so that existing imports keep working."""

from ieqa.data.combine import (  # noqa: F401
    COMBINE_RULES,
    OVERALL_RULES,
    REASONEDIT_WEIGHTS,
    AggregationRule,
    SigmaAggregation,
    aggregate_gaussian,
    combine_dimensions,
    overall_score,
)

__all__ = ["overall_score", "combine_dimensions", "aggregate_gaussian", "COMBINE_RULES",
           "AggregationRule", "SigmaAggregation", "OVERALL_RULES", "REASONEDIT_WEIGHTS"]
