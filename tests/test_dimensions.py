import pytest

import ieqa
from ieqa.data.dimensions import canonical_dimension, dimension_aliases, register_dimension

DESIGN_ALIASES = {
    # DESIGN.md section 2, plus the names the seed papers use
    "instruction_alignment": ["SC", "semantic consistency", "editing fidelity", "instruction following",
                              "prompt_following", "editing alignment", "Instruction Alignment"],
    "visual_quality": ["PQ", "perceptual quality", "visual quality & realism", "Visual Quality"],
    "content_preservation": ["attribute preservation", "consistency", "content preservation"],
    "overall": ["overall", "Overall Quality"],
    "harmony": ["harmony"],
    "local_naturalness": ["local naturalness"],
    "prompt_completion": ["prompt completion"],
    "logicality": ["logicality"],
    "accuracy": ["accuracy"],
    "usefulness": ["usefulness"],
}


@pytest.mark.parametrize("canon,alias", [(c, a) for c, aliases in DESIGN_ALIASES.items() for a in aliases])
def test_alias_maps_to_canonical(canon, alias):
    assert canonical_dimension(alias) == canon


def test_matching_ignores_case_and_punctuation():
    for spelling in ("Prompt-Following", "PROMPT FOLLOWING", " prompt__following "):
        assert canonical_dimension(spelling) == "instruction_alignment"


def test_unknown_dimension_names_the_known_ones():
    with pytest.raises(ieqa.UnknownDimensionError) as err:
        canonical_dimension("sharpness of cats")
    msg = str(err.value)
    assert "sharpness of cats" in msg and "visual_quality" in msg and "register_dimension" in msg


def test_register_dimension_and_conflicts():
    register_dimension("text_rendering_test", "legibility of rendered text", aliases=["TR test"])
    assert canonical_dimension("tr-test") == "text_rendering_test"
    with pytest.raises(ValueError, match="already names"):
        register_dimension("another_dim_test", aliases=["PQ"])
    with pytest.raises(ValueError, match="snake_case"):
        register_dimension("Bad Name")
    assert "tr test" in dimension_aliases("text_rendering_test")


def test_sample_scores_are_canonicalised():
    s = ieqa.EditSample(id="x", edited="e.png", scores={"SC": 0.5, "PQ": 4, "Attribute Preservation": 1})
    assert s.scores == {"instruction_alignment": 0.5, "visual_quality": 4.0, "content_preservation": 1.0}
    with pytest.raises(ValueError, match="twice"):
        ieqa.EditSample(id="x", edited="e.png", scores={"SC": 0.5, "prompt_following": 0.6})
    with pytest.raises(ValueError):
        ieqa.EditSample(id="x", edited="e.png", scores={"mystery": 1.0})


def test_core_dimensions_are_listed():
    dims = ieqa.list_dimensions()
    assert set(ieqa.CORE_DIMENSIONS) <= set(dims)
