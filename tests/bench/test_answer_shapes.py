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
import math
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

def _request_text(body) -> str:
    """Every text part of a chat request, joined."""
    return " ".join(p["text"] for m in body["messages"] for p in m["content"]
                    if p["type"] == "text")


class _ByInstruction(FakeServer):
    """Answers each request with the reply planned for the instruction its text holds."""

    def __init__(self, plan: dict[str, Reply]) -> None:
        super().__init__()
        self.plan_by = plan

    def next_reply(self, body):
        text = _request_text(body)
        found = [k for k in self.plan_by if k in text]
        assert len(found) == 1, (found, text[:200])
        return self.plan_by[found[0]]


def _reply(row: dict[str, str], model: str) -> Reply:
    return _ERROR if row["shape"] == "(HTTP error)" else chat_answer(row["answer"], model=model)


def test_imgedit_official_numbers_are_the_tables_released_column(tmp_path):
    from ieqa.data.loaders.imgedit_bench import EDIT_TYPES
    from ieqa.scorers.published.imgedit_judge import PROMPT_SOURCES
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


class _KrisJudge(FakeServer):
    """Answers a KRIS-Bench request by its prompt (the stand-in names it) and the item's
    instruction: ``plan[(kind, instruction)]``, every quality request ``quality``."""

    def __init__(self, plan: dict[tuple[str, str], Reply], quality: Reply) -> None:
        super().__init__()
        self.plan_by, self.quality = plan, quality

    def next_reply(self, body):
        text = _request_text(body)
        kind = re.search(r"Stand-in text for (prompt_\w+)", text).group(1)
        if kind == "prompt_quality":
            return self.quality
        found = [r for (k, ins), r in self.plan_by.items() if k == kind and ins in text]
        assert len(found) == 1, (kind, text[:200])
        return found[0]


def _to100(score: float | None) -> float | None:
    return None if score is None else 25 * (score - 1)


def _mean(values):
    return sum(values) / len(values) if values else math.nan


def _kris_pool(items, values):
    """The released summarize.py's numbers, written out: per group each judgement's mean
    over its items, AVG and the knowledge types and Overall the mean of every (item,
    judgement) value pooled flat; None values left out."""
    from ieqa.data.loaders.kris_bench import GROUPS, KNOWLEDGE_TYPES

    flat = {g: [] for g in GROUPS}
    per = {g: {} for g in GROUPS}
    for item, vals in zip(items, values, strict=True):
        if vals is None:
            continue
        group = next(g for g, cats in GROUPS.items() if item["category"] in cats)
        for j, v in vals.items():
            if v is not None:
                flat[group].append(v)
                per[group].setdefault(j, []).append(v)
    out = {"overall": _mean([v for g in GROUPS for v in flat[g]]),
           "groups": {g: {"AVG": _mean(flat[g]), **{j: _mean(v) for j, v in per[g].items()}}
                      for g in GROUPS}}
    for name, groups in KNOWLEDGE_TYPES.items():
        out[name.split()[0].lower()] = _mean([v for g in groups for v in flat[g]])
    return out


