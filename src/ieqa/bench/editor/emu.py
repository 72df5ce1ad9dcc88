"""The Emu Edit test set as ``bench-editor`` runs it (:class:`EmuEditProtocol`): the
metrics of the Emu Edit paper's table, not a judge.

Per item ``edit-metrics`` (:class:`~ieqa.scorers.edit_metrics.EditMetricsScorer`) computes
CLIP-dir (the change from source to edit against the change from the input to the output
caption), CLIP-I and DINO (the edit against its source), CLIP-out (the edit against the
output caption; ``clip-t``), L1 (and L2) against the source. Each number of the table is
the mean over the scored items, per task and overall; an item that could not be scored
is counted in the coverage, never averaged as a guess. A 95 % bootstrap CI is given for
CLIP-dir. The paper's CLIP and DINO variants are not stated in ieqa's sources; the
defaults are MagicBrush's (``openai/clip-vit-base-patch32``, ``facebook/dino-vits16``),
recorded in the result, and ``-O clip_model=...`` / ``-O dino_model=...`` change them.

A **stand-in** scorer's ``instruction_alignment`` and ``content_preservation`` take the
places of CLIP-dir and CLIP-I, labelled; the other columns are then empty.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import stratified_bootstrap
from ieqa.bench.editor.protocol import (
    EditorProtocol,
    ci_text,
    first_file,
    register_editor_benchmark,
)
from ieqa.data.loaders.base import table_columns
from ieqa.data.loaders.emu_edit import EMU_DATASET, TASKS, EmuItem, output_path, read_emu_edit
from ieqa.scorers.base import Scorer

__all__ = ["EmuEditProtocol", "COLUMNS"]

#: the item fields and their names in the table, in the paper's order (L2: MagicBrush's)
COLUMNS: dict[str, str] = {"clip_dir": "CLIP-dir", "clip_i": "CLIP-I", "clip_out": "CLIP-out",
                           "l1": "L1", "dino": "DINO", "l2": "L2"}
_RAW = {"clip_dir": "clip-dir", "clip_i": "clip-i", "clip_out": "clip-t", "l1": "l1",
        "dino": "dino", "l2": "l2"}


def _mean(values: Sequence[float | None]) -> float:
    v = [x for x in values if x is not None]
    return sum(v) / len(v) if v else math.nan


@register_editor_benchmark
class EmuEditProtocol(EditorProtocol):
    """The Emu Edit test set (see the module docstring)."""

    name = "emu-edit"
    dataset = EMU_DATASET
    official_judge = "edit-metrics"
    official_label = "the Emu Edit paper's metrics"
    layout = "{idx}.png"
    data_help = "its Parquet files (those with an input_caption column), the test split, or a validation file"
    task_types = TASKS
    languages = ("en",)
    parts = ("official",)
    metrics = tuple(COLUMNS)
    main_metric = "CLIP-dir"
    main_field = "clip_dir"
    interval = "a bootstrap of the mean CLIP-dir over items"
    columns = ("editor", "language", *COLUMNS.values(), "95% CI (CLIP-dir)", "coverage")

    @classmethod
    def detect(cls, path: Path) -> bool:
        parquet = first_file(path, ".parquet")
        return parquet is not None and "input_caption" in table_columns(parquet)

    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[EmuItem]:
        self.require_english(languages, "the Emu Edit test set is")
        split = "validation" if data is not None and "validation" in Path(data).name else "test"
        return read_emu_edit(data, work_dir / "sources", split=split)

    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        return output_path(folder, item)

    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        raw = (row.get("raw") or {}).get("metrics")
        if isinstance(raw, Mapping):
            values = {k: raw.get(v) for k, v in _RAW.items()}
        else:  # a stand-in
            values = {k: None for k in COLUMNS}
            values["clip_dir"] = row.get("instruction_alignment")
            values["clip_i"] = row.get("content_preservation")
        return {"error": row.get("error"), **values}

    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        ok = [e for e in entries if e["error"] is None]
        official: dict[str, Any] = {k: _mean([e[k] for e in ok]) for k in COLUMNS}
        official["per_task"] = {t: {k: _mean([e[k] for e in ok if e["task_type"] == t])
                                    for k in COLUMNS} for t in TASKS}
        out: dict[str, Any] = {"official": official, "ci": {}}
        dirs = [e["clip_dir"] for e in ok if e["clip_dir"] is not None]
        if dirs:
            out["ci"]["clip_dir"] = list(stratified_bootstrap(dirs, ["all"] * len(dirs),
                                                              ["all"], n_boot=n_boot))
        return out

    def aggregation(self) -> dict[str, str]:
        return {"official": "the mean over the scored items of each metric, per task and "
                            "overall (CLIP-dir, CLIP-I, CLIP-out, L1, DINO as in the Emu Edit "
                            "paper; L2 as in MagicBrush); unscored items are counted, not "
                            "averaged"}

    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        official = result["official"]
        return {**{name: official[k] for k, name in COLUMNS.items()},
                "95% CI (CLIP-dir)": ci_text(result["ci"].get("clip_dir"), 4)}

    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        per_task = result["official"]["per_task"]
        return ([{"task": t, **{name: per_task[t][k] for k, name in COLUMNS.items()}}
                 for t in TASKS], ["task", *COLUMNS.values()])

    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        return [result["official"]["per_task"][t]["clip_dir"] for t in TASKS]

    def card_line(self, entry: Mapping[str, Any]) -> str:
        return "  ".join(f"{name} {entry[k]:.3f}" for k, name in COLUMNS.items()
                         if entry.get(k) is not None)
