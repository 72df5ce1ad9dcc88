"""One process of a multi-process ``ieqa train`` run for tests/train/test_data_parallel.py.

Run by ``torchrun`` / ``accelerate launch`` as ``python tests/train/dp_worker.py SPEC.json``;
SPEC holds the tiny model, the run folder, the recipes and the settings. The test builds
the same recipes in its own process with :func:`dp_recipe` (imported from here).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: optimiser steps per stage of each recipe: edithf covers the levels (text CE), pointwise
#: (MSE head) and pairwise (Bradley-Terry) families, editreward the Gaussian one
#: (Monte Carlo uncertainty loss), ds-ieqa TDRL (per dimension)
STEPS = {"edithf": 2, "editreward": 4, "ds-ieqa": 2}


def dp_recipe(name: str, model: str, *, grad_accum: int, stages: int | None = None,
              **extra: Any) -> Any:
    """The tiny recipe both sides train: batch 2 per process, 48 edits, 6 held out, dropout
    in the head (drawn from torch's global generator)."""
    from ieqa.train.tiny import tiny_recipe

    overrides: dict[str, Any] = {"optim.grad_accum": grad_accum, "eval.batch_size": 4,
                                 "head.dropout": 0.1, **extra}
    if name == "editreward":
        overrides["stages.0.loss_args.n_samples"] = 8
    recipe = tiny_recipe(name, model, steps=STEPS[name], n=48, batch_size=2,
                         max_eval_samples=6, dimensions=["visual_quality", "overall"],
                         overrides=overrides)
    if stages is not None:  # the recipe's first stages only
        recipe.stages = recipe.stages[:stages]
    return recipe


def main(spec_path: str) -> None:
    from ieqa.train import train

    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    losses: dict[str, dict[str, list[list[float]]]] = {}
    main_process = True
    for name in spec["recipes"]:
        recipe = dp_recipe(name, spec["model"], grad_accum=spec["grad_accum"],
                           stages=spec.get("stages"), **spec.get("overrides", {}))
        result = train(recipe, output_dir=out / name, progress=False,
                       stop_after=spec.get("stop_after", {}).get(name))
        main_process = result.main_process
        runs = result.children or {"": result}
        losses[name] = {d: [list(x) for x in r.losses] for d, r in runs.items()}
    if main_process:
        (out / "losses.json").write_text(json.dumps(losses))
    from ieqa.train.distributed import end_processes

    end_processes()  # as ieqa train does last


if __name__ == "__main__":
    main(sys.argv[1])
