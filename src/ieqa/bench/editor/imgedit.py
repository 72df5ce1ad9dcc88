"""ImgEdit-Bench (basic single-turn suite) as ``bench-editor`` runs it
(:class:`ImgEditProtocol`).

Each item gets two numbers from ImgEdit's judge (``imgedit-judge``): ``released_score``, the
released scripts' reading of the answer (the mean of whatever score lines it finds,
rounded to 2 decimals; ``None`` when it finds none, and the item is then dropped as there),
and ``score``, ieqa's (the mean of exactly three 1-5 scores, unrounded; a failure
otherwise, counted). A **stand-in** judge's item number is its ``overall`` on its own scale
(both numbers; ``released_score`` rounded to 2 decimals), labelled.

Per language (English only) the numbers are:

* ``official`` — as published: each type's score is the mean of its items' released scores
  rounded to 2 decimals (``step2_typescore.py``), ``per_type``; and both "Overall"
  conventions papers print, rounded to 2 decimals: ``overall_mean_of_types`` (the mean of
  the 9 type scores, the leaderboard's caption) and ``overall_item_weighted`` (the type
  scores weighted by their scored items); ``scored`` counts the items in them;
* ``ieqa`` — ieqa's default beside them, unrounded, over the items whose answers are
  valid: ``per_type``, ``overall_mean_of_types`` and ``item_mean``;
* ``ci`` — a 95 % stratified bootstrap interval of ieqa's mean of types.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import (
    imgedit_overall,
    item_mean,
    per_type_means,
    stratified_bootstrap,
)
from ieqa.bench.editor.protocol import EditorProtocol, ci_text, register_editor_benchmark
from ieqa.data.loaders.imgedit_bench import (
    ANNOTATION_FILES,
    EDIT_TYPES,
    IMGEDIT_DATASET,
    ImgEditItem,
    output_path,
    read_imgedit,
)
from ieqa.scorers.base import Scorer

__all__ = ["ImgEditProtocol"]


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


@register_editor_benchmark
class ImgEditProtocol(EditorProtocol):
    """ImgEdit-Bench (see the module docstring)."""

    name = "imgedit-bench"
    dataset = IMGEDIT_DATASET
    official_judge = "imgedit-judge"
    released_judges = {"imgedit-judge-7b": "ImgEdit-Judge, ImgEdit-Bench's open judge"}
    official_label = "ImgEdit-Bench's official judge"
    layout = "{key}.png"
    data_help = "Benchmark.tar or the folder it unpacks to"
    task_types = EDIT_TYPES
    languages = ("en",)
    parts = ("official", "ieqa")
    metrics = ("overall_mean_of_types", "overall_item_weighted")
    main_metric = "overall"
    main_field = "score"
    interval = ("a bootstrap of ieqa's mean of types over its valid items, resampled within "
                "the 9 edit types")
    columns = ("editor", "language", *EDIT_TYPES, "Overall (mean of types)",
               "Overall (item-weighted)", "ieqa mean of types", "95% CI", "ieqa item mean",
               "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        return (path.is_file() and path.suffix == ".tar") or (path.is_dir() and any(
            next(path.rglob(name), None) for name in ANNOTATION_FILES))

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[ImgEditItem]:
        asked = {str(lang).strip().lower() for lang in languages} - {"cn", "zh"}
        if "en" not in asked:
            from ieqa.bench.errors import BenchError

            raise BenchError("ImgEdit-Bench's instructions are English: --language en")
        return read_imgedit(data, work_dir / "data")

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        raw = row.get("raw") or {}
        if self.is_released_judge(judge):
            released = _finite((raw.get("released") or {}).get("item_score"))
        else:
            overall = None if row.get("error") else _finite(row.get("overall"))
            released = None if overall is None else round(overall, 2)
        score = None if row.get("error") else _finite(row.get("overall"))
        error = row.get("error") or (None if score is not None else
                                     "the judge gave no usable overall score")
        return {"score": score, "released_score": released, "error": error,
                "criteria": raw.get("criteria")}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        released = [e for e in entries if e["released_score"] is not None]
        per_type = {t: round(v, 2) if math.isfinite(v) else math.nan for t, v in
                    per_type_means([e["released_score"] for e in released],
                                   [e["task_type"] for e in released], EDIT_TYPES).items()}
        counts = {t: sum(1 for e in released if e["task_type"] == t) for t in EDIT_TYPES}
        if all(math.isfinite(v) for v in per_type.values()):
            overall = imgedit_overall(per_type, counts)
        else:
            overall = {"mean_of_types": math.nan, "item_weighted": math.nan}
        ok = [e for e in entries if e["error"] is None]
        ok_types = [e["task_type"] for e in ok]
        mine = per_type_means([e["score"] for e in ok], ok_types, EDIT_TYPES)
        out: dict[str, Any] = {
            "official": {"per_type": per_type,
                         "overall_mean_of_types": overall["mean_of_types"],
                         "overall_item_weighted": overall["item_weighted"],
                         "scored": len(released)},
            "ieqa": {"per_type": mine,
                     "overall_mean_of_types": (sum(mine.values()) / len(mine)),
                     "item_mean": item_mean([e["score"] for e in ok])},
            "ci": {}}
        if ok:
            low, high = stratified_bootstrap([e["score"] for e in ok], ok_types, EDIT_TYPES,
                                             n_boot=n_boot)
            out["ci"]["overall_mean_of_types"] = [low, high]
        return out

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        """Items the official numbers leave out: no released score (in any repeat)."""
        dropped = len({e["key"] for e in entries if e["released_score"] is None})
        return ({"official_dropped": dropped},
                f"official numbers: {dropped} left out where the released scripts find no "
                "score line" if dropped else "")

    def aggregation(self) -> dict[str, str]:
        return {"official": "per type: the mean of the items' released scores (the mean of "
                            "the score lines found, rounded to 2 decimals), rounded to 2 "
                            "decimals (ImgEdit's step1/step2 scripts); Overall: the mean of the "
                            "9 type scores, and the type scores weighted by their items, each "
                            "rounded to 2 decimals (the released scripts compute neither; "
                            "papers print one or the other); answers without a score line "
                            "are dropped, as there",
                "ieqa": "ieqa: the mean of exactly three 1-5 scores per item, unrounded; "
                        "the mean of the 9 types' means and the mean over items; any other "
                        "answer is a failure, counted"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        official, mine = result["official"], result["ieqa"]
        return {**{t: official["per_type"][t] for t in EDIT_TYPES},
                "Overall (mean of types)": official["overall_mean_of_types"],
                "Overall (item-weighted)": official["overall_item_weighted"],
                "ieqa mean of types": mine["overall_mean_of_types"],
                "95% CI": ci_text(result["ci"].get("overall_mean_of_types")),
                "ieqa item mean": mine["item_mean"]}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        return ([{"edit_type": t, "official": result["official"]["per_type"][t],
                  "ieqa": result["ieqa"]["per_type"][t]} for t in EDIT_TYPES],
                ["edit_type", "official", "ieqa"])

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["official"]["per_type"][t] for t in EDIT_TYPES]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        criteria = entry.get("criteria") or []
        parts = "  ".join(f"{name} {score}" for name, score in criteria)
        return f"score {entry['score']:.2f}" + (f"  ({parts})" if parts else "")
