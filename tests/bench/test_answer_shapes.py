"""The answer-shape tables of docs/reference/editor-benchmarks.md, row by row.

Each table lists answer shapes a judge gives (valid, several numbers, out of range, JSON
where lines are expected, prose with digits, empty, an HTTP error) and what the released
code and ieqa read from each. Here every row is checked against both readers, and then sent
through ``bench-editor`` to a mock judge on 127.0.0.1, one shape per item (items of unequal
number per edit type or group), and the official numbers are worked out from the table's
released column with the released aggregation written out below: the table is the
independent statement of the released rules, the readers and the protocols must agree
with it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chat_server import FakeServer, Reply, chat_answer, serve
from ieqa import create_scorer
from ieqa.bench.editor import bench_editor
from ieqa.prompts.answers import JudgeParseError
from ieqa.prompts.answers.criteria import parse_criteria_answer, released_criteria_mean
from ieqa.prompts.answers.final_score import parse_final_score, released_final_scores
from ieqa.prompts.answers.kris import parse_kris_scores, released_kris_dual, released_kris_score

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "editor-benchmarks.md"
#: the shapes without text: what the reader gets (an HTTP error is an empty answer to the
#: released readers; the request itself fails in bench-editor)
SPECIAL = {"(empty)": "", "(HTTP error)": ""}
_ERROR = Reply(status=500, body={"error": {"message": "scripted server error"}})


def table(name: str) -> list[dict[str, str]]:
    """The rows of the table after ``<!-- answer-shapes: NAME -->``: ``answer`` (the text,
    ``\\n`` read as a line break), ``shape`` (the first cell as written) and the other
    columns' first words by header."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"<!-- answer-shapes: {name} -->") + 1
    header = [re.sub(r" \(.*\)$", "", c.strip()) for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(header), line
        first = cells[0]
        if first in SPECIAL:
            text = SPECIAL[first]
        else:
            found = re.match(r"^`(.*)`( \(.*\))?$", first)
            assert found, first
            text = found.group(1).replace("\\n", "\n")
        row = {"answer": text, "shape": first}
        for key, cell in zip(header[1:], cells[1:], strict=True):
            row[key] = re.sub(r" \(.*$", "", cell)  # the value, without its explanation
        rows.append(row)
    assert len(rows) >= 8, name
    return rows


def _number(cell: str) -> float | None:
    return None if cell in ("dropped", "none", "failure") else float(cell)


def _strict(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except JudgeParseError:
        return None


# ---------------------------------------------------------------------- the readers

def test_imgedit_rows_read_as_the_table_says():
    for row in table("imgedit"):
        assert released_criteria_mean(row["answer"]) == _number(row["released: item score"]), row
        parsed = _strict(parse_criteria_answer, row["answer"])
        mine = None if parsed is None else sum(s for _, s in parsed) / 3
        assert mine == _number(row["ieqa: item score"]), row


def _numbers(cell: str) -> list[int] | None:
    return None if cell == "none" else json.loads(cell)


def test_rise_rows_read_as_the_table_says():
    for row in table("rise"):
        assert released_final_scores(row["answer"]) == _numbers(row["released: numbers read"]), row
        assert _strict(parse_final_score, row["answer"]) == _number(row["ieqa: 1-5 judgement"]), row
        logical = _strict(parse_final_score, row["answer"], low=0, high=1)
        assert logical == _number(row["ieqa: logical judgement"]), row


def test_kris_rows_read_as_the_table_says():
    key = "consistency_score"
    for row in table("kris"):
        assert released_kris_score(row["answer"], key, "common") == _number(row["released"]), row
        parsed = _strict(parse_kris_scores, row["answer"], [key])
        assert (None if parsed is None else parsed[key]) == _number(row["ieqa"]), row


def _pair(cell: str) -> tuple[float | None, float | None] | None:
    if cell == "failure":
        return None
    a, b = (c.strip() for c in cell.split(","))
    return _number(a), _number(b)


def test_kris_dual_rows_read_as_the_table_says():
    keys = ["instruction_score", "knowledge_score"]
    for row in table("kris-dual"):
        assert released_kris_dual(row["answer"]) == _pair(row["released"]), row
        parsed = _strict(parse_kris_scores, row["answer"], keys)
        assert (None if parsed is None else tuple(parsed[k] for k in keys)) == \
            _pair(row["ieqa"]), row


@pytest.mark.parametrize("mutant", [
    lambda text: (lambda s: sum(s) / len(s) if s else None)(  # not rounded
        __import__("ieqa.prompts.answers.criteria", fromlist=["x"]).released_criteria_scores(text)),
    lambda text: (lambda s: round(sum(s) / len(s), 2) if s else None)(  # the 1-5 lines only
        [v for v in __import__("ieqa.prompts.answers.criteria", fromlist=["x"])
         .released_criteria_scores(text) if 1 <= v <= 5]),
])
def test_a_changed_reading_fails_its_row(monkeypatch, mutant):
    """The table check is not vacuous: a released reading that does not round, or that
    leaves out-of-range lines out, disagrees with a row."""
    import sys

    monkeypatch.setattr(sys.modules[__name__], "released_criteria_mean", mutant)
    with pytest.raises(AssertionError):
        test_imgedit_rows_read_as_the_table_says()


# ------------------------------------------------------------- through bench-editor

class _ByInstruction(FakeServer):
    """Answers each request with the reply planned for the instruction its text holds."""

    def __init__(self, plan: dict[str, Reply]) -> None:
        super().__init__()
        self.plan_by = plan

    def next_reply(self, body):
        text = " ".join(p["text"] for m in body["messages"] for p in m["content"]
                        if p["type"] == "text")
        found = [k for k in self.plan_by if k in text]
        assert len(found) == 1, (found, text[:200])
        return self.plan_by[found[0]]


def _reply(row: dict[str, str], model: str) -> Reply:
    return _ERROR if row["shape"] == "(HTTP error)" else chat_answer(row["answer"], model=model)


def test_imgedit_official_numbers_are_the_tables_released_column(tmp_path):
    from ieqa.data.loaders.imgedit_bench import EDIT_TYPES
    from ieqa.scorers.vlm.imgedit_judge import PROMPT_SOURCES
    from ieqa.testing.editor_bench import (
        build_imgedit_fixture,
        imgedit_fixture_items,
        write_imgedit_outputs,
    )
    from ieqa.testing.releases import write_prompt_standins

    rows = table("imgedit")
    valid = rows[0]
    # 3 items per type, 27 in all: shape k goes to type k % 9 (the first types get two
    # shapes), the other items valid answers, so the types keep unequal numbers of items
    items = imgedit_fixture_items(per_type=3)
    shape_of = {(k % 9) * 3 + k // 9: row for k, row in enumerate(rows)}
    answer = {str(item["prompt"]): shape_of.get(n, valid) for n, item in enumerate(items)}
    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    build_imgedit_fixture(tmp_path / "imgedit", items)
    outputs = write_imgedit_outputs(tmp_path / "editor", items)
    plan = {p: _reply(r, "gpt-4.1") for p, r in answer.items()}
    with serve(_ByInstruction(plan)) as judge:
        scorer = create_scorer("imgedit-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("imgedit-bench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=tmp_path / "imgedit", languages=["en"], progress=False,
                              n_boot=50)
    # the released rules, from the table: an item's score or dropped; a type's score the
    # mean of its kept items rounded to 2; Overall the mean of the 9 rounded type scores,
    # and the item-weighted mean of them over the kept counts, each rounded to 2
    kept: dict[str, list[float]] = {t: [] for t in EDIT_TYPES}
    mine: dict[str, list[float]] = {t: [] for t in EDIT_TYPES}
    for item in items:
        row = answer[str(item["prompt"])]
        released, strict = _number(row["released: item score"]), _number(row["ieqa: item score"])
        if released is not None:
            kept[str(item["edit_type"])].append(released)
        if strict is not None:
            mine[str(item["edit_type"])].append(strict)
    types = {t: round(sum(v) / len(v), 2) for t, v in kept.items()}
    counts = {t: len(v) for t, v in kept.items()}
    assert sorted(set(counts.values())) == [2, 3]  # unequal groups
    res = result.results
    official = res["official"]
    assert official["per_type"] == types
    assert official["overall_mean_of_types"] == round(sum(types.values()) / 9, 2)
    assert official["overall_item_weighted"] == round(
        sum(types[t] * counts[t] for t in EDIT_TYPES) / sum(counts.values()), 2)
    assert official["scored"] == sum(counts.values())
    every = [s for v in mine.values() for s in v]
    assert res["ieqa"]["item_mean"] == pytest.approx(sum(every) / len(every))
    assert res["ieqa"]["overall_mean_of_types"] == pytest.approx(
        sum(sum(v) / len(v) for v in mine.values()) / 9)
    failed = len(items) - len(every)
    # the HTTP error among them: its item has no score line either
    dropped = sum(1 for r in rows if _number(r["released: item score"]) is None)
    cov = res["coverage"]
    assert (cov["items"], cov["scored"], cov["failed"]) == (27, len(every), failed)
    assert cov["official_dropped"] == dropped
    assert f"{dropped} left out where the released scripts find no score line" in cov["text"]
