"""``ieqa train``: run a training recipe (built-in name or YAML file).

    ieqa list recipes
    ieqa train edithf --set model.name=./my-qwen2.5-vl --set data.train=./ratings.jsonl
    ieqa train my_recipe.yaml --out runs/exp1 --resume

Prints held-out metrics before and after each stage; writes ``metrics.jsonl``,
checkpoints and the exported evaluator (``ieqa score --checkpoint OUT/evaluator``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

NAME = "train"
console = Console()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_metrics(metrics: dict[str, dict[str, dict[str, float]]]) -> None:
    """A before/after table of the stages' held-out metrics."""
    table = Table(title="held-out metrics", title_justify="left")
    for col in ("stage", "metric", "before", "after"):
        table.add_column(col)
    for stage, m in metrics.items():
        before, after = m.get("before", {}), m.get("after", {})
        for key in sorted(set(before) | set(after)):
            if key == "failed" and not before.get(key) and not after.get(key):
                continue
            table.add_row(escape(stage), escape(key), _fmt(before.get(key)), _fmt(after.get(key)))
    console.print(table)


def _on_log(record: dict[str, Any]) -> None:
    if record.get("event") == "setup":
        n = record["processes"]
        console.print(escape(f"[{record['stage']}] {n} process{'es' if n > 1 else ''} "
                             f"({record['distributed']}): global batch {record['global_batch']} "
                             f"= batch_size {record['batch_size']} x grad_accum "
                             f"{record['grad_accum']} x {n}, {record['steps']} steps"))
    elif record.get("event") == "note":
        console.print(f"[yellow]note:[/yellow] {escape(record['message'])}")
    elif record.get("event") in ("before", "eval", "after"):
        metric = record.get("metric", "srcc")
        console.print(f"{escape('[' + record['stage'] + ']')} step {record['global_step']} {record['event']}: "
                      f"{metric} = {record.get(metric, float('nan')):.3f}")


def command(
    recipe: str = typer.Argument(..., help="built-in recipe name (ieqa list recipes) or YAML file"),
    set_: list[str] = typer.Option([], "--set", help="override a field: key=value (dotted path, "
                                   "YAML value), e.g. optim.lr=3e-4 or stages.0.max_steps=100"),
    out: Path | None = typer.Option(None, "--out", "-o", help="run folder (default: the "
                                    "recipe's output.dir)"),
    resume: bool = typer.Option(False, "--resume", help="continue from the newest checkpoint "
                                "in the run folder"),
    stop_after: int | None = typer.Option(None, "--stop-after", help="stop (with a checkpoint) "
                                          "after this many optimiser steps"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="draw progress bars"),
    report_to: str | None = typer.Option(None, "--report-to", help="experiment trackers that "
                                         "also get every logged scalar: tensorboard, wandb, "
                                         "both (comma-separated) or none (default: the "
                                         "recipe's output.report_to)"),
) -> None:
    """Train an evaluator with a recipe; export it as an evaluator checkpoint.

    On several processes (``torchrun --nproc_per_node N -m ieqa train ...``, ``accelerate
    launch [--config_file fsdp.yaml] -m ieqa train ...``) each trains its share of every
    batch; the main process logs, checkpoints and exports."""
    from ieqa.train import load_recipe, train
    from ieqa.train.distributed import end_processes

    spec = load_recipe(recipe, [*set_, *([f"output.report_to={report_to}"] if report_to
                                          else [])])
    result = train(spec, output_dir=out, resume=resume or None, stop_after=stop_after,
                   on_log=_on_log, progress=progress)
    end_processes()
    if not result.main_process:  # one writer: the main process prints
        return
    runs = result.children or {"": result}
    for dim, run in runs.items():
        if dim:
            console.rule(escape(dim))
        print_metrics(run.metrics)
        if run.interrupted:
            console.print(escape(f"stopped early; continue with: ieqa train {recipe} --out "
                                 f"{run.output_dir} --resume"))
        elif run.evaluator_dir is not None:
            console.print(f"evaluator: [bold]{escape(str(run.evaluator_dir))}[/bold] "
                          f"{escape(f'(ieqa score DATA --checkpoint {run.evaluator_dir} -o SCORES.parquet)')}")
    console.print(f"metrics log: {escape(str(result.output_dir))}")


def train_demo(out: Path, recipe: str = "editreward", steps: int = 500,
               progress: bool = True) -> Any:
    """The training part of ``ieqa demo``: build a tiny random VLM in ``out/tiny-vlm``,
    train it with ``recipe`` scaled down by :func:`ieqa.train.tiny.tiny_recipe` for
    ``steps`` steps per stage on a generated ShapesEdit set, print the held-out metrics
    before and after, and return the :class:`~ieqa.train.TrainResult`."""
    from ieqa.testing import build_tiny_vlm
    from ieqa.train import train
    from ieqa.train.tiny import tiny_recipe

    model = build_tiny_vlm(out / "tiny-vlm", "qwen2-vl", overwrite=True)
    spec = tiny_recipe(recipe, model, steps=steps, dimensions=["visual_quality", "overall"])
    console.print(f"recipe [bold]{spec.name}[/bold] on a tiny random Qwen2-VL ({model}); "
                  f"{steps} steps per stage on ShapesEdit (artifacts world), CPU")
    result = train(spec, output_dir=out / "train", on_log=_on_log, progress=progress)
    for dim, run in (result.children or {"": result}).items():
        if dim:
            console.rule(dim)
        print_metrics(run.metrics)
        first, last = next(iter(run.metrics.values())), list(run.metrics.values())[-1]
        console.print(f"held-out SRCC {_fmt(first['before'].get('srcc'))} before training, "
                      f"{_fmt(last['after'].get('srcc'))} after")
    return result
