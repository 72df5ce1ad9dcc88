"""GEdit-Bench as ``bench-editor`` runs it (:class:`GEditProtocol`).

Each item gets SC, PQ and O twice. From GEdit's judge (``gedit-judge``): ``sc``, ``pq``,
``o`` are the released code's reading of its answers (``raw["released"]``: the minimum of
whatever list it finds, out-of-range values kept, its re-ask and give-up rules; see
:mod:`ieqa.scorers.published.gedit_judge`), with ``official_status`` ``read``, ``drawn``
(``on_malformed="random"``), ``random`` (the released code would draw a random score: left
out) or ``unread`` (it would ask again or fail: left out); ``ieqa_sc``, ``ieqa_pq``,
``ieqa_o`` are ieqa's strict reading (``sc_min``, ``visual_quality``, ``overall``; the
row's ``error`` when it has none). From a **stand-in** judge (any other scorer of the
catalog) both are its ``sc_min`` or else ``instruction_alignment``, its ``visual_quality``
and its ``overall`` (or ``sqrt(SC * PQ)`` when it has none), on its own scale, and every
table says so. Per language the numbers are:

* ``official`` — G_SC, G_PQ, G_O as GEdit's ``calculate_statistics.py``: the unweighted mean
  of the 11 task types' means of the released readings, with ``per_task`` and ``counts``
  (items read, drawn, left out as random, left out as unread);
* ``intersection`` — the same over the items with ``Intersection_exist`` ("-I");
* ``ieqa`` — the same two (G_SC ... G_O-I, ``per_task``) over ieqa's strict readings;
* ``item_mean`` — ieqa's default beside them: the mean over items of ieqa's readings;
* ``ci`` — a 95 % stratified bootstrap interval of each official number over items.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import item_mean, macro_mean, stratified_bootstrap
from ieqa.bench.editor.protocol import (
    EditorProtocol,
    ci_text,
    first_file,
    register_editor_benchmark,
)
from ieqa.data.combine import viescore
from ieqa.data.loaders.base import table_columns
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


@register_editor_benchmark
class GEditProtocol(EditorProtocol):
    """GEdit-Bench (see the module docstring)."""

    name = "gedit-bench"
    dataset = GEDIT_DATASET
    official_judge = "gedit-judge"
    official_label = "GEdit-Bench's official judge"
    layout = "fullset/{task_type}/{language}/{key}.png"
    data_help = "its Parquet files, folder or file"
    task_types = TASK_TYPES
    languages = LANGUAGES
    parts = ("official", "intersection", "ieqa", "item_mean")
    metrics = tuple(name for name, _ in _METRICS)
    main_metric = "G_O"
    main_field = "o"
    interval = ("a bootstrap of the official G_O over items, resampled within the 11 task "
                "types")
    columns = ("editor", "language", "G_SC", "G_PQ", "G_O", "G_SC-I", "G_PQ-I", "G_O-I",
               "G_O 95% CI", "G_O (ieqa)", "G_O-I (ieqa)", "G_O item mean (ieqa)", "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        parquet = first_file(path, ".parquet")  # its own columns (task_type, key, ...)
        return parquet is not None and {"task_type", "key", "instruction_language"} <= set(
            table_columns(parquet))

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[GEditItem]:
        return read_gedit(data, languages, work_dir / "sources")

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        values = None if row.get("error") else self._scores(row, judge)
        error = row.get("error") or (None if values else "the judge gave no usable SC/PQ")
        mine = {"ieqa_sc": values[0] if values else None, "ieqa_pq": values[1] if values else None,
                "ieqa_o": values[2] if values else None, "error": error}
        if judge.name != self.official_judge:  # a stand-in: one reading, its own
            return {"sc": mine["ieqa_sc"], "pq": mine["ieqa_pq"], "o": mine["ieqa_o"],
                    "official_status": "read" if values else "failed",
                    "official_reason": error, **mine}
        released = (row.get("raw") or {}).get("released")
        if not released:
            if row.get("error"):  # the judge was never asked (an image that did not load, ...)
                return {"sc": None, "pq": None, "o": None, "official_status": "failed",
                        "official_reason": row["error"], **mine}
            from ieqa.bench.errors import BenchError

            raise BenchError(f"item {row.get('id')}: its score file holds no released reading "
                             "(written by an earlier ieqa); run bench-editor again with "
                             "--overwrite to judge it anew")
        status = released["status"]
        return {"sc": released.get("sc"), "pq": released.get("pq"), "o": released.get("o"),
                "official_status": status, "official_reason": released.get("reason"),
                "substituted": status == "drawn", **mine}

    @staticmethod
    def _scores(row: Mapping[str, Any], judge: Scorer) -> tuple[float, float, float] | None:
        dims = judge.dimensions
        sc_dim = "sc_min" if "sc_min" in dims else "instruction_alignment"
        sc, pq = row.get(sc_dim), row.get("visual_quality")
        if sc is None or pq is None:
            return None
        o = row.get("overall") if "overall" in dims else None
        if o is None:
            o = viescore(sc, pq)
        values = (float(sc), float(pq), float(o))
        return values if all(math.isfinite(v) for v in values) else None

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        read = [r for r in entries if r["sc"] is not None]
        ok = [r for r in entries if r["error"] is None]
        out: dict[str, Any] = {"official": {}, "intersection": {}, "ieqa": {},
                               "item_mean": {}, "ci": {}}
        out["official"], out["intersection"] = self._macro(read, "")
        mine, mine_i = self._macro(ok, "ieqa_")
        out["ieqa"] = {**mine, **{f"{k}-I": mine_i[k] for k in self.metrics},
                       "per_task_intersection": mine_i["per_task"]}
        counts = {s: sum(1 for r in entries if r["official_status"] == s)
                  for s in ("read", "drawn", "random", "unread")}
        out["official"]["counts"] = counts
        types = [r["task_type"] for r in read]
        for name, key in _METRICS:
            out["item_mean"][name] = item_mean([r[f"ieqa_{key}"] for r in ok])
            if read:
                low, high = stratified_bootstrap([r[key] for r in read], types, TASK_TYPES,
                                                 n_boot=n_boot)
                out["ci"][name] = [low, high]
        return out

    @staticmethod
    def _macro(rows: Sequence[Mapping[str, Any]], prefix: str) -> tuple[dict[str, Any],
                                                                         dict[str, Any]]:
        """G_SC, G_PQ, G_O (mean of the task types' means) of ``rows``' ``{prefix}sc`` ...,
        over all of them and over their intersection items, each with ``per_task``."""
        inter = [r for r in rows if r["intersection"]]
        full: dict[str, Any] = {"per_task": {}}
        part: dict[str, Any] = {"per_task": {}}
        for name, key in _METRICS:
            for table, subset in ((full, rows), (part, inter)):
                g, per = macro_mean([r[prefix + key] for r in subset],
                                    [r["task_type"] for r in subset], TASK_TYPES)
                table[name] = g
                for t in TASK_TYPES:
                    table["per_task"].setdefault(t, {})[name] = per[t]
        return full, part

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        """How many items the official numbers read, drew and left out (items with that
        status in any repeat), and the words the coverage text adds."""
        ids: dict[str, set[tuple[str, str]]] = {s: set() for s in ("random", "unread", "drawn")}
        for r in entries:
            if r["official_status"] in ids:
                ids[r["official_status"]].add((r["task_type"], r["key"]))
        counts = {f"official_{s}": len(v) for s, v in ids.items()}
        words = []
        if counts["official_random"]:
            words.append(f"{counts['official_random']} left out where the released code draws "
                         "a random score")
        if counts["official_drawn"]:
            words.append(f"{counts['official_drawn']} drawn at random as the released code "
                         "does (on_malformed=random)")
        if counts["official_unread"]:
            words.append(f"{counts['official_unread']} left out that the released code would "
                         "ask about again or fail on")
        return counts, ("official numbers: " + ", ".join(words)) if words else ""

    def aggregation(self) -> dict[str, str]:
        return {"official": "mean of the 11 task types' means (GEdit-Bench's "
                            "calculate_statistics.py) of the released code's readings",
                "intersection": "the same over Intersection_exist items",
                "ieqa": "the same two over ieqa's strict readings (two numbers 0-10 per "
                        "answer)",
                "item_mean": "ieqa: the mean over items of ieqa's readings"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        return {**{k: result["official"][k] for k in self.metrics},
                **{f"{k}-I": result["intersection"][k] for k in self.metrics},
                "G_O 95% CI": ci_text(result["ci"].get("G_O")),
                "G_O (ieqa)": result["ieqa"]["G_O"], "G_O-I (ieqa)": result["ieqa"]["G_O-I"],
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
