"""``ieqa generate``: candidate edits from a diffusers image-editing pipeline over a
benchmark or a manifest (:func:`ieqa.curate.generate.generate_candidates`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from ieqa.commands.options import parse_options
from ieqa.curate.generate import data_help, generate_candidates

NAME = "generate"
console = Console()


def _seeds(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(s) for s in value.split(",") if s.strip()]
    except ValueError:
        raise typer.BadParameter(f"{value!r}: write integers separated by commas, e.g. 0,1,2",
                                 param_hint="--seeds") from None


def command(
    pipeline: str = typer.Option(..., "--pipeline",
                                 help="diffusers pipeline: hub id (timbrooks/instruct-pix2pix, "
                                      "Qwen/Qwen-Image-Edit, ...) or a save_pretrained folder"),
    data: str = typer.Option(..., "--data",
                             help=data_help()),
    num_candidates: int = typer.Option(1, "--num-candidates", "-k", min=1,
                                       help="candidates per item"),
    seeds: str | None = typer.Option(None, "--seeds",
                                     help="one seed per candidate, comma-separated "
                                          "(default 0..K-1)"),
    steps: int = typer.Option(50, "--steps", min=1, help="num_inference_steps"),
    option: list[str] | None = typer.Option(None, "--option", "-O",
                                            help="pipeline call argument as key=value, e.g. "
                                                 "image_guidance_scale=1.5 (repeatable)"),
    language: list[str] | None = typer.Option(None, "--language",
                                              help="GEdit-Bench: en and/or cn (default en)"),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:1, mps"),
    dtype: str | None = typer.Option(None, "--dtype",
                                     help="torch dtype to load the pipeline in (bfloat16, "
                                          "float16, float32)"),
    revision: str | None = typer.Option(None, "--revision", help="hub revision of --pipeline"),
    out: Path = typer.Option(..., "--out", "-o", help="output folder"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="make every candidate again (also with other settings)"),
) -> None:
    """Generate K candidate edits per item; re-running resumes where it stopped.

    Writes the images (a benchmark's own layout for a benchmark), OUT/candidates.jsonl (a
    manifest for ieqa score, then best-of-n and dpo-pairs) and OUT/generate.json.
    """
    record = generate_candidates(pipeline, data, out, num_candidates=num_candidates,
                                 seeds=_seeds(seeds), steps=steps,
                                 call_options=parse_options(option),
                                 languages=language or ["en"], device=device, dtype=dtype,
                                 revision=revision, overwrite=overwrite)
    console.print(f"{record['items']} items x {num_candidates} candidates: "
                  f"{record['generated']} generated now, {record['kept']} kept from an "
                  f"earlier run -> {out / 'candidates.jsonl'}")
    if record["skipped"]:
        console.print(f"[yellow]{len(record['skipped'])} items not generated[/yellow] (e.g. "
                      f"{record['skipped'][0]['id']}: {record['skipped'][0]['why']}); they are "
                      f"listed in {out / 'generate.json'}; score the rest with bench-editor "
                      "--missing skip")
