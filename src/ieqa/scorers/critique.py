"""The ``critique`` scorer: RE-Reward (ReasonEdit, 004, §3.2 and appendix C).

RE-Reward judges a *critique* of an edit, not the edit: given the source image, the
edited image, the instruction and a candidate critique text, it predicts **logicality**,
**accuracy** and **usefulness**, and a weighted scalar reward that ReasonEdit's GRPO stage
optimises (accuracy weighted most, "as factual correctness is the fundamental
prerequisite for logicality and usefulness").

Where the critique text comes from (one convention, everywhere):

* ``EditSample.meta["critique"]`` — what the ``re-reward`` recipe trains on and what the
  ``reasonedit-reward`` prompt's ``{critique}`` placeholder reads. In a manifest it is
  the ``meta.critique`` field; over HTTP it is the ``critique`` field of
  ``POST /v1/critique``.
* ``EditSample.meta["completion"]`` when ``meta["critique"]`` is absent — what
  :func:`ieqa.rewards.adapters.trl_reward_func` writes for each sampled completion, so the
  scorer works as a GRPO reward through :class:`~ieqa.rewards.LocalRewarder` unchanged.

A sample with neither gets a recorded error saying so; it is never scored without its text.

The weighted reward is reported as the ``overall`` dimension (the critique's overall
score), ``sum_d w_d * s_d`` with weights that sum to 1, so it stays on the scores' scale.
ReasonEdit's reward weights were lost from the extracted paper text (only "accuracy
receives the largest weight" survives), so ieqa's defaults are
:data:`DEFAULT_WEIGHTS` — accuracy 0.5, logicality 0.25, usefulness 0.25 — and
``weights=`` sets others (they are normalised to sum 1, the one rule of
:func:`ieqa.data.combine.normalise_weights`, so ``trl_critique_func`` gives the same reward
with these weights and with ``rule=`` the same expression).

The readout is a scorer built from the same prompt: by default a ``vlm-head`` regression
head on the last prompt token (the ``re-reward`` recipe's model); ``checkpoint=DIR``
loads one trained with that recipe (``ieqa train re-reward``); ``readout="judge"`` asks a
generative VLM for the JSON scores zero-shot (appendix E.4); ``scorer=`` wraps any scorer
object that outputs the three dimensions (e.g. a programmatic judge in tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ieqa.data.combine import normalise_weights
from ieqa.data.dimensions import ACCURACY, LOGICALITY, OVERALL, USEFULNESS, canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.scorers.base import SampleLike, Scorer, ScorerError, ScoreResult, as_sample
from ieqa.scorers.critique_input import CRITIQUE_KEYS, critique_text

__all__ = ["CRITIQUE_DIMENSIONS", "CRITIQUE_KEYS", "DEFAULT_WEIGHTS", "CritiqueScorer",
           "critique_text", "weighted_reward"]

#: The three scores RE-Reward predicts, in its order.
CRITIQUE_DIMENSIONS: tuple[str, ...] = (LOGICALITY, ACCURACY, USEFULNESS)
#: ieqa's default reward weights (the paper's numbers were lost; accuracy weighted most).
DEFAULT_WEIGHTS: dict[str, float] = {LOGICALITY: 0.25, ACCURACY: 0.5, USEFULNESS: 0.25}


def _normalised_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    out: dict[str, float] = {}
    for key, value in weights.items():
        dim = canonical_dimension(key)
        if dim not in CRITIQUE_DIMENSIONS:
            raise ScorerError(f"critique reward weight {key!r}: the reward weighs "
                              f"{', '.join(CRITIQUE_DIMENSIONS)} only")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ScorerError(f"critique reward weight {key!r} must be a number >= 0, got {value!r}")
        out[dim] = float(value)
    if sum(out.values()) <= 0:
        raise ScorerError("critique reward weights sum to 0; give at least one positive weight, "
                          f"e.g. {DEFAULT_WEIGHTS}")
    return normalise_weights({d: out.get(d, 0.0) for d in CRITIQUE_DIMENSIONS})


def weighted_reward(scores: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float:
    """The critique reward ``sum_d w_d * scores[d]`` over logicality, accuracy and
    usefulness, weights normalised to sum 1 (default :data:`DEFAULT_WEIGHTS`).

    Raises:
        ScorerError: a dimension with a positive weight is missing from ``scores``.
    """
    w = _normalised_weights(weights)
    missing = [d for d, x in w.items() if x > 0 and d not in scores]
    if missing:
        raise ScorerError(f"the critique reward needs {', '.join(missing)}; the scores hold "
                          f"{', '.join(scores) or 'nothing'}")
    return float(sum(x * float(scores[d]) for d, x in w.items() if x > 0))


class CritiqueScorer(Scorer):
    """RE-Reward: scores a critique of an edit on logicality, accuracy and usefulness, and
    their weighted reward as ``overall`` (see the module docstring).

    Args:
        model: the base VLM (hub id or folder; a served model's name with ``base_url``).
        checkpoint: an evaluator checkpoint trained with the ``re-reward`` recipe (its
            prompt must have a ``{critique}`` placeholder).
        scorer: an already built scorer outputting the three dimensions (wrapped as is).
        readout: ``head`` (regression head, default) or ``judge`` (generative JSON, zero-shot).
        template: the prompt (default ``reasonedit-reward``), ignored with ``checkpoint``.
        weights: reward weights per dimension (normalised; default :data:`DEFAULT_WEIGHTS`).
        critique_keys: ``meta`` keys read for the critique text, in order.
        kwargs: further arguments of the readout scorer (``device``, ``batch_size``,
            ``base_url`` ...), or overrides of the checkpoint's recorded ones.
    """

    def __init__(self, *, model: str | None = None, checkpoint: str | Path | None = None,
                 scorer: Scorer | None = None, readout: str = "head",
                 template: Any = "reasonedit-reward", weights: Mapping[str, float] | None = None,
                 critique_keys: Iterable[str] = CRITIQUE_KEYS, **kwargs: Any) -> None:
        from ieqa.scorers.catalog import create_scorer

        self.weights = _normalised_weights(weights)
        self.critique_keys = tuple(critique_keys)
        if not self.critique_keys:
            raise ScorerError("critique_keys is empty; give the meta key(s) holding the critique, "
                              "e.g. ('critique',)")
        self.checkpoint = str(checkpoint) if checkpoint is not None else None
        self.readout = readout
        if sum(x is not None for x in (model, checkpoint, scorer)) > 1 and not (
                checkpoint is not None and model is not None and scorer is None):
            raise ScorerError("critique: give one of scorer=, checkpoint= or model= (model= may "
                              "accompany checkpoint= to point at a local base model)")
        if scorer is not None:
            inner = scorer
        elif checkpoint is not None:
            from ieqa.scorers.checkpoint import load_evaluator

            extra = dict(kwargs, **({"model": model} if model is not None else {}))
            inner = load_evaluator(checkpoint, **extra)
            self._check_prompt(inner, f"checkpoint {checkpoint}")
        elif model is not None:
            if readout not in ("head", "judge"):
                raise ScorerError(f"critique readout must be 'head' or 'judge', got {readout!r}")
            inner = create_scorer("vlm-head" if readout == "head" else "vlm-judge", model=model,
                                  template=template, dimensions=list(CRITIQUE_DIMENSIONS), **kwargs)
            self._check_prompt(inner, f"template {template!r}")
        else:
            raise ScorerError("the critique scorer needs a model: checkpoint=DIR (trained with "
                              "`ieqa train re-reward`), model=ID (readout head or judge), or "
                              "scorer=OBJ")
        missing = [d for d, w in self.weights.items() if w > 0 and d not in inner.dimensions]
        if missing:
            raise ScorerError(f"the critique readout {inner.name!r} outputs "
                              f"{', '.join(inner.dimensions)}, not {', '.join(missing)}; train "
                              "it with the re-reward recipe (dimensions logicality, accuracy, "
                              "usefulness) or set those weights to 0")
        self.inner = inner

    @property
    def batch_size(self) -> int | None:
        """The readout's batch size (``ieqa serve`` sets it to ``--max-batch``)."""
        return getattr(self.inner, "batch_size", None)

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        if hasattr(self.inner, "batch_size"):
            self.inner.batch_size = value

    @staticmethod
    def _check_prompt(inner: Scorer, what: str) -> None:
        template = getattr(inner, "template", None)
        if template is not None and "critique" not in getattr(template, "placeholders", ()):
            raise ScorerError(f"{what}: its prompt has no {{critique}} placeholder, so the model "
                              "would never see the critique; train with the reasonedit-reward "
                              "template (the re-reward recipe's) or a template that has one")

    def config(self) -> dict[str, Any]:
        """The arguments that reproduce this scorer (recorded in output files)."""
        out: dict[str, Any] = {"weights": dict(self.weights), "critique_keys": list(self.critique_keys),
                               "readout": self.inner.name}
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        return {**self.inner.config(), **out}

    def score_sample(self, sample: EditSample) -> ScoreResult:  # pragma: no cover - score() batches
        return self.score([sample])[0]

    def score(self, samples: Iterable[SampleLike]) -> list[ScoreResult]:
        """One result per item, in order: logicality, accuracy, usefulness and the weighted
        reward as ``overall``. An item without a critique text, or one the readout fails
        on, gets a result with ``error`` set."""
        items = [as_sample(item, i) for i, item in enumerate(samples)]
        results: list[ScoreResult | None] = [None] * len(items)
        todo: list[tuple[int, EditSample]] = []
        for i, sample in enumerate(items):
            text = critique_text(sample, self.critique_keys)
            if text is None:
                results[i] = ScoreResult.failed(sample.id, ScorerError(
                    f"sample {sample.id!r} has no critique text; put it in meta['critique'] "
                    f"(manifest field meta.critique, or `critique` in POST /v1/critique); "
                    f"keys read: {', '.join(self.critique_keys)}"))
                continue
            todo.append((i, sample.model_copy(update={"meta": {**sample.meta, "critique": text}})))
        if todo:
            scored = self.inner.score([s for _, s in todo])
            for (i, _), result in zip(todo, scored, strict=True):
                results[i] = self._with_reward(result)
        return [r for r in results if r is not None]

    def _with_reward(self, result: ScoreResult) -> ScoreResult:
        if not result.ok:
            return result
        scores = {d: result.scores[d] for d in CRITIQUE_DIMENSIONS if d in result.scores}
        try:
            reward = weighted_reward(scores, self.weights)
        except ScorerError as exc:
            return ScoreResult(id=result.id, error=str(exc), raw=result.raw, flags=result.flags)
        sigma = {d: s for d, s in result.sigma.items() if d in scores}
        raw = {**result.raw, "reward_weights": dict(self.weights)}
        return ScoreResult(id=result.id, scores={**scores, OVERALL: reward}, sigma=sigma,
                           unavailable=result.unavailable, explanation=result.explanation,
                           raw=raw, flags=result.flags)
