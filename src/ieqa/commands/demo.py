"""``ieqa demo``: the end-to-end demo on a generated ShapesEdit set (score, bench, report,
then train a tiny VLM)."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console

from ieqa.commands.synth import print_leaderboard, print_summary, run_synth
from ieqa.data.summary import summarize

NAME = "demo"
console = Console()


def command(
    out: Path = typer.Option(Path("ieqa-demo"), "--out", "-o", help="Working folder for the demo."),
    n: int = typer.Option(200, "--n", help="Number of ShapesEdit edits to generate."),
    seed: int = typer.Option(0, "--seed", help="Seed of the generated set."),
    train_recipe: str = typer.Option("editreward", "--train-recipe", help="Recipe the demo "
                                     "trains a tiny VLM with (ieqa list recipes); 'none' skips training."),
    train_steps: int = typer.Option(500, "--train-steps", min=1, help="Training steps per "
                                    "stage (500: about 80 s on two CPU cores; the whole demo takes about two minutes)."),
) -> None:
    """Run the end-to-end demo: generate a ShapesEdit set, score it with `classic`,
    benchmark the scores against the ground truth and write the HTML report; then train a
    tiny random VLM with a recipe and print its held-out SRCC before and after."""
    import json

    from ieqa.bench.leaderboard import editor_leaderboard
    from ieqa.bench.predictions import read_predictions
    from ieqa.bench.run import evaluate_predictions, write_bench_outputs
    from ieqa.commands.bench import print_bench_result
    from ieqa.commands.options import manifest_input_id
    from ieqa.commands.score import print_run
    from ieqa.data.loaders import load_benchmark
    from ieqa.data.manifest import iter_manifest
    from ieqa.scorers import create_scorer
    from ieqa.scorers.run import score_to_file

    t0 = time.perf_counter()
    console.rule("[bold]ieqa demo[/bold]: ShapesEdit")
    manifest = run_synth(out / "shapesedit", n, 4, seed, 256, 0.3, "jsonl")
    card = json.loads((manifest.parent / "shapesedit.json").read_text())
    samples = list(iter_manifest(manifest))
    print_summary(summarize(samples))
    print_leaderboard(editor_leaderboard(samples), card["true_editor_ranking"])

    console.rule("[bold]score[/bold] with classic (weight-free default)")
    scorer = create_scorer("classic")
    summary = score_to_file(scorer, iter_manifest(manifest), out / "scores.parquet",
                            input_id=manifest_input_id(manifest), total=len(samples),
                            overwrite=True)
    print_run(summary)

    console.rule("[bold]bench[/bold]: classic scores against the ShapesEdit ground truth")
    result = evaluate_predictions(load_benchmark(manifest.parent),
                                  read_predictions(summary.out), n_boot=200, seed=seed)
    print_bench_result(result, f"classic scores ({summary.out.name})")
    paths = write_bench_outputs(result, out / "bench")
    console.print(f"report: [bold]{paths['html']}[/bold]")

    trained: dict[str, Path] = {}
    if train_recipe != "none":
        from ieqa.commands.train import train_demo

        console.rule(f"[bold]train[/bold] a tiny VLM with the {train_recipe} recipe")
        result = train_demo(out, train_recipe, train_steps)
        trained = {dim: Path(run.evaluator_dir)  # a per-dimension recipe: one per dimension
                   for dim, run in (result.children or {"": result}).items()
                   if run.evaluator_dir is not None}
    console.rule("[bold]what the demo wrote[/bold]")
    print_closing(out, manifest, summary.out, paths["html"], trained,
                  time.perf_counter() - t0)


#: what to read after the demo: (page, what it covers); the docs' paths in the repository
NEXT_PAGES = (
    ("docs/getting-started.md", "score your own edits (a manifest of source, edited, "
                                "instruction) and read a score file"),
    ("docs/howto/benchmark.md", "benchmark an evaluator against human ratings"),
    ("docs/howto/train.md", "train an evaluator with a paper's recipe on your data"),
)


def print_closing(out: Path, manifest: Path, scores: Path, report: Path,
                  evaluators: dict[str, Path], seconds: float) -> None:
    """The demo's last words: each file it wrote and what it holds (``evaluators``: the
    trained evaluator of each dimension, ``""`` for one of all), and what to read next."""
    from rich.markup import escape

    rows = [(manifest, "the generated ShapesEdit edits (a manifest: source, edited, "
                       "instruction, ground truth)"),
            (scores, "the classic scorer's scores, one row per edit"),
            (report, "the benchmark report against the ground truth: open it in a browser")]
    for dim, evaluator in evaluators.items():
        rows.append((evaluator, f"the trained tiny evaluator{f' of {dim}' if dim else ''}: "
                                f"ieqa score MANIFEST --checkpoint {evaluator} -o OUT scores "
                                "with it"))
    for path, what in rows:
        console.print(f"  [bold]{escape(str(path))}[/bold]  {escape(what)}", highlight=False,
                      soft_wrap=True)  # a path is never broken across lines
    console.print("next:", highlight=False)
    for page, what in NEXT_PAGES:
        console.print(f"  {page}  {what}", highlight=False, soft_wrap=True)
    console.print(f"done in {seconds:.1f} s (everything is in {escape(str(out))})",
                  highlight=False, soft_wrap=True)


