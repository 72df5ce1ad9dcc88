"""The MagicBrush test set as ``bench-editor`` runs it (:class:`MagicBrushProtocol`): the
metrics of the MagicBrush paper's table, against the ground-truth targets.

Per item ``edit-metrics`` (created with ``reference="target"`` and the five metrics below;
``bench-editor`` does so) computes L1 and L2 (the
edit resized to the target's size), CLIP-I and DINO (edit against target) and CLIP-T
(edit against the target's caption), as the released ``evaluation/image_eval.py`` does.
The table has both of the paper's settings, each the mean over its scored items:

* **single-turn** ("all turn"): every turn, edited from its ground-truth input;
* **final-turn** ("multi-turn"): each session's last turn, edited turn after turn from
  the editor's own outputs (a one-turn session's only turn).

An item that could not be scored is counted in the coverage, never averaged.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.protocol import EditorProtocol, register_editor_benchmark
from ieqa.bench.errors import BenchError
from ieqa.data.loaders.magicbrush import MagicBrushItem, output_path, read_magicbrush
from ieqa.scorers.base import Scorer

__all__ = ["MagicBrushProtocol", "COLUMNS"]

#: the item fields and their names in the table, in the paper's order
COLUMNS: dict[str, str] = {"l1": "L1", "l2": "L2", "clip_i": "CLIP-I", "dino": "DINO",
                           "clip_t": "CLIP-T"}
_RAW = {"l1": "l1", "l2": "l2", "clip_i": "clip-i", "dino": "dino", "clip_t": "clip-t"}
_SETTINGS = {"single_turn": "single-turn", "final_turn": "final-turn"}


def _mean(values: Sequence[float | None]) -> float:
    v = [x for x in values if x is not None]
    return sum(v) / len(v) if v else math.nan


@register_editor_benchmark
class MagicBrushProtocol(EditorProtocol):
    """The MagicBrush test set (see the module docstring)."""

    name = "magicbrush"
    dataset = "MagicBrush test set (the authors' archive)"
    official_judge = "edit-metrics"
    official_label = "the MagicBrush paper's metrics against the ground truth"
    official_options = {"reference": "target", "metrics": "l1,l2,clip-i,dino,clip-t"}
    layout = "{session}/{session}_1.png, {session}_inde_{k}.png, {session}_iter_{k}.png"
    data_help = "the unpacked test folder (holding edit_sessions.json)"
    task_types = ("turn-1", "turn-2", "turn-3", "iterative")
    languages = ("en",)
    parts = tuple(_SETTINGS)
    metrics = tuple(COLUMNS)
    main_metric = "CLIP-I"
    main_field = "clip_i"
    columns = ("editor", "language",
               *(f"{label} {name}" for label in _SETTINGS.values() for name in COLUMNS.values()),
               "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        return path.is_dir() and any((root / "edit_sessions.json").is_file()
                                     for root in (path, path / "test"))

    def generation_skip(self, item: Any) -> str | None:
        if item.setting != "iterative":
            return None
        return ("edits each turn from the editor's previous output; ieqa generate edits from "
                "the ground-truth input only (the single-turn setting)")

    def check_judge(self, judge: Scorer) -> None:
        if judge.name == self.official_judge and getattr(judge, "reference", None) != "target":
            raise BenchError("MagicBrush compares each edit with its ground-truth target: "
                             "create edit-metrics with reference='target' (-O reference=target)")

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[MagicBrushItem]:
        self.require_english(languages, "MagicBrush's instructions are")
        return read_magicbrush(data)

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        raw = (row.get("raw") or {}).get("metrics")
        if isinstance(raw, Mapping):
            values = {k: raw.get(v) for k, v in _RAW.items()}
        else:  # a stand-in: its content_preservation in CLIP-I's place
            values = {k: None for k in COLUMNS}
            values["clip_i"] = row.get("content_preservation")
        return {"error": row.get("error"), "setting": item.setting, "final": item.final,
                **values}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        ok = [e for e in entries if e["error"] is None]
        chosen = {"single_turn": [e for e in ok if e["setting"] == "single"],
                  "final_turn": [e for e in ok if e["final"]]}
        out: dict[str, Any] = {"ci": {}}
        for part, rows in chosen.items():
            out[part] = {k: _mean([e[k] for e in rows]) for k in COLUMNS}
            out[part]["items"] = len(rows)
        out["single_turn"]["per_turn"] = {
            t: {k: _mean([e[k] for e in ok if e["task_type"] == t]) for k in COLUMNS}
            for t in self.task_types}
        return out

    def aggregation(self) -> dict[str, str]:
        return {"single_turn": "the mean over every scored turn, each edited from its "
                               "ground-truth input (MagicBrush's 'all turn')",
                "final_turn": "the mean over each session's scored last turn, edited from the "
                              "editor's own previous outputs (MagicBrush's 'final turn')"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        return {f"{label} {name}": result[part][k] for part, label in _SETTINGS.items()
                for k, name in COLUMNS.items()}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        per_turn = result["single_turn"]["per_turn"]
        return ([{"turn": t, **{name: per_turn[t][k] for k, name in COLUMNS.items()}}
                 for t in self.task_types], ["turn", *COLUMNS.values()])

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["single_turn"]["per_turn"][t]["clip_i"] for t in self.task_types]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        return "  ".join(f"{name} {entry[k]:.3f}" for k, name in COLUMNS.items()
                         if entry.get(k) is not None)

    def item_title(self, entry: Mapping[str, Any]) -> str:
        return str(entry["key"])
