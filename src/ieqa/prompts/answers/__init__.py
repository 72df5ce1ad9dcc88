"""Answer formats: one module per format, each with its writer (the training target) and
its strict parser, so that what training teaches is exactly what scoring reads back.

=====================  =================================  ==================================
format                 writer                             parser
=====================  =================================  ==================================
digits (DS-IEQA)       :func:`digits_target`              :func:`digit_values`,
                                                          :func:`parse_text_score`
levels (EditHF/EPAIQA) :func:`level_target`               :func:`parse_level`
region (EPAIQA 1)      :func:`box_target`                 :func:`parse_region`
critique (ReasonEdit)  :func:`critique_target`            :func:`parse_critique`,
                                                          :func:`parse_reasonedit`
EPAIQA stage 3         :func:`epaiqa_answer`              :func:`parse_epaiqa`
pairwise verdict       :func:`write_verdict`              :func:`parse_verdict`
JSON scores            (judges only)                      :func:`parse_json_scores`,
                                                          :func:`parse_viescore`
VIEScore/EditScore     :func:`write_vie_answer`           :func:`parse_vie_answer`,
(as published)                                            :func:`released_vie_reading`,
                                                          :func:`released_editscore_reading`
ImgEdit rubric lines   :func:`write_criteria_answer`      :func:`parse_criteria_answer`,
                                                          :func:`released_criteria_scores`
RISEBench final score  :func:`write_final_score_answer`   :func:`parse_final_score`,
                                                          :func:`released_final_scores`
KRIS-Bench JSON scores :func:`write_kris_answer`          :func:`parse_kris_scores`,
                                                          :func:`released_kris_score`,
                                                          :func:`released_kris_dual`
=====================  =================================  ==================================

Parsers raise :class:`JudgeParseError` (or return a failed
:class:`~ieqa.prompts.answers.critique.Critique` for explanations); writers raise
:class:`~ieqa.errors.TrainDataError`. :func:`parse_output` dispatches on a template's
``output`` kind. The round trip ``parse(write(x)) == x`` is tested for every format
(tests/prompts/test_answers.py).
"""

from __future__ import annotations

from ieqa.data.dimensions import LEVEL_WORDS
from ieqa.prompts.answers._text import JudgeParseError, ParsedScores, rescale
from ieqa.prompts.answers.criteria import (
    parse_criteria_answer,
    released_criteria_mean,
    released_criteria_scores,
    write_criteria_answer,
)
from ieqa.prompts.answers.critique import Critique, format_stability
from ieqa.prompts.answers.definition import normalise_definition, parse_definition
from ieqa.prompts.answers.digits import digit_values, digits_target, format_digits
from ieqa.prompts.answers.epaiqa import COMPLETION_WORDS, epaiqa_answer, parse_epaiqa
from ieqa.prompts.answers.explanation import (
    FORMAT_TEMPLATES,
    FORMATS,
    CritiqueFormatError,
    format_dimensions,
    parse_explanation,
)
from ieqa.prompts.answers.final_score import (
    parse_final_score,
    released_final_scores,
    write_final_score_answer,
)
from ieqa.prompts.answers.judge_vote import parse_judge_vote
from ieqa.prompts.answers.kris import (
    parse_kris_scores,
    released_kris_dual,
    released_kris_score,
    write_kris_answer,
)
from ieqa.prompts.answers.levels import (
    READOUT_LEVEL_WORDS,
    level_index,
    level_target,
    parse_level,
)
from ieqa.prompts.answers.outputs import parse_output
from ieqa.prompts.answers.reasonedit import (
    EXPLANATION_KEY,
    critique_target,
    parse_critique,
    parse_reasonedit,
)
from ieqa.prompts.answers.region import box_target, parse_region
from ieqa.prompts.answers.scores import (
    extract_json,
    parse_json_scores,
    parse_text_score,
    parse_viescore,
)
from ieqa.prompts.answers.verdict import VERDICTS, genai_bench_verdict, parse_verdict, write_verdict
from ieqa.prompts.answers.vie import (
    EDITSCORE_REFUSAL,
    ReleasedScores,
    ReleasedVie,
    VieAnswer,
    parse_vie_answer,
    released_editscore_reading,
    released_vie_reading,
    write_vie_answer,
)

__all__ = [
    "COMPLETION_WORDS", "EXPLANATION_KEY", "FORMATS", "FORMAT_TEMPLATES", "LEVEL_WORDS",
    "READOUT_LEVEL_WORDS", "VERDICTS", "Critique", "CritiqueFormatError", "JudgeParseError",
    "ParsedScores", "VieAnswer", "box_target", "critique_target", "digit_values", "digits_target",
    "epaiqa_answer", "extract_json", "format_digits", "format_dimensions", "format_stability",
    "level_index", "level_target", "parse_critique", "parse_epaiqa", "parse_explanation",
    "parse_json_scores", "parse_level", "parse_output", "parse_reasonedit", "parse_region",
    "parse_text_score", "parse_verdict", "genai_bench_verdict", "parse_definition",
    "normalise_definition", "parse_judge_vote", "parse_vie_answer", "parse_viescore", "ReleasedVie", "released_vie_reading", "rescale",
    "EDITSCORE_REFUSAL", "ReleasedScores", "released_editscore_reading",
    "write_verdict", "write_vie_answer", "parse_criteria_answer", "released_criteria_mean",
    "released_criteria_scores", "write_criteria_answer", "parse_final_score",
    "released_final_scores", "write_final_score_answer", "parse_kris_scores",
    "released_kris_dual", "released_kris_score", "write_kris_answer",
]
