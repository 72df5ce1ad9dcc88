"""Explanations: explanation-text metrics and EPAIQA's LLM-judge protocol.

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

__all__ = [
    "DEFAULT_ENCODER", "METEOR_PARAMS", "JUDGE_DIMENSIONS", "ExplainMetricError",
    "ExplanationBenchResult", "JudgeItem", "JudgeProtocolResult", "Reference", "RunResult",
    "SampleJudgement", "TextEncoder", "aggregate_judgements", "bench_explanations",
    "embedding_cosine", "judge_sample", "mean_std", "meteor", "meteor_variant",
    "parse_judge_vote", "read_predictions", "read_references", "rouge1", "run_judge_protocol",
    "vote_mode", "wordnet_available", "write_outputs",
]
