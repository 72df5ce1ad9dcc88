"""Prompts for VLM judges and evaluators: dimension definitions and each paper's templates.

Examples:
    >>> from ieqa.prompts import get_template, list_templates
    >>> "viescore-sc" in list_templates(output="viescore_json")
    True
    >>> get_template("ds-ieqa-digits").fill(instruction="make it red",
    ...     dimension="visual_quality").answer_prefix
    'Visual quality score: '

Templates render to :class:`ieqa.backends.base.Prompt` with
:meth:`PromptTemplate.render`; answers are read by
:func:`ieqa.prompts.answers.parse_output` according to the template's ``output``.
"""

from ieqa.prompts.definitions import DEFINITIONS, dimension_definition, dimension_label
from ieqa.prompts.loading import load_template, template_from_dict
from ieqa.prompts.templates import (
    KNOWN_SLOTS,
    OUTPUT_KINDS,
    SCORE_OUTPUTS,
    FilledText,
    MissingPlaceholderError,
    OutputKind,
    PromptTemplate,
    TemplateError,
    UnknownTemplateError,
    get_template,
    list_templates,
    register_template,
    unregister_template,
)

__all__ = [
    "DEFINITIONS", "dimension_definition", "dimension_label",
    "PromptTemplate", "FilledText", "OutputKind", "OUTPUT_KINDS", "SCORE_OUTPUTS",
    "KNOWN_SLOTS", "TemplateError", "MissingPlaceholderError", "UnknownTemplateError",
    "get_template", "list_templates", "register_template", "unregister_template",
    "load_template", "template_from_dict",
]
