"""KRIS-Bench as ``bench-editor`` runs it (:class:`KrisProtocol`).

Every item is judged for consistency (VC), visual quality (VQ) and instruction following
(IF), and the items of Social Science, Natural Science and Logical Reasoning for knowledge
plausibility (KP) too, each 1-5. The released ``summarize.py`` (ByteDance-Seed/Bagel's
``eval/gen/kris/summarize.py``, which the benchmark's authors point to) maps each score to
0-100 by 25 · (s - 1) and pools the (item, judgement) values:

* a group's VC, VQ, IF, KP (the table's columns name the groups AP, SP, TP, SS, NS, LR,
  ID): the mean of that judgement over the group's items;
* a group's AVG, a knowledge type's AVG (Factual, Conceptual, Procedural) and the
  Overall: the mean of all the values pooled flat, so a knowledge item weighs four values
  and the others three;
* a score the released reading could not find (``None``) is left out of every pool, and
  so is an item without an output.

``official`` is that, from the released readings of the answers; ``ieqa`` is the same
over the items whose every required judgement holds one integer 1-5 under its key
(other items are failures, counted in the coverage), with a 95 % bootstrap CI of the
Overall (items resampled within their categories). ``official["unread"]`` counts the
judgements the released reading found no score in.

A **stand-in** judge's ``content_preservation``, ``visual_quality``,
``instruction_alignment`` and ``knowledge_plausibility`` take the four judgements' places,
mapped to 0-100 from its own score range, labelled; a dimension it does not give is left
out.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.bench.editor.protocol import EditorProtocol, ci_text, register_editor_benchmark
from ieqa.data.loaders.kris_bench import (
    CATEGORIES,
    GROUPS,
    KNOWLEDGE_CATEGORIES,
    KNOWLEDGE_TYPES,
    KRIS_DATASET,
    KrisItem,
    output_path,
    read_kris,
)
from ieqa.scorers.base import Scorer

__all__ = ["KrisProtocol", "kris_summary", "flat_bootstrap", "JUDGEMENTS", "GROUP_ABBREV"]

#: the four judgements: table name -> (released answer key, ieqa dimension)
JUDGEMENTS: dict[str, tuple[str, str]] = {
    "VC": ("consistency_score", "content_preservation"),
    "VQ": ("quality_score", "visual_quality"),
    "IF": ("instruction_score", "instruction_alignment"),
    "KP": ("knowledge_score", "knowledge_plausibility")}
#: the groups' short names, as the table's columns
GROUP_ABBREV: dict[str, str] = {g: "".join(w[0] for w in g.split()) for g in GROUPS}
_SHORT = {"Factual Knowledge": "Factual", "Conceptual Knowledge": "Conceptual",
          "Procedural Knowledge": "Procedural"}


def _required(category: str) -> tuple[str, ...]:
    return ("VC", "VQ", "IF", "KP") if category in KNOWLEDGE_CATEGORIES else ("VC", "VQ", "IF")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def kris_summary(entries: Sequence[tuple[str, Mapping[str, float | None]]]) -> dict[str, Any]:
    """KRIS-Bench's published numbers from ``(category, {judgement: value 0-100 or None})``
    pairs, as the released ``summarize.py`` pools them (see the module docstring):
    ``{"overall", "factual", "conceptual", "procedural", "groups": {group: {VC, VQ, IF,
    [KP,] AVG}}, "categories": {category: {..., AVG}}}``; NaN where nothing is pooled."""
    by_cat: dict[str, dict[str, list[float]]] = {c: {j: [] for j in _required(c)}
                                                 for c in CATEGORIES}
    for category, values in entries:
        for j in _required(category):
            v = values.get(j)
            if v is not None:
                by_cat[category][j].append(float(v))
    cats = {c: {**{j: _mean(v) for j, v in d.items()},
                "AVG": _mean([x for v in d.values() for x in v])} for c, d in by_cat.items()}
    groups: dict[str, dict[str, float]] = {}
    flat: dict[str, list[float]] = {}
    for group, members in GROUPS.items():
        judgements = _required(members[0])
        groups[group] = {j: _mean([x for c in members for x in by_cat[c][j]])
                         for j in judgements}
        flat[group] = [x for c in members for j in judgements for x in by_cat[c][j]]
        groups[group]["AVG"] = _mean(flat[group])
    out: dict[str, Any] = {
        "overall": _mean([x for g in GROUPS for x in flat[g]]),
        **{_SHORT[t].lower(): _mean([x for g in gs for x in flat[g]])
           for t, gs in KNOWLEDGE_TYPES.items()},
        "groups": groups, "categories": cats}
    return out


def flat_bootstrap(sums: Sequence[float], counts: Sequence[int], strata: Sequence[str], *,
                   n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of a flat pooled mean ``sum(sums) / sum(counts)`` (each item
    contributing the sum and the number of its values), resampling items with replacement
    within each stratum; ``(nan, nan)`` without items."""
    s, n, t = np.asarray(sums, float), np.asarray(counts, float), np.asarray(strata)
    if s.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    tot_s, tot_n = np.zeros(n_boot), np.zeros(n_boot)
    for name in dict.fromkeys(strata):
        idx = np.flatnonzero(t == name)
        draws = idx[rng.integers(0, idx.size, size=(n_boot, idx.size))]
        tot_s += s[draws].sum(axis=1)
        tot_n += n[draws].sum(axis=1)
    means = tot_s / tot_n
    tail = (1 - ci) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def _to100(value: Any, lo: float, hi: float) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return 100.0 * (float(value) - lo) / (hi - lo)


