"""Fit a recipe's dimensions to the data it trains on.

A built-in recipe names its paper's dimensions (EditHF: ``overall``; EditReward:
``instruction_alignment`` and ``visual_quality``; ...), while people's ratings (``ieqa
mos`` output) score whichever dimensions they were asked about. :func:`fit_recipe_to_data`
makes a recipe train what the data has, and says what it changed:

* each stage keeps those of its dimensions that **every** sample scores (through the
  stage's ``labels`` mapping) and skips the others, naming them and why (not scored, or
  scored on only some samples);
* a stage that trains ``overall`` alone, on data without an overall score, trains every
  dimension the data scores instead (a head then gets one output per dimension; the
  scorer's ``overall`` is their aggregation, as for EditReward);
* a pairwise stage left with several dimensions on data without ``overall`` ranks its
  pairs by the stage's ``aggregation`` (mean, sum or min) of those dimensions' scores —
  the same aggregation its loss applies to the head's outputs; tie disentanglement keeps
  the listed dimensions the data scores (and is dropped when fewer than two remain);
* a stage left with no dimension at all raises :class:`TrainDataError` naming the
  ``--set`` override that trains one the data has.

Grounding stages (``target: box``) and pairwise stages fed by a benchmark's own human
preferences take no scores and are left as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.train.recipe import Recipe

__all__ = ["fit_recipe_to_data", "scored_dimensions"]


def scored_dimensions(samples: Sequence[EditSample]) -> tuple[list[str], Counter]:
    """``(dimensions every sample scores, in order of first appearance; how many samples
    score each dimension)``."""
    counts: Counter = Counter(d for s in samples for d in s.scores)
    order = list(dict.fromkeys(d for s in samples for d in s.scores))
    return [d for d in order if counts[d] == len(samples)], counts


def _why(column: str, counts: Counter, n: int) -> str:
    if counts[column] == 0:
        return "not scored in the data"
    return f"scored on only {counts[column]} of {n} samples"


def _label(stage: dict, dimension: str) -> str:
    mapped = {canonical_dimension(k): canonical_dimension(v) for k, v in stage["labels"].items()}
    return mapped.get(canonical_dimension(dimension), canonical_dimension(dimension))


def fit_recipe_to_data(recipe: Recipe, samples: Sequence[EditSample], *,
                       has_preferences: bool = False) -> tuple[Recipe, list[str]]:
    """``recipe`` with each stage's dimensions fitted to ``samples`` (the training and
    held-out samples together), and one note per change (see the module docstring).

    Args:
        recipe: a validated recipe.
        samples: every sample the run trains or evaluates on.
        has_preferences: the data brings human preferences, which pairwise stages use
            instead of scores.

    Raises:
        TrainDataError: a stage trains none of the dimensions the data scores.
    """
    full, counts = scored_dimensions(samples)
    n = len(samples)
    spec = recipe.model_dump()
    notes: list[str] = []
    for i, stage in enumerate(spec["stages"]):
        if stage["target"] == "box" or (stage["objective"] == "pairwise" and has_preferences):
            continue
        name, wanted = stage["name"], list(stage["dimensions"])
        keep = [d for d in wanted if _label(stage, d) in full]
        skipped = [d for d in wanted if d not in keep]
        if not keep and wanted == ["overall"] and full:
            keep = list(full)
            notes.append(f"stage {name!r} trains overall, which is {_why('overall', counts, n)}; it "
                         f"trains the dimensions the data scores instead: {', '.join(keep)}")
        elif not keep:
            why = "; ".join(f"{d}: {_why(_label(stage, d), counts, n)}" for d in wanted)
            if not full:
                raise TrainDataError(
                    f"stage {name!r} trains {', '.join(wanted)}, but no dimension is scored on every "
                    f"training sample ({why}); compute scores from raw ratings with `ieqa mos RATINGS "
                    "--scale LO,HI -o scored.jsonl --manifest SAMPLES` and train on that")
            raise TrainDataError(
                f"stage {name!r} trains {', '.join(wanted)} ({why}); the data scores "
                f"{', '.join(full)}. Train one of those with --set stages.{i}.dimensions=[{full[0]}], "
                f"or supervise {wanted[0]} with the data's {full[0]} scores with "
                f"--set stages.{i}.labels={{{wanted[0]}: {full[0]}}}")
        elif skipped:
            notes.append(f"stage {name!r} skips " + "; ".join(
                f"{d} ({_why(_label(stage, d), counts, n)})" for d in skipped)
                + f" and trains {', '.join(keep)}")
        stage["dimensions"] = keep
        if stage["objective"] == "pairwise":
            notes += _fit_pairs(stage, full)
    return Recipe.model_validate(spec), notes


def _fit_pairs(stage: dict, full: list[str]) -> list[str]:
    """Fit a pairwise stage's pair building (``stage["pairs"]``) to the data, in place."""
    notes, pairs, dims = [], stage["pairs"], stage["dimensions"]
    if len(dims) > 1 and "overall" not in full and "dimension" not in pairs:
        pairs["dimension"] = [_label(stage, d) for d in dims]
        pairs["aggregation"] = stage["aggregation"]
        notes.append(f"stage {stage['name']!r}: the data has no overall score, so pairs are ranked by "
                     f"the {stage['aggregation']} of {', '.join(pairs['dimension'])}")
    if pairs.get("disentangle_dimensions"):
        listed = list(pairs["disentangle_dimensions"])
        kept = [d for d in listed if canonical_dimension(d) in full]
        if len(kept) < 2:
            del pairs["disentangle_dimensions"]
            notes.append(f"stage {stage['name']!r}: tie disentanglement needs two scored dimensions of "
                         f"{', '.join(listed)}; the data has {', '.join(kept) or 'none'}, so ties stay whole")
        elif kept != listed:
            pairs["disentangle_dimensions"] = kept
            notes.append(f"stage {stage['name']!r}: ties are disentangled on {', '.join(kept)} only")
    return notes
