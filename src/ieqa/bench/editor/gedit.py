"""GEdit-Bench as ``bench-editor`` runs it (:class:`GEditProtocol`).

Each item gets SC, PQ and O: from GEdit's judge (``gedit-judge``) its ``sc_min``,
``visual_quality`` and ``overall``; from a **stand-in** judge (any other scorer of the
catalog) its ``sc_min`` or else ``instruction_alignment``, its ``visual_quality`` and its
``overall`` (or ``sqrt(SC * PQ)`` when it has none), on its own scale, and every table says
so. Per language the numbers are:

* ``official`` — G_SC, G_PQ, G_O as GEdit's ``calculate_statistics.py``: the unweighted mean
  of the 11 task types' means, with ``per_task``;
* ``intersection`` — the same over the items with ``Intersection_exist`` ("-I");
* ``item_mean`` — ieqa's default beside them: the mean over items;
* ``ci`` — a 95 % stratified bootstrap interval of each official number over items.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import item_mean, macro_mean, stratified_bootstrap
from ieqa.bench.editor.protocol import EditorProtocol, ci_text
from ieqa.data.loaders.gedit_bench import (
    GEDIT_DATASET,
    LANGUAGES,
    TASK_TYPES,
    GEditItem,
    output_path,
    read_gedit,
)
from ieqa.scorers.base import Scorer

__all__ = ["GEditProtocol"]

_METRICS = (("G_SC", "sc"), ("G_PQ", "pq"), ("G_O", "o"))


class GEditProtocol(EditorProtocol):
    """GEdit-Bench (see the module docstring)."""

    name = "gedit-bench"
    dataset = GEDIT_DATASET
    official_judge = "gedit-judge"
    official_label = "GEdit-Bench's official judge"
    layout = "fullset/{task_type}/{language}/{key}.png"
    task_types = TASK_TYPES
    languages = LANGUAGES
    parts = ("official", "intersection", "item_mean")
    metrics = tuple(name for name, _ in _METRICS)
    main_metric = "G_O"
    main_field = "o"
    columns = ("editor", "language", "G_SC", "G_PQ", "G_O", "G_SC-I", "G_PQ-I", "G_O-I",
               "G_O 95% CI", "G_O item mean (ieqa)", "coverage")

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[GEditItem]:
        return read_gedit(data, languages, work_dir / "sources")

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        values = None if row.get("error") else self._scores(row, judge)
        return {"sc": values[0] if values else None, "pq": values[1] if values else None,
                "o": values[2] if values else None,
                "error": row.get("error") or (None if values else
                                              "the judge gave no usable SC/PQ")}

    @staticmethod
    def _scores(row: Mapping[str, Any], judge: Scorer) -> tuple[float, float, float] | None:
        dims = judge.dimensions
        sc_dim = "sc_min" if "sc_min" in dims else "instruction_alignment"
        sc, pq = row.get(sc_dim), row.get("visual_quality")
        if sc is None or pq is None:
            return None
        o = row.get("overall") if "overall" in dims else None
        if o is None:
            o = math.sqrt(sc * pq) if sc >= 0 and pq >= 0 else math.nan
        values = (float(sc), float(pq), float(o))
        return values if all(math.isfinite(v) for v in values) else None

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        ok = [r for r in entries if r["error"] is None]
        types = [r["task_type"] for r in ok]
        inter = [r for r in ok if r["intersection"]]
        out: dict[str, Any] = {"official": {"per_task": {}}, "intersection": {"per_task": {}},
                               "item_mean": {}, "ci": {}}
        for name, key in _METRICS:
            g, per = macro_mean([r[key] for r in ok], types, TASK_TYPES)
            out["official"][name] = g
            gi, per_i = macro_mean([r[key] for r in inter], [r["task_type"] for r in inter],
                                   TASK_TYPES)
            out["intersection"][name] = gi
            for t in TASK_TYPES:
                out["official"]["per_task"].setdefault(t, {})[name] = per[t]
                out["intersection"]["per_task"].setdefault(t, {})[name] = per_i[t]
            out["item_mean"][name] = item_mean([r[key] for r in ok])
            if ok:
                low, high = stratified_bootstrap([r[key] for r in ok], types, TASK_TYPES,
                                                 n_boot=n_boot)
                out["ci"][name] = [low, high]
        return out

    def aggregation(self) -> dict[str, str]:
        return {"official": "mean of the 11 task types' means (GEdit-Bench's "
                            "calculate_statistics.py)",
                "intersection": "the same over Intersection_exist items",
                "item_mean": "ieqa: the mean over items"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        return {**{k: result["official"][k] for k in self.metrics},
                **{f"{k}-I": result["intersection"][k] for k in self.metrics},
                "G_O 95% CI": ci_text(result["ci"].get("G_O")),
                "G_O item mean (ieqa)": result["item_mean"]["G_O"]}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        per = result["official"]["per_task"]
        return ([{"task_type": t, **per[t]} for t in TASK_TYPES],
                ["task_type", *self.metrics])

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["official"]["per_task"][t]["G_O"] for t in TASK_TYPES]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        return (f"SC {entry['sc']:.1f}  PQ {entry['pq']:.1f}  O {entry['o']:.2f}"
                + ("  (substituted)" if entry["substituted"] else ""))

    def item_title(self, entry: Mapping[str, Any]) -> str:
        return f"{entry['task_type']}/{entry['language']}/{entry['key']}"