def test_kris_official_numbers_are_the_tables_released_column(tmp_path):
    from ieqa.scorers.published.kris_judge import PROMPT_SOURCES
    from ieqa.testing.editor_bench import build_kris_fixture, write_kris_outputs
    from ieqa.testing.releases import write_prompt_standins

    one, dual = table("kris"), table("kris-dual")
    # the one-score shapes as the consistency answers of plain items in three groups (9,
    # 3 and 2 items), the two-score shapes as the knowledge answers of three groups' items
    plain = ["count_change"] * 5 + ["color_change"] * 4 + ["position_movement"] * 3 \
        + ["multi-instruction_execution"] * 2
    knowledge = ["chemistry"] * 3 + ["humanities"] * 2 + ["abstract_reasoning"] * 3
    assert len(plain) == len(one) and len(knowledge) == len(dual)
    items, plan, shapes = [], {}, []
    for n, (category, row) in enumerate([*zip(plain, one, strict=True), *zip(knowledge, dual, strict=True)]):
        ins = f"task number {n:02d} of {category}"
        items.append({"category": category, "index": str(n), "ori_img": f"{n}.jpg",
                      "gt_img": "", "ins_en": ins,
                      "explain_en": "a reason" if category in knowledge else ""})
        consistency, instruction = 1 + n % 5, 1 + (n * 2) % 5  # valid answers, varied
        if n < len(one):
            plan[("prompt_consist", ins)] = _reply(row, "gpt-4o")
            plan[("prompt_instruction_following", ins)] = chat_answer(
                json.dumps({"instruction_score": instruction}), model="gpt-4o")
        else:
            plan[("prompt_consist", ins)] = chat_answer(
                json.dumps({"consistency_score": consistency}), model="gpt-4o")
            plan[("prompt_dual_evaluation", ins)] = _reply(row, "gpt-4o")
        shapes.append((row, consistency, instruction))
    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    build_kris_fixture(tmp_path / "kris", items)
    outputs = write_kris_outputs(tmp_path / "editor", items)
    quality = chat_answer(json.dumps({"quality_score": 4}), model="gpt-4o")
    with serve(_KrisJudge(plan, quality)) as judge:
        scorer = create_scorer("kris-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("kris-bench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=tmp_path / "kris", languages=["en"], progress=False,
                              n_boot=50)
    released, mine = [], []
    for n, (row, consistency, instruction) in enumerate(shapes):
        if n < len(one):
            vc, vc_mine = _number(row["released"]), _number(row["ieqa"])
            rel = {"VC": vc, "IF": instruction, "VQ": 4}
            own = None if vc_mine is None else {"VC": vc_mine, "IF": instruction, "VQ": 4}
        else:
            (i, k), pair = _pair(row["released"]), _pair(row["ieqa"])
            rel = {"VC": consistency, "IF": i, "KP": k, "VQ": 4}
            own = None if pair is None else {"VC": consistency, "IF": pair[0], "KP": pair[1],
                                             "VQ": 4}
        released.append({j: _to100(v) for j, v in rel.items()})
        mine.append(None if own is None else {j: _to100(v) for j, v in own.items()})
    want, want_mine = _kris_pool(items, released), _kris_pool(items, mine)
    res = result.results
    official = res["official"]
    for key in ("overall", "factual", "conceptual", "procedural"):
        assert official[key] == pytest.approx(want[key]), key
        assert res["ieqa"][key] == pytest.approx(want_mine[key], nan_ok=True), key
    for group, numbers in want["groups"].items():
        for j, v in numbers.items():
            assert official["groups"][group][j] == pytest.approx(v, nan_ok=True), (group, j)
    unread = sum(v is None for vals in released for v in vals.values())
    assert official["unread"] == unread and unread >= 8
    failed = sum(m is None for m in mine)
    cov = res["coverage"]
    assert (cov["items"], cov["failed"]) == (len(items), failed)
    assert f"official numbers: {unread} judgements of" in cov["text"]


class _RiseJudge(FakeServer):
    """RISEBench's judgements: consistency 5 (logical: 1) and plausibility 5 for every item,
    reasoning ``plan[token]`` for the item whose token the request's text holds."""

    def __init__(self, plan: dict[str, Reply]) -> None:
        super().__init__()
        self.plan_by = plan

    def next_reply(self, body):
        text = _request_text(body)
        kind = re.search(r"Stand-in text for (prompt_\w+)", text).group(1)
        if kind in ("prompt_consist", "prompt_spatial_cons", "prompt_logical_cons_ans"):
            return chat_answer("Final Score: 1" if "logical" in kind else "Final Score: 5",
                               model="gpt-4.1-2025-04-14")
        if kind in ("prompt_generation", "prompt_spatial_qual"):
            return chat_answer("Final Score: 5", model="gpt-4.1-2025-04-14")
        found = [r for token, r in self.plan_by.items() if token in text]
        assert len(found) == 1, (kind, text[:200])
        return found[0]


