"""``ieqa tiny-vlm``: write a tiny random VLM checkpoint for offline smoke tests.

    ieqa tiny-vlm ./tiny-qwen2vl
    ieqa score manifest.jsonl --scorer vlm-levels --model ./tiny-qwen2vl -o scores.parquet

The model has random weights (its scores mean nothing); it exercises exactly the loading,
prompting, batching and readout code that a real Qwen-VL checkpoint goes through.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

NAME = "tiny-vlm"
console = Console()


def command(
    out: Path = typer.Argument(..., help="output folder (created)"),
    family: str = typer.Option("qwen2-vl", "--family",
                               help="qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, mimo-vl or internvl"),
    seed: int = typer.Option(0, "--seed", help="weight initialisation seed"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing checkpoint"),
) -> None:
    """Write a tiny random Qwen-VL-family checkpoint (no download) for smoke tests."""
    from ieqa.testing import TINY_FAMILIES, build_tiny_vlm

    if family not in TINY_FAMILIES:
        raise typer.BadParameter(f"choose one of {', '.join(TINY_FAMILIES)}", param_hint="--family")
    try:
        path = build_tiny_vlm(out, family, seed=seed, overwrite=overwrite)  # type: ignore[arg-type]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="OUT") from None
    console.print(f"wrote a tiny {family} checkpoint to {path} (random weights: for smoke tests, "
                  "not for scores)")
