"""Explanations: critique formats and their parsers (:mod:`ieqa.explain.formats`) and
generating critiques into files (:mod:`ieqa.explain.run`, ``ieqa explain``)."""

from ieqa.explain.formats import (
    COMPLETION_WORDS,
    FORMAT_TEMPLATES,
    FORMATS,
    Critique,
    CritiqueFormatError,
    epaiqa_answer,
    format_dimensions,
    format_stability,
    parse_epaiqa,
    parse_explanation,
    parse_reasonedit,
)
from ieqa.explain.run import ExplainRunSummary, ExplainScorer, explain_to_file, read_critiques

__all__ = ["COMPLETION_WORDS", "FORMATS", "FORMAT_TEMPLATES", "Critique", "CritiqueFormatError",
           "ExplainRunSummary", "ExplainScorer", "explain_to_file", "read_critiques",
           "epaiqa_answer", "format_dimensions", "format_stability", "parse_epaiqa",
           "parse_explanation", "parse_reasonedit"]
