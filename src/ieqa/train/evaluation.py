"""Held-out evaluation of the model being trained, through the *same* scorer readouts that
inference uses (so the numbers are those a user of the exported checkpoint gets).

Per stage: text digits -> ``vlm-digits``, text levels -> ``vlm-levels``, text box ->
generated region vs the true bbox (IoU), pointwise / dual -> ``vlm-head`` / ``vlm-dual``
(scores only), pairwise -> ``vlm-head`` / ``vlm-gaussian`` with pair accuracy.
The main metric is the mean SRCC over the stage's dimensions (pairwise: pair accuracy;
grounding: mean IoU). EPAIQA stage 3 (text ``epaiqa-cot``) -> ``vlm-judge`` on the
stage's template: critiques generated and parsed (:meth:`VLMScorer.explain`, format
``epaiqa``); its main metric is the format-stability rate, with the overall SRCC and the
completion accuracy over the critiques that parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ieqa.data.schema import EditSample
from ieqa.metrics.correlation import srcc
from ieqa.train.recipe import Recipe, StageConfig

__all__ = ["STAGE3_MAX_NEW_TOKENS", "build_scorer", "evaluate_stage", "main_metric"]

#: answer length limit (tokens) of stage-3 critiques, in evaluation and in the exported
#: ``vlm-judge`` (a byte-level tokenizer spells a ShapesEdit answer in ~300 tokens)
STAGE3_MAX_NEW_TOKENS = 512


def build_scorer(recipe: Recipe, stage: StageConfig, vlm: Any, head: Any, template: Any,
                 batch_size: int = 16) -> Any:
    """The inference scorer of ``stage`` on the in-memory model (``None`` for grounding)."""
    from ieqa.scorers import create_scorer

    common = {"backend": vlm, "template": template, "batch_size": batch_size}
    if stage.objective == "text":
        if stage.target == "box":
            return None
        if stage.target == "epaiqa-cot":
            return create_scorer("vlm-judge", dimensions=["overall"], explain_format="epaiqa",
                                 max_new_tokens=stage.max_new_tokens or STAGE3_MAX_NEW_TOKENS,
                                 **common)
        name = "vlm-digits" if stage.target == "digits" else "vlm-levels"
        return create_scorer(name, dimensions=stage.dimensions, **common)
    h = recipe.head
    kwargs = {"anchor": h.anchor, "head": head, "dimensions": stage.dimensions}
    if recipe.head.kind == "gaussian":
        scorer = create_scorer("vlm-gaussian", aggregation=stage.aggregation,
                               sigma_aggregation=stage.sigma_aggregation, **kwargs, **common)
    elif stage.objective in ("dual", "grpo"):
        scorer = create_scorer("vlm-dual", score_only=True, **kwargs, **common)
    else:
        scorer = create_scorer("vlm-head", **kwargs, **common)
    return scorer


def main_metric(stage: StageConfig) -> str:
    """Name of the stage's headline metric."""
    if stage.objective == "pairwise":
        return "pair_accuracy"
    if stage.target == "box":
        return "iou"
    if stage.target == "epaiqa-cot":
        return "format_stability"
    return "srcc"


@torch.no_grad()
def evaluate_stage(recipe: Recipe, stage: StageConfig, vlm: Any, head: Any, template: Any,
                   samples: Sequence[EditSample], pairs: Sequence[Any] = (),
                   label_of: Any = None, map_items: Callable[..., list[Any]] | None = None
                   ) -> dict[str, float]:
    """Metrics of the current model on held-out ``samples`` (and ``pairs`` for pairwise).

    ``label_of(sample, dimension)`` gives the ground truth (default ``sample.scores``).
    Failed samples are counted in ``failed`` and left out of the correlations.
    ``map_items(fn, items)`` computes ``fn(items)`` (the model's answers to a list of
    samples), e.g. sharded across the training processes
    (:meth:`ieqa.train.distributed.Processes.map`); default ``fn(items)``.
    """
    label_of = label_of or (lambda s, d: s.scores[d])
    run = map_items or (lambda fn, items: list(fn(list(items))))
    with torch.random.fork_rng(devices=[]):
        if stage.target == "box":
            return _grounding(vlm, template, samples, run)
        scorer = build_scorer(recipe, stage, vlm, head, template, recipe.eval.batch_size)
        if stage.target == "epaiqa-cot":
            return _stage3(scorer, samples, label_of, run)
        results = run(scorer.score, samples)
    ok = [(s, r) for s, r in zip(samples, results, strict=True) if r.ok]
    metrics: dict[str, float] = {"failed": float(len(samples) - len(ok))}
    per_dim = []
    for dim in scorer.score_dimensions:
        pred = [r.scores[dim] for _, r in ok]
        truth = [label_of(s, dim) for s, _ in ok]
        metrics[f"srcc/{dim}"] = value = _srcc_or_nan(pred, truth)
        per_dim.append(value)
    metrics["srcc"] = float(np.nanmean(per_dim)) if per_dim else float("nan")
    if stage.objective == "pairwise" and pairs:
        score = {s.id: _overall(r, scorer) for s, r in ok}
        right = []
        for p in pairs:
            a, b = samples[p.a].id, samples[p.b].id
            if a in score and b in score and p.label != "tie":
                right.append((score[a] > score[b]) == (p.label == "a>b"))
        metrics["pair_accuracy"] = float(np.mean(right)) if right else float("nan")
    return metrics


