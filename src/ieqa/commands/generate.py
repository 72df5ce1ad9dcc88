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
    engine: str = typer.Option("local", "--engine",
                               help="local: this process; ray: an actor pool on Ray Data (the "
                                    "ray extra), the same files, resumable"),
    address: str | None = typer.Option(None, "--address", "--ray-address",
                                       help="--engine ray: the Ray cluster (auto, "
                                            "ray://host:10001, ...); default: start a local Ray"),
    replicas: int | None = typer.Option(None, "--replicas", min=1,
                                        help="--engine ray: actors in the pool, one pipeline "
                                             "each (default 1)"),
    gpus_per_replica: float | None = typer.Option(None, "--gpus-per-replica", min=0,
                                                  help="--engine ray: GPUs per actor (default "
                                                       "0; with GPUs add --device cuda)"),
    cpus_per_replica: float | None = typer.Option(None, "--cpus-per-replica",
                                                  help="--engine ray: CPUs per actor (default 1)"),
) -> None:
    """Generate K candidate edits per item; re-running resumes where it stopped.

    Writes the images (a benchmark's own layout for a benchmark), OUT/candidates.jsonl (a
    manifest for ieqa score, then best-of-n and dpo-pairs) and OUT/generate.json.
    With --engine ray a pool of Ray actors makes them (each loads the pipeline once).
    """
    if engine not in ("local", "ray"):
        raise typer.BadParameter(f"{engine!r}: choose local or ray", param_hint="--engine")
    given = [flag for flag, value in (("--address", address), ("--replicas", replicas),
                                      ("--gpus-per-replica", gpus_per_replica),
                                      ("--cpus-per-replica", cpus_per_replica))
             if value is not None]
    if engine == "local" and given:
        raise typer.BadParameter(f"{', '.join(given)} go with --engine ray; add --engine ray "
                                 "(or drop them)", param_hint="--engine")
    executor = None
    if engine == "ray":
        from ieqa.scale.raydata import RayScoring
        from ieqa.scale.raygen import ray_executor

        scaling = RayScoring(replicas or 1, gpus_per_replica or 0.0,
                             1.0 if cpus_per_replica is None else cpus_per_replica, address)
        executor = ray_executor(pipeline, scaling=scaling, device=device, dtype=dtype,
                                revision=revision, steps=steps,
                                call_options=parse_options(option))
    record = generate_candidates(pipeline, data, out, num_candidates=num_candidates,
                                 seeds=_seeds(seeds), steps=steps,
                                 call_options=parse_options(option),
                                 languages=language or ["en"], device=device, dtype=dtype,
                                 revision=revision, overwrite=overwrite, executor=executor)
    console.print(f"{record['items']} items x {num_candidates} candidates: "
                  f"{record['generated']} generated now, {record['kept']} kept from an "
                  f"earlier run -> {out / 'candidates.jsonl'}")
    if record["skipped"]:
        console.print(f"[yellow]{len(record['skipped'])} items not generated[/yellow] (e.g. "
                      f"{record['skipped'][0]['id']}: {record['skipped'][0]['why']}); they are "
                      f"listed in {out / 'generate.json'}; score the rest with bench-editor "
                      "--missing skip")
