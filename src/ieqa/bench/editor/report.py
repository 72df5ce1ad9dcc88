"""Writing an editor benchmark's result: ``items.jsonl``, ``results.json``, ``results.csv``
(editors as rows, like the papers' tables) and ``report.html`` (the tables, per-type bars
and a gallery of each editor's worst items).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.run import EditorBenchResult, get_protocol
from ieqa.report import GalleryItem, HtmlReport, bar_chart, thumbnail, write_csv, write_json

__all__ = ["editor_table", "table_columns", "write_editor_outputs", "TABLE_COLUMNS"]

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


def _gallery(items: Sequence[dict[str, Any]], editor: str, k: int,
             benchmark: str) -> list[GalleryItem]:
    protocol = get_protocol(benchmark)
    mine = [i for i in items if i["editor"] == editor and i["repeat"] == 1]
    failed = [i for i in mine if i["error"] is not None]
    worst = sorted((i for i in mine if i["error"] is None),
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
    report.add_paragraph(" ".join(f"{part}: {text}." for part, text in res["aggregation"].items())
                         + " Failed items are not in ieqa's means and are counted in the "
                           "coverage column; the CI is a 95 % bootstrap over items within "
                           "task types.")
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
