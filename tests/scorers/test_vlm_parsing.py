import pytest

from ieqa.errors import IeqaError
from ieqa.prompts import get_template
from ieqa.prompts.answers import (
    JudgeParseError,
    ParsedScores,
    extract_json,
    parse_critique,
    parse_json_scores,
    parse_level,
    parse_output,
    parse_region,
    parse_text_score,
    parse_verdict,
    parse_viescore,
)

CORE = ["visual_quality", "instruction_alignment", "content_preservation"]


def test_error_type_and_text():
    with pytest.raises(JudgeParseError) as err:
        parse_verdict("x" * 5000)
    exc = err.value
    assert isinstance(exc, IeqaError) and isinstance(exc, ValueError)
    assert len(exc.text) < 400 and exc.text.startswith("xxx")
    assert "no verdict" in exc.reason and "answer:" in str(exc)


# ---------------------------------------------------------------------- extract_json
@pytest.mark.parametrize("text,expected", [
    ('{"a": 1}', {"a": 1}),
    ("{}}{", {}),
    ('Here you go:\n```json\n{"a": 1, "b": [1, 2]}\n```\nHope it helps', {"a": 1, "b": [1, 2]}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('The answer is {"a": {"b": 2}} and more text {"c": 3}', {"a": {"b": 2}}),
    ('{"a": 1, "b": 2,}', {"a": 1, "b": 2}),
    ('{"a": [1, 2,], }', {"a": [1, 2]}),
    ("{'score': [7, 8], 'reasoning': 'fine'}", {"score": [7, 8], "reasoning": "fine"}),
    ("{'ok': True, 'x': None, 'y': false}", {"ok": True, "x": None, "y": False}),
    ('\u201cno\u201d {\u201ca\u201d: 1}', {"a": 1}),
    ('use {score} then {"a": 1}', {"a": 1}),
    ('{"text": "a } brace and a { brace", "a": 1}', {"text": "a } brace and a { brace", "a": 1}),
    ('{"r": "it\'s fine, \\"quoted\\"", "a": 1}', {"r": "it's fine, \"quoted\"", "a": 1}),
])
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", [
    "", "   ", "no json at all", '{"a": 1', "{a: 1}", "[1, 2, 3]", '{"a" 1}', "}{",
    "{" * 5000, '{"a": __import__("os").system("echo hi")}', "{1: 2}", "{1, 2}",
    '```json\n{"a": \n```',
])
def test_extract_json_rejects(text):
    with pytest.raises(JudgeParseError):
        extract_json(text)


def test_extract_json_rejects_non_text():
    for bad in (None, 3, b'{"a": 1}', {"a": 1}):
        with pytest.raises(JudgeParseError, match="not text"):
            extract_json(bad)


def test_extract_json_deep_nesting_does_not_crash():
    with pytest.raises(JudgeParseError):
        extract_json("{" + '"a":[' * 3000 + "1" + "]" * 3000 + "}x" + "{" * 10)


# ----------------------------------------------------------------- parse_json_scores
def test_json_scores_aliases_and_formats():
    text = ('Sure!\n```json\n{"Visual Quality": 4, "SC": "3.5", "consistency": "4/5",\n'
            '"reasoning": "Sky is red; clouds kept."}\n```')
    parsed = parse_json_scores(text, CORE, (1, 5))
    assert parsed == ParsedScores({"visual_quality": 4.0, "instruction_alignment": 3.5,
                                   "content_preservation": 4.0}, {}, "Sky is red; clouds kept.")
    assert list(parsed.scores) == CORE


@pytest.mark.parametrize("text", [
    '{"visualQuality": 4, "instruction_alignment_score": 3, "content-preservation": 5}',
    '{"scores": {"visual_quality": 4, "alignment": 3, "preservation": 5}, "reasoning": "r"}',
    '{"visual_quality": {"score": 4, "reason": "x"}, "editing fidelity": {"score": 3},'
    ' "attribute preservation": {"score": "5"}}',
    '{"VISUAL_QUALITY": 4.0, "Prompt Following": 3, "Content Preservation": 5, "extra": 9}',
])
def test_json_scores_layouts(text):
    assert parse_json_scores(text, CORE, (1, 5)).scores == {
        "visual_quality": 4, "instruction_alignment": 3, "content_preservation": 5}


