"""What an FDMPO run leaves in its folder: the best template and definition, ``result.json`` and
the trajectory plot.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ieqa.errors import IeqaError
from ieqa.optimize.records import BEST_DEFINITION_FILE, PLOT_FILE, RESULT_FILE, FDMPOResult, Trial
from ieqa.prompts.redefine import BEST_TEMPLATE_FILE, FDMPOError


# ------------------------------------------------------------------------ outputs
def correlation_or_none(fn: Callable[..., float], pred: Sequence[float], truth: Sequence[float]
          ) -> float | None:
    """``fn(pred, truth)``, or ``None`` when it is undefined (a constant input)."""
    from ieqa.metrics import MetricInputError

    try:
        value = fn(pred, truth)
    except MetricInputError:
        return None
    return None if math.isnan(value) else float(value)


def vd_validation_correlation(trials: Sequence[Trial]) -> dict[str, float | None] | None:
    """How V_d tracks the held-out performance over the trials: Spearman and Pearson
    correlation between each trial's V_d and its validation SRCC (``None`` entries when
    undefined; ``None`` with fewer than 3 validated trials)."""
    from ieqa.metrics.correlation import plcc, srcc

    vals = [(t.v_d, t.validation["srcc"]) for t in trials
            if t.validation and t.validation.get("srcc") is not None]
    if len(vals) < 3:
        return None
    a, b = [x for x, _ in vals], [y for _, y in vals]
    return {"spearman": correlation_or_none(srcc, a, b), "pearson": correlation_or_none(plcc, a, b), "trials": len(vals)}


def plot_trajectory(result: FDMPOResult, path: str | Path) -> Path:
    """PNG of V_d per iteration (best marked) and, when recorded, the validation
    (SRCC+PLCC)/2 and SRCC on a second axis. Needs matplotlib (the ``plot`` extra)."""
    from ieqa.report import new_figure

    fig = new_figure((7.0, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    its = [t.iteration for t in result.trials]
    ax.plot(its, [t.v_d for t in result.trials], "o-", color="tab:blue", label="V_d")
    ax.plot([result.best.iteration], [result.best.v_d], "*", color="tab:red", markersize=14,
            label=f"best V_d (iteration {result.best.iteration})")
    ax.set_xlabel("iteration")
    ax.set_ylabel("Definition Value V_d", color="tab:blue")
    handles, labels = ax.get_legend_handles_labels()
    if any(t.validation for t in result.trials):
        ax2 = ax.twinx()
        pts = [(t.iteration, t.validation) for t in result.trials if t.validation]
        nan = float("nan")
        ax2.plot([i for i, _ in pts], [nan if v["score"] is None else v["score"] for _, v in pts],
                 "s--", color="tab:green", label="validation (SRCC+PLCC)/2")
        ax2.plot([i for i, _ in pts], [nan if v["srcc"] is None else v["srcc"] for _, v in pts],
                 "^:", color="tab:olive", label="validation SRCC")
        ax2.set_ylabel("validation correlation", color="tab:green")
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
              fontsize=8, frameon=False)
    ax.set_title(f"FDMPO trajectory: {result.dimension}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    return path


def write_outputs(result: FDMPOResult, *, plot: bool = True) -> list[str]:
    """Write ``best_template.yaml``, ``best_definition.txt``, ``result.json`` and (with
    ``plot``) ``trajectory.png`` into ``result.out_dir``; returns notes (e.g. a plot
    skipped because matplotlib is missing)."""
    import yaml

    if result.out_dir is None:
        raise FDMPOError("the result has no out_dir")
    out = result.out_dir
    notes = []
    data = result.template.to_dict()
    data["description"] = (f"{data['description']} FDMPO: definition of {result.dimension} "
                           f"optimised (V_d {result.best.v_d:.4f} at iteration "
                           f"{result.best.iteration} of {len(result.trials) - 1}).").strip()
    (out / BEST_TEMPLATE_FILE).write_text(
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    (out / BEST_DEFINITION_FILE).write_text(result.best.definition + "\n", encoding="utf-8")
    summary = {"dimension": result.dimension, "best": dataclasses.asdict(result.best),
               "initial": dataclasses.asdict(result.trials[0]), "trials": len(result.trials),
               "complete": result.complete, "failures": result.failure_counts(),
               "usage": result.usage, "template": BEST_TEMPLATE_FILE}
    summary["vd_validation_correlation"] = vd_validation_correlation(result.trials)
    (out / RESULT_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    if plot:
        try:
            plot_trajectory(result, out / PLOT_FILE)
        except IeqaError as exc:  # matplotlib missing
            notes.append(f"no plot: {exc}")
    return notes
