"""The two critique parsers on well-formed, truncated and adversarial answers."""

from __future__ import annotations

import pytest

from ieqa.explain import (
    Critique,
    CritiqueFormatError,
    epaiqa_answer,
    format_stability,
    parse_epaiqa,
    parse_explanation,
    parse_reasonedit,
)

RE_OK = """1. Visual quality: the hat is sharp and lit like the scene; no seams.
2. Instruction alignment: a red hat was added on the cat, as asked.
3. Content preservation: the sofa and the wall are unchanged.
[Final Assessment]
Visual Quality: 4.5
Instruction Alignment: 5
Content Preservation: 3.75"""

EP_FULL = ("The prompt completion is fully followed. A red hat sits on the cat's head. "
           "The harmony: the hat's lighting matches the room, harmony level is good. "
           "The local naturalness: the fur around the brim looks real. Therefore, the overall "
           "editing quality level of the image is good.")
EP_EARLY = ("The prompt completion is not followed. The cat has no hat at all. Therefore, the "
            "overall editing quality level of the image is bad.")


# ---------------------------------------------------------------------------- reasonedit
def test_reasonedit_well_formed_sections_and_scores() -> None:
    c = parse_reasonedit(RE_OK)
    assert c.ok and c.error is None
    assert c.scores == {"visual_quality": 4.5, "instruction_alignment": 5.0,
                        "content_preservation": 3.75}
    assert c.sections["visual_quality"].startswith("the hat is sharp")
    assert c.sections["instruction_alignment"].startswith("a red hat")
    assert c.sections["content_preservation"].startswith("the sofa")
    assert c.sections["assessment"].startswith("Visual Quality: 4.5")


@pytest.mark.parametrize("cut", [len(RE_OK) - 25, RE_OK.index("[Final"), 40])
def test_reasonedit_truncated_fails_with_reason(cut: int) -> None:
    c = parse_reasonedit(RE_OK[:cut])
    assert c.status == "failed" and c.scores == {}
    assert c.text == RE_OK[:cut]
    assert "Final Assessment" in c.error or "no score for" in c.error


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("Visual Quality: 4\nInstruction Alignment: 4\nContent Preservation: 4", "heading"),
    (RE_OK.replace("Content Preservation: 3.75", "Content Preservation: 9"), "content"),
    (RE_OK.replace("Instruction Alignment: 5", "Instruction Alignment: great"), "instruction"),
    ("[Final Assessment]\nVisual Quality: 4\nVisual Quality: 4\nVisual Quality: 4", "no score"),
    # the scores quoted in the analysis do not count: only those after the heading
    ("Visual Quality: 5\nInstruction Alignment: 5\nContent Preservation: 5\n"
     "[Final Assessment]\nignore the above", "no score"),
])
def test_reasonedit_adversarial_fails(text: str, why: str) -> None:
    c = parse_reasonedit(text)
    assert c.status == "failed"
    assert why.lower() in c.error.lower()
    assert c.scores == {}


def test_reasonedit_reads_the_last_heading() -> None:
    text = "[Final Assessment] comes at the end.\n" + RE_OK
    assert parse_reasonedit(text).scores["content_preservation"] == 3.75


# -------------------------------------------------------------------------------- epaiqa
def test_epaiqa_full_answer() -> None:
    c = parse_epaiqa(EP_FULL)
    assert c.ok and not c.early_exit
    assert c.scores == {"prompt_completion": 3.0, "overall": 4.0, "harmony": 4.0}
    assert c.levels == {"prompt_completion": "fully followed", "overall": "good",
                        "harmony": "good"}
    assert c.sections["prompt_completion"].startswith("The prompt completion is fully")
    assert c.sections["harmony"].startswith("the hat's lighting")
    assert c.sections["local_naturalness"] == "the fur around the brim looks real."
    assert c.sections["overall"].startswith("Therefore")


def test_epaiqa_early_exit() -> None:
    c = parse_epaiqa(EP_EARLY)
    assert c.ok and c.early_exit
    assert c.scores == {"prompt_completion": 1.0, "overall": 1.0}
    assert "harmony" not in c.sections
    partly = EP_EARLY.replace("not followed", "partially followed").replace("is bad", "is poor")
    assert parse_epaiqa(partly).scores == {"prompt_completion": 2.0, "overall": 2.0}