def test_json_scores_single_dimension_accepts_bare_score():
    assert parse_json_scores('{"score": 7, "reasoning": "ok"}', ["overall"], (0, 10)).scores == {
        "overall": 7}
    with pytest.raises(JudgeParseError, match="no score for"):
        parse_json_scores('{"score": 7}', ["overall", "visual_quality"], (0, 10))


def test_json_scores_overall_quality_is_not_visual_quality():
    with pytest.raises(JudgeParseError, match="no score for visual_quality"):
        parse_json_scores('{"overall quality": 4}', ["visual_quality"], (1, 5))


@pytest.mark.parametrize("text,match", [
    ('{"visual_quality": 4}', "no score for instruction_alignment, content_preservation"),
    ('{"visual_quality": 6, "SC": 3, "consistency": 3}', "outside the scale"),
    ('{"visual_quality": 0, "SC": 3, "consistency": 3}', "outside the scale"),
    ('{"visual_quality": -1, "SC": 3, "consistency": 3}', "outside the scale"),
    ('{"visual_quality": "8/10", "SC": 3, "consistency": 3}', "not rescaled"),
    ('{"visual_quality": true, "SC": 3, "consistency": 3}', "not a number"),
    ('{"visual_quality": null, "SC": 3, "consistency": 3}', "not a number"),
    ('{"visual_quality": "good", "SC": 3, "consistency": 3}', "not a number"),
    ('{"visual_quality": [4], "SC": 3, "consistency": 3}', "not a number"),
    ('{"visual_quality": NaN, "SC": 3, "consistency": 3}', "finite"),
    ('{"visual_quality": Infinity, "SC": 3, "consistency": 3}', "finite"),
    ('{"visual_quality": "4,5", "SC": 3, "consistency": 3}', "not a number"),
    ('{"visual_quality": 4, "vq": 3, "SC": 3, "consistency": 3}', "given twice"),
    ('{"visual_quality": {"reason": "no score"}, "SC": 3, "consistency": 3}', "no score for"),
    ('The scores are 4, 3 and 5.', "no JSON object"),
    ('{"visual_quality": 4, "SC": 3, "consistency": 3', "no JSON object"),
])
def test_json_scores_rejects(text, match):
    with pytest.raises(JudgeParseError, match=match):
        parse_json_scores(text, CORE, (1, 5))


def test_json_scores_needs_dimensions():
    with pytest.raises(ValueError, match="dimensions is empty"):
        parse_json_scores('{"a": 1}', [], (1, 5))


# -------------------------------------------------------------------- parse_viescore
def test_viescore_min_and_sub_scores():
    parsed = parse_viescore('{\n"score": [7, 4],\n"reasoning": "over-edited"}', 2, dimension="SC")
    assert parsed.scores == {"instruction_alignment": 4.0}
    assert parsed.sub_scores == {"instruction_alignment": [7.0, 4.0]}
    assert parsed.reasoning == "over-edited"


@pytest.mark.parametrize("text,subs", [
    ("```json\n{'score': ['7', '8.5'], 'reasoning': 'x'}\n```", [7.0, 8.5]),
    ('{"score": "[6, 9]"}', [6.0, 9.0]),
    ('The output is score: [3, 10] because ...', [3.0, 10.0]),
    ('{"score": [0, 0]}', [0.0, 0.0]),
])
def test_viescore_formats(text, subs):
    assert parse_viescore(text, 2).sub_scores == {"overall": subs}


