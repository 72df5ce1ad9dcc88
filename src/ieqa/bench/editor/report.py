"""Writing an editor benchmark's result: ``items.jsonl``, ``results.json``, ``results.csv``
(editors as rows, like the papers' tables) and ``report.html`` (the tables, per-type bars
and a gallery of each editor's worst items).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.run import EditorBenchResult, get_protocol
from ieqa.bench.errors import BenchError
from ieqa.report import GalleryItem, HtmlReport, bar_chart, thumbnail, write_csv, write_json

__all__ = ["editor_table", "table_columns", "write_editor_outputs", "TABLE_COLUMNS",
           "merge_results", "write_merged_table"]

#: GEdit-Bench's table columns (:func:`table_columns` gives any benchmark's)
TABLE_COLUMNS: tuple[str, ...] = get_protocol("gedit-bench").columns


def table_columns(benchmark: str) -> tuple[str, ...]:
    """The columns of ``benchmark``'s table (editors as rows)."""
    return get_protocol(benchmark).columns


def editor_table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per editor and language: the benchmark's numbers as published, ieqa's
    beside them, the CI and the coverage (the std over repeats is in ``results.json`` and
    the report, not the table)."""
    protocol = get_protocol(results["benchmark"])
    return [{"editor": editor, "language": lang, **protocol.table_row(r),
             "coverage": r["coverage"]["text"]}
            for editor, by_lang in results["editors"].items() for lang, r in by_lang.items()]


def _aggregation_text(aggregation: Mapping[str, str]) -> str:
    """Each part's aggregation in words, named once."""
    return " ".join((text if text.startswith(f"{part}:") else f"{part}: {text}") + "."
                    for part, text in aggregation.items())


def _gallery(items: Sequence[dict[str, Any]], editor: str, k: int,
             benchmark: str) -> list[GalleryItem]:
    protocol = get_protocol(benchmark)
    mine = [i for i in items if i["editor"] == editor and i["repeat"] == 1]
    failed = [i for i in mine if i["error"] is not None]
    worst = sorted((i for i in mine if i["error"] is None
                    and i.get(protocol.main_field) is not None),  # a stand-in may lack it
                   key=lambda i: i[protocol.main_field])[:k]
    cards = []
    for i in failed[:k] + worst:
        lines = [i["instruction"][:120]]
        lines.append(f"error: {i['error'][:160]}" if i["error"] is not None else
                     protocol.card_line(i))
        cards.append(GalleryItem(title=protocol.item_title(i),
                                 images=[("source", thumbnail(i["source"])),
                                         ("edited", thumbnail(i["edited"]))], lines=lines))
    return cards


