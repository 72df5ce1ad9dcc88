"""``ieqa bench-editor``: score one or more editors' outputs on an editor benchmark with a
judge and aggregate them as the benchmark publishes them (:func:`bench_editor`).

For GEdit-Bench, per editor and per repeat, the judge scores every item whose output exists
into ``OUT/scores/{editor}/repeat-{r}.jsonl`` through :func:`ieqa.scorers.run.score_to_file`
(resumable: a re-run scores only what is missing or failed). Each item gets SC, PQ and O:
from GEdit's judge (``gedit-judge``) its ``sc_min``, ``visual_quality`` and ``overall``;
from a **stand-in** judge (any other scorer of the catalog) its ``sc_min`` or else
``instruction_alignment``, its ``visual_quality`` and its ``overall`` (or ``sqrt(SC * PQ)``
when it has none), on its own scale, and every table says so.

Per language the numbers are:

* ``official`` — G_SC, G_PQ, G_O as GEdit's ``calculate_statistics.py``: the unweighted mean
  of the 11 task types' means, with ``per_task``;
* ``intersection`` — the same over the items with ``Intersection_exist`` ("-I");
* ``item_mean`` — ieqa's default beside them: the mean over items;
* ``coverage`` — items in the benchmark, with an output, scored, failed (judge errors,
  never replaced by a guess unless the judge's ``on_malformed="random"`` was asked for:
  then ``substituted`` counts them) and missing;
* ``ci`` — a 95 % stratified bootstrap interval of each official number over items;
* with ``repeats > 1``: each number is the mean over the repeats, ``std`` their standard
  deviation (judge drift).

Missing outputs fail the run with their list (``missing="error"``); ``missing="skip"``
scores the rest, as the released script does silently, and every table states the
coverage ("17 of 20 items").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.bench.editor.aggregate import item_mean, macro_mean, repeat_summary, stratified_bootstrap
from ieqa.bench.errors import BenchError
from ieqa.data.loaders.gedit_bench import (
    GEDIT_DATASET,
    TASK_TYPES,
    GEditItem,
    output_path,
    read_gedit,
)
from ieqa.data.schema import EditSample
from ieqa.scorers.base import Scorer
from ieqa.scorers.run import read_scores, score_to_file

__all__ = ["BENCHMARKS", "MISSING_RULES", "EditorBenchResult", "bench_editor", "judge_record"]

#: the editor benchmarks ``bench-editor`` runs
BENCHMARKS: tuple[str, ...] = ("gedit-bench",)
#: what to do with items an editor has no output for
MISSING_RULES: tuple[str, ...] = ("error", "skip")
OFFICIAL_JUDGE = "gedit-judge"
_METRICS = (("G_SC", "sc"), ("G_PQ", "pq"), ("G_O", "o"))


@dataclass
class EditorBenchResult:
    """What :func:`bench_editor` found: ``results`` (the ``results.json`` object) and
    ``items`` (one row per editor, repeat and item)."""

    results: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)


def _item_scores(row: Mapping[str, Any], judge: Scorer) -> tuple[float, float, float] | None:
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


def judge_record(judge: Scorer, rows: Sequence[Mapping[str, Any]],
                 prices: tuple[float, float] | None) -> dict[str, Any]:
    """The judge as run: name, configuration, whether it is the benchmark's own, the model
    ids and fingerprints the server reported, tokens used and their cost (``prices`` in USD
    per million input and output tokens)."""
    config = judge.config() if hasattr(judge, "config") else {}
    served, fingerprints = set(), set()
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "answers": 0, "answers_without_usage": 0}
    for row in rows:
        for record in ((row.get("raw") or {}).get("passes") or []):
            for key in ("sc_server", "pq_server"):
                server = record.get(key)
                if server is None:
                    usage["answers_without_usage"] += 1
                    continue
                usage["answers"] += 1
                if server.get("model"):
                    served.add(str(server["model"]))
                if server.get("system_fingerprint"):
                    fingerprints.add(str(server["system_fingerprint"]))
                u = server.get("usage") or {}
                usage["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
                usage["completion_tokens"] += int(u.get("completion_tokens") or 0)
    out: dict[str, Any] = {
        "name": judge.name, "official": judge.name == OFFICIAL_JUDGE,
        "label": ("GEdit-Bench's official judge" if judge.name == OFFICIAL_JUDGE else
                  f"stand-in judge {judge.name} (not the benchmark's protocol; its own scale)"),
        "model": config.get("model") or (config.get("backend") or {}).get("model"),
        "temperature": config.get("temperature"),
        "seed": config.get("seed"), "config": config,
        "served_models": sorted(served), "system_fingerprints": sorted(fingerprints),
        "usage": usage}
    if prices is not None:
        out["cost_usd"] = round((usage["prompt_tokens"] * prices[0]
                                 + usage["completion_tokens"] * prices[1]) / 1e6, 6)
        out["prices_usd_per_mtok"] = {"input": prices[0], "output": prices[1]}
    return out


def _aggregate(rows: Sequence[dict[str, Any]], n_boot: int) -> dict[str, Any]:
    """One language, one repeat: official, intersection, item mean and CI of scored rows."""
    ok = [r for r in rows if r["error"] is None]
    types = [r["task_type"] for r in ok]
    inter = [r for r in ok if r["intersection"]]
    out: dict[str, Any] = {"official": {"per_task": {}}, "intersection": {"per_task": {}},
                           "item_mean": {}, "ci": {}}
    for name, key in _METRICS:
        g, per = macro_mean([r[key] for r in ok], types, TASK_TYPES)
        out["official"][name] = g
        gi, per_i = macro_mean([r[key] for r in inter], [r["task_type"] for r in inter], TASK_TYPES)
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


def _mean_over_repeats(per_repeat: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Numbers that are the mean over repeats, with ``std`` beside each table."""
    first = per_repeat[0]
    if len(per_repeat) == 1:
        return first
    out: dict[str, Any] = {"ci": first["ci"]}
    for part in ("official", "intersection", "item_mean"):
        table: dict[str, Any] = {}
        std: dict[str, Any] = {}
        for name, _ in _METRICS:
            s = repeat_summary([r[part][name] for r in per_repeat])
            table[name], std[name] = s["mean"], s["std"]
        if part != "item_mean":
            table["per_task"] = {}
            for t in TASK_TYPES:
                table["per_task"][t] = {
                    name: repeat_summary([r[part]["per_task"][t][name] for r in per_repeat])["mean"]
                    for name, _ in _METRICS}
        table["std"] = std
        out[part] = table
    return out


