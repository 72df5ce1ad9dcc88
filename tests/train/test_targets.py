"""Text targets round-trip through the parsers that read the models' answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ieqa.data.scales import score_ranges
from ieqa.data.schema import BBox, EditSample
from ieqa.data.shapesedit.generator import ShapesEditConfig, iter_groups
from ieqa.errors import IeqaError, TrainDataError
from ieqa.human.mos import level_indices
from ieqa.prompts import get_template
from ieqa.prompts.answers import (
    READOUT_LEVEL_WORDS,
    box_target,
    critique_target,
    digit_values,
    digits_target,
    level_index,
    level_target,
    parse_critique,
    parse_level,
    parse_output,
    parse_region,
    rescale,
)

CORE = ("visual_quality", "instruction_alignment", "content_preservation")


@pytest.fixture(scope="module")
def samples() -> list[EditSample]:
    cfg = ShapesEditConfig(n=24, k=4, seed=11, size=64, photo_fraction=0.0)
    return [s for g in iter_groups(cfg) for s in g.samples]


def _sample(**kw) -> EditSample:
    return EditSample(id=kw.pop("id", "s1"), edited=np.zeros((4, 4, 3), np.uint8), **kw)


# ---------------------------------------------------------------------------- rescale
def test_rescale_maps_linearly_and_can_reverse():
    assert rescale(50, (0, 100), (1, 5)) == 3.0
    assert rescale(0, (0, 100), (1, 5)) == 1.0
    assert rescale(1, (1, 5), (0, 100)) == 0.0
    assert rescale(5, (5, 1), (1, 5)) == 1.0  # rank 5 (worst) -> score 1
    assert rescale(6, (1, 5), (1, 5)) == 6.0  # extrapolates, does not clip


@pytest.mark.parametrize("args, match", [
    ((3, (2, 2), (1, 5)), "zero width"),
    ((float("nan"), (1, 5), (0, 1)), "finite"),
    ((3, (1,), (0, 1)), "src must be a"),
    ((3, (1, 5), (0, float("inf"))), "finite"),
    (("x", (1, 5), (0, 1)), "number"),
])
def test_rescale_errors(args, match):
    with pytest.raises(TrainDataError, match=match):
        rescale(*args)


def test_train_data_error_is_an_ieqa_value_error():
    assert issubclass(TrainDataError, IeqaError) and issubclass(TrainDataError, ValueError)


# ----------------------------------------------------------------------------- digits
@pytest.mark.parametrize("score, kw, expected", [
    (3.456, {}, "3.46"),
    (3.454, {}, "3.45"),
    (1, {}, "1.00"),
    (5, {}, "5.00"),
    (50, {"scale": (0, 100)}, "3.00"),
    (75, {"scale": (0, 100)}, "4.00"),
    (3, {"template_scale": (0, 9)}, "4.50"),
    (5.0000001, {}, "5.00"),  # rounding noise clipped into the template scale
    (0.2, {}, "1.00"),
    (120, {"scale": (0, 100)}, "5.00"),
])
def test_digits_target_values(score, kw, expected):
    assert digits_target(score, **kw) == expected


def test_digits_target_errors():
    with pytest.raises(TrainDataError, match="one integer digit"):
        digits_target(5, template_scale=(0, 10))
    with pytest.raises(TrainDataError, match="finite"):
        digits_target(float("nan"))
    with pytest.raises(TrainDataError, match="zero width"):
        digits_target(3, scale=(3, 3))


def test_digit_values():
    assert digit_values("3.46") == [3, 4, 6]
    assert digit_values(" 0.07\n") == [0, 0, 7]
    for bad in ("3.4", "34.60", "3,46", "x.yz", "", None):
        with pytest.raises(TrainDataError, match="d.dd"):
            digit_values(bad)  # type: ignore[arg-type]


def test_digits_round_trip_through_the_template_parser(samples):
    template = get_template("ds-ieqa-digits")
    for s in samples:
        for dim in CORE:
            text = digits_target(s.scores[dim], scale=(1, 5), template_scale=template.scale)
            d0, d1, d2 = digit_values(text)
            assert d0 + d1 / 10 + d2 / 100 == pytest.approx(float(text))
            assert abs(float(text) - s.scores[dim]) <= 0.005 + 1e-9
            prefix = template.fill(instruction=s.instruction, dimension=dim).answer_prefix
            for answer in (text, prefix + text):  # continuation only, and the whole answer
                parsed = parse_output(template, answer, dimension=dim)
                assert parsed.scores == {dim: float(text)}


# ----------------------------------------------------------------------------- levels
@pytest.mark.parametrize("score, lo, hi, expected", [
    (4.9, 1, 5, " excellent"),
    (5.0, 1, 5, " excellent"),
    (4.2, 1, 5, " excellent"),  # an inner edge goes to the upper level
    (4.19, 1, 5, " good"),
    (3.0, 1, 5, " fair"),
    (1.0, 1, 5, " bad"),
    (1.79, 1, 5, " bad"),
    (1.8, 1, 5, " poor"),
    (55.0, 0, 100, " fair"),
    (99.0, 0, 100, " excellent"),
])
def test_level_target_values(score, lo, hi, expected):
    assert level_target(score, lo=lo, hi=hi) == expected


def test_level_target_errors():
    with pytest.raises(ValueError, match="outside"):
        level_target(5.5, lo=1, hi=5)
    with pytest.raises(ValueError, match="empty"):
        level_target(3, lo=3, hi=3)
    with pytest.raises(TrainDataError, match="finite"):
        level_target(float("nan"), lo=1, hi=5)


def test_level_index_follows_the_readout_order():
    assert READOUT_LEVEL_WORDS[0] == "excellent"
    assert level_index("excellent") == 0
    assert level_index(" good") == 1
    assert level_index("Bad") == 4
    for word in READOUT_LEVEL_WORDS:
        assert READOUT_LEVEL_WORDS[level_index(word)] == word
    with pytest.raises(TrainDataError, match="unknown level word"):
        level_index("great")


def test_levels_round_trip_through_the_epaiqa_parser(samples):
    for name, dim in (("epaiqa-harmony", "harmony"), ("epaiqa-levels", "visual_quality")):
        template = get_template(name)
        prefix = template.fill(instruction="x", dimension=dim).answer_prefix
        assert not prefix.endswith(" ")  # why the targets carry a leading space
        scores = [s.scores["visual_quality"] for s in samples]
        for score, idx in zip(scores, level_indices(scores, lo=1, hi=5), strict=True):
            text = level_target(score, lo=1, hi=5)
            assert text.startswith(" ") and not text.startswith("  ")
            for answer in (text, prefix + text):
                parsed = parse_level(answer, dim, scale=template.scale)
                assert parsed.scores[dim] == 1 + idx  # bad = 1 ... excellent = 5
            assert parse_output(template, prefix + text, dimension=dim).scores[dim] == 1 + idx
            assert 4 - level_index(text) == idx  # readout order is best first


# ------------------------------------------------------------------------------ boxes
def test_box_target_format():
    assert box_target(BBox(x=0.42, y=0.55, w=0.3, h=0.25)) == " (0.42, 0.55, 0.30, 0.25)"
    assert box_target((0.5, 0.5, 1.0, 1.0)) == " (0.50, 0.50, 1.00, 1.00)"
    assert box_target(BBox(x=0.0, y=0.004, w=0.996, h=0.1)) == " (0.00, 0.00, 1.00, 0.10)"


@pytest.mark.parametrize("bad", [(0.5, 0.5, 1.2, 0.1), (0.5, 0.5, 0.1), "box", None])
def test_box_target_errors(bad):
    with pytest.raises(TrainDataError, match="bbox must be"):
        box_target(bad)


def test_boxes_round_trip_through_parse_region(samples):
    template = get_template("epaiqa-grounding")
    prefix = template.fill(instruction="x").answer_prefix
    boxed = [s for s in samples if s.bbox is not None]
    assert len(boxed) >= 4
    for s in boxed:
        text = box_target(s.bbox)
        for answer in (text, prefix + text):
            got = parse_region(answer)
            want = (s.bbox.x, s.bbox.y, s.bbox.w, s.bbox.h)
            assert all(abs(g - w) <= 0.005 + 1e-9 for g, w in zip(got, want, strict=True))
            assert got == tuple(round(v, 2) for v in got)


# --------------------------------------------------------------------------- critique
def test_critique_target_exact_text():
    s = _sample(scores={"visual_quality": 4.256, "SC": 3, "content_preservation": 5},
                meta={"explanation": "  1. Visual quality: clean.\n2. Fine.\n"})
    assert critique_target(s) == (
        "1. Visual quality: clean.\n2. Fine.\n\n[Final Assessment]\n"
        "Visual Quality: 4.26\nInstruction Alignment: 3.00\nContent Preservation: 5.00")


def test_critique_round_trip_through_parse_critique(samples):
    template = get_template("reasonedit-critique")
    for k, s in enumerate(samples):
        # the statements in the critique body must not leak into the final scores
        note = f"Critique {k}. Visual quality: 1.5 out of 5 in the body. Overall fine."
        s = s.model_copy(update={"meta": {**s.meta, "explanation": note}})
        text = critique_target(s, CORE, template.scale)
        parsed = parse_output(template, text)
        assert parsed.reasoning == note
        for dim in CORE:
            assert parsed.scores[dim] == round(s.scores[dim], 2)


def test_critique_rescales_and_orders_dimensions():
    s = _sample(scores={"logicality": 100, "accuracy": 0, "usefulness": 50},
                meta={"explanation": "Sound reasoning."})
    dims = ["usefulness", "logicality", "accuracy"]
    text = critique_target(s, dims, (1, 5), data_scale=(0, 100))
    assert text.splitlines()[-3:] == ["Usefulness: 3.00", "Logicality: 5.00", "Accuracy: 1.00"]
    assert parse_critique(text, dims, (1, 5)).scores == {
        "usefulness": 3.0, "logicality": 5.0, "accuracy": 1.0}
    # the sample's own stated scale is used when no data_scale is given
    s2 = s.model_copy(update={"meta": {**s.meta, "score_scale": [0, 100]}})
    assert critique_target(s2, dims, (1, 5)) == text


def test_critique_errors():
    scores = {d: 3.0 for d in CORE}
    with pytest.raises(TrainDataError, match=r"'s1' has no explanation text in meta\['explanation'\]"):
        critique_target(_sample(scores=scores))
    with pytest.raises(TrainDataError, match="no explanation"):
        critique_target(_sample(scores=scores, meta={"explanation": "   "}))
    with pytest.raises(TrainDataError, match="already contains"):
        critique_target(_sample(scores=scores,
                                meta={"explanation": "ok\n[Final Assessment]\nOverall: 3"}))
    with pytest.raises(TrainDataError, match="no score for content_preservation"):
        critique_target(_sample(scores={"visual_quality": 3, "instruction_alignment": 3},
                                meta={"explanation": "ok"}))
    with pytest.raises(TrainDataError, match="data_scale"):
        critique_target(_sample(scores=scores,
                                meta={"explanation": "ok", "score_scale": "native"}))
    with pytest.raises(TrainDataError, match="not one string"):
        critique_target(_sample(scores=scores, meta={"explanation": "ok"}), "visual_quality")
    # another meta key works when named
    text = critique_target(_sample(scores=scores, meta={"critique": "ok"}), key="critique")
    assert text.startswith("ok\n\n[Final Assessment]\n")
    assert math.isclose(parse_critique(text).scores["visual_quality"], 3.0)


def test_score_ranges_are_per_column():
    rows = [{"instruction_alignment": 0.0, "visual_quality": 40.0},
            {"instruction_alignment": 100.0, "visual_quality": 90.0},
            {"instruction_alignment": 30.0}]
    samples = [EditSample(id=str(i), source="s.png", edited="e.png", instruction="x", scores=r)
               for i, r in enumerate(rows)]
    assert score_ranges(samples) == {"instruction_alignment": (0.0, 100.0),
                                     "visual_quality": (40.0, 90.0)}
    assert score_ranges([]) == {}
    # the example: visual quality's minimum 40 is "bad" on its own range [40, 90]
    # and "fair" on the range pooled with instruction alignment [0, 100]
    assert level_target(40.0, lo=40.0, hi=90.0) == " bad"
    assert level_target(40.0, lo=0.0, hi=100.0) == " fair"
