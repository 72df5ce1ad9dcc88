"""Every answer format round-trips: what a writer (training target) writes, its parser
reads back (``parse(write(x)) == x``), and the level words have one definition."""

from __future__ import annotations

import json

import pytest

from ieqa.data.dimensions import LEVEL_WORDS
from ieqa.data.schema import EditSample
from ieqa.human.mos import LEVEL_LABELS, level_indices
from ieqa.prompts import answers
from ieqa.prompts.answers import (
    READOUT_LEVEL_WORDS,
    VERDICTS,
    box_target,
    critique_target,
    digit_values,
    digits_target,
    epaiqa_answer,
    format_digits,
    level_index,
    level_target,
    parse_critique,
    parse_epaiqa,
    parse_json_scores,
    parse_level,
    parse_reasonedit,
    parse_region,
    parse_text_score,
    parse_verdict,
    write_verdict,
)

CORE = ("visual_quality", "instruction_alignment", "content_preservation")


@pytest.mark.parametrize("value", [0.0, 1.0, 2.5, 3.46, 4.99, 9.99])
def test_digits_round_trip(value: float) -> None:
    text = format_digits(value)
    assert parse_text_score(text).scores["overall"] == pytest.approx(value)
    assert digit_values(text) == [int(c) for c in text.replace(".", "")]
    # on a data scale: 0-100 MOS onto the template's 1-5
    assert parse_text_score(digits_target(50.0, scale=(0, 100))).scores["overall"] == 3.0


@pytest.mark.parametrize("score", [0.0, 19.9, 20.0, 55.0, 79.9, 100.0])
def test_levels_round_trip(score: float) -> None:
    word = level_target(score, lo=0.0, hi=100.0)
    expected = int(level_indices([score], 5, lo=0.0, hi=100.0)[0]) + 1
    assert parse_level(word, "harmony").scores == {"harmony": float(expected)}
    assert READOUT_LEVEL_WORDS[level_index(word)] == word.strip()


@pytest.mark.parametrize("box", [(0.42, 0.55, 0.30, 0.25), (0.0, 1.0, 0.5, 0.01)])
def test_region_round_trip(box: tuple[float, float, float, float]) -> None:
    assert parse_region(box_target(box)) == box


def test_reasonedit_critique_round_trip() -> None:
    scores = {"visual_quality": 4.25, "instruction_alignment": 3.0, "content_preservation": 5.0}
    sample = EditSample(id="a", source="s.png", edited="e.png", instruction="x", scores=scores,
                        meta={"explanation": "1. Visual quality: sharp.\n2. Instruction "
                                             "alignment: partly done."})
    text = critique_target(sample, CORE)
    parsed = parse_critique(text, CORE)
    assert parsed.scores == scores
    assert parsed.reasoning == sample.meta["explanation"]
    critique = parse_reasonedit(text)
    assert critique.ok and critique.scores == scores
    assert critique.sections["visual_quality"] == "sharp."


@pytest.mark.parametrize(("completion", "overall"), [(1, "bad"), (2, "poor"), (3, "good"),
                                                     (3, "excellent")])
def test_epaiqa_round_trip(completion: int, overall: str) -> None:
    full = completion == 3
    text = epaiqa_answer(completion, overall, completion_cot="the hat was added",
                         harmony_cot="the lighting matches" if full else None,
                         naturalness_cot="the edges are clean" if full else None)
    critique = parse_epaiqa(text)
    assert critique.ok, critique.error
    assert critique.scores["prompt_completion"] == completion
    assert critique.levels["overall"] == overall
    assert critique.scores["overall"] == LEVEL_WORDS.index(overall) + 1
    assert critique.early_exit is (not full)


@pytest.mark.parametrize("verdict", VERDICTS)
def test_verdict_round_trip(verdict: str) -> None:
    assert parse_verdict(write_verdict(verdict)) == verdict


def test_json_scores_round_trip() -> None:
    scores = {"visual_quality": 7.0, "instruction_alignment": 2.5}
    assert parse_json_scores(json.dumps(scores), list(scores), (0, 10)).scores == scores


def test_level_words_have_one_definition() -> None:
    assert LEVEL_LABELS is LEVEL_WORDS
    assert answers.LEVEL_WORDS is LEVEL_WORDS
    assert READOUT_LEVEL_WORDS == tuple(reversed(LEVEL_WORDS))


def test_writers_refuse_what_their_parser_could_not_read() -> None:
    with pytest.raises(answers.JudgeParseError):
        parse_verdict("no verdict here")
    with pytest.raises(ValueError, match="unknown verdict"):
        write_verdict("A>>B")
    with pytest.raises(ValueError, match="digit score"):
        format_digits(10.0)