def test_rise_official_numbers_are_the_tables_released_column(tmp_path):
    from ieqa.data.loaders.risebench import CATEGORIES
    from ieqa.scorers.published.rise_judge import PROMPT_SOURCES
    from ieqa.testing.editor_bench import build_rise_fixture, write_rise_outputs
    from ieqa.testing.releases import write_prompt_standins

    rows = table("rise")
    # every shape as the reasoning answer of a temporal, causal or spatial item (5, 4 and
    # 4 items) and of a logical one; the other judgements answer 5 (logical: 1)
    others = ["temporal_reasoning"] * 5 + ["causal_reasoning"] * 4 + ["spatial_reasoning"] * 4
    assert len(others) == len(rows)
    cases = [*zip(others, rows, strict=True), *(("logical_reasoning", r) for r in rows)]
    items, plan = [], {}
    for n, (category, row) in enumerate(cases):
        token = f"tok{n:02d}x"
        item = {"index": f"{category}_{n}", "category": category,
                "instruction": f"{token} task", "image": f"{category}_images/{n}.png"}
        if category == "logical_reasoning":
            item["reference_txt"] = f"{token} answer"
        else:
            item["reference"] = f"{token} shows"
        items.append(item)
        plan[token] = _reply(row, "gpt-4.1-2025-04-14")
    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    data = build_rise_fixture(tmp_path / "rise", items)
    outputs = write_rise_outputs(tmp_path / "editor", items)
    with serve(_RiseJudge(plan)) as judge:
        scorer = create_scorer("rise-judge", base_url=judge.url, prompts=str(prompts),
                               backend_options={"max_retries": 0})
        result = bench_editor("risebench", {"mine": outputs}, scorer, tmp_path / "out",
                              data=data, languages=["en"], progress=False, n_boot=50)
    # the released rules, from the table: the reasoning answer's numbers beside [5] (or [1])
    # for the others; no number in any answer: unsolved (unreadable); not one number per
    # judgement: the script stops (counted, unsolved); logical numbers 0 -> 1, else 5;
    # solved when every judgement is 5; accuracy pooled over the items
    solved, mine_solved, unreadable, stops, dims = {}, {}, 0, 0, []
    for n, (category, row) in enumerate(cases):
        logical = category == "logical_reasoning"
        reasoning = _numbers(row["released: numbers read"])
        strict = _number(row["ieqa: logical judgement" if logical else "ieqa: 1-5 judgement"])
        if not reasoning:
            unreadable += 1
            solved[n] = False
        elif len(reasoning) != 1:
            stops += 1
            solved[n] = False
        else:
            values = [1, reasoning[0]] if logical else [5, reasoning[0], 5]
            if logical:
                values = [1 if v == 0 else 5 for v in values]
            solved[n] = all(v == 5 for v in values)
            dims.append(values)
        if strict is not None:
            mine_solved[n] = strict == (1 if logical else 5)
    res = result.results
    official = res["official"]
    for c in CATEGORIES:
        members = [n for n, (cat, _) in enumerate(cases) if cat == c]
        assert official["per_category"][c] == pytest.approx(
            100 * sum(solved[n] for n in members) / len(members)), c
        ok = [n for n in members if n in mine_solved]  # none for spatial: NaN
        assert res["ieqa"]["per_category"][c] == pytest.approx(
            100 * _mean([mine_solved[n] for n in ok]), nan_ok=True), c
    assert official["overall"] == pytest.approx(100 * sum(solved.values()) / len(cases))
    assert res["ieqa"]["overall"] == pytest.approx(
        100 * sum(mine_solved.values()) / len(mine_solved))
    reasoning_dim = [v[1] for v in dims]
    assert official["dimensions"]["reasoning"] == pytest.approx(
        25 * (sum(reasoning_dim) / len(reasoning_dim) - 1))
    assert (official["unreadable"], official["would_stop"]) == (unreadable, stops)
    cov = res["coverage"]
    assert (cov["official_unreadable"], cov["official_would_stop"]) == (unreadable, stops)
    assert cov["failed"] == len(cases) - len(mine_solved)