@register_editor_benchmark
class KrisProtocol(EditorProtocol):
    """KRIS-Bench (see the module docstring)."""

    name = "kris-bench"
    dataset = KRIS_DATASET
    official_judge = "kris-judge"
    official_label = "KRIS-Bench's official judge"
    layout = "{category}/{id}.jpg (or .png)"
    data_help = "the folder of its category folders"
    task_types = CATEGORIES
    languages = ("en",)
    parts = ("official", "ieqa")
    metrics = ("overall",)
    main_metric = "AVG (0-100)"
    #: an item's score: the mean of its judgements mapped to 0-100 (its share of the AVG)
    main_field = "score"
    interval = ("a bootstrap of ieqa's Overall over its valid items, resampled within "
                "categories, each item's judgements pooled flat")
    columns = ("editor", "language", *GROUP_ABBREV.values(), "Factual", "Conceptual", "Procedural",
               "Overall", "ieqa Overall", "95% CI", "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        return path.is_dir() and any((root / c / "annotation.json").is_file()
                                     for root in (path, path / "KRIS_Bench") for c in CATEGORIES)

    def generation_skip(self, item: Any) -> str | None:
        n = len(item.sources)
        return f"takes {n} input images; a pipeline is called with one" if n > 1 else None

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[KrisItem]:
        self.require_english(languages, "KRIS-Bench's instructions are")
        return read_kris(data)

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        lo, hi = judge.score_range
        scale = (1.0, 5.0) if lo is None or hi is None else (float(lo), float(hi))
        mine = {j: row.get(dim) for j, (_, dim) in JUDGEMENTS.items()}
        if judge.name == self.official_judge:
            released_raw = (row.get("raw") or {}).get("released") or {}
            released = {j: released_raw.get(key) for j, (key, _) in JUDGEMENTS.items()}
        else:
            released = mine
        values = [_to100(mine[j], *scale) for j in _required(item.category)]
        present = [v for v in values if v is not None]
        return {"error": row.get("error"), "scale": list(scale),
                "released": released, **mine,
                "official_judge": judge.name == self.official_judge,
                "score": sum(present) / len(present) if present else None}

    def _values(self, e: Mapping[str, Any], released: bool) -> dict[str, float | None]:
        lo, hi = e["scale"]
        src = e["released"] if released else e
        return {j: _to100(src.get(j), lo, hi) for j in JUDGEMENTS}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        official = kris_summary([(e["task_type"], self._values(e, True)) for e in entries])
        official["unread"] = sum(1 for e in entries for j in _required(e["task_type"])
                                 if self._values(e, True)[j] is None)
        ok = [e for e in entries if e["error"] is None]
        mine = kris_summary([(e["task_type"], self._values(e, False)) for e in ok])
        out: dict[str, Any] = {"official": official, "ieqa": mine, "ci": {}}
        if ok:
            sums, counts = [], []
            for e in ok:
                vals = self._values(e, False)
                present = [vals[j] for j in _required(e["task_type"]) if vals[j] is not None]
                sums.append(sum(present))
                counts.append(len(present))
            if sum(counts):
                out["ci"]["overall"] = list(flat_bootstrap(
                    sums, counts, [e["task_type"] for e in ok], n_boot=n_boot))
        return out

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        """Judgements the official numbers leave out (the released reading found no score),
        and the items they belong to (in any repeat)."""
        unread = {(e["key"], e.get("repeat"), j) for e in entries for j in _required(e["task_type"])
                  if self._values(e, True)[j] is None}
        items = len({key for key, _, _ in unread})
        why = ("where the released reading finds no score"
               if all(e.get("official_judge", True) for e in entries)
               else "that the stand-in judge does not give")
        return ({"official_unread_judgements": len(unread), "official_unread_items": items},
                f"official numbers: {len(unread)} judgement{'s' if len(unread) != 1 else ''} "
                f"of {items} item{'s' if items != 1 else ''} left out {why}" if unread else "")

    def aggregation(self) -> dict[str, str]:
        return {"official": "each 1-5 score mapped to 0-100 by 25 * (s - 1); per group the "
                            "mean of each judgement over its items, and AVG, the knowledge "
                            "types and Overall the mean of all (item, judgement) values pooled "
                            "flat; unread scores are left out (KRIS-Bench's summarize.py)",
                "ieqa": "ieqa: the same over the items whose every judgement holds an integer "
                        "1-5 under its key; other items are failures, counted"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        official, mine = result["official"], result["ieqa"]
        return {**{GROUP_ABBREV[g]: official["groups"][g]["AVG"] for g in GROUPS},
                **{_SHORT[t]: official[_SHORT[t].lower()] for t in KNOWLEDGE_TYPES},
                "Overall": official["overall"], "ieqa Overall": mine["overall"],
                "95% CI": ci_text(result["ci"].get("overall"), 2)}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        rows = []
        for group in GROUPS:
            official = result["official"]["groups"][group]
            rows.append({"group": group, **{j: official.get(j, math.nan) for j in JUDGEMENTS},
                         "AVG": official["AVG"],
                         "ieqa AVG": result["ieqa"]["groups"][group]["AVG"]})
        return rows, ["group", *JUDGEMENTS, "AVG", "ieqa AVG"]

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["official"]["categories"][c]["AVG"] for c in CATEGORIES]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        return "  ".join(f"{j} {entry[j]:.0f}" for j in JUDGEMENTS if entry.get(j) is not None)

    def item_title(self, entry: Mapping[str, Any]) -> str:
        return f"{entry['task_type']}/{entry['key']}"
