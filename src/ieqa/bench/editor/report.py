"""Writing an editor benchmark's result: ``items.jsonl``, ``results.json``, ``results.csv``
(editors as rows, like the papers' tables) and ``report.html`` (the tables, per-type bars
and a gallery of each editor's worst items).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ieqa.bench.editor.run import EditorBenchResult
from ieqa.data.loaders.gedit_bench import TASK_TYPES
from ieqa.report import GalleryItem, HtmlReport, bar_chart, thumbnail, write_csv, write_json

__all__ = ["editor_table", "write_editor_outputs", "TABLE_COLUMNS"]

TABLE_COLUMNS: tuple[str, ...] = (
    "editor", "language", "G_SC", "G_PQ", "G_O", "G_SC-I", "G_PQ-I", "G_O-I", "G_O 95% CI",
    "G_O item mean (ieqa)", "coverage")


def _ci_text(ci: Sequence[float] | None) -> str:
    if not ci or any(not math.isfinite(v) for v in ci):
        return "–"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def editor_table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per editor and language: the official and intersection numbers, the CI of
    G_O, ieqa's item mean and the coverage (the std over repeats in brackets' place when
    ``repeats > 1`` is in the JSON, not the table)."""
    rows = []
    for editor, by_lang in results["editors"].items():
        for lang, r in by_lang.items():
            rows.append({"editor": editor, "language": lang,
                         **{k: r["official"][k] for k in ("G_SC", "G_PQ", "G_O")},
                         **{f"{k}-I": r["intersection"][k] for k in ("G_SC", "G_PQ", "G_O")},
                         "G_O 95% CI": _ci_text(r["ci"].get("G_O")),
                         "G_O item mean (ieqa)": r["item_mean"]["G_O"],
                         "coverage": r["coverage"]["text"]})
    return rows


def _gallery(items: Sequence[dict[str, Any]], editor: str, k: int) -> list[GalleryItem]:
    mine = [i for i in items if i["editor"] == editor and i["repeat"] == 1]
    failed = [i for i in mine if i["error"] is not None]
    worst = sorted((i for i in mine if i["error"] is None), key=lambda i: i["o"])[:k]
    cards = []
    for i in failed[:k] + worst:
        lines = [i["instruction"][:120]]
        lines.append(f"error: {i['error'][:160]}" if i["error"] is not None else
                     f"SC {i['sc']:.1f}  PQ {i['pq']:.1f}  O {i['o']:.2f}"
                     + ("  (substituted)" if i["substituted"] else ""))
        cards.append(GalleryItem(title=f"{i['task_type']}/{i['language']}/{i['key']}",
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
    rows = editor_table(result.results)
    write_csv(paths["csv"], rows, TABLE_COLUMNS)
    res = result.results
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
    report.add_paragraph("G_SC / G_PQ / G_O: " + res["aggregation"]["official"] + "; -I: "
                         + res["aggregation"]["intersection"] + "; item mean: "
                         + res["aggregation"]["item_mean"] + ". Failed items are not in any "
                         "mean and are counted in the coverage column; the CI is a 95 % "
                         "bootstrap over items within task types.")
    report.add_heading("Editors")
    report.add_table(rows, TABLE_COLUMNS, caption="coverage: "
                     + "; ".join(f"{r['editor']} ({r['language']}): {r['coverage']}" for r in rows))
    if res["repeats"] > 1:
        std_rows = [{"editor": e, "language": lang,
                     **{k: r["official"]["std"][k] for k in ("G_SC", "G_PQ", "G_O")}}
                    for e, by_lang in res["editors"].items() for lang, r in by_lang.items()]
        report.add_table(std_rows, ["editor", "language", "G_SC", "G_PQ", "G_O"],
                         caption=f"standard deviation over {res['repeats']} judge runs")
    for editor, by_lang in res["editors"].items():
        report.add_heading(f"{editor}", level=3)
        for lang, r in by_lang.items():
            per = r["official"]["per_task"]
            report.add_table([{"task_type": t, **per[t]} for t in TASK_TYPES],
                             ["task_type", "G_SC", "G_PQ", "G_O"],
                             caption=f"{editor}, {lang}: per task type ({r['coverage']['text']})")
            if plots:
                try:
                    fig = bar_chart(list(TASK_TYPES), [per[t]["G_O"] for t in TASK_TYPES],
                                    title=f"{editor} ({lang}): G_O per task type",
                                    ylabel="O (judge scale)")
                except ImportError:
                    plots = False
                else:
                    report.add_figure(fig, f"{editor}, {lang}: O by task type")
        cards = _gallery(result.items, editor, gallery_size)
        if cards:
            report.add_gallery(cards, caption=f"{editor}: failed items, then the {gallery_size} "
                                              "lowest O (first repeat)")
    report.save(paths["report"])
    return paths
