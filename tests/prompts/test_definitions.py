import pytest

from ieqa.data.dimensions import list_dimensions
from ieqa.errors import UnknownDimensionError
from ieqa.prompts import DEFINITIONS, dimension_definition, dimension_label

CANONICAL = ("visual_quality", "instruction_alignment", "content_preservation", "overall",
             "harmony", "local_naturalness", "prompt_completion", "logicality", "accuracy",
             "usefulness")


@pytest.mark.parametrize("name", CANONICAL)
def test_every_canonical_dimension_has_one_paragraph(name):
    text = dimension_definition(name)
    assert text == DEFINITIONS[name]
    assert len(text) > 80 and "\n" not in text and "{" not in text


def test_definitions_cover_the_dimension_table():
    assert set(CANONICAL) <= set(list_dimensions())
    assert set(DEFINITIONS) == set(CANONICAL)


@pytest.mark.parametrize("alias,canon", [("PQ", "visual_quality"), ("SC", "instruction_alignment"),
                                         ("Editing Fidelity", "instruction_alignment"),
                                         ("attribute-preservation", "content_preservation"),
                                         ("global harmony", "harmony")])
def test_aliases_are_accepted(alias, canon):
    assert dimension_definition(alias) == DEFINITIONS[canon]


def test_prompt_completion_states_its_three_levels():
    text = dimension_definition("prompt_completion")
    assert "1 (non-completion)" in text and "3 (full completion)" in text


def test_unknown_dimension_raises():
    with pytest.raises(UnknownDimensionError):
        dimension_definition("sharpness-ish")


def test_label():
    assert dimension_label("SC") == "instruction alignment"
    assert dimension_label("local_naturalness") == "local naturalness"