@pytest.mark.parametrize("text,n,match", [
    ('{"score": [7, 11]}', 2, "outside the scale"),
    ('{"score": [7]}', 2, "expected 2 sub-scores"),
    ('{"score": [7, 8, 9]}', 2, "expected 2 sub-scores"),
    ('{"score": []}', None, "non-empty list"),
    ('{"score": {"a": 1}}', None, "non-empty list"),
    ('{"scores_sc": [7, 8]}', None, "no 'score' list"),
    ('{"score": [7, "high"]}', None, "not a number"),
    ('{"score": [true, 8]}', None, "not a number"),
    ("I'd rate it a seven.", None, "no VIEScore answer"),
    ('{"score": [7, -1]}', None, "outside the scale"),
])
def test_viescore_rejects(text, n, match):
    with pytest.raises(JudgeParseError, match=match):
        parse_viescore(text, n)


# ------------------------------------------------------------------ parse_text_score
@pytest.mark.parametrize("text,dim,scale,expected", [
    ("Visual quality: 4/5", "visual_quality", (1, 5), {"visual_quality": 4}),
    ("Visual quality: 4/5", None, (1, 5), {"visual_quality": 4}),
    ("**Editing fidelity score:** 3.75", "SC", (1, 5), {"instruction_alignment": 3.75}),
    ("Visual quality score: 3.75", "visual_quality", (1, 5), {"visual_quality": 3.75}),
    ("- Visual quality (1-5): 4", "visual_quality", (1, 5), {"visual_quality": 4}),
    ("score: 3.75", None, (1, 5), {"overall": 3.75}),
    ("score: 3.75", "content_preservation", (1, 5), {"content_preservation": 3.75}),
    ("Final Score = 6", None, (1, 8), {"overall": 6}),
    ("I would give it a score of 6.", None, (1, 8), {"overall": 6}),
    ("The visual quality is 4 out of 5.", "visual_quality", (1, 5), {"visual_quality": 4}),
    (" 3.75", "visual_quality", (1, 5), {"visual_quality": 3.75}),
    ("3.75\nThe edit is clean.", "visual_quality", (1, 5), {"visual_quality": 3.75}),
    ("7", None, (1, 8), {"overall": 7}),
    ("Visual quality: 2. Later, on reflection, visual quality: 3.", "visual_quality", (1, 5),
     {"visual_quality": 3}),
    ("Instruction alignment: 5\nVisual quality: 2", "visual_quality", (1, 5),
     {"visual_quality": 2}),
    ("The quality score is 72.50", None, (0, 100), {"visual_quality": 72.5}),
])
def test_text_score(text, dim, scale, expected):
    assert parse_text_score(text, dim, scale).scores == expected


@pytest.mark.parametrize("text,dim,scale,match", [
    ("Visual quality: 6/10", "visual_quality", (1, 5), "not rescaled"),
    ("Visual quality: 6", "visual_quality", (1, 5), "outside the scale"),
    ("score: -2", None, (1, 5), "outside the scale"),
    ("Overall quality: 4", "visual_quality", (1, 5), "no visual_quality score"),
    ("Visual quality: 4. Content preservation: 2.", None, (1, 5), "several dimensions"),
    ("The image is nice.", None, (1, 5), "no score"),
    ("Version 1.2.3 of the model", None, (1, 5), "no score"),
    ("4K resolution looks fine", None, (1, 5), "no score"),
    ("Visual quality: good", "visual_quality", (1, 5), "no visual_quality score"),
    ("", None, (1, 5), "empty"),
])
def test_text_score_rejects(text, dim, scale, match):
    with pytest.raises(JudgeParseError, match=match):
        parse_text_score(text, dim, scale)


# ----------------------------------------------------------------------- parse_level
@pytest.mark.parametrize("text,expected", [
    (" good.", 4.0), ("Excellent", 5.0), (" **bad**", 1.0), (": poor", 2.0),
    ("Harmony level is: fair", 3.0),
    ("The prompt completion is full completion. The harmony: the edit is poor in places, "
     "good elsewhere. Therefore, the overall editing quality level of the image is good", 4.0),
    ("I think the image looks fair overall.", 3.0),
])
def test_level(text, expected):
    assert parse_level(text, "harmony").scores == {"harmony": expected}


def test_level_custom_scale_and_words():
    assert parse_level(" excellent", scale=(0, 1)).scores == {"overall": 1.0}
    words = ("non-completion", "partial completion", "full completion")
    parsed = parse_level("The prompt completion is partial completion.", "prompt_completion",
                         (1, 3), words)
    assert parsed.scores == {"prompt_completion": 2.0}


