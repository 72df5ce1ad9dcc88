"""FDMPO on CPU: a tiny evaluator trained on one reference definition, and FDMPO started
from a deliberately poor definition recovering a definition at least as good (by V_d).

1. A tiny random Qwen2-VL (:func:`ieqa.testing.build_tiny_vlm`) is optionally given a short
   perception training (all weights regress visual quality through a throwaway head on a
   disjoint ShapesEdit set, as ``tests/train/conftest.py::seeing_vlm`` does), so that its
   readout can see the images.
2. It is trained with the ``ds-ieqa`` recipe (TDRL on the ``X.XX`` digits, scaled down by
   :func:`ieqa.train.tiny.tiny_recipe`) on visual quality, with a short digits template
   whose user text holds ``{definition}`` and the recipe field
   ``stages.0.definitions.visual_quality`` pointing at the **reference definition**.
3. FDMPO (:func:`ieqa.optimize.optimize`) starts from a **poor definition** with a
   scripted optimiser that proposes, in order, a fixed list of distractors and paraphrases
   of the reference (never the reference itself). V_d is measured on ``--vd-samples``
   held-out edits, and every trial's SRCC / PLCC on ``--val-samples`` other held-out edits.

    HF_HUB_OFFLINE=1 PYTHONPATH=src python benchmarks/fdmpo_demo.py --json fdmpo_demo.json

Prints V_d and held-out SRCC per trial side by side, their correlation over the trials,
the reference definition's own V_d and SRCC, and whether the selected V_d >= the
reference's. ``--json FILE`` writes everything.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from ieqa import optimize as fdmpo
from ieqa.testing import build_tiny_vlm
from ieqa.train import load_recipe, train
from ieqa.train.data import load_training_data
from ieqa.train.tiny import artifacts_world, tiny_recipe

DIM = "visual_quality"

#: the short digits prompt of the tiny runs, with the definition in the user text
TEMPLATE: dict[str, Any] = {
    "name": "short-digits-def", "description": "short DS-IEQA digits prompt with a definition",
    "reference": "benchmarks/fdmpo_demo.py", "system": None, "output": "digits",
    "scale": [1, 5], "images": ["source", "edited"],
    "user": "<image:source><image:edited>{instruction} {definition} Rate the {dimension}.",
    "answer_prefix": "{Dimension} score: "}

REFERENCE = "Visual quality: how clean the edited image is, without noise or artifacts."
POOR = "Say a number."
#: the scripted optimiser's proposals, in order: distractors and paraphrases
PROPOSALS: tuple[str, ...] = (
    "Count the shapes in the source image.",
    "Visual quality: how clean the edited picture is, without noise or artifacts.",
    "The instruction was followed exactly, whatever the image looks like.",
    "Visual quality: how clean the edited image is, free of noise or artifacts.",
    "Colourful images with many objects are best.",
    "Visual quality is how clean the edited image is, without noise or artifacts.",
    "Quality: how clean the image is.",
    "Visual quality: how clean the edited image is, with no noise and no artifacts.",
)


def scripted_optimizer(proposals: tuple[str, ...] = PROPOSALS):
    """An optimiser callable answering each call with the next proposal (tagged)."""
    queue = list(proposals)

    def optimizer(messages: list[dict[str, str]]) -> str:
        if not queue:
            raise fdmpo.OptimizerError("the scripted list is exhausted", "error")
        return f"<definition>{queue.pop(0)}</definition>"

    return optimizer


def seeing_backbone(model: str, workdir: Path, steps: int, seed: int = 7) -> str:
    """``model`` after ``steps`` of perception training (see the module docstring)."""
    base = load_recipe({"name": "perception", "model": {"name": model},
                        "data": {"train": "unused"}, "head": {"kind": "regression"},
                        "stages": [{"name": "perception", "objective": "pointwise",
                                    "loss": "mse", "dimensions": [DIM]}]})
    recipe = tiny_recipe(base, model, steps=steps, seed=seed)
    result = train(recipe, output_dir=workdir / "perception", progress=False)
    return str(Path(result.evaluator_dir) / "model")


def run_demo(workdir: str | Path, *, perception_steps: int = 300, tdrl_steps: int = 200,
             n_train: int = 400, vd_samples: int = 48, val_samples: int = 64,
             proposals: tuple[str, ...] = PROPOSALS, lr: float = 3e-4, size: int = 112,
             batch_size: int = 16, backbone: str | None = None, seed: int = 0
             ) -> dict[str, Any]:
    """Run the demonstration in ``workdir``; returns the numbers (see the module docstring).

    ``size`` is the ShapesEdit image size in pixels (112: 16 image tokens per image for the
    tiny Qwen2-VL, 64: 4) and ``batch_size`` the training batch. ``backbone`` starts from
    that model folder (e.g. a perception backbone made earlier) instead of building one;
    ``perception_steps`` is then ignored. ``seed`` is the TDRL run's optim seed.
    ``vd_samples`` and ``val_samples`` come from the trained run's held-out groups (disjoint
    from its training edits); ``val_samples`` may not exceed what is left after V_d's.
    """
    from ieqa.scorers.catalog import create_scorer

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    model = backbone or str(build_tiny_vlm(work / "tiny-vlm", "qwen2-vl", overwrite=True))
    if perception_steps and not backbone:
        model = seeing_backbone(model, work, perception_steps)
    times["perception_s"] = time.perf_counter() - t0

    ref_file = work / "reference_definition.txt"
    ref_file.write_text(REFERENCE + "\n", encoding="utf-8")
    recipe = tiny_recipe("ds-ieqa", model, steps=tdrl_steps, n=n_train, lr=lr,
                         dimensions=[DIM], max_eval_samples=vd_samples + val_samples,
                         batch_size=batch_size,
                         overrides={"stages.0.template": TEMPLATE,
                                    "data.train": artifacts_world(n_train, seed=1, size=size),
                                    f"stages.0.definitions.{DIM}": str(ref_file),
                                    "optim.seed": seed})
    t0 = time.perf_counter()
    result = train(recipe, output_dir=work / "ds-ieqa", progress=False)
    times["tdrl_s"] = time.perf_counter() - t0
    run = result.children[DIM]
    evaluator = Path(run.evaluator_dir)

    held_out = load_training_data(recipe.data, recipe.optim.seed).eval
    if len(held_out) < vd_samples + 3:
        raise ValueError(f"only {len(held_out)} held-out samples; lower vd_samples")
    vd_set, val_set = held_out[:vd_samples], held_out[vd_samples:vd_samples + val_samples]
    scorer = create_scorer("vlm-digits", checkpoint=str(evaluator), batch_size=16)

    t0 = time.perf_counter()
    reference = fdmpo.optimize(scorer, scripted_optimizer(()), vd_set, dimension=DIM,
                               iterations=0, n_samples=None, validation=val_set,
                               initial_definition=REFERENCE, template=TEMPLATE,
                               out_dir=None)
    times["reference_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    opt = fdmpo.optimize(scorer, scripted_optimizer(proposals), vd_set, dimension=DIM,
                         iterations=len(proposals), n_samples=None, validation=val_set,
                         initial_definition=POOR, template=TEMPLATE, out_dir=work / "fdmpo",
                         resume=False)
    times["fdmpo_s"] = time.perf_counter() - t0
    ref = reference.trials[0]
    return {
        "training": {"tdrl_metrics": run.metrics.get("tdrl", {}), "steps": tdrl_steps,
                     "perception_steps": perception_steps},
        "reference": {"definition": REFERENCE, "v_d": ref.v_d, "validation": ref.validation},
        "trials": [{"iteration": t.iteration, "definition": t.definition, "v_d": t.v_d,
                    "validation": t.validation} for t in opt.trials],
        "best": {"iteration": opt.best.iteration, "definition": opt.best.definition,
                 "v_d": opt.best.v_d, "validation": opt.best.validation},
        "selected_vd_at_least_reference": opt.best.v_d >= ref.v_d,
        "correlation": fdmpo.vd_validation_correlation(opt.trials),
        "samples": {"vd": len(vd_set), "validation": len(val_set)},
        "out_dir": str(work / "fdmpo"), "times_s": {k: round(v, 1) for k, v in times.items()},
    }


def _f(x: float | None) -> str:
    return "   –  " if x is None else f"{x:+.3f}"


def print_report(res: dict[str, Any]) -> None:
    print(f"TDRL held-out (before -> after): {res['training']['tdrl_metrics']}")
    print(f"samples: V_d on {res['samples']['vd']}, SRCC on {res['samples']['validation']} "
          "held-out edits")
    print(f"{'it':>3} {'V_d':>7} {'SRCC':>7} {'PLCC':>7}  definition")
    ref = res["reference"]
    val = ref["validation"] or {}
    print(f"{'ref':>3} {ref['v_d']:7.4f} {_f(val.get('srcc')):>7} {_f(val.get('plcc')):>7}  "
          f"{ref['definition']}")
    for t in res["trials"]:
        val = t["validation"] or {}
        mark = "*" if t["iteration"] == res["best"]["iteration"] else " "
        print(f"{t['iteration']:>2}{mark} {t['v_d']:7.4f} {_f(val.get('srcc')):>7} "
              f"{_f(val.get('plcc')):>7}  {t['definition']}")
    print(f"selected: iteration {res['best']['iteration']}, V_d {res['best']['v_d']:.4f} vs "
          f"reference {ref['v_d']:.4f} -> at least the reference: "
          f"{res['selected_vd_at_least_reference']}")
    print(f"V_d vs held-out SRCC over the trials: {res['correlation']}")
    print(f"times (s): {res['times_s']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--perception-steps", type=int, default=300)
    ap.add_argument("--tdrl-steps", type=int, default=200)
    ap.add_argument("--n-train", type=int, default=400)
    ap.add_argument("--vd-samples", type=int, default=48)
    ap.add_argument("--val-samples", type=int, default=64)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--backbone", default=None, help="start from this model folder (e.g. a "
                    "perception backbone made earlier); --perception-steps is then ignored")
    ap.add_argument("--json", type=Path, default=None, help="write the numbers here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        res = run_demo(work, perception_steps=args.perception_steps,
                       tdrl_steps=args.tdrl_steps, n_train=args.n_train,
                       vd_samples=args.vd_samples, val_samples=args.val_samples,
                       backbone=args.backbone)
        print_report(res)
        if args.json is not None:
            args.json.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
