"""What a training stage runs on: its prompt template (:func:`stage_template`)."""

from __future__ import annotations

from typing import Any

from ieqa.train.recipe import RecipeError, StageConfig

__all__ = ["stage_template"]


def stage_template(stage: StageConfig) -> Any:
    """The prompt template of a stage: its ``template`` (a name, file or inline mapping), else
    its objective's default, with the stage's ``definitions`` swapped in."""
    from ieqa.scorers.vlm.base import resolve_template

    default = {"text": {"digits": "ds-ieqa-digits", "level": "epaiqa-levels",
                        "box": "epaiqa-grounding",
                        "epaiqa-cot": "epaiqa-overall"}.get(stage.target or "", "editreward"),
               "pointwise": "editreward", "pairwise": "editreward",
               "dual": "reasonedit-critique", "grpo": "reasonedit-critique"}[stage.objective]
    template = resolve_template(stage.template if stage.template is not None else default)
    if stage.definitions:
        import dataclasses

        if "definition" not in template.placeholders:
            raise RecipeError(f"stage {stage.name!r}: definitions replace the template's "
                             f"{{definition}}, and template {template.name!r} has none; use a "
                             "template with {definition} (ds-ieqa-digits) or drop definitions")
        template = dataclasses.replace(
            template, definitions={**template.definitions, **stage.definition_texts()})
    return template