@pytest.mark.parametrize("text,match", [
    ("not good", "negated"),
    ("The result isn't excellent.", "negated"),
    ("fair or good", "hedges"),
    ("The sky is poor but the person is good.", "several levels"),
    ("It is a goodish edit", "no quality level"),
    ("4/5", "no quality level"),
])
def test_level_rejects(text, match):
    with pytest.raises(JudgeParseError, match=match):
        parse_level(text)


# --------------------------------------------------------------------- parse_verdict
@pytest.mark.parametrize("text,expected", [
    ("[[A>B]]", "A>B"), ("[[B>A]]", "B>A"), ("[[A=B=Good]]", "A=B=Good"),
    ("[[A=B=Bad]]", "A=B=Bad"), ("[[A=B]]", "A=B"), ("[[A>>B]]", "A>B"), ("[[B>>A]]", "B>A"),
    ("[[a=b=good]]", "A=B=Good"), ("[[ B < A ]]", "A>B"), ("[A<B]", "B>A"), ("[[B=A]]", "A=B"),
    ("B keeps the background.\nFinal verdict: [[B>A]]", "B>A"),
    ("At first [[A>B]], but looking again at the seams: [[B>A]]", "B>A"),
    ("Final verdict: [[A>B]]\n(Other options were [[B>A]] or [[A=B=Bad]].)", "A>B"),
    ("Options: [[A>B]], [[B>A]], [[A=B=Good]] or [[A=B=Bad]].\nAnswer: [[A=B=Bad]]", "A=B=Bad"),
    ("[[A>B]] (A is better), [[B>A]] (B is better)\n\n I pick [[B>A]]", "B>A"),
])
def test_verdict(text, expected):
    assert parse_verdict(text) == expected


@pytest.mark.parametrize("text", [
    "A is better.", "[[A>B]] or [[B>A]]", "[[A>A]]", "[[C>D]]", "[[A>B=Good]]",
    "[[A>B]], [[B>A]], [[A=B=Good]], [[A=B=Bad]]", "A>B", "",
])
def test_verdict_rejects(text):
    with pytest.raises(JudgeParseError):
        parse_verdict(text)


# -------------------------------------------------------------------- parse_critique
CRITIQUE = """1. Visual quality: the new sky is clean, with a slight halo.
2. Instruction alignment: the sky is red as asked.
3. Content preservation: the houses are unchanged.

[Final Assessment]
Visual Quality: 4.25
Instruction Alignment: 5
Content Preservation: 4.5/5
"""


def test_critique():
    parsed = parse_critique(CRITIQUE)
    assert parsed.scores == {"visual_quality": 4.25, "instruction_alignment": 5.0,
                             "content_preservation": 4.5}
    assert parsed.reasoning.startswith("1. Visual quality") and "[Final" not in parsed.reasoning


def test_critique_markdown_heading_and_synonyms():
    text = ("Analysis ...\n### Final Assessment:\n- **Visual Quality**: 3\n"
            "- **Instruction Adherence**: 2.5\n- **Content Preservation**: 4\n- Overall: 3")
    assert parse_critique(text, CORE + ["overall"]).scores == {
        "visual_quality": 3, "instruction_alignment": 2.5, "content_preservation": 4,
        "overall": 3}


def test_critique_without_heading_uses_last_statements():
    text = "Visual quality: 2\nInstruction alignment: 3\nContent preservation: 4\nVisual quality: 3"
    parsed = parse_critique(text)
    assert parsed.scores["visual_quality"] == 3 and parsed.reasoning == text


def test_critique_section_is_read_top_down():
    text = "x\n[Final Assessment]\nVisual Quality: 4\nInstruction Alignment: 3\n" \
           "Content Preservation: 2\n(Visual quality: 1 would be too harsh)"
    assert parse_critique(text).scores["visual_quality"] == 4