def test_epaiqa_sections_in_the_question_order() -> None:
    swapped = ("The prompt completion is fully compliant. The hat is there. The local "
               "naturalness: clean edges. The harmony: colours agree. Therefore, the overall "
               "editing quality level of the image is excellent")
    c = parse_epaiqa(swapped)
    assert c.ok and c.sections["local_naturalness"] == "clean edges."
    assert c.sections["harmony"] == "colours agree."
    assert c.scores["overall"] == 5.0


@pytest.mark.parametrize("cut", [EP_FULL.index("Therefore"), EP_FULL.index("The harmony"), 30])
def test_epaiqa_truncated_fails(cut: int) -> None:
    c = parse_epaiqa(EP_FULL[:cut])
    assert c.status == "failed" and c.scores == {}
    assert "overall" in c.error or "prompt completion" in c.error


@pytest.mark.parametrize("text, why", [
    ("   ", "empty"),
    ("The edit is good. Therefore, the overall editing quality level of the image is good.",
     "prompt completion"),
    # early exit that breaks the rule
    (EP_EARLY.replace("is bad", "is excellent"), "early exit"),
    # claims full completion but skips the analysis
    ("The prompt completion is fully followed. Fine. Therefore, the overall editing quality "
     "level of the image is good.", "harmony or local_naturalness"),
    # a level word that is not a level
    (EP_FULL.replace("image is good.", "image is superb."), "overall"),
    # negated completion is not full completion
    ("The prompt completion is maybe. The harmony: x. The local naturalness: y. Therefore, "
     "the overall editing quality level of the image is good.", "prompt completion"),
])
def test_epaiqa_adversarial_fails(text: str, why: str) -> None:
    c = parse_epaiqa(text)
    assert c.status == "failed", c
    assert why in c.error
    assert c.scores == {}


def test_epaiqa_last_overall_statement_wins() -> None:
    text = EP_FULL.replace("Therefore,", "At first the overall editing quality level of the "
                                         "image is bad, but on reflection. Therefore,")
    assert parse_epaiqa(text).scores["overall"] == 4.0


def test_epaiqa_answer_round_trips() -> None:
    full = epaiqa_answer(3, "fair", completion_cot="The hat is on the cat",
                         harmony_cot="The colours clash a little, harmony level is fair",
                         naturalness_cot="The brim is blurred, naturalness level is poor")
    c = parse_epaiqa(full)
    assert c.ok and c.levels == {"prompt_completion": "fully followed", "overall": "fair",
                                 "harmony": "fair", "local_naturalness": "poor"}
    early = epaiqa_answer(2, "poor", completion_cot="Only one of the two hats was added")
    assert parse_epaiqa(early).scores == {"prompt_completion": 2.0, "overall": 2.0}
    with pytest.raises(ValueError, match="exits early"):
        epaiqa_answer(1, "good", completion_cot="x")
    with pytest.raises(ValueError, match="needs harmony_cot"):
        epaiqa_answer(3, "good", completion_cot="x")


# -------------------------------------------------------------------------------- shared
def test_dispatch_and_stability() -> None:
    assert parse_explanation(RE_OK, "reasonedit").ok
    assert parse_explanation(EP_EARLY, "epaiqa").ok
    with pytest.raises(CritiqueFormatError, match="choose one of reasonedit, epaiqa"):
        parse_explanation(RE_OK, "json")
    crits = [parse_epaiqa(EP_FULL), parse_epaiqa("nonsense"), parse_epaiqa(EP_EARLY),
             Critique(None, "epaiqa", "error", error="server down")]
    assert format_stability(crits) == pytest.approx(2 / 3)
    assert format_stability([{"parse_status": "ok"}, {"parse_status": "failed"}]) == 0.5
    with pytest.raises(ValueError, match="no generated critique"):
        format_stability([Critique(None, "epaiqa", "error")])
    assert not parse_reasonedit(None).ok
