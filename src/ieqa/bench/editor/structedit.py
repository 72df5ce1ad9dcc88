"""StructEditBench as ``bench-editor`` runs it (:class:`StructEditProtocol`).

Each item's questions about the edited image are answered and judged by StructScore
(``structscore``); the item's accuracy is 0.9 x editing + 0.1 x maintain (percent). Per
language (English only):

* ``official`` — as the released ``qwen_scoring.py`` reports it: the mean over items of
  the weighted accuracy, of the editing accuracy and of the maintain accuracy (an item
  without maintain questions counts 0 in that mean, as released), per ``category`` as the
  data holds it, each item tallied by the released rule (an unjudged question before the
  last judged one counts as a wrong editing question); an item with nothing judged is left
  out, as released, and so is an item with a request that failed (the released code never
  loses one; both are stated in the coverage).
* ``ieqa`` — the mean weighted accuracy over the items whose every question was asked and
  judged with a plain Correct / Incorrect (the others are failures, counted), the maintain
  mean over the items that have maintain questions, and a 95 % bootstrap CI.

A **stand-in** judge's ``overall`` (0-100) takes the weighted accuracy's place, labelled.
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
from ieqa.data.loaders.structeditbench import (
    STRUCTEDIT_DATASET,
    StructEditItem,
    is_structedit,
    output_path,
    read_structeditbench,
)
from ieqa.scorers.base import Scorer

__all__ = ["StructEditProtocol"]


@register_editor_benchmark
class StructEditProtocol(EditorProtocol):
    """StructEditBench: structured-visual edits (charts, math, tables...) judged by StructScore"""

    name = "structeditbench"
    dataset = STRUCTEDIT_DATASET
    official_judge = "structscore"
    official_label = "StructEditBench's StructScore"
    layout = "{key}.png (the item's row number)"
    data_help = "its Parquet files (a folder or one file)"
    languages = ("en",)
    parts = ("official", "ieqa")
    metrics = ("accuracy", "editing", "maintain")
    main_metric = "weighted accuracy"
    main_field = "score"
    interval = "a bootstrap of ieqa's weighted accuracy over its valid items"
    columns = ("editor", "language", "Accuracy", "Editing", "Maintain", "ieqa Accuracy",
               "95% CI", "coverage")

    def __init__(self) -> None:
        self.task_types: tuple[str, ...] = ()  # the data's categories

    @classmethod
    def detect(cls, path: Path) -> bool:
        return is_structedit(path)

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[StructEditItem]:
        self.require_english(languages, "StructEditBench's questions are")
        items = read_structeditbench(data, work_dir / "structeditbench-sources")
        self.task_types = tuple(dict.fromkeys(i.category for i in items))
        return items

    def generation_skip(self, item: Any) -> str | None:
        if item.source is None:
            return "the data row has no source image (source_image, input_image or image)"
        if not item.instruction:
            return ("the data row has no instruction (instruction, edit_prompt, prompt or "
                    "edit_instruction)")
        return None

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        raw = row.get("raw") or {}
        overall = None if row.get("error") else row.get("overall")
        # a stand-in judge without an editing share: its overall stands in for it
        editing = row.get("instruction_alignment")
        editing = overall if editing is None else editing
        has_maintain = any(q.get("label") == "maintain" for q in item.meta()["qa"])
        maintain = row.get("content_preservation") if has_maintain else None
        failed = 0
        if judge.name == self.official_judge:
            released = (raw.get("released") or {}).get("accuracy")
            failed = int((raw.get("released") or {}).get("failed_requests") or 0)
        else:
            released = None if overall is None else [editing, maintain or 0.0, overall]
        return {"released": released, "failed_requests": failed, "error": row.get("error"),
                "editing": editing, "maintain": maintain, "score": overall}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        tallied = [e for e in entries if e["released"] is not None]
        official: dict[str, Any] = {
            "accuracy": _mean([e["released"][2] for e in tallied]),
            "editing": _mean([e["released"][0] for e in tallied]),
            "maintain": _mean([e["released"][1] for e in tallied]),
            "per_category": {}, "untallied": len(entries) - len(tallied)}
        for c in dict.fromkeys(e["task_type"] for e in tallied):
            mine = [e for e in tallied if e["task_type"] == c]
            official["per_category"][c] = {
                "accuracy": _mean([e["released"][2] for e in mine]),
                "editing": _mean([e["released"][0] for e in mine]),
                "maintain": _mean([e["released"][1] for e in mine]), "n": len(mine)}
        ok = [e for e in entries if e["error"] is None and e["score"] is not None]
        mine_part: dict[str, Any] = {
            "accuracy": _mean([e["score"] for e in ok]),
            "editing": _mean([e["editing"] for e in ok if e["editing"] is not None]),
            "maintain": _mean([e["maintain"] for e in ok if e["maintain"] is not None]),
            "per_category": {c: _mean([e["score"] for e in ok if e["task_type"] == c])
                             for c in dict.fromkeys(e["task_type"] for e in ok)}}
        out: dict[str, Any] = {"official": official, "ieqa": mine_part, "ci": {}}
        if ok:
            out["ci"]["accuracy"] = list(stratified_bootstrap(
                [e["score"] for e in ok], [e["task_type"] for e in ok],
                sorted({e["task_type"] for e in ok}), n_boot=n_boot))
        return out

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        failed = {e["key"] for e in entries if e["released"] is None and e["failed_requests"]}
        left = {e["key"] for e in entries if e["released"] is None} - failed
        words = ([f"{len(left)} items with nothing judged, left out as released"] if left
                 else []) + ([f"{len(failed)} items with a failed request, left out (the "
                              "released code never loses one)"] if failed else [])
        return ({"official_untallied": len(left), "official_failed": len(failed)},
                "official numbers: " + ", ".join(words) if words else "")

    def aggregation(self) -> dict[str, str]:
        return {"official": "StructEditBench's qwen_scoring.py: per item 0.9 x editing + 0.1 x "
                            "maintain accuracy (editing only without maintain questions), an "
                            "unjudged question before the last judged one counted as a wrong "
                            "editing one; means over items, per category (maintain: 0 for "
                            "items without maintain questions, as released)",
                "ieqa": "the mean weighted accuracy over items whose every question was asked "
                        "and judged Correct or Incorrect; maintain over items that have it"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        o = result["official"]
        return {"Accuracy": o["accuracy"], "Editing": o["editing"], "Maintain": o["maintain"],
                "ieqa Accuracy": result["ieqa"]["accuracy"],
                "95% CI": ci_text(result["ci"].get("accuracy"), 1)}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        per = result["official"]["per_category"]
        names = tuple(dict.fromkeys([*self.task_types, *per]))
        self.task_types = names  # a report made from results.json has not read the data
        nan = {"accuracy": math.nan, "editing": math.nan, "maintain": math.nan, "n": 0}
        rows = [{"category": c, "official": per.get(c, nan)["accuracy"],
                 "editing": per.get(c, nan)["editing"], "maintain": per.get(c, nan)["maintain"],
                 "ieqa": result["ieqa"]["per_category"].get(c, math.nan)} for c in names]
        return rows, ["category", "official", "editing", "maintain", "ieqa"]

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        per = result["official"]["per_category"]
        return [per[c]["accuracy"] if c in per else math.nan for c in self.task_types]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        if entry["score"] is None:
            return "no accuracy"
        return f"accuracy {entry['score']:.1f}" + (
            f"  (editing {entry['editing']:.1f})" if entry["editing"] is not None else "")
