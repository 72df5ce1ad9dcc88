"""Recipes train the dimensions the data scores (ieqa.train.fit) and rank pairs without
an overall score. Every hint an error gives is applied here as suggested."""

from __future__ import annotations

import numpy as np
import pytest

from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.train import load_recipe
from ieqa.train.fit import fit_recipe_to_data, scored_dimensions
from ieqa.train.pairs import build_pairs


def _s(sid: str, group: str = "g", **scores: float) -> EditSample:
    return EditSample(id=sid, edited=np.zeros((2, 2, 3), np.uint8), group_id=group, scores=scores)


def _mos_data(n: int = 6, **extra: dict[int, float]) -> list[EditSample]:
    """``ieqa mos`` output: visual quality and instruction alignment on every sample,
    plus ``extra`` dimensions on the samples named by index."""
    out = []
    for i in range(n):
        scores = {"visual_quality": 10.0 * i, "instruction_alignment": 90.0 - 10 * i}
        scores.update({d: v[i] for d, v in extra.items() if i in v})
        out.append(_s(f"e{i}", f"g{i // 3}", **scores))
    return out


def test_scored_dimensions_counts_every_sample():
    full, counts = scored_dimensions(_mos_data(overall={0: 1.0, 1: 2.0}))
    assert full == ["visual_quality", "instruction_alignment"]
    assert counts["overall"] == 2 and counts["visual_quality"] == 6


def test_edithf_without_overall_trains_the_data_dimensions():
    recipe, notes = fit_recipe_to_data(load_recipe("edithf"), _mos_data())
    dims = ["visual_quality", "instruction_alignment"]
    assert [s.dimensions for s in recipe.stages] == [dims, dims, dims]
    assert notes[0] == ("stage 'textual' trains overall, which is not scored in the data; it trains the "
                        "dimensions the data scores instead: visual_quality, instruction_alignment")
    assert recipe.stages[2].pairs == {"dimension": dims, "aggregation": "mean"}
    assert notes[-1] == ("stage 'pairwise': the data has no overall score, so pairs are ranked by the mean "
                         "of visual_quality, instruction_alignment")


def test_partly_scored_overall_is_skipped_and_said_so():
    _, notes = fit_recipe_to_data(load_recipe("edithf"), _mos_data(overall={0: 1.0}))
    assert "overall, which is scored on only 1 of 6 samples" in notes[0]


def test_data_with_overall_changes_nothing():
    data = _mos_data(overall={i: float(i) for i in range(6)})
    base = load_recipe("edithf")
    recipe, notes = fit_recipe_to_data(base, data)
    assert notes == [] and recipe == base


def test_editreward_skips_an_unscored_dimension_and_its_tie_splitting():
    data = [_s(f"e{i}", instruction_alignment=float(i)) for i in range(4)]
    recipe, notes = fit_recipe_to_data(load_recipe("editreward"), data)
    assert recipe.stages[0].dimensions == ["instruction_alignment"]
    assert notes == [
        "stage 'ranking' skips visual_quality (not scored in the data) and trains instruction_alignment",
        "stage 'ranking': tie disentanglement needs two scored dimensions of instruction_alignment, "
        "visual_quality; the data has instruction_alignment, so ties stay whole"]
    assert "disentangle_dimensions" not in recipe.stages[0].pairs


def test_stage_without_any_scored_dimension_names_the_override_that_works():
    base = load_recipe("re-reward")  # logicality, accuracy, usefulness
    with pytest.raises(TrainDataError) as err:
        fit_recipe_to_data(base, _mos_data())
    msg = str(err.value)
    assert "stage 'reward' trains logicality, accuracy, usefulness (logicality: not scored in the data;" in msg
    assert "the data scores visual_quality, instruction_alignment" in msg
    dims_hint, labels_hint = "stages.0.dimensions=[visual_quality]", "stages.0.labels={logicality: visual_quality}"
    assert f"--set {dims_hint}" in msg and f"--set {labels_hint}" in msg
    recipe, _ = fit_recipe_to_data(load_recipe("re-reward", [dims_hint]), _mos_data())
    assert recipe.stages[0].dimensions == ["visual_quality"]
    recipe, notes = fit_recipe_to_data(load_recipe("re-reward", [labels_hint]), _mos_data())
    assert recipe.stages[0].dimensions == ["logicality"] and "skips accuracy" in notes[0]


def test_unscored_data_points_to_ieqa_mos():
    with pytest.raises(TrainDataError, match=r"ieqa mos RATINGS --scale LO,HI -o scored.jsonl --manifest"):
        fit_recipe_to_data(load_recipe("edithf"), [_s("a"), _s("b")])


def test_grounding_and_preference_stages_are_left_alone():
    recipe, _ = fit_recipe_to_data(load_recipe("epaiqa", ["stages.1.labels={harmony: visual_quality}",
                                                          "stages.2.labels={local_naturalness: visual_quality}"]),
                                   _mos_data())
    assert [s.dimensions for s in recipe.stages] == [["overall"], ["harmony"], ["local_naturalness"]]
    base = load_recipe("editreward")
    assert fit_recipe_to_data(base, [_s("a"), _s("b")], has_preferences=True)[0] == base


def test_pairs_ranked_by_an_aggregate_of_several_dimensions():
    # mean(vq, ia): A (1+5)/2 = 3, B (4+4)/2 = 4, C (2+4)/2 = 3; min: A 1, B 4, C 2
    data = [_s("A", visual_quality=1, instruction_alignment=5), _s("B", visual_quality=4, instruction_alignment=4),
            _s("C", visual_quality=2, instruction_alignment=4)]
    rows = [(p.a, p.b, p.label, p.gap) for p in build_pairs(data, ["visual_quality", "PQ", "SC"])]
    assert rows == [(0, 1, "b>a", 1.0), (0, 2, "tie", 0.0), (1, 2, "a>b", 1.0)]
    rows = [(p.a, p.b, p.label, p.gap) for p in build_pairs(data, ["visual_quality", "SC"], aggregation="min")]
    assert rows == [(0, 1, "b>a", 3.0), (0, 2, "b>a", 1.0), (1, 2, "a>b", 2.0)]
    with pytest.raises(TrainDataError, match="no 'overall' score"):
        build_pairs(data, ["overall", "visual_quality"])
    with pytest.raises(TrainDataError, match="aggregation must be"):
        build_pairs(data, ["visual_quality"], aggregation="max")