def write_editor_outputs(result: EditorBenchResult, out_dir: str | os.PathLike[str], *,
                         gallery_size: int = 6, plots: bool = True) -> dict[str, Path]:
    """Write ``items.jsonl``, ``results.json``, ``results.csv`` and ``report.html`` into
    ``out_dir``; returns their paths. ``plots=False`` leaves the per-type bars out (they
    need matplotlib, the ``plot`` extra)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"items": out / "items.jsonl", "results": out / "results.json",
             "csv": out / "results.csv", "report": out / "report.html"}
    with open(paths["items"], "w", encoding="utf-8") as fh:
        for item in result.items:
            fh.write(json.dumps({k: v for k, v in item.items()
                                 if k not in ("source", "edited", "instruction")}) + "\n")
    write_json(paths["results"], result.results)
    res = result.results
    protocol = get_protocol(res["benchmark"])
    rows = editor_table(res)
    write_csv(paths["csv"], rows, protocol.columns)
    judge = res["judge"]
    report = HtmlReport(f"{res['benchmark']}: editors judged by {judge['name']}")
    report.add_paragraph(f"Judge: {judge['label']}; model {judge.get('model')}, temperature "
                         f"{judge.get('temperature')}, seed {judge.get('seed')}; served models "
                         f"{', '.join(judge['served_models']) or 'not reported'}; fingerprints "
                         f"{', '.join(judge['system_fingerprints']) or 'not reported'}; tokens "
                         f"{judge['usage']['prompt_tokens']} in, "
                         f"{judge['usage']['completion_tokens']} out"
                         + (f"; cost ${judge['cost_usd']:.4f}" if "cost_usd" in judge else "")
                         + f". Repeats: {res['repeats']}.")
    interval = ""
    if protocol.interval:
        interval = f" The 95 % CI is {protocol.interval}" + (
            f"; with {res['repeats']} repeats it is repeat 1's (each repeat's items once), "
            "while the numbers are the means over the repeats." if res["repeats"] > 1 else ".")
    report.add_paragraph(_aggregation_text(res["aggregation"])
                         + " Failed items are not in ieqa's means and are counted in the "
                           "coverage column." + interval)
    report.add_heading("Editors")
    report.add_table(rows, list(protocol.columns), caption="coverage: "
                     + "; ".join(f"{r['editor']} ({r['language']}): {r['coverage']}" for r in rows))
    if res["repeats"] > 1:
        std_rows = [{"editor": e, "language": lang,
                     **{f"{part} {k}": v for part in protocol.parts
                        for k, v in r[part]["std"].items()}}
                    for e, by_lang in res["editors"].items() for lang, r in by_lang.items()]
        report.add_table(std_rows, list(std_rows[0]),
                         caption=f"standard deviation over {res['repeats']} judge runs")
    for editor, by_lang in res["editors"].items():
        report.add_heading(f"{editor}", level=3)
        for lang, r in by_lang.items():
            type_rows, type_columns = protocol.per_type_rows(r)
            report.add_table(type_rows, type_columns,
                             caption=f"{editor}, {lang}: per task type ({r['coverage']['text']})")
            if plots:
                try:
                    fig = bar_chart(list(protocol.task_types), protocol.type_values(r),
                                    title=f"{editor} ({lang}): {protocol.main_metric} per "
                                          "task type",
                                    ylabel=f"{protocol.main_metric} (judge scale)")
                except ImportError:
                    plots = False
                else:
                    report.add_figure(fig, f"{editor}, {lang}: {protocol.main_metric} by "
                                           "task type")
        cards = _gallery(result.items, editor, gallery_size, res["benchmark"])
        if cards:
            report.add_gallery(cards, caption=f"{editor}: failed items, then the {gallery_size} "
                                              f"lowest {protocol.main_field} (first repeat)")
    report.save(paths["report"])
    return paths


def _judge_key(judge: Mapping[str, Any]) -> tuple[Any, ...]:
    return (judge.get("name"), judge.get("model"), judge.get("temperature"),
            json.dumps((judge.get("config") or {}).get("prompts"), sort_keys=True))


def merge_results(results: Sequence[Mapping[str, Any]], *,
                  sources: Sequence[str] | None = None) -> dict[str, Any]:
    """One table's ``results.json`` object from several runs of one benchmark (their
    ``results.json`` objects), editors as rows, as if judged in one run.

    The runs must be of the same benchmark and judged the same way (judge, model,
    temperature, prompt files): numbers of different judges are not comparable, and a
    table that mixed them would not say so. An editor name may appear in one run only.

    Raises:
        BenchError: no runs, different benchmarks or judges, or an editor twice.
    """
    if not results:
        raise BenchError("no results to merge: pass two or more results.json files")
    names = list(sources or [f"run {n + 1}" for n in range(len(results))])
    benchmarks = {r["benchmark"] for r in results}
    if len(benchmarks) != 1:
        raise BenchError(f"the results are of different benchmarks ({', '.join(sorted(benchmarks))});"
                         " a table holds one benchmark")
    first = results[0]
    for name, r in zip(names, results, strict=True):
        if _judge_key(r["judge"]) != _judge_key(first["judge"]):
            raise BenchError(
                f"{name} was judged by {r['judge'].get('name')} ({r['judge'].get('model')}), "
                f"{names[0]} by {first['judge'].get('name')} ({first['judge'].get('model')}), "
                "or with other settings: their numbers are not comparable. Judge the editors "
                "with the same judge (bench-editor --outputs NAME=DIR, repeated)")
    editors: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, r in zip(names, results, strict=True):
        for editor, by_lang in r["editors"].items():
            if editor in editors:
                raise BenchError(f"editor {editor!r} is in {origin[editor]} and in {name}; "
                                 "rename one (bench-editor --outputs NAME=DIR)")
            editors[editor], origin[editor] = by_lang, name
    return {"benchmark": first["benchmark"], "dataset": first.get("dataset"),
            "languages": sorted({lang for r in results for lang in r["languages"]}),
            "repeats": first.get("repeats"), "aggregation": first["aggregation"],
            "judge": first["judge"], "editors": editors, "merged_from": origin}


def write_merged_table(merged: Mapping[str, Any], out_dir: str | os.PathLike[str]
                       ) -> dict[str, Path]:
    """Write a merged table (:func:`merge_results`): ``results.json``, ``results.csv`` and
    ``report.html`` (the table, and each editor's per-type table) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.json", "csv": out / "results.csv",
             "report": out / "report.html"}
    protocol = get_protocol(merged["benchmark"])
    rows = editor_table(dict(merged))
    write_json(paths["results"], dict(merged))
    write_csv(paths["csv"], rows, protocol.columns)
    report = HtmlReport(f"{merged['benchmark']}: editors judged by {merged['judge']['name']}")
    report.add_paragraph(f"Judge: {merged['judge']['label']}; model {merged['judge'].get('model')}. "
                         + _aggregation_text(merged["aggregation"])
                         + " Editors from: " + "; ".join(f"{e}: {src}" for e, src in
                                                         merged["merged_from"].items()) + ".")
    report.add_table(rows, list(protocol.columns), caption="coverage: " + "; ".join(
        f"{r['editor']} ({r['language']}): {r['coverage']}" for r in rows))
    for editor, by_lang in merged["editors"].items():
        for lang, r in by_lang.items():
            type_rows, type_columns = protocol.per_type_rows(r)
            report.add_table(type_rows, type_columns, caption=f"{editor}, {lang}: per task type")
    report.save(paths["report"])
    return paths
