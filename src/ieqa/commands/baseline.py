"""``ieqa baseline subscore-rf``: EPAIQA's random-forest competitor, fitted and evaluated.

One command fits the forest from two (or more) sub-scores to a target on a training split
and reports SRCC/KRCC/PLCC/RMSE on the test split, beside each sub-score alone; ``-o``
saves the model (skops), ``--model`` evaluates a saved one instead of fitting, and
``--predictions`` writes the test predictions as a predictions file ``ieqa bench`` reads.
See :mod:`ieqa.baselines.subscore_regressor`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ieqa.commands.options import FROM_SCORER_OPT, MAX_MISMATCH_OPT

NAME = "baseline"
console = Console()
METHODS = ("subscore-rf",)


def _fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


def command(
    method: str = typer.Argument(..., help="the baseline: subscore-rf (EPAIQA's random forest "
                                 "from sub-scores to overall)."),
    data: Path = typer.Argument(..., help="where the sub-scores come from: a score file of "
                                "`ieqa score` / a predictions file, or a manifest (its scores)."),
    features: str = typer.Option(..., "--features", help="comma-separated sub-score "
                                 "dimensions, e.g. harmony,local_naturalness."),
    target: str = typer.Option("overall", "--target", help="the dimension to predict."),
    truth: Path | None = typer.Option(None, "--truth", help="manifest holding the target (and "
                                      "the group ids of the split); default DATA itself."),
    test: Path | None = typer.Option(None, "--test", help="a separate test file (as DATA); "
                                     "default: a seeded split of DATA by group."),
    test_truth: Path | None = typer.Option(None, "--test-truth", help="manifest holding the "
                                           "test target (default: --test itself)."),
    test_fraction: float = typer.Option(0.2, "--test-fraction", help="share of groups held "
                                        "out for testing when no --test is given."),
    seed: int = typer.Option(0, "--seed", help="seed of the split and of the forest."),
    n_estimators: int = typer.Option(200, "--n-estimators", min=1, help="trees in the forest."),
    max_depth: int | None = typer.Option(None, "--max-depth", min=1, help="tree depth limit "
                                         "(default: none)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="save the fitted model here "
                                    "(.skops)."),
    model_path: Path | None = typer.Option(None, "--model", help="evaluate this saved model on "
                                           "DATA (or --test) instead of fitting one."),
    predictions: Path | None = typer.Option(None, "--predictions", help="write the test "
                                            "predictions (id, target) as JSONL."),
    as_json: bool = typer.Option(False, "--json", help="print the results as JSON."),
    from_scorer: str | None = FROM_SCORER_OPT,
    max_mismatch: float = MAX_MISMATCH_OPT,
) -> None:
    """Fit and evaluate a baseline: `ieqa baseline subscore-rf SCORES --truth MANIFEST
    --features visual_quality,content_preservation -o rf.skops` fits a random forest from
    the sub-scores to the truth's overall on a training split by group and prints its
    SRCC/KRCC/PLCC/RMSE on the held-out groups, beside each sub-score alone."""
    from ieqa.baselines import SubscoreRegressor, run_subscore_baseline
    from ieqa.data.dimensions import canonical_dimension

    if method not in METHODS:
        raise typer.BadParameter(f"choose one of: {', '.join(METHODS)}", param_hint="METHOD")
    feats = [f.strip() for f in features.split(",") if f.strip()]
    if model_path is not None and out is not None:
        raise typer.BadParameter("--model evaluates a saved model; -o saves a fitted one: "
                                 "give one of them", param_hint="--model")
    model = SubscoreRegressor.load(model_path) if model_path is not None else None
    if model is not None and model.features != tuple(canonical_dimension(f) for f in feats):
        raise typer.BadParameter(f"the model maps {', '.join(model.features)}; --features "
                                 f"says {features}", param_hint="--features")
    result = run_subscore_baseline(data, feats, target, truth=truth, test=test,
                                   test_truth=test_truth, test_fraction=test_fraction, seed=seed,
                                   model=model, n_estimators=n_estimators, max_depth=max_depth,
                                   scorer=from_scorer, max_mismatch=max_mismatch)
    if out is not None:
        result["model"].save(out)
    if predictions is not None:
        predictions.parent.mkdir(parents=True, exist_ok=True)
        tgt = result["model"].target
        with predictions.open("w") as fh:
            for ident, value in result["predictions"].items():
                fh.write(json.dumps({"id": ident, tgt: value}) + "\n")
    summary = {"method": method, "features": list(result["model"].features),
               "target": result["model"].target, "n_train": result["n_train"],
               "n_test": result["n_test"], "n_dropped": len(result["dropped"]),
               "metrics": result["metrics"], "features_alone": result["features_alone"],
               "model": str(out) if out else (str(model_path) if model_path else None)}
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    table = Table(title=f"{method}: {' + '.join(summary['features'])} -> {summary['target']} "
                        f"(test split, {summary['n_test']} edits; trained on {summary['n_train']})",
                  title_justify="left")
    for col in ("predictor", "SRCC", "KRCC", "PLCC", "RMSE"):
        table.add_column(col, justify="left" if col == "predictor" else "right")
    rows = [("random forest", result["metrics"]),
            *((f"{f} alone", m) for f, m in result["features_alone"].items())]
    for name, m in rows:
        table.add_row(escape(name), _fmt(m["srcc"]), _fmt(m["krcc"]), _fmt(m["plcc"]),
                      _fmt(m["rmse"]))
    console.print(table)
    if result["dropped"]:
        console.print(f"{len(result['dropped'])} edits left out (missing a feature or the target)")
    if out is not None:
        console.print(f"model: [bold]{escape(str(out))}[/bold]")
    if predictions is not None:
        console.print(f"predictions: [bold]{escape(str(predictions))}[/bold]")
