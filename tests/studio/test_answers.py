"""Task forms without a server: answers parsed and checked per protocol, what a refused
form shows again, and the training feedback of rank and pairwise items (the browser
tests cover rate's)."""

from __future__ import annotations

import json

import pytest

from ieqa.studio import StudioError, StudyConfig
from ieqa.studio.answers import (
    candidate_slots,
    current_values,
    feedback_rows,
    parse_answer,
    shown_again,
    skip_reason,
)
from ieqa.studio.store import Item


def _item(k: int, gold: dict | None = None) -> Item:
    samples = [{"id": f"s{i}", "editor": f"e{i}", "edited": f"/x/{i}.png"} for i in range(k)]
    return Item(7, "g1", "group" if k > 2 else "pair", "training", {"samples": samples}, gold)


def test_parse_answer_per_protocol():
    rate = StudyConfig(dimensions=("overall",), raters=1, per_item=1)
    assert parse_answer(rate, {"dim__overall": "4.25"}, _item(1)) == [("overall", 4.25, None, None)]
    for bad, msg in (("", "no answer"), ("abc", "not a number"), ("7", "outside the scale"), ("inf", "outside")):
        with pytest.raises(StudioError, match=msg):
            parse_answer(rate, {"dim__overall": bad}, _item(1))
    rank = StudyConfig(protocol="rank", raters=1, per_item=1)
    assert parse_answer(rank, {"dim__overall": "c2,c0,c1"}, _item(3)) == [("overall", None, '["c2", "c0", "c1"]', None)]
    for bad in ("c0,c0,c1", "c0,c1", "c0,c1,c2,c3", "c0,c1,x"):
        with pytest.raises(StudioError, match="each of the 3 candidates once"):
            parse_answer(rank, {"dim__overall": bad}, _item(3))
    pw = StudyConfig(protocol="pairwise", raters=1, per_item=1)
    assert parse_answer(pw, {"dim__overall": "both-bad"}, _item(2)) == [("overall", None, "both-bad", None)]
    with pytest.raises(StudioError, match="choose one of"):
        parse_answer(pw, {"dim__overall": "a"}, _item(2))


def test_shown_again_keeps_only_drawable_slider_values():
    rate = StudyConfig(dimensions=("overall", "visual_quality"), raters=1, per_item=1)
    form = {"dim__overall": "abc", "dim__visual_quality": "2.5", "csrf": "x"}
    assert shown_again(rate, form) == {"dim__visual_quality": 2.5}
    pw = StudyConfig(protocol="pairwise", raters=1, per_item=1)
    assert shown_again(pw, {"dim__overall": "tie", "csrf": "x"}) == {"dim__overall": "tie"}
    assert shown_again(rate, {"dim__overall": "3", "moved": "overall"}) == {"dim__overall": 3.0, "moved": "overall"}


def test_untouched_sliders_and_rankings_are_flagged_or_refused():
    # the page's script lists the dimensions the rater set in "moved"; without it nobody knows
    rate = StudyConfig(dimensions=("overall", "visual_quality"), raters=1, per_item=1)
    form = {"dim__overall": "3", "dim__visual_quality": "4", "moved": "visual_quality"}
    assert parse_answer(rate, form, _item(1)) == [("overall", 3.0, None, True), ("visual_quality", 4.0, None, False)]
    assert [u for *_, u in parse_answer(rate, {**form, "moved": ""}, _item(1))] == [True, True]
    strict = StudyConfig(dimensions=("overall", "visual_quality"), raters=1, per_item=1, untouched="refuse")
    with pytest.raises(StudioError, match="set every slider: overall is as shown"):
        parse_answer(strict, form, _item(1))
    assert len(parse_answer(strict, {**form, "moved": "overall,visual_quality"}, _item(1))) == 2
    assert len(parse_answer(strict, {k: v for k, v in form.items() if k != "moved"}, _item(1))) == 2  # no script
    rank = StudyConfig(protocol="rank", raters=1, per_item=1, untouched="refuse")
    with pytest.raises(StudioError, match="set every ranking: overall is as shown"):
        parse_answer(rank, {"dim__overall": "c0,c1,c2", "moved": ""}, _item(3))
    # a rater who arranged the list and left it as it was shown has set it
    assert parse_answer(rank, {"dim__overall": "c0,c1,c2", "moved": "overall"}, _item(3))[0][3] is False
    pw = StudyConfig(protocol="pairwise", raters=1, per_item=1, untouched="refuse")
    assert parse_answer(pw, {"dim__overall": "tie", "moved": ""}, _item(2))[0][3] is None  # a verdict is always chosen
    with pytest.raises(StudioError, match="--untouched must be one of flag, refuse"):
        StudyConfig(untouched="ignore")