def bench_editor(
    benchmark: str,
    outputs: Mapping[str, str | os.PathLike[str]],
    judge: Scorer,
    out_dir: str | os.PathLike[str],
    *,
    data: str | os.PathLike[str] | None = None,
    languages: Sequence[str] = ("en", "cn"),
    missing: str = "error",
    repeats: int = 1,
    batch_size: int = 8,
    n_boot: int = 1000,
    prices: tuple[float, float] | None = None,
    overwrite: bool = False,
    progress: bool = True,
    on_scored: Callable[[str, int], None] | None = None,
) -> EditorBenchResult:
    """Judge ``outputs`` (editor name -> output folder in the benchmark's layout) on
    ``benchmark`` and aggregate (see the module docstring).

    Args:
        benchmark: ``"gedit-bench"``.
        outputs: editor name -> folder holding ``fullset/{task_type}/{language}/{key}.png``.
        judge: the judge (``gedit-judge`` for the official protocol; any scorer stands in).
        out_dir: where the score files, ``items.jsonl``, ``results.json`` and
            ``report.html`` go.
        data: the benchmark's Parquet files (a folder or one file); None: the hub cache.
        languages: ``en`` and/or ``cn`` (``zh`` is read as ``cn``).
        missing: ``"error"`` (default) or ``"skip"`` (score the items that have an output).
        repeats: judge runs per editor (>= 1); numbers are their mean, ``std`` their spread.
        batch_size: items per judge call and per checkpointed part.
        n_boot: bootstrap resamples of the confidence intervals.
        prices: USD per million input and output tokens, for the cost line.
        overwrite: discard earlier score files made with another judge configuration.
        progress: draw progress bars.
        on_scored: called with (editor, repeat) after each score file is complete.

    Raises:
        BenchError: unknown benchmark or rule, no editor, missing outputs with
            ``missing="error"`` (the message lists them), or unusable data.
    """
    if benchmark not in BENCHMARKS:
        raise BenchError(f"unknown editor benchmark {benchmark!r}; choose one of "
                         f"{', '.join(BENCHMARKS)}")
    if missing not in MISSING_RULES:
        raise BenchError(f"--missing must be error or skip, got {missing!r}")
    if not outputs:
        raise BenchError("no editor outputs: pass --outputs DIR (or NAME=DIR, repeatable)")
    if repeats < 1:
        raise BenchError(f"--repeats must be >= 1, got {repeats}")
    out = Path(out_dir)
    items = read_gedit(data, languages, out / "sources")
    langs = sorted({i.language for i in items}, key=("en", "cn").index)
    present: dict[str, list[GEditItem]] = {}
    absent: dict[str, list[str]] = {}
    for editor, folder in outputs.items():
        if not Path(folder).is_dir():
            raise BenchError(f"--outputs {folder}: no such folder (editor {editor!r})")
        present[editor] = [i for i in items if output_path(folder, i).is_file()]
        absent[editor] = [str(output_path(folder, i)) for i in items
                          if not output_path(folder, i).is_file()]
    if missing == "error" and any(absent.values()):
        lines = [f"{editor}: {len(paths)} of {len(items)} outputs missing, e.g. "
                 + ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
                 for editor, paths in absent.items() if paths]
        raise BenchError("missing outputs (the benchmark's layout is "
                         "fullset/{task_type}/{language}/{key}.png):\n" + "\n".join(lines)
                         + "\nGenerate them, or pass --missing skip to score the rest (as the "
                           "released script does); every table then states the coverage")
    all_items: list[dict[str, Any]] = []
    all_rows: list[dict[str, Any]] = []
    editors: dict[str, Any] = {}
    for editor, folder in outputs.items():
        by_id = {i.id: i for i in present[editor]}
        samples = [EditSample(id=i.id, source=i.source, edited=output_path(folder, i),
                              instruction=i.instruction, task=i.task_type, editor=editor,
                              group_id=i.id) for i in present[editor]]
        per_lang_repeats: dict[str, list[dict[str, Any]]] = {lang: [] for lang in langs}
        substituted = {lang: 0 for lang in langs}
        failed_ids: dict[str, set[str]] = {lang: set() for lang in langs}
        for r in range(1, repeats + 1):
            path = out / "scores" / editor / f"repeat-{r}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            if samples:
                score_to_file(judge, samples, path, total=len(samples), batch_size=batch_size,
                              overwrite=overwrite, progress=progress,
                              input_id=f"{benchmark} outputs of {editor}")
                rows = read_scores(path)
            else:
                rows = []
            all_rows.extend(rows)
            if on_scored is not None:
                on_scored(editor, r)
            table: dict[str, list[dict[str, Any]]] = {lang: [] for lang in langs}
            for row in rows:
                item = by_id[row["id"]]
                values = None if row.get("error") else _item_scores(row, judge)
                error = row.get("error") or (None if values else "the judge gave no usable SC/PQ")
                entry = {"editor": editor, "repeat": r, "task_type": item.task_type,
                         "language": item.language, "key": item.key,
                         "intersection": item.intersection,
                         "sc": values[0] if values else None, "pq": values[1] if values else None,
                         "o": values[2] if values else None, "error": error,
                         "substituted": "substituted" in (row.get("flags") or []),
                         "source": str(item.source), "edited": row.get("edited"),
                         "instruction": item.instruction}
                table[item.language].append(entry)
                all_items.append(entry)
                if entry["substituted"]:
                    substituted[item.language] += 1
                if error is not None:
                    failed_ids[item.language].add(item.id)
            for lang in langs:
                per_lang_repeats[lang].append(_aggregate(table[lang], n_boot))
        editors[editor] = {}
        for lang in langs:
            n_lang = sum(1 for i in items if i.language == lang)
            n_present = sum(1 for i in present[editor] if i.language == lang)
            n_failed = len(failed_ids[lang])
            scored = n_present - n_failed
            result = _mean_over_repeats(per_lang_repeats[lang])
            result["coverage"] = {
                "items": n_lang, "with_output": n_present, "missing": n_lang - n_present,
                "scored": scored, "failed": n_failed,
                "substituted": substituted[lang],
                "missing_ids": [i.id for i in items if i.language == lang
                                and i.id not in by_id],
                "text": f"{scored} of {n_lang} items" + (
                    f" ({n_lang - n_present} without an output)" if n_lang > n_present else "")
                + (f" ({n_failed} failed to score)" if n_failed else "")}
            editors[editor][lang] = result
    results: dict[str, Any] = {
        "benchmark": benchmark, "dataset": GEDIT_DATASET, "languages": langs,
        "repeats": repeats, "missing_rule": missing,
        "aggregation": {"official": "mean of the 11 task types' means (GEdit-Bench's "
                                    "calculate_statistics.py)",
                        "intersection": "the same over Intersection_exist items",
                        "item_mean": "ieqa: the mean over items"},
        "judge": judge_record(judge, all_rows, prices),
        "editors": editors}
    if len(editors) == 1 and len(langs) == 1:
        only = next(iter(editors.values()))[langs[0]]
        results.update({k: only[k] for k in ("official", "intersection", "item_mean",
                                             "coverage")})
    return EditorBenchResult(results=results, items=all_items)