def test_criteria_round_trip_and_the_released_reading() -> None:
    criteria = [("Prompt Compliance", 4), ("Visual Naturalness", 2), ("Physical & Detail", 5)]
    text = answers.write_criteria_answer(criteria, "a hat, but\nblurred")
    assert answers.parse_criteria_answer(text) == criteria
    assert answers.released_criteria_scores(text) == [4, 2, 5]
    assert answers.released_criteria_mean(text) == 3.67  # round(11 / 3, 2), as released
    # the released reading takes any number of score lines and any integer; ieqa does not
    two = "Brief reasoning: x\nA: 4\nB: 5"
    assert answers.released_criteria_mean(two) == 4.5
    with pytest.raises(answers.JudgeParseError, match="expected 3"):
        answers.parse_criteria_answer(two)
    wide = answers.write_criteria_answer([("A", 7), ("B", 5), ("C", 3)])
    assert answers.released_criteria_mean(wide) == 5.0
    with pytest.raises(answers.JudgeParseError, match="not a score 1-5"):
        answers.parse_criteria_answer(wide)
    # a line with two ": " (reasoning) or a non-digit value is not a score, as released
    assert answers.released_criteria_scores("Note: a: 3\nA: 4/5\nB: 3") == [3]
    assert answers.released_criteria_mean("no scores") is None
    with pytest.raises(ValueError, match="cannot be written"):
        answers.write_criteria_answer([("A: B", 3)])


def test_final_score_round_trip_and_the_released_reading() -> None:
    text = answers.write_final_score_answer(4, "The banana is brown.")
    assert answers.parse_final_score(text) == 4
    assert answers.released_final_scores(text) == [4]
    # the released reading takes every number of the run after "Final Score"
    assert answers.released_final_scores("**Final Score:** 4, 5") == [4, 5]
    with pytest.raises(answers.JudgeParseError, match="2 numbers"):
        answers.parse_final_score("**Final Score:** 4, 5")
    assert answers.released_final_scores("Final Scores: n/a") == []  # the phrase, no number
    assert answers.released_final_scores("no score here") is None
    with pytest.raises(answers.JudgeParseError, match="outside 0-1"):
        answers.parse_final_score("**Final Score**: **3**", low=0, high=1)
    with pytest.raises(ValueError, match="final score"):
        answers.write_final_score_answer(3, "my final score is high")


@pytest.mark.parametrize("high", [10, 25])
def test_vie_answer_scale_ends_are_read_and_beyond_them_refused(high: int) -> None:
    """VIEScore / EditScore answers: 0 and the top of the asked scale are scores; below 0
    or above the top is refused."""
    assert answers.parse_vie_answer(answers.write_vie_answer([0, high]),
                                    high=high).scores == (0.0, float(high))
    assert answers.parse_vie_answer(f"[{high}, 0]", high=high).scores == (float(high), 0.0)
    for bad in ([high + 0.5, 3], [3, -0.5]):
        with pytest.raises(answers.JudgeParseError, match="outside"):
            answers.parse_vie_answer(json.dumps({"score": bad}), high=high)


def test_kris_scores_1_to_5_are_read_and_others_refused() -> None:
    text = answers.write_kris_answer({"consistency_score": 5, "quality_score": 1}, "ok")
    assert answers.parse_kris_scores(text, ["consistency_score", "quality_score"]) == {
        "consistency_score": 5, "quality_score": 1}
    for bad in ('{"quality_score": 0}', '{"quality_score": 6}', '{"quality_score": 4.5}'):
        with pytest.raises(answers.JudgeParseError, match="not an integer from 1 to 5"):
            answers.parse_kris_scores(bad, ["quality_score"])


def test_every_reading_of_a_verdict_lives_in_prompts_answers() -> None:
    """Issue 42: one verdict parser per protocol, in one place: ieqa's reading
    (parse_verdict) and GenAI-Bench's re-parse (genai_bench_verdict), both in
    prompts/answers/verdict.py; the metrics score verdicts already read."""
    from pathlib import Path

    import ieqa
    import ieqa.metrics
    from ieqa.prompts.answers import JudgeParseError, genai_bench_verdict

    src = Path(ieqa.__file__).parent
    readers = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                     if r"\[\[" in p.read_text(encoding="utf-8"))
    assert readers == ["prompts/answers/verdict.py"]
    assert not hasattr(ieqa.metrics, "parse_verdict")
    # the two readings differ where the protocols do: single brackets, "B<A", echoed lists
    assert parse_verdict("[A>B]") == "A>B" and genai_bench_verdict("[A>B]") is None
    assert parse_verdict("[[B<A]]") == "A>B" and genai_bench_verdict("[[B<A]]") is None
    assert genai_bench_verdict("no verdict") is None
    with pytest.raises(JudgeParseError):
        parse_verdict("no verdict")
