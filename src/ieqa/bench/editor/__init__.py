"""Editor benchmarks: an editor's outputs judged as a benchmark publishes them.

* protocol — :class:`EditorProtocol`, what a benchmark is to ``bench-editor``
* gedit — GEdit-Bench (:class:`GEditProtocol`; its data, output layout and task types:
  :mod:`ieqa.data.loaders.gedit_bench`)
* imgedit — ImgEdit-Bench's basic suite (:class:`ImgEditProtocol`; data:
  :mod:`ieqa.data.loaders.imgedit_bench`)
* kris — KRIS-Bench (:class:`KrisProtocol`; data: :mod:`ieqa.data.loaders.kris_bench`)
* emu — the Emu Edit test set with the papers' metrics (:class:`EmuEditProtocol`; data:
  :mod:`ieqa.data.loaders.emu_edit`)
* magicbrush — the MagicBrush test set with its paper's metrics
  (:class:`MagicBrushProtocol`; data: :mod:`ieqa.data.loaders.magicbrush`)
* rise — RISEBench (:class:`RiseProtocol`; data: :mod:`ieqa.data.loaders.risebench`)
* structeditbench — StructEditBench (:class:`StructEditProtocol`; data:
  :mod:`ieqa.data.loaders.structeditbench`)
* unireditbench — UniREditBench (:class:`UniREditProtocol`; data:
  :mod:`ieqa.data.loaders.unireditbench`)
* aggregate — the benchmarks' aggregations (:func:`macro_mean`, :func:`imgedit_overall`,
  bootstrap, repeats)
* run — :func:`bench_editor` (``ieqa bench-editor``)
* report — :func:`write_editor_outputs` (items.jsonl, results.json, report.html)
"""

from __future__ import annotations

from ieqa.bench.editor.aggregate import (
    imgedit_overall,
    item_mean,
    macro_mean,
    pooled_accuracy,
    repeat_summary,
    stratified_bootstrap,
)
from ieqa.bench.editor.diff import judge_diff
from ieqa.bench.editor.emu import EmuEditProtocol
from ieqa.bench.editor.gedit import GEditProtocol
from ieqa.bench.editor.imgedit import ImgEditProtocol
from ieqa.bench.editor.kris import KrisProtocol, flat_bootstrap, kris_summary
from ieqa.bench.editor.magicbrush import MagicBrushProtocol
from ieqa.bench.editor.protocol import EditorProtocol
from ieqa.bench.editor.report import (
    editor_table,
    merge_results,
    table_columns,
    write_editor_outputs,
    write_merged_table,
)
from ieqa.bench.editor.rise import RiseProtocol
from ieqa.bench.editor.run import (
    BENCHMARKS,
    PROTOCOLS,
    EditorBenchResult,
    bench_editor,
    get_protocol,
)
from ieqa.bench.editor.structedit import StructEditProtocol
from ieqa.bench.editor.uniredit import UniREditProtocol
from ieqa.data.loaders.gedit_bench import (
    GEDIT_DATASET,
    TASK_TYPES,
    GEditItem,
    output_path,
    read_gedit,
)

__all__ = ["BENCHMARKS", "PROTOCOLS", "EditorBenchResult", "EditorProtocol", "GEDIT_DATASET",
           "EmuEditProtocol", "GEditItem", "GEditProtocol", "ImgEditProtocol", "KrisProtocol", "MagicBrushProtocol", "RiseProtocol", "StructEditProtocol", "UniREditProtocol", "flat_bootstrap", "kris_summary", "TASK_TYPES", "get_protocol",
           "table_columns", "bench_editor", "editor_table", "merge_results", "judge_diff",
           "write_merged_table", "imgedit_overall", "item_mean", "macro_mean",
           "output_path", "pooled_accuracy", "read_gedit", "repeat_summary", "stratified_bootstrap",
           "write_editor_outputs"]
