"""Explanations: critique formats and their parsers, generating critiques, and scoring
explanation texts.

* :mod:`ieqa.prompts.answers` — ReasonEdit and EPAIQA stage-3 critique formats, parsers,
  format stability;
* :mod:`ieqa.explain.run` — critiques into files (``ieqa explain``);
* :mod:`ieqa.explain.metrics` — ROUGE-1, METEOR (variant stated), embedding cosine,
  mean ± std over runs (ReasonEdit (004) Table 4);
* :mod:`ieqa.explain.judge_protocol` — PA / LNA / GHA / Overall by an LLM judge, five
  votes, the mode (EPAIQA (001) appendix F);
* :mod:`ieqa.explain.bench` — both over prediction files (``ieqa bench-explanations``).
"""

from ieqa.explain.bench import (
    ExplanationBenchResult,
    Reference,
    RunResult,
    bench_explanations,
    read_predictions,
    read_references,
    write_outputs,
)
from ieqa.explain.judge_protocol import (
    JUDGE_DIMENSIONS,
    JudgeItem,
    JudgeProtocolResult,
    SampleJudgement,
    aggregate_judgements,
    judge_sample,
    parse_judge_vote,
    run_judge_protocol,
    vote_mode,
)
from ieqa.explain.metrics import (
    DEFAULT_ENCODER,
    METEOR_PARAMS,
    ExplainMetricError,
    TextEncoder,
    embedding_cosine,
    mean_std,
    meteor,
    meteor_variant,
    rouge1,
    wordnet_available,
)
from ieqa.explain.run import ExplainRunSummary, ExplainScorer, explain_to_file, read_critiques
from ieqa.prompts.answers import (
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

__all__ = [
    "COMPLETION_WORDS", "Critique", "CritiqueFormatError", "DEFAULT_ENCODER",
    "ExplainMetricError", "ExplainRunSummary", "ExplainScorer", "ExplanationBenchResult",
    "FORMATS", "FORMAT_TEMPLATES", "JUDGE_DIMENSIONS", "JudgeItem", "JudgeProtocolResult",
    "METEOR_PARAMS", "Reference", "RunResult", "SampleJudgement", "TextEncoder",
    "aggregate_judgements", "bench_explanations", "embedding_cosine", "epaiqa_answer",
    "explain_to_file", "format_dimensions", "format_stability", "judge_sample", "mean_std",
    "meteor", "meteor_variant", "parse_epaiqa", "parse_explanation", "parse_judge_vote",
    "parse_reasonedit", "read_critiques", "read_predictions", "read_references", "rouge1",
    "run_judge_protocol", "vote_mode", "wordnet_available", "write_outputs",
]
