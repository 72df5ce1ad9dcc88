"""GEdit-Bench's released reading of VIEScore answers (:func:`released_vie_reading`).

Each case is (answer, first-pass outcome, give-up-pass outcome): a number is the minimum the
released code keeps, otherwise what it does. The outcomes were worked out from the released
``mllm_output_to_dict`` and checked against it, run as released at the pinned commit, on
these texts and 40,000 fuzzed ones (issue 40's note has the harness): none differed.
"""

from __future__ import annotations

import math

import pytest

from ieqa.prompts.answers import parse_vie_answer, released_vie_reading
from ieqa.prompts.answers._text import JudgeParseError

CASES = [
    ('{"reasoning": "ok", "score": [6, 8]}', 6, 6),
    ("[12, 11]", 11, "random"),                 # a bare list of two: kept, out of range too
    ('{"score": 7}', 7, 7),                     # one number, wrapped in a list
    ('{"score": [6]}', 6, 6),
    ("[6]", "ask_again", "random"),             # a bare list must hold two numbers
    ('{"score": [6, 4, 9]}', 4, 4),             # the minimum of a longer list
    ("I give it 7", "ask_again", "random"),
    ("", "ask_again", "random"),                # a failed request reads as ""
    ("7", 7, "random"),
    (" 7 ", 7, "random"),
    ("10", 10, "random"),                       # both ends of 0-10
    ("0", 0, "random"),
    ("11", "ask_again", "random"),              # a bare number must lie in 0-10
    ("[6, 4]", 4, "random"),                    # valid, yet drawn on the give-up pass
    ("[6, 4, 9]", "ask_again", "random"),
    ('||V^=^V||{"score": [3, 5]}||V^=^V||', 3, 3),
    ("{score: 7}", 7, 7),                       # the released repair quotes keys
    ("{reasoning: fine, score: 8}", 8, 8),
    ('{"score": [5, 6],}', "ask_again", "ask_again"),
    ('{"reasoning": "x"}', "ask_again", "ask_again"),
    ('{"score": []}', "fails", "fails"),
    ('{"score": "7"}', "fails", "fails"),
    ('{"score": [true, 5]}', "fails", "fails"),
    ('{"score": [null]}', "fails", "fails"),
    ("rate_limit_exceeded", "fails", "fails"),
    ('```json\n{"reasoning": "a", "score": [4, 9]}\n```', 4, 4),
    ("}{", "ask_again", "ask_again"),
    ('{"score": [7.5, 8]}', 7.5, 7.5),
    ('{"score": [-3, 2]}', -3, -3),             # negative kept (the product decides later)
    ("||V^=^V||[6, 4]||V^=^V||", "fails", "fails"),
    ("||V^=^V||||V^=^V||", "ask_again", "ask_again"),
    ('Score: [8, 9] and {"score": [1, 2]}', 1, 1),
    ('{"score": [3, 4]} {"score": [9, 9]}', "ask_again", "ask_again"),
    ("\u201c{\u201cscore\u201d: [3, 4]}", "ask_again", "ask_again"),
    ('{\n"score":\n[2,\n3]\n}', 2, 2),
    ("+7", 7, "random"),
    ("[ 6, 4]", "ask_again", "random"),
    ("[\u0661, \u0662]", "fails", "random"),  # digits its list pattern takes, json does not
]


@pytest.mark.parametrize(("text", "first", "give_up"), CASES)
def test_released_reading_of_each_answer_shape(text, first, give_up):
    for expected, flag in ((first, False), (give_up, True)):
        got = released_vie_reading(text, give_up=flag)
        if isinstance(expected, str):
            assert got.status == expected and got.score is None and got.reason, (flag, got)
        else:
            assert got.status == "read" and got.score == expected and not got.reason, (flag, got)


def test_nan_is_kept_as_the_released_code_keeps_it():
    got = released_vie_reading('{"score": NaN}', give_up=False)
    assert got.status == "read" and math.isnan(got.score)


@pytest.mark.parametrize("text", ["[12, 11]", '{"score": 7}', '{"score": [6, 4, 9]}', "7"])
def test_ieqa_refuses_what_only_the_released_reading_keeps(text):
    assert released_vie_reading(text, give_up=False).status == "read"
    with pytest.raises(JudgeParseError):
        parse_vie_answer(text)


# EditScore's own copy of the reader (editscore/utils.py at 6e0f1b9a, with json-repair):
# (answer, outcome on a normal try); every answer is a random draw on the give-up try. The
# outcomes are the authors' reader's, run as released beside ieqa's on these and 40,000
# fuzzed answers (scripts/harness/editscore_reader_vs_released.py): none differed. Where
# they part from GEdit's copy above, the comment says so.
EDITSCORE_CASES = [
    ('{"reasoning": "ok", "score": [20, 15]}', (20, 15)),
    ("[12, 11]", (12, 11)),
    ('{"score": 7}', (7,)),
    ("[6]", "ask_again"),
    ("I give it 7", "ask_again"),
    ("", "ask_again"),
    ("7", (7,)),
    ("11", "ask_again"),                        # a bare number must lie in 0-10 (not 0-25)
    ("{score: 7}", "fails"),                    # json-repair keeps 7 unwrapped: min() fails
    ('{"score": [5, 6],}', (5, 6)),             # json-repair mends it (GEdit: asked again)
    ('{"reasoning": "x"}', "fails"),            # no score: evaluate() fails (GEdit: asked again)
    ('{"score": "7"}', "fails"),
    ('{"score": [true, 5]}', (1, 5)),           # true is 1 to evaluate() (GEdit: fails)
    ('{"score": [null]}', "fails"),
    ("rate_limit_exceeded", "fails"),
    ("}{", "ask_again"),
    ('{"score": [-3, 2]}', (-3, 2)),
    ('{"score": [3, 4]} {"score": [9, 9]}', (9, 9)),  # json-repair keeps the last object
    ("\u201c{\u201cscore\u201d: [3, 4]}", (3, 4)),     # smart quotes normalised (GEdit: asked again)
    ('{"reasoning": "He said "hi"", "score": [3, 4]}', (3, 4)),
    ('{"reasoning": "x", "score": [20, 15]', (20, 15)),  # no "}": the bare list in it is taken
    ("{'score': [10, 12]}", (10, 12)),
    ('{"score": [[1, 2]]}', "fails"),
    ("I'm sorry, but I can't assist with that request.", "ask_again"),  # evaluate() gives up
    ("[\u0661, \u0662]", "fails"),
]


@pytest.mark.parametrize(("text", "expected"), EDITSCORE_CASES)
def test_editscores_released_reading_of_each_answer_shape(text, expected):
    from ieqa.prompts.answers import released_editscore_reading

    got = released_editscore_reading(text, give_up=False)
    if isinstance(expected, str):
        assert got.status == expected and got.scores is None and got.reason, got
    else:
        assert got.status == "read" and got.scores == tuple(map(float, expected)), got
    if text != "rate_limit_exceeded":  # raised before the give-up rule
        assert released_editscore_reading(text, give_up=True).status == "random"


def test_editscores_reading_notes_an_answer_without_reasoning():
    """evaluate() returns the last pass's reasoning: an answer without it reads, and the
    scorer then marks its row (tests/scorers/test_editscore.py)."""
    from ieqa.prompts.answers import released_editscore_reading

    bare = released_editscore_reading('{"score": [20, 18]}', give_up=False)
    assert bare.status == "read" and not bare.reasoning
    for text in ('{"reasoning": "x", "score": [20, 18]}', "[20, 18]", "7"):
        assert released_editscore_reading(text, give_up=False).reasoning, text
