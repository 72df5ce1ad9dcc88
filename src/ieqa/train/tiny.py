"""Scale a paper recipe down to a tiny random VLM on a CPU.

The built-in recipes carry the papers' settings for 7B backbones on GPUs (LoRA ranks,
learning rates of 1e-4 to 2e-6, 448-pixel images, prompts of hundreds of tokens). A tiny
random model (:func:`ieqa.testing.build_tiny_vlm`) learns nothing useful under them in
minutes. :func:`tiny_recipe` keeps what makes each recipe itself (stages, objectives,
losses, targets, heads, samplers, pair building, aggregation) and changes only the scale:

* every weight trainable (``adapter.kind: full``; a random tiny backbone learns far faster
  that way than through LoRA), no 4-bit loading;
* a constant learning rate (3e-4, heads 3e-3), batch 16, a fixed number of steps per stage;
* short prompts of the same output format (:data:`SHORT_TEMPLATES`; the built-in ones are
  hundreds of byte-level tokens for the tiny tokenizer);
* the learnable ShapesEdit world (:func:`artifacts_world`: complete edits with global noise
  of uniform severity, so visual quality and overall spread over the whole scale) at 112
  pixels; dimensions ShapesEdit has no labels for (EPAIQA's harmony and local naturalness,
  RE-Reward's critique scores) are trained on its visual quality (:data:`STAND_IN_LABELS`).

Used by ``ieqa demo`` and by the tests that show every recipe learns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.train.recipe import Recipe, StageConfig, apply_overrides, load_recipe

__all__ = ["SHORT_TEMPLATES", "STAND_IN_LABELS", "artifacts_world", "perception_backbone",
           "short_template", "tiny_recipe"]

_BASE = {"description": "short prompt for tiny-model training", "reference": "ieqa.train.tiny",
         "system": None, "scale": None, "images": ["source", "edited"]}

#: Short prompts with the output formats of the built-in ones, by role.
SHORT_TEMPLATES: dict[str, dict[str, Any]] = {
    "head": {**_BASE, "name": "short-head", "output": "text",
             "user": "<image:source><image:edited>{instruction} Rate it."},
    "levels": {**_BASE, "name": "short-levels", "output": "levels", "scale": [1, 5],
               "user": "<image:source><image:edited>{instruction} Rate the {dimension}.",
               "answer_prefix": "Level:"},
    "crop": {**_BASE, "name": "short-crop", "output": "levels", "scale": [1, 5],
             "images": ["crop"], "user": "<image:crop>Rate the {dimension} of this region.",
             "answer_prefix": "Level:"},
    "digits": {**_BASE, "name": "short-digits", "output": "digits", "scale": [1, 5],
               "user": "<image:source><image:edited>{instruction} Rate the {dimension}.",
               "answer_prefix": "{Dimension} score: "},
    "box": {**_BASE, "name": "short-box", "output": "text",
            "user": "<image:source><image:edited>{instruction} Where was it edited?",
            "answer_prefix": "Region:"},
    "critique": {**_BASE, "name": "short-critique", "output": "text",
                 "user": "<image:source><image:edited>{instruction} Critique the edit."},
    "cot": {**_BASE, "name": "short-cot", "output": "levels", "scale": [1, 5],
            "user": "<image:source><image:edited>{instruction} Explain the quality."},
}

#: Dimensions the ShapesEdit world has no labels for, and the label a tiny run trains
#: them on.
STAND_IN_LABELS: dict[str, str] = {
    "harmony": "visual_quality", "local_naturalness": "visual_quality",
    "logicality": "visual_quality", "accuracy": "visual_quality",
    "usefulness": "visual_quality"}


def artifacts_world(n: int = 800, *, seed: int = 1, size: int = 112) -> dict[str, Any]:
    """``data.train`` of a generated ShapesEdit set in the ``artifacts`` preset: ``n``
    edits (``k`` = 4 per source), ``size``-pixel images (112 px = 16 image tokens per
    image for the tiny Qwen2-VL), synthetic sources only."""
    return {"shapesedit": {"n": n, "k": 4, "seed": seed, "size": size, "preset": "artifacts",
                           "photo_fraction": 0.0}}


def short_template(stage: StageConfig) -> dict[str, Any]:
    """The :data:`SHORT_TEMPLATES` entry with ``stage``'s output format: its digits,
    levels (on the crop when the stage's own template shows the crop), box or critique
    answer, or the plain prompt of head stages."""
    if stage.objective in ("dual", "grpo"):
        return SHORT_TEMPLATES["critique"]
    if stage.objective != "text":
        return SHORT_TEMPLATES["head"]
    if stage.target == "epaiqa-cot":
        return SHORT_TEMPLATES["cot"]
    if stage.target == "level":
        from ieqa.scorers.vlm.base import resolve_template

        own = resolve_template(stage.template) if stage.template is not None else None
        return SHORT_TEMPLATES["crop" if own is not None and "crop" in own.images else "levels"]
    return SHORT_TEMPLATES["digits" if stage.target == "digits" else "box"]


def tiny_recipe(recipe: str | Path | Recipe, model: str | Path, *,
                steps: int | Sequence[int] = 100, n: int = 800, seed: int = 1,
                lr: float = 3e-4, head_lr: float = 3e-3, batch_size: int = 16,
                max_eval_samples: int = 80, dimensions: Sequence[str] | None = None,
                overrides: Mapping[str, Any] | Sequence[str] | None = None) -> Recipe:
    """``recipe`` scaled down to the tiny VLM at ``model`` (see the module docstring).

    Args:
        recipe: a built-in recipe name, a YAML path or a :class:`Recipe`.
        model: the tiny checkpoint folder (or any model the recipe should start from).
        steps: optimizer steps per stage (one number for every stage, or one per stage).
        n, seed: size (edits) and seed of the generated ShapesEdit set; 20% of its groups
            are held out for evaluation, at most ``max_eval_samples`` of them used.
        lr, head_lr: constant learning rates of the backbone and of the head.
        batch_size: samples (pairs, for pairwise stages) per step.
        dimensions: train only these of each stage's dimensions (the artifacts world
            varies visual quality and overall only; the other dimensions are constant).
        overrides: further dotted-key overrides, applied last.

    Raises:
        RecipeError: the recipe or an override is invalid.
        ValueError: ``steps`` has a length other than the number of stages, or a stage
            keeps none of ``dimensions``.
    """
    base = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    per_stage = [steps] * len(base.stages) if isinstance(steps, int) else list(steps)
    if len(per_stage) != len(base.stages):
        raise ValueError(f"steps: {len(per_stage)} values for the {len(base.stages)} stages "
                         f"of recipe {base.name!r}")
    stages = []
    for stage, count in zip(base.stages, per_stage, strict=True):
        dims = [d for d in stage.dimensions if dimensions is None or d in dimensions]
        if not dims:
            raise ValueError(f"stage {stage.name!r} trains {stage.dimensions}, none of "
                             f"dimensions={list(dimensions or ())}")
        labels = {d: STAND_IN_LABELS[d] for d in dims if d in STAND_IN_LABELS}
        stages.append({**stage.model_dump(), "template": short_template(stage), "dimensions": dims,
                       "max_steps": int(count), "labels": {**labels, **stage.labels}})
    scaled: dict[str, Any] = {
        "model": {"name": str(model), "device": "cpu", "load_in_4bit": False},
        "adapter": {"kind": "full"},
        "head": {**base.head.model_dump(), "hidden_features": 64, "lr": head_lr},
        "data": {"train": artifacts_world(n, seed=seed), "max_eval_samples": max_eval_samples},
        "optim": {"lr": lr, "batch_size": batch_size, "grad_accum": 1, "scheduler": "constant",
                  "warmup_ratio": 0.0, "seed": 0},
        "eval": {"batch_size": 16},
        "stages": stages,
    }
    return load_recipe(apply_overrides(base.model_dump(), scaled),
                       dict(overrides) if isinstance(overrides, Mapping) else list(overrides or ()))


def perception_backbone(model: str | Path, out: str | Path, *, steps: int = 600, seed: int = 7
                        ) -> tuple[str, float]:
    """The tiny VLM at ``model`` after a short perception training, as a backbone for text
    readouts and critiques.

    A real backbone already sees image quality; a random tiny one needs several hundred
    steps before any readout can use what it sees. This trains every weight for ``steps``
    steps to regress visual quality through a throwaway MLP head on a ShapesEdit set of
    seed ``seed`` (the recipe tests use seed 1, so none of their images is seen here) and
    exports the backbone under ``out``. The LM head never sees an answer format.

    Returns:
        The exported backbone folder, and the throwaway head's held-out SRCC (visual
        quality) after training.
    """
    base = load_recipe({"name": "perception", "model": {"name": str(model)},
                        "data": {"train": "unused"}, "head": {"kind": "regression"},
                        "stages": [{"name": "perception", "objective": "pointwise",
                                    "loss": "mse", "dimensions": ["visual_quality"]}]})
    from ieqa.train import train

    result = train(tiny_recipe(base, model, steps=steps, seed=seed), output_dir=out,
                   progress=False)
    return (str(Path(result.evaluator_dir) / "model"),
            float(result.metrics["perception"]["after"]["srcc"]))