def _stage3(scorer: Any, samples: Sequence[EditSample], label_of: Any,
            run: Callable[..., list[Any]]) -> dict[str, float]:
    """EPAIQA stage 3: the share of generated critiques that parse (format stability),
    and over those, the overall level's SRCC and the completion level's accuracy."""
    from ieqa.prompts.answers import format_stability
    from ieqa.prompts.answers.epaiqa_cot import completion_of

    crits = run(lambda part: scorer.explain(part, "epaiqa", template=scorer.template,
                                            max_new_tokens=scorer.max_new_tokens), samples)
    ok = [(s, c) for s, c in zip(samples, crits, strict=True) if c.ok]
    answered = [c for c in crits if c.status != "error"]
    right = []
    for s, c in ok:
        try:
            right.append(c.scores["prompt_completion"] == completion_of(s))
        except ValueError:  # no completion truth for this sample
            continue
    return {"format_stability": format_stability(answered) if answered else float("nan"),
            "parsed": float(len(ok)), "failed": float(len(samples) - len(ok)),
            "srcc/overall": _srcc_or_nan([c.scores["overall"] for _, c in ok],
                                         [label_of(s, "overall") for s, _ in ok]),
            "completion_accuracy": float(np.mean(right)) if right else float("nan")}


def _srcc_or_nan(pred: Sequence[float], truth: Sequence[float]) -> float:
    """SRCC, or NaN where it is undefined (fewer than 3 samples, constant values)."""
    from ieqa.metrics.checks import MetricInputError

    try:
        return float(srcc(pred, truth)) if len(pred) > 2 else float("nan")
    except MetricInputError:
        return float("nan")


def _overall(result: Any, scorer: Any) -> float:
    if "overall" in result.scores:
        return result.scores["overall"]
    return float(np.mean([result.scores[d] for d in scorer.score_dimensions]))


def _grounding(vlm: Any, template: Any, samples: Sequence[EditSample],
               run: Callable[..., list[Any]]) -> dict[str, float]:
    from ieqa.data.schema import BBox
    from ieqa.prompts.answers import JudgeParseError, parse_region
    from ieqa.scorers.vlm.base import render_sample

    ious, failed = [], 0
    usable = [s for s in samples if s.bbox is not None]
    predicted: list[tuple[EditSample, BBox]] = []

    def answers(part: list[EditSample]) -> list[str]:
        texts = []
        for start in range(0, len(part), 16):
            prompts = [render_sample(template, s) for s in part[start:start + 16]]
            texts += [gens[0].text for gens in vlm.generate(prompts, max_new_tokens=32)]
        return texts

    for s, text in zip(usable, run(answers, usable), strict=True):
        try:
            x, y, w, h = parse_region(text)
            box = BBox(x=x, y=y, w=w, h=h)
            ious.append(s.bbox.iou(box))
            predicted.append((s, box))
        except (JudgeParseError, ValueError):
            failed += 1
            ious.append(0.0)
    # the same answers against the boxes of the other groups' edits: a model that does not
    # look where the edit is scores about as well there as against its own edit's box
    other = [t.bbox.iou(box) for s, box in predicted for t in usable
             if (t.group_id or t.id) != (s.group_id or s.id)]
    # what a model that answers one constant box scores, beside what this one scores:
    # the whole image (IoU = the true box's area) and the mean of the held-out true boxes
    # (the best a constant box can do, roughly; it peeks at the truth)
    mean_box = BBox(**{k: float(np.mean([getattr(s.bbox, k) for s in usable]))
                       for k in ("x", "y", "w", "h")}) if usable else None
    return {"iou": float(np.mean(ious)) if ious else float("nan"),
            "iou/other_groups": float(np.mean(other)) if other else float("nan"),
            "iou/full_image": float(np.mean([s.bbox.w * s.bbox.h for s in usable]))
            if usable else float("nan"),
            "iou/mean_box": float(np.mean([s.bbox.iou(mean_box) for s in usable]))
            if mean_box else float("nan"),
            "parsed": float(len(ious) - failed), "failed": float(failed)}
