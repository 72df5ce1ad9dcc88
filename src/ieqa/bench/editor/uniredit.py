"""UniREditBench as ``bench-editor`` runs it (:class:`UniREditProtocol`).

Each item gets three judgements on 1-5 (appearance consistency, reasoning against the text
and image references, visual plausibility); its score is 0.3 consistency + 0.5 reasoning +
0.2 plausibility, and it is *complete* when all three are 5. Per language (English only):

* ``official`` — as the released ``eval/gpt_eval_uniredit.py`` computes it with pandas:
  the first number the released reading finds in each answer, no range check; an item
  whose answers it cannot read has no scores and drops out of every mean (pandas skips the
  missing values), so the official numbers are over the readable items only (how many were
  dropped is stated in the coverage). ``Overall`` is the mean item score, also as a
  percentage ``25 · (score - 1)``; ``completion`` the share of complete items; the three
  judgements' means; and per evaluation dimension (``name``) the mean score, its
  percentage and the completion.
* ``ieqa`` — the same over the items whose three answers each hold exactly one score in
  1-5 (others are failures, counted in the coverage), with a 95 % bootstrap CI of the
  overall percentage.

A **stand-in** judge's ``content_preservation``, ``instruction_alignment`` and
``visual_quality`` take the three judgements' places, labelled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import item_mean as _mean
from ieqa.bench.editor.aggregate import stratified_bootstrap
from ieqa.bench.editor.protocol import EditorProtocol, ci_text, register_editor_benchmark
from ieqa.data.loaders.unireditbench import (
    UNIREDIT_DATASET,
    UniREditItem,
    is_item_list,
    output_path,
    read_unireditbench,
)
from ieqa.scorers.base import Scorer

__all__ = ["UniREditProtocol", "item_numbers", "percent"]

_DIMS = ("content_preservation", "instruction_alignment", "visual_quality")
_RELEASED = ("ApprConsistency", "Reasoning", "VisualPlausibility")


def percent(score: float) -> float:
    """The released ``trans_to_percent``: ``25 · (score - 1)``."""
    return 25 * (score - 1)


def item_numbers(cons: float, rea: float, qua: float) -> tuple[float, float]:
    """``(score, complete)`` of one item: 0.3 / 0.5 / 0.2 weights, complete when all are 5."""
    return 0.3 * cons + 0.5 * rea + 0.2 * qua, float(cons == 5 and rea == 5 and qua == 5)


def _summary(triples: Sequence[tuple[str, Sequence[float]]]) -> dict[str, Any]:
    """The released summary of (name, (cons, rea, qua)) items."""
    scored = [(name, *item_numbers(*t), *t) for name, t in triples]
    out: dict[str, Any] = {
        "overall": _mean([s[1] for s in scored]),
        "completion": _mean([s[2] for s in scored]),
        "dimensions": {label: _mean([s[3 + k] for s in scored])
                       for k, label in enumerate(_RELEASED)},
        "per_name": {}, "n": len(scored)}
    out["overall_percent"] = percent(out["overall"]) if scored else math.nan
    for name in dict.fromkeys(s[0] for s in scored):
        mine = [s for s in scored if s[0] == name]
        score = _mean([s[1] for s in mine])
        out["per_name"][name] = {"score": score, "percent": percent(score),
                                 "completion": _mean([s[2] for s in mine]), "n": len(mine)}
    return out


@register_editor_benchmark
class UniREditProtocol(EditorProtocol):
    """UniREditBench: 2,700 reasoning edits judged against a text and an image reference."""

    name = "unireditbench"
    dataset = UNIREDIT_DATASET
    official_judge = "uniredit-judge"
    official_label = "UniREditBench's official judge"
    layout = "{name}/{idx}.png"
    data_help = "its folder (data.json, original_image/, reference_image/) or data.json"
    languages = ("en",)
    parts = ("official", "ieqa")
    metrics = ("overall_percent", "completion")
    main_metric = "overall score"
    main_field = "score"
    interval = "a bootstrap of ieqa's Overall percentage over its valid items"
    columns = ("editor", "language", "Overall", "Overall %", "Completion", "ApprConsistency",
               "Reasoning", "VisualPlausibility", "ieqa Overall %", "95% CI", "coverage")

    def __init__(self) -> None:
        self.task_types: tuple[str, ...] = ()  # the evaluation dimensions, from the data

    @classmethod
    def detect(cls, path: Path) -> bool:
        file = path / "data.json" if path.is_dir() else path
        return file.is_file() and file.suffix == ".json" and is_item_list(file)

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[UniREditItem]:
        self.require_english(languages, "UniREditBench's instructions are")
        items = read_unireditbench(data)
        self.task_types = tuple(dict.fromkeys(i.name for i in items))
        return items

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        from ieqa.scorers.published.uniredit_judge import released_item_scores

        raw = row.get("raw") or {}
        mine = None if row.get("error") else tuple(row.get(d) for d in _DIMS)
        if mine is not None and any(v is None for v in mine):
            mine = None
        if judge.name == self.official_judge:
            released = released_item_scores(raw.get("released") or {})
        else:
            released = mine
        return {"released": None if released is None else [float(v) for v in released],
                "error": row.get("error") or (None if mine is not None else
                                              "the judge gave no three scores"),
                "cons": mine[0] if mine else None, "rea": mine[1] if mine else None,
                "qua": mine[2] if mine else None,
                "score": item_numbers(*mine)[0] if mine else None}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        official = _summary([(e["task_type"], e["released"]) for e in entries
                             if e["released"] is not None])
        official["unreadable"] = sum(1 for e in entries if e["released"] is None)
        ok = [e for e in entries if e["error"] is None]
        mine = _summary([(e["task_type"], (e["cons"], e["rea"], e["qua"])) for e in ok])
        out: dict[str, Any] = {"official": official, "ieqa": mine, "ci": {}}
        if ok:
            values = [percent(e["score"]) for e in ok]
            out["ci"]["overall_percent"] = list(stratified_bootstrap(
                values, [e["task_type"] for e in ok], sorted({e["task_type"] for e in ok}),
                n_boot=n_boot))
        return out

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        dropped = len({e["key"] for e in entries if e["released"] is None})
        return ({"official_dropped": dropped},
                f"official numbers: {dropped} items the released reading cannot read, left "
                "out of every mean as released" if dropped else "")

    def aggregation(self) -> dict[str, str]:
        return {"official": "UniREditBench's eval/gpt_eval_uniredit.py: item score 0.3 "
                            "consistency + 0.5 reasoning + 0.2 plausibility from the first "
                            "number of each answer; complete = all three 5; means over the "
                            "readable items only (pandas skips the others); percent = "
                            "25 * (score - 1); per evaluation dimension (name)",
                "ieqa": "the same over the items whose three answers each hold one score "
                        "in 1-5; other items are failures, counted"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        official, mine = result["official"], result["ieqa"]
        return {"Overall": official["overall"], "Overall %": official["overall_percent"],
                "Completion": official["completion"],
                **{k: official["dimensions"][k] for k in _RELEASED},
                "ieqa Overall %": mine["overall_percent"],
                "95% CI": ci_text(result["ci"].get("overall_percent"), 1)}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        names = tuple(dict.fromkeys([*self.task_types, *result["official"]["per_name"],
                                     *result["ieqa"]["per_name"]]))
        self.task_types = names  # a report made from results.json has not read the data
        nan = {"score": math.nan, "percent": math.nan, "completion": math.nan}
        rows = [{"name": n,
                 "official score": result["official"]["per_name"].get(n, nan)["score"],
                 "official %": result["official"]["per_name"].get(n, nan)["percent"],
                 "official completion": result["official"]["per_name"].get(n, nan)["completion"],
                 "ieqa %": result["ieqa"]["per_name"].get(n, nan)["percent"]} for n in names]
        return rows, ["name", "official score", "official %", "official completion", "ieqa %"]

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        per = result["official"]["per_name"]
        return [per[n]["score"] if n in per else math.nan for n in self.task_types]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        parts = [f"{k} {entry[k]:.0f}" for k in ("cons", "rea", "qua") if entry[k] is not None]
        return "  ".join(parts) + (f"  score {entry['score']:.2f}" if entry["score"] else "")
