"""``ieqa judge-diff``: what changed between two runs of one editor benchmark
(:func:`ieqa.bench.editor.judge_diff`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.bench.editor.diff import judge_diff

NAME = "judge-diff"
console = Console()


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def command(
    run_a: Path = typer.Argument(..., help="a bench-editor result folder (the earlier run)"),
    run_b: Path = typer.Argument(..., help="another result folder of the same benchmark"),
    n_boot: int = typer.Option(1000, "--n-boot", min=2,
                               help="paired bootstrap resamples of each headline change"),
    show: int = typer.Option(20, "--show", min=0, help="changed items listed (largest first)"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="also write the whole comparison as JSON here"),
) -> None:
    """Compare two runs of one editor benchmark: how many items changed (first), which,
    the rank agreement of the runs, each headline number's change with a paired bootstrap
    95 % CI, and what differs in the judge (model, served model, fingerprint)."""
    diff = judge_diff(run_a, run_b, n_boot=n_boot)
    console.print(f"[bold]{diff['n_changed']} of {diff['items']} items changed[/bold] "
                  f"({diff['benchmark']}, item number {diff['field']!r}; "
                  f"{diff['compared']} scored in both runs)")
    if diff["changed"] and show:
        table = Table("editor", "language", "item", "A", "B", "B - A")
        for c in diff["changed"][:show]:
            table.add_row(c["editor"], c["language"], f"{c['task_type']}/{c['key']}",
                          _num(c["a"]), _num(c["b"]), _num(c["change"]))
        console.print(table)
        if len(diff["changed"]) > show:
            console.print(f"... and {len(diff['changed']) - show} more (--show N, or -o FILE)")
    console.print(f"SRCC between the runs {_num(diff['srcc'])}, Kendall {_num(diff['kendall'])}")
    table = Table("editor", "language", "number", "A", "B", "B - A", "paired 95% CI",
                  "within the judge's noise")
    for h in diff["headline"]:
        noise = ("–" if "within_noise" not in h else
                 ("yes" if h["within_noise"] else "no") + f" (2 sd = {h['noise']:.3f})")
        table.add_row(h["editor"], h["language"], h["metric"], _num(h["a"]), _num(h["b"]),
                      _num(h["change"]), f"[{_num(h['ci'][0])}, {_num(h['ci'][1])}]", noise)
    console.print(table)
    if diff["judge"]:
        for key, value in diff["judge"].items():
            console.print(f"judge {key} differs: {escape(json.dumps(value, default=str))}")
    else:
        console.print("the judge, its served model and its fingerprints are the same")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(diff, indent=2, default=str), encoding="utf-8")
        console.print(f"wrote {out}")