@pytest.mark.parametrize("text,match", [
    ("Looks fine.\n[Final Assessment]\nVisual Quality: 4\nContent Preservation: 3",
     "no score for instruction_alignment after"),
    ("[Final Assessment]\nVisual Quality: 7\nInstruction Alignment: 3\nContent Preservation: 3",
     "outside the scale"),
    ("Visual quality looks fine. Alignment is perfect.", "no score for visual_quality, "),
    ("[Final Assessment]", "no score"),
])
def test_critique_rejects(text, match):
    with pytest.raises(JudgeParseError, match=match):
        parse_critique(text)


# ---------------------------------------------------------------------- parse_region
@pytest.mark.parametrize("text,expected", [
    ("The four coefficients representing the editing area are: (0.42, 0.55, 0.3, 0.25).",
     (0.42, 0.55, 0.3, 0.25)),
    ("<0.5,0.5,1,1>", (0.5, 0.5, 1.0, 1.0)),
    (" 0.1, 0.2, 0.3, 0.4", (0.1, 0.2, 0.3, 0.4)),
])
def test_region(text, expected):
    assert parse_region(text) == expected


@pytest.mark.parametrize("text", ["(42, 55, 30, 25)", "(0.1, 0.2, 0.3)", "centre of the image",
                                  "0.1, 0.2, 0.3, 0.4, 0.5", "(0.1, -0.2, 0.3, 0.4)"])
def test_region_rejects(text):
    with pytest.raises(JudgeParseError):
        parse_region(text)


# ---------------------------------------------------------------------- parse_output
def test_parse_output_dispatch():
    json_answer = '{"visual_quality": 4, "instruction_alignment": 3, "reasoning": "r"}'
    assert parse_output("json_scores", json_answer,
                        dimensions=["PQ", "SC"], scale=(1, 5)).scores == {
        "visual_quality": 4, "instruction_alignment": 3}
    assert parse_output("viescore_json", '{"score": [5, 6]}', dimensions=["SC"],
                        scale=(0, 10)).scores == {"instruction_alignment": 5}
    assert parse_output("text_score", "Score: 6", dimensions=["overall"],
                        scale=(1, 8)).scores == {"overall": 6}
    assert parse_output("digits", "3.25", dimension="visual_quality",
                        scale=(1, 5)).scores == {"visual_quality": 3.25}
    assert parse_output("levels", " good", dimensions=["harmony"]).scores == {"harmony": 4}
    assert parse_output("verdict", "[[A=B=Good]]") == "A=B=Good"
    assert parse_output("critique", CRITIQUE, scale=(1, 5)).scores["visual_quality"] == 4.25
    assert parse_output("text", "  (0.1, 0.2, 0.3, 0.4) ") == "(0.1, 0.2, 0.3, 0.4)"


def test_parse_output_with_templates():
    sc = get_template("viescore-sc")
    parsed = parse_output(sc, '{"score": [8, 3], "reasoning": "x"}')
    assert parsed.scores == {"instruction_alignment": 3}
    with pytest.raises(JudgeParseError, match="expected 2 sub-scores"):
        parse_output(sc, '{"score": [8]}')
    with pytest.raises(JudgeParseError, match="outside the scale"):
        parse_output(get_template("editreward"), "Score: 9")
    assert parse_output(get_template("editreward-visual_quality"), "3").scores == {
        "visual_quality": 3}
    assert parse_output(get_template("epaiqa-harmony"), " poor").scores == {"harmony": 2}
    reward = get_template("reasonedit-reward")
    assert parse_output(reward, '{"logicality": 4, "accuracy": 3, "usefulness": 5}').scores == {
        "logicality": 4, "accuracy": 3, "usefulness": 5}


def test_parse_output_errors():
    with pytest.raises(ValueError, match="unknown output kind"):
        parse_output("scores", "4")
    with pytest.raises(ValueError, match="needs the dimensions"):
        parse_output("json_scores", '{"a": 1}')
    with pytest.raises(JudgeParseError, match="empty"):
        parse_output("text", "   ")
    with pytest.raises(JudgeParseError):
        parse_output("digits", "none", dimension="visual_quality", scale=(1, 5))
