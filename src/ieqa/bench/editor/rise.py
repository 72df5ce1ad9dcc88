"""RISEBench as ``bench-editor`` runs it (:class:`RiseProtocol`).

An item is **solved** when every judgement it needs scored 5: consistency, reasoning and
plausibility for temporal, causal and spatial items (reasoning and plausibility only for an
item flagged ``consistency_free``), consistency and reasoning for logical items (their 0/1
answers read as 1/5). This is the released rule since commit ``ce8cba37`` (April 2026);
before it a ``consistency_free`` item could never be solved, and papers written before
then used that rule. Per language (English only) the numbers, in percent, are:

* ``official`` — as released: the share of solved items per category and over all items
  (pooled, not the mean of the categories), every item with an output in the
  denominator, an item whose answers the released reading cannot use counted as unsolved;
  ``overall_before_2026_04`` and its categories by the earlier rule; and the mean of each
  judgement mapped to 0-100 by 25 · (s - 1) (``dimensions``);
* ``ieqa`` — the same shares over the items whose every answer holds exactly one score in
  range (failures are left out and counted in the coverage), with a 95 % bootstrap CI.

A **stand-in** judge's ``content_preservation``, ``instruction_alignment`` and
``visual_quality`` take the three judgements' places, on its own scale (solved = 5 on
each), labelled.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import stratified_bootstrap
from ieqa.bench.editor.protocol import EditorProtocol, ci_text, register_editor_benchmark
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.loaders.risebench import (
    CATEGORIES,
    RISE_DATASET,
    RiseItem,
    output_path,
    read_risebench,
    resolve_data,
)
from ieqa.scorers.base import Scorer

__all__ = ["RiseProtocol", "solved", "released_judgements"]

_NAMES = {"temporal_reasoning": "Temporal", "causal_reasoning": "Causal",
          "spatial_reasoning": "Spatial", "logical_reasoning": "Logical"}


def solved(category: str, cons: float | None, rea: float | None, qua: float | None,
           consistency_free: bool, *, rule: str = "2026-04") -> bool:
    """Whether an item counts as solved (see the module docstring); ``rule="2025-05"`` is
    the released rule before April 2026 (a ``consistency_free`` item never is)."""
    if category == "logical_reasoning":
        return cons == 5 and rea == 5
    if consistency_free:
        return rule == "2026-04" and rea == 5 and qua == 5
    return cons == 5 and rea == 5 and qua == 5


def released_judgements(released: Mapping[str, Any], logical: bool
                        ) -> tuple[float | None, float | None, float | None] | str:
    """``(consistency, reasoning, plausibility)`` as the released ``gpt_eval.py`` reads an
    item's answers (each the list :func:`~ieqa.prompts.answers.released_final_scores`
    gave, ``None`` for no answer); ``"failed"`` when one is empty or missing (the item is
    unsolved), ``"stops"`` when they do not add up to one number per judgement (the
    released script stops there)."""
    parts = [released.get(j) for j in ("judge1", "judge2", "judge3") if j in released]
    if not parts or any(not p for p in parts):  # nothing asked (no request built) or unread
        return "failed"
    numbers = [n for p in parts for n in p]
    if "judge1" not in released:
        numbers = [None, *numbers]
    if len(numbers) != (2 if logical else 3):
        return "stops"
    if logical:
        return float(4 * min(numbers[0], 1) + 1), float(4 * min(numbers[1], 1) + 1), None
    return tuple(None if n is None else float(n) for n in numbers)  # type: ignore[return-value]


def _pct(flags: Sequence[bool]) -> float:
    return 100 * sum(flags) / len(flags) if flags else math.nan


def _dimension(values: Sequence[float | None]) -> float:
    v = [x for x in values if x is not None]
    return 25 * (sum(v) / len(v) - 1) if v else math.nan


@register_editor_benchmark
class RiseProtocol(EditorProtocol):
    """RISEBench (see the module docstring)."""

    name = "risebench"
    dataset = RISE_DATASET
    official_judge = "rise-judge"
    official_label = "RISEBench's official judge"
    layout = "images/{category}/{index}.png (or .jpg, .jpeg)"
    data_help = "its JSON file or folder"
    task_types = CATEGORIES
    languages = ("en",)
    parts = ("official", "ieqa")
    metrics = ("overall",)
    main_metric = "accuracy"
    main_field = "score"
    interval = "a bootstrap of ieqa's Overall accuracy over its valid items"
    columns = ("editor", "language", *_NAMES.values(), "Overall", "Overall (before 2026-04)",
               "ieqa Overall", "95% CI", "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        if path.is_file():
            return path.suffix == ".json"
        try:  # a folder holding one RISEBench item list (at its top or in data/)
            return path.is_dir() and resolve_data(path).is_file()
        except BenchmarkFormatError:
            return False

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[RiseItem]:
        self.require_english(languages, "RISEBench's instructions are")
        return read_risebench(data)

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        raw = row.get("raw") or {}
        logical = item.category == "logical_reasoning"
        free = item.consistency_free
        mine = None if row.get("error") else tuple(
            row.get(d) for d in ("content_preservation", "instruction_alignment",
                                 "visual_quality"))
        if judge.name == self.official_judge:
            released = released_judgements(raw.get("released") or {}, logical)
        else:
            released = mine if mine is not None else "failed"
        out: dict[str, Any] = {
            "consistency_free": free,
            "released": released if isinstance(released, str) else list(released),
            "error": row.get("error"),
            "cons": mine[0] if mine else None, "rea": mine[1] if mine else None,
            "qua": mine[2] if mine else None, "score": row.get("overall")}
        return out

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        def released_solved(e: Mapping[str, Any], rule: str) -> bool:
            r = e["released"]
            return not isinstance(r, str) and solved(e["task_type"], *r, e["consistency_free"],
                                                     rule=rule)

        official: dict[str, Any] = {"per_category": {}, "before_2026_04": {}}
        mine: dict[str, Any] = {"per_category": {}}
        for c in CATEGORIES:
            mine_c = [e for e in entries if e["task_type"] == c]
            official["per_category"][c] = _pct([released_solved(e, "2026-04") for e in mine_c])
            official["before_2026_04"][c] = _pct([released_solved(e, "2025-05") for e in mine_c])
            ok = [e for e in mine_c if e["error"] is None]
            mine["per_category"][c] = _pct([solved(c, e["cons"], e["rea"], e["qua"],
                                                   e["consistency_free"]) for e in ok])
        official["overall"] = _pct([released_solved(e, "2026-04") for e in entries])
        official["overall_before_2026_04"] = _pct([released_solved(e, "2025-05")
                                                   for e in entries])
        readable = [e["released"] for e in entries if not isinstance(e["released"], str)]
        official["dimensions"] = {name: _dimension([r[k] for r in readable]) for k, name in
                                  enumerate(("consistency", "reasoning", "plausibility"))}
        official["unreadable"] = sum(1 for e in entries if e["released"] == "failed")
        official["would_stop"] = sum(1 for e in entries if e["released"] == "stops")
        ok = [e for e in entries if e["error"] is None]
        flags = [100.0 * solved(e["task_type"], e["cons"], e["rea"], e["qua"],
                                e["consistency_free"]) for e in ok]
        mine["overall"] = sum(flags) / len(flags) if flags else math.nan
        out: dict[str, Any] = {"official": official, "ieqa": mine, "ci": {}}
        if ok:
            out["ci"]["overall"] = list(stratified_bootstrap(flags, ["all"] * len(ok), ["all"],
                                                             n_boot=n_boot))
        return out

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        """Items whose answers the released code cannot read (counted as unsolved there
        and here) or would stop on (in any repeat)."""
        failed = len({e["key"] for e in entries if e["released"] == "failed"})
        stops = len({e["key"] for e in entries if e["released"] == "stops"})
        words = ([f"{failed} unreadable, counted as unsolved as released"] if failed else []) \
            + ([f"{stops} the released script would stop on, counted as unsolved"]
               if stops else [])
        return ({"official_unreadable": failed, "official_would_stop": stops},
                "official numbers: " + ", ".join(words) if words else "")

    def aggregation(self) -> dict[str, str]:
        return {"official": "percent of items solved (every required judgement 5; logical "
                            "0/1 read as 1/5), per category and pooled over all items, an "
                            "unreadable answer counted as unsolved (RISEBench's gpt_eval.py "
                            "since April 2026; 'before 2026-04': a consistency_free item is "
                            "never solved); dimensions: 25 * (mean - 1)",
                "ieqa": "ieqa: the same shares over the items whose every answer holds one "
                        "score in range; other items are failures, counted"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        official, mine = result["official"], result["ieqa"]
        return {**{name: official["per_category"][c] for c, name in _NAMES.items()},
                "Overall": official["overall"],
                "Overall (before 2026-04)": official["overall_before_2026_04"],
                "ieqa Overall": mine["overall"], "95% CI": ci_text(result["ci"].get("overall"), 1)}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        return ([{"category": c, "official": result["official"]["per_category"][c],
                  "before 2026-04": result["official"]["before_2026_04"][c],
                  "ieqa": result["ieqa"]["per_category"][c]} for c in CATEGORIES],
                ["category", "official", "before 2026-04", "ieqa"])

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["official"]["per_category"][c] for c in CATEGORIES]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        parts = [f"{k} {entry[k]:.0f}" for k in ("cons", "rea", "qua") if entry[k] is not None]
        return "  ".join(parts) + ("  (solved)" if entry["score"] == 5 else "")
