"""Editor benchmarks: an editor's outputs judged as a benchmark publishes them.

* GEdit-Bench's data, output layout and task types: :mod:`ieqa.data.loaders.gedit_bench`
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
    repeat_summary,
    stratified_bootstrap,
)
from ieqa.bench.editor.report import editor_table, write_editor_outputs
from ieqa.bench.editor.run import BENCHMARKS, EditorBenchResult, bench_editor
from ieqa.data.loaders.gedit_bench import (
    GEDIT_DATASET,
    TASK_TYPES,
    GEditItem,
    output_path,
    read_gedit,
)

__all__ = ["BENCHMARKS", "EditorBenchResult", "GEDIT_DATASET", "GEditItem", "TASK_TYPES",
           "bench_editor", "editor_table", "imgedit_overall", "item_mean", "macro_mean",
           "output_path", "read_gedit", "repeat_summary", "stratified_bootstrap",
           "write_editor_outputs"]