def test_skip_reasons_and_revised_values():
    assert skip_reason({"reason": "image"}) == "image"
    assert skip_reason({"reason": "other", "note": "  two   sources\n shown "}) == "other: two sources shown"
    for form, msg in (({}, "say why"), ({"reason": "bored"}, "say why"), ({"reason": "other"}, "write in a few words"),
                      ({"reason": "other", "note": "x" * 501}, "keep it under 500")):
        with pytest.raises(StudioError, match=msg):
            skip_reason(form)
    rate = StudyConfig(dimensions=("overall",), raters=1, per_item=1)
    assert current_values(rate, {"overall": {"value": 2.5, "answer": None}}) == {"dim__overall": 2.5}
    rank = StudyConfig(protocol="rank", raters=1, per_item=1)
    assert current_values(rank, {"overall": {"value": None, "answer": '["c2", "c0", "c1"]'}}) == {
        "dim__overall": "c2,c0,c1"}


def test_rank_feedback_uses_the_raters_own_labels():
    config = StudyConfig(protocol="rank", raters=1, per_item=1)
    item = _item(3, gold={"overall": [1.0, 3.0, 2.0]})  # best: c1, then c2, then c0
    label = {s["slot"]: s["label"] for s in candidate_slots("rank", "rater-01", item)}
    assert sorted(label.values()) == ["Candidate 1", "Candidate 2", "Candidate 3"]
    mine = {"overall": {"answer": json.dumps(["c0", "c1", "c2"])}}
    (row,) = feedback_rows(config, "rater-01", item, mine)
    assert row["yours"] == " > ".join(label[s] for s in ("c0", "c1", "c2"))
    assert row["reference"] == " > ".join(label[s] for s in ("c1", "c2", "c0"))


def test_pairwise_and_rate_feedback():
    pw = StudyConfig(protocol="pairwise", raters=1, per_item=1, tie_margin=0.5)
    rows = feedback_rows(pw, "rater-01", _item(2, gold={"overall": [3.0, 3.25]}), {"overall": {"answer": "a>b"}})
    assert rows == [{"dimension": "overall", "yours": "A is better", "reference": "Tie: both good"}]
    rate = StudyConfig(dimensions=("overall",), raters=1, per_item=1)
    rows = feedback_rows(rate, "rater-01", _item(1, gold={"overall": [4.0]}), {})
    assert rows == [{"dimension": "overall", "yours": "", "reference": "4.00"}]  # not "nan"


def test_rank_feedback_shows_gold_ties_as_ties():
    # equal gold values were once shown in an arbitrary strict order
    config = StudyConfig(protocol="rank", raters=1, per_item=1, tie_margin=0.25)
    item = _item(3, gold={"overall": [2.0, 4.0, 3.9]})
    label = {s["slot"]: s["label"] for s in candidate_slots("rank", "rater-01", item)}
    (row,) = feedback_rows(config, "rater-01", item, {"overall": {"answer": '["c1", "c2", "c0"]'}})
    assert row["reference"] == f"{label['c1']} = {label['c2']} > {label['c0']}"
