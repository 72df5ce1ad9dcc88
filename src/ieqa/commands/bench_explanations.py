"""``ieqa bench-explanations``: explanation metrics of one or more runs against references.

ROUGE-1 (rouge-score) and METEOR (nltk; the variant that ran is printed: exact + stem
offline, + WordNet synonyms when its data is installed) always; the embedding cosine with
``--embedding`` (:data:`ieqa.explain.metrics.DEFAULT_ENCODER`) or ``--encoder ID_OR_DIR``;
EPAIQA's LLM-judge protocol (PA / LNA / GHA / Overall, five votes, the mode) with
``--judge-model`` (a local checkpoint, or with ``--judge-base-url`` the served model of an
OpenAI-compatible server). ``--runs`` adds predictions files of further runs of the same
model; every metric is then reported as mean and std over the runs (ReasonEdit Table 4).
File formats: :mod:`ieqa.explain.bench` and ``docs/reference/files.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands.options import parse_options

NAME = "bench-explanations"
console = Console()


def _num(x: float) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}"


def command(
    predictions: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="PREDICTIONS",
                                       help="predictions JSONL of the first run (id, explanation)"),
    references: Path = typer.Option(..., "--references", "-r", exists=True, dir_okay=False,
                                    help="references JSONL (id, explanation, optional "
                                         "instruction, sections / has_naturalness / has_harmony)"),
    runs: list[Path] | None = typer.Option(None, "--runs", exists=True, dir_okay=False,
                                           metavar="FILE", help="predictions JSONL of a further run of the same "
                                                "model (repeatable): mean and std over runs"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="folder for results.json, results.csv, per_sample.csv"),
    embedding: bool = typer.Option(False, "--embedding",
                                   help="add the embedding cosine with the default encoder "
                                        "(sentence-transformers/all-MiniLM-L6-v2, downloaded "
                                        "unless cached)"),
    encoder_id: str | None = typer.Option(None, "--encoder",
                                          help="hub id or folder of a text encoder for the "
                                               "embedding cosine (implies --embedding)"),
    pooling: str = typer.Option("mean", "--pooling", help="encoder pooling: mean or cls"),
    wordnet: bool | None = typer.Option(None, "--wordnet/--no-wordnet",
                                        help="METEOR synonym matching (default: when NLTK's "
                                             "WordNet data is installed)"),
    rouge_stemmer: bool = typer.Option(False, "--rouge-stemmer",
                                       help="ROUGE-1 on Porter-stemmed tokens"),
    judge_model: str | None = typer.Option(
        None, "--judge-model",
        help="run EPAIQA's judge protocol with this judge: a hub id / checkpoint folder, or "
             "the served model's name with --judge-base-url"),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible server of the judge, e.g. "
                                       "http://localhost:8000/v1 (key from $OPENAI_API_KEY)"),
    judge_option: list[str] | None = typer.Option(
        None, "--judge-option", help="judge backend argument as key=value (repeatable), e.g. "
                                     "timeout_s=120 or device=cuda"),
    votes: int = typer.Option(5, "--votes", min=1, help="judge answers per sample (EPAIQA: 5)"),
    min_votes: int | None = typer.Option(None, "--min-votes", min=1,
                                         help="readable votes a dimension needs (default: all)"),
    judge_temperature: float = typer.Option(1.0, "--judge-temperature", min=0.0,
                                            help="sampling temperature of the votes"),
    judge_seed: int | None = typer.Option(None, "--judge-seed", help="judge sampling seed"),
) -> None:
    """Explanation metrics (ROUGE-1, METEOR, embedding cosine, EPAIQA judge) of one or more
    runs, with mean and std over runs."""
    from ieqa.explain.bench import (
        bench_explanations,
        read_predictions,
        read_references,
        write_outputs,
    )
    from ieqa.explain.metrics import DEFAULT_ENCODER, TextEncoder

    if pooling not in ("mean", "cls"):
        raise typer.BadParameter("choose mean or cls", param_hint="--pooling")
    if judge_base_url is not None and judge_model is None:
        raise typer.BadParameter("--judge-base-url needs --judge-model <served model name>",
                                 param_hint="--judge-model")
    if min_votes is not None and min_votes > votes:
        raise typer.BadParameter(f"--min-votes {min_votes} exceeds --votes {votes}",
                                 param_hint="--min-votes")
    files = [predictions, *(runs or [])]
    refs = read_references(references)
    preds = [read_predictions(f) for f in files]
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        names = [str(f) for f in files]
    encoder = None
    if embedding or encoder_id is not None:
        encoder = TextEncoder.load(encoder_id or DEFAULT_ENCODER, pooling=pooling)  # type: ignore[arg-type]
    judge = None
    if judge_model is not None:
        from ieqa.backends import make_backend

        judge = make_backend(model=judge_model, base_url=judge_base_url,
                             **parse_options(judge_option))
    try:
        result = bench_explanations(
            preds, refs, names=names, encoder=encoder, judge=judge, use_wordnet=wordnet,
            rouge_stemmer=rouge_stemmer,
            judge_options={"votes": votes, "min_votes": min_votes,
                           "temperature": judge_temperature, "seed": judge_seed})
    finally:
        close = getattr(judge, "close", None)
        if callable(close):
            close()

    cfg = result.config
    console.print(f"[bold]explanations[/bold]: {len(refs)} references, {len(files)} run(s); "
                  f"METEOR variant {cfg['meteor']['variant']}"
                  + (f"; encoder {cfg['embedding_cosine']['encoder']}" if encoder else ""))
    for r in result.runs:
        line = f"{escape(r.name)}: {r.n_scored}/{r.n_references} references with a prediction"
        if r.judge is not None:
            line += f"; {r.judge.describe()}"
        console.print(line)
    table = Table(title="explanation metrics (mean over samples; mean ± std over runs)",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("mean", justify="right", style="bold", no_wrap=True)
    table.add_column("std", justify="right", no_wrap=True)
    table.add_column("runs", justify="right")
    table.add_column("scale", overflow="fold")
    for m, s in result.summary.items():
        scale = "0-2 (EPAIQA rubric)" if m.startswith("judge_") else \
            ("-1..1" if m == "embedding_cosine" else "0-1")
        table.add_row(m, _num(s["mean"]), _num(s["std"]), str(s["n_runs"]), scale)
    console.print(table)
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    if out is not None:
        paths = write_outputs(result, out)
        console.print(f"wrote [bold]{paths['json']}[/bold], results.csv and per_sample.csv")
