"""``ieqa optimize-prompt``: FDMPO, feedback-driven optimisation of a metric definition.

Forms::

    ieqa optimize-prompt -d visual_quality --model Qwen/Qwen3-VL-8B-Instruct \\
        --data train.jsonl --validation val.jsonl \\
        --optimizer-base-url http://localhost:8001/v1 --optimizer-model gpt-4o
    ieqa optimize-prompt -d visual_quality --checkpoint runs/ds-ieqa/visual_quality/evaluator \\
        --data train.jsonl --optimizer-local ./qwen2.5-7b-instruct --iterations 20

The feedback model (``--model`` with the ``vlm-digits`` readout, or a trained ``vlm-digits``
``--checkpoint``) measures each candidate definition's Definition Value V_d on ``--samples``
labelled edits of ``--data``; the optimiser LLM (an OpenAI-compatible server or a local
causal LM) sees the trials sorted by V_d and proposes the next one
(:mod:`ieqa.optimize`). ``--out`` receives ``trajectory.jsonl`` (every trial and every
optimiser failure, appended as the run goes), ``trajectory.png``, ``best_template.yaml``
(usable with ``ieqa score -O template=FILE`` / ``--template FILE`` and in a recipe's
``stages.N.definitions``), ``best_definition.txt`` and ``result.json``. Re-running the same
command resumes from ``trajectory.jsonl``.

Exit status: 0 when all iterations ran; 3 when the optimiser's failure budget ran out first
(the outputs hold the trials so far); 2 for a usage error; 1 when the run could not be done.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.backends.judge_log import JUDGE_LOG
from ieqa.commands.options import (
    CHECKPOINT_OPT,
    EXIT_PARTIAL,
    MODEL_OPT,
    OPTION_OPT,
    make_scorer,
    number_pair,
    parse_options,
)
from ieqa.errors import IeqaError
from ieqa.scorers.run import judge_logged

NAME = "optimize-prompt"
console = Console()
EXIT_INCOMPLETE = EXIT_PARTIAL  # the contract's 3 (ieqa.commands.options)


def _samples(path: str, what: str) -> list:
    from ieqa.data.loaders import load_benchmark

    try:
        return list(load_benchmark(path).samples)
    except IeqaError as exc:
        raise typer.BadParameter(str(exc), param_hint=what) from None


def _scale(text: str | None) -> tuple[float, float] | None:
    pair = number_pair(text, "--score-scale",
                       "the data's score range as LOW,HIGH (e.g. 1,5 or 0,100)")
    if pair is None:
        return None
    lo, hi = pair
    if not lo < hi:
        raise typer.BadParameter(f"{text!r}: LOW must be below HIGH", param_hint="--score-scale")
    return lo, hi


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def command(
    dimension: str = typer.Option(..., "--dimension", "-d",
                                  help="the dimension whose definition is optimised"),
    data: str = typer.Option(..., "--data",
                             help="labelled samples (manifest, benchmark folder or file) V_d "
                                  "is measured on"),
    model: str | None = MODEL_OPT,
    checkpoint: Path | None = CHECKPOINT_OPT,
    option: list[str] | None = OPTION_OPT,
    template: str | None = typer.Option(None, "--template",
                                        help="base template with {definition} (name or file; "
                                             "default: the feedback scorer's, ds-ieqa-digits)"),
    optimizer_base_url: str | None = typer.Option(
        None, "--optimizer-base-url", help="optimiser LLM: an OpenAI-compatible API root "
                                           "(http://host:port/v1)"),
    optimizer_model: str | None = typer.Option(None, "--optimizer-model",
                                               help="the served optimiser model's name"),
    optimizer_local: Path | None = typer.Option(
        None, "--optimizer-local", exists=True, file_okay=False,
        help="optimiser LLM: a local transformers causal-LM folder"),
    optimizer_timeout: float = typer.Option(120.0, "--optimizer-timeout", min=0.001,
                                            help="seconds per optimiser request (HTTP)"),
    optimizer_retries: int = typer.Option(2, "--optimizer-retries", min=0,
                                          help="transport retries of one optimiser request"),
    optimizer_max_tokens: int = typer.Option(1024, "--optimizer-max-tokens", min=1,
                                             help="longest optimiser answer, in tokens"),
    optimizer_temperature: float = typer.Option(
        0.0, "--optimizer-temperature", min=0.0,
        help="HTTP optimiser's sampling temperature (0: greedy; the local one is greedy)"),
    optimizer_prompt: Path | None = typer.Option(
        None, "--optimizer-prompt", exists=True, dir_okay=False,
        help="text file replacing the optimiser's user prompt (placeholders as "
             "ieqa.optimize.OPTIMIZER_PROMPT)"),
    iterations: int = typer.Option(10, "--iterations", "-n", min=0,
                                   help="optimiser proposals after the initial definition"),
    samples: int = typer.Option(64, "--samples", min=1,
                                help="labelled samples V_d is averaged over"),
    validation: str | None = typer.Option(
        None, "--validation", help="held-out labelled samples: SRCC/PLCC of each trial"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="output folder (default runs/fdmpo-DIMENSION)"),
    initial_definition: str | None = typer.Option(
        None, "--initial-definition",
        help="starting definition, or @FILE (default: the template's)"),
    max_failures: int = typer.Option(10, "--max-failures", min=0,
                                     help="optimiser failures allowed over the run"),
    max_definition_chars: int = typer.Option(2000, "--max-definition-chars", min=1,
                                             help="longest accepted definition (characters)"),
    score_scale: str | None = typer.Option(
        None, "--score-scale", help="LOW,HIGH of the data's scores (default: the samples' "
                                    "score_scale, else their observed range)"),
    seed: int = typer.Option(0, "--seed", help="seed of the choice of --samples"),
    fresh: bool = typer.Option(False, "--fresh",
                               help="start over instead of resuming --out's trajectory"),
) -> None:
    """Optimise a dimension's definition by its Definition Value V_d (DS-IEQA FDMPO).

    Exit status: 0 when every iteration ran, 3 when the optimiser's failure budget ran out
    first (outputs written), 2 for a usage error, 1 when the run could not be done.
    """
    from ieqa import optimize as fdmpo
    from ieqa.data.dimensions import canonical_dimension

    try:
        dim = canonical_dimension(dimension)
    except IeqaError as exc:
        raise typer.BadParameter(str(exc), param_hint="--dimension") from None
    given = parse_options(option)
    if model is not None and checkpoint is not None:
        raise typer.BadParameter("--model and --checkpoint both given; the feedback model is "
                                 "one of them", param_hint="--model")
    if model is None and checkpoint is None and not {"model", "checkpoint"} & set(given):
        raise typer.BadParameter("give the feedback model: --model M (a VLM read with "
                                 "vlm-digits) or --checkpoint DIR (a trained vlm-digits "
                                 "evaluator)", param_hint="--model")
    if (optimizer_base_url is None) == (optimizer_local is None):
        raise typer.BadParameter("give the optimiser: --optimizer-base-url URL with "
                                 "--optimizer-model NAME, or --optimizer-local PATH",
                                 param_hint="--optimizer-base-url")
    if optimizer_base_url is not None and not optimizer_model:
        raise typer.BadParameter("--optimizer-base-url needs --optimizer-model NAME (the served "
                                 "model)", param_hint="--optimizer-model")
    if optimizer_local is not None and optimizer_model:
        raise typer.BadParameter("--optimizer-model goes with --optimizer-base-url; a local "
                                 "optimiser is named by its folder", param_hint="--optimizer-model")
    start = initial_definition
    if start is not None and start.startswith("@"):
        try:
            start = Path(start[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise typer.BadParameter(f"cannot read {start[1:]}: {exc.strerror or exc}",
                                     param_hint="--initial-definition") from None
    prompt_text = fdmpo.OPTIMIZER_PROMPT
    if optimizer_prompt is not None:
        prompt_text = optimizer_prompt.read_text(encoding="utf-8")
    train = _samples(data, "--data")
    valid = _samples(validation, "--validation") if validation else None
    scorer = make_scorer(None if checkpoint is not None else "vlm-digits", option, model,
                         checkpoint)
    if not hasattr(scorer, "definition_value"):
        raise typer.BadParameter(f"the feedback model must use the vlm-digits readout (V_d "
                                 f"reads the digit probabilities); this one is {scorer.name!r}",
                                 param_hint="--checkpoint")
    if optimizer_local is not None:
        optimizer = fdmpo.LocalOptimizer(optimizer_local, max_new_tokens=optimizer_max_tokens)
    else:
        optimizer = fdmpo.ChatOptimizer(optimizer_base_url, optimizer_model,  # type: ignore[arg-type]
                                        timeout_s=optimizer_timeout,
                                        max_retries=optimizer_retries,
                                        max_new_tokens=optimizer_max_tokens,
                                        temperature=optimizer_temperature)
    out_dir = out if out is not None else Path(f"runs/fdmpo-{dim}")

    def show(row: dict) -> None:
        if row["kind"] == "trial":
            val = row["validation"] or {}
            extra = f", validation SRCC {_fmt(val.get('srcc'))}" if val else ""
            console.print(f"trial {row['iteration']}: V_d {row['v_d']:.4f}{extra}")
        else:
            console.print(f"[yellow]optimiser failure[/yellow] ({row['failure']}, iteration "
                          f"{row['iteration']} attempt {row['attempt']}): "
                          f"{escape(row['message'][:200])}")

    # every request of the optimiser and of a served feedback model, recorded
    try:
        with judge_logged(out_dir / JUDGE_LOG, optimizer, scorer, mode="record"):
            result = fdmpo.optimize(
                scorer, optimizer, train, dimension=dim, iterations=iterations,
                n_samples=samples, validation=valid, initial_definition=start,
                template=template, out_dir=out_dir, resume=not fresh,
                max_failures=max_failures, max_definition_chars=max_definition_chars,
                optimizer_prompt=prompt_text, data_scale=_scale(score_scale), seed=seed,
                on_event=show)
    except fdmpo.FDMPOError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    finally:
        if hasattr(optimizer, "close"):
            optimizer.close()
    _report(result)
    for note in result.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    if not result.complete:
        console.print(f"[yellow]stopped early:[/yellow] the optimiser's failure budget "
                      f"(--max-failures {max_failures}) ran out; re-run with a larger "
                      "--max-failures to continue")
        raise typer.Exit(EXIT_INCOMPLETE)


def _report(result: object) -> None:
    from ieqa.optimize import FDMPOResult, vd_validation_correlation

    assert isinstance(result, FDMPOResult)
    table = Table(title=f"FDMPO trials ({result.dimension})")
    for col in ("iteration", "V_d", "val SRCC", "val PLCC", "val score", "definition"):
        table.add_column(col, justify="left" if col == "definition" else "right")
    for t in result.trials:
        val = t.validation or {}
        mark = " *" if t is result.best else ""
        text = t.definition if len(t.definition) <= 90 else t.definition[:87] + "..."
        table.add_row(f"{t.iteration}{mark}", f"{t.v_d:.4f}", _fmt(val.get("srcc")),
                      _fmt(val.get("plcc")), _fmt(val.get("score")), escape(text))
    console.print(table)
    corr = vd_validation_correlation(result.trials)
    if corr is not None:
        console.print(f"V_d vs validation SRCC over {corr['trials']} trials: Spearman "
                      f"{_fmt(corr['spearman'])}, Pearson {_fmt(corr['pearson'])}")
    usage = result.usage
    unknown = (f", {usage['calls_without_usage']} call(s) without usage"
               if usage["calls_without_usage"] else "")
    console.print(f"optimiser: {usage['calls']} call(s), {usage['prompt_tokens']} prompt + "
                  f"{usage['completion_tokens']} completion tokens{unknown}; failures: "
                  f"{json.dumps(result.failure_counts()) if result.failures else 'none'}")
    console.print(f"best: iteration {result.best.iteration}, V_d {result.best.v_d:.4f} "
                  f"(initial {result.trials[0].v_d:.4f})")
    if result.out_dir is not None:
        console.print(f"wrote {result.out_dir}/ (trajectory.jsonl, best_template.yaml, "
                      "best_definition.txt, result.json, trajectory.png)")
