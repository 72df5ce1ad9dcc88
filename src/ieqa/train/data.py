"""Training data: loading, the held-out split, stage examples and batch collation.

* :func:`load_training_data` reads ``recipe.data`` (a manifest/benchmark path or a
  generated ShapesEdit set) and holds out whole groups for evaluation.
* :class:`BatchBuilder` turns samples (or pairs) into model inputs with the VLM's own
  processor: prompts from the stage's template, left padding (the backend's collation),
  and for text targets the label tokens, masked to ``-100`` everywhere except the answer.
  Labels are stored *compactly*: ``label_index[b, j]`` is the sequence position whose
  logits predict ``labels[b, j]``, so only those positions go through the LM head (a
  152k-token vocabulary times a 2k-token prompt does not fit in memory otherwise).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ieqa.backends import BackendError
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.scales import data_scale, score_ranges
from ieqa.data.schema import EditSample, Preference, PreferenceLabel
from ieqa.errors import TrainDataError
from ieqa.prompts.answers import (
    box_target,
    critique_target,
    digit_values,
    digits_target,
    level_target,
)
from ieqa.scorers.vlm.base import render_sample
from ieqa.scorers.vlm.digits import digit_token_ids
from ieqa.train.pairs import TrainPair, build_pairs
from ieqa.train.recipe import DataConfig, StageConfig

__all__ = ["TrainData", "load_training_data", "BatchBuilder", "stage_examples",
           "label_column", "explanation_of"]


@dataclass
class TrainData:
    """Samples for training and held-out evaluation, plus human preferences if the source
    had them (pairwise benchmarks), the data's score scale (one range for every dimension)
    and each score column's own observed range (``ranges``, for per-dimension level bins)."""

    train: list[EditSample]
    eval: list[EditSample]
    scale: tuple[float, float]
    train_preferences: list[Preference] = field(default_factory=list)
    eval_preferences: list[Preference] = field(default_factory=list)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


def _load_source(spec: str | dict[str, Any]) -> tuple[list[EditSample], list[Preference]]:
    if isinstance(spec, dict):
        if set(spec) != {"shapesedit"}:
            raise TrainDataError(f"data source {spec!r}: a mapping must be "
                                 "{shapesedit: {n: ..., k: ..., seed: ..., size: ..., "
                                 "preset: default|artifacts, critique: full|brief}}")
        from ieqa.data.shapesedit import EDITOR_PRESETS, ShapesEditConfig, iter_groups
        from ieqa.data.shapesedit.truth import CRITIQUE_STYLES, describe

        opts = dict(spec["shapesedit"] or {})
        preset = opts.pop("preset", "default")
        style = opts.pop("critique", "full")
        if style not in CRITIQUE_STYLES:
            raise TrainDataError(f"shapesedit critique style {style!r} is unknown; choose one "
                                 f"of {', '.join(CRITIQUE_STYLES)}")
        if preset not in EDITOR_PRESETS:
            raise TrainDataError(f"shapesedit preset {preset!r} is unknown; choose one of "
                                 f"{', '.join(EDITOR_PRESETS)}")
        try:
            cfg = ShapesEditConfig(editors=EDITOR_PRESETS[preset], **opts)
        except (TypeError, ValueError) as exc:
            raise TrainDataError(f"shapesedit options {opts}: {exc}") from exc
        samples = [s for g in iter_groups(cfg) for s in g.samples]
        if style != "full":  # the full style is explanation_of's fallback
            for s in samples:
                s.meta["explanation"] = describe(s.meta, style=style)
        return samples, []
    from ieqa.data.loaders import load_benchmark

    data = load_benchmark(spec)
    return list(data.samples), list(data.preferences)


def _split(samples: list[EditSample], fraction: float, seed: int
           ) -> tuple[list[EditSample], list[EditSample]]:
    groups = sorted({s.group_id or s.id for s in samples})
    rng = random.Random(seed)
    rng.shuffle(groups)
    n_eval = max(1, round(fraction * len(groups)))
    if n_eval >= len(groups):
        raise TrainDataError(f"{len(groups)} group(s) cannot be split into train and eval; "
                             "give more data or data.eval")
    held = set(groups[:n_eval])
    return ([s for s in samples if (s.group_id or s.id) not in held],
            [s for s in samples if (s.group_id or s.id) in held])


def load_training_data(cfg: DataConfig, seed: int = 0) -> TrainData:
    """Load ``cfg.train`` (and ``cfg.eval`` or a seeded by-group split of it)."""
    samples, prefs = _load_source(cfg.train)
    if not samples:
        raise TrainDataError(f"data.train {cfg.train!r} holds no samples")
    if cfg.eval is not None:
        train, train_prefs = samples, prefs
        evals, eval_prefs = _load_source(cfg.eval)
    else:
        train, evals = _split(samples, cfg.eval_fraction, seed)
        keep = {s.id for s in evals}
        train_prefs = [p for p in prefs if p.a.id not in keep and p.b.id not in keep]
        eval_prefs = [p for p in prefs if p.a.id in keep and p.b.id in keep]
    if cfg.max_eval_samples is not None:
        evals = evals[:cfg.max_eval_samples]
    ranges = score_ranges(samples)
    return TrainData(train, evals, data_scale(samples, cfg.score_scale, ranges), train_prefs,
                     eval_prefs, ranges)


def label_column(stage: StageConfig, dimension: str) -> str:
    """The data column that supervises ``dimension`` in ``stage`` (``stage.labels``)."""
    dim = canonical_dimension(dimension)
    mapped = {canonical_dimension(k): canonical_dimension(v) for k, v in stage.labels.items()}
    return mapped.get(dim, dim)


def explanation_of(sample: EditSample, key: str = "explanation") -> str | None:
    """The sample's critique text: ``sample.meta[key]``, or for a ShapesEdit sample (its
    ``meta`` records how the edit was made) the generator's factual description."""
    if sample.meta.get(key):
        return str(sample.meta[key])
    if "mode" in sample.meta:
        from ieqa.data.shapesedit import describe

        return describe(sample.meta)
    return None


def stage_examples(stage: StageConfig, data: TrainData, *, explanation_key: str = "explanation",
                   split: str = "train", needs_bbox: bool = False) -> list[Any]:
    """The units one stage iterates over: sample indices (pointwise / text / dual) or
    :class:`TrainPair` (pairwise), over ``data.train`` (or ``data.eval``). With
    ``needs_bbox`` (grounding targets, ``crop`` images) samples without a bbox are left out."""
    samples = data.train if split == "train" else data.eval
    prefs = data.train_preferences if split == "train" else data.eval_preferences
    if stage.objective == "pairwise":
        if prefs:
            return preference_pairs(samples, prefs, keep_ties=stage.loss == "bt-ties")
        dim = label_column(stage, stage.dimensions[0]) if len(stage.dimensions) == 1 else "overall"
        options = {"dimension": dim, "keep_ties": stage.loss == "bt-ties", **stage.pairs}
        return build_pairs(samples, **options)
    idx = list(range(len(samples)))
    if stage.samples == "with_text":
        idx = [i for i in idx if explanation_of(samples[i], explanation_key)]
    elif stage.samples == "without_text":
        idx = [i for i in idx if not explanation_of(samples[i], explanation_key)]
    if needs_bbox or stage.target == "box":
        idx = [i for i in idx if samples[i].bbox is not None]
    if not idx:
        raise TrainDataError(f"stage {stage.name!r} has no usable {split} samples")
    return idx


def preference_pairs(samples: Sequence[EditSample], prefs: Sequence[Preference], *,
                     keep_ties: bool) -> list[TrainPair]:
    """Human preferences as :class:`TrainPair` over ``samples`` (looked up by id)."""
    where = {s.id: i for i, s in enumerate(samples)}
    out = []
    for p in prefs:
        if p.a.id not in where or p.b.id not in where:
            continue
        if p.label in (PreferenceLabel.A, PreferenceLabel.B):
            out.append(TrainPair(where[p.a.id], where[p.b.id], p.label.value, 0.0))
        elif keep_ties:
            out.append(TrainPair(where[p.a.id], where[p.b.id], "tie", 0.0))
    return out


class BatchBuilder:
    """Builds model inputs for one stage.

    Args:
        vlm: the :class:`~ieqa.backends.TransformersVLM` being trained (its processor,
            chat template and collation are used, so training inputs are exactly what
            the scorers see at inference).
        stage: the stage config.
        template: the resolved prompt template.
        scale: the data's score range (targets are rescaled from it).
        explanation_key: ``sample.meta`` key of critique texts.
        ranges: each score column's observed ``(min, max)`` over the whole training data
            (:attr:`TrainData.ranges`); level targets bin each dimension over its own range
            with the stage's default ``level_bins: dimension``.
        cache_mb: memory budget (MiB) for processed prompts kept across batches (a sample
            seen again, in a later epoch or pair, skips image loading and the processor);
            once full, further prompts are processed each time. 0 disables the cache.
    """

    def __init__(self, vlm: Any, stage: StageConfig, template: Any, scale: tuple[float, float],
                 explanation_key: str = "explanation", cache_mb: float = 0.0,
                 ranges: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.vlm = vlm
        self.ranges = dict(ranges or {})
        self._cache: dict[tuple[int, str | None], dict[str, Any]] = {}
        self._cache_left = int(cache_mb * 2**20)
        self.stage = stage
        self.template = template
        self.scale = scale
        self.explanation_key = explanation_key
        self.dimensions = [canonical_dimension(d) for d in stage.dimensions]
        tok = vlm.tokenizer
        self.eos_id = tok.convert_tokens_to_ids("<|im_end|>")
        if self.eos_id is None or self.eos_id == tok.unk_token_id:
            self.eos_id = tok.eos_token_id

    # -------------------------------------------------------------------- prompts
    def prompt(self, sample: EditSample, dimension: str | None = None) -> Any:
        """The prompt exactly as the scorers render it (:func:`render_sample`)."""
        return render_sample(self.template, sample, dimension)

    def score(self, sample: EditSample, dimension: str) -> float:
        column = label_column(self.stage, dimension)
        if column not in sample.scores:
            raise TrainDataError(f"sample {sample.id!r} has no {column!r} score (stage "
                                 f"{self.stage.name!r} trains {dimension})")
        return sample.scores[column]

    # -------------------------------------------------------------------- targets
    def target_text(self, sample: EditSample, dimension: str) -> str:
        target = self.stage.target
        if target == "digits":
            scale = self.template.scale or (1, 5)
            return digits_target(self.score(sample, dimension), scale=self.scale,
                                 template_scale=scale)
        if target == "level":
            lo, hi = self.level_range(dimension)
            return level_target(self.score(sample, dimension), lo=lo, hi=hi)
        if target == "box":
            return box_target(sample.bbox)
        if target == "epaiqa-cot":
            return self.cot_target(sample)
        raise TrainDataError(f"stage {self.stage.name!r}: unknown target {target!r}")

    def level_range(self, dimension: str) -> tuple[float, float]:
        """The ``[lo, hi]`` that ``dimension``'s level words are binned over: its data
        column's own observed range (``level_bins: dimension``, EditHF) or the data scale
        shared by every dimension (``level_bins: scale``)."""
        if self.stage.level_bins == "scale":
            return self.scale
        column = label_column(self.stage, dimension)
        if column not in self.ranges:
            raise TrainDataError(f"stage {self.stage.name!r}: no score range for {column!r} "
                                 "(per-dimension level bins need BatchBuilder(ranges=...), "
                                 "TrainData.ranges)")
        lo, hi = self.ranges[column]
        if not hi > lo:
            raise TrainDataError(f"stage {self.stage.name!r}: every {column!r} score is {lo:g}, "
                                 "so its own range cannot be cut into levels; set "
                                 "level_bins: scale (bins over the data scale)")
        return lo, hi

    def cot_target(self, sample: EditSample) -> str:
        """EPAIQA stage-3 answer of ``sample`` (:func:`ieqa.prompts.answers.epaiqa_cot.epaiqa_cot_target`):
        harmony, local naturalness and overall levels are the level bins of the columns
        the stage maps them to (``labels``); a fully followed prompt needs all three."""
        from ieqa.prompts.answers.epaiqa_cot import completion_of, epaiqa_cot_target

        levels: dict[str, str] = {}
        if completion_of(sample) == 3:
            for dim in ("harmony", "local_naturalness", "overall"):
                column = label_column(self.stage, dim)
                if column not in sample.scores:
                    raise TrainDataError(
                        f"stage {self.stage.name!r}: sample {sample.id!r} has no {column!r} "
                        f"score for the {dim} level of its stage-3 answer; map {dim} to a "
                        f"column it has with labels: {{{dim}: <column>}}")
                lo, hi = self.level_range(dim)
                levels[dim] = level_target(sample.scores[column], lo=lo, hi=hi)
        return epaiqa_cot_target(sample, levels)

    def critique(self, sample: EditSample) -> str | None:
        text = explanation_of(sample, self.explanation_key)
        if text is None:
            return None
        cols = {d: label_column(self.stage, d) for d in self.dimensions}
        relabelled = sample.model_copy(update={
            "meta": {**sample.meta, self.explanation_key: text},
            "scores": {d: sample.scores[c] for d, c in cols.items()}})
        return critique_target(relabelled, self.dimensions, scale=self.template.scale or (1, 5),
                               data_scale=self.scale, key=self.explanation_key)

    # -------------------------------------------------------------------- batches
    def encoded(self, sample: EditSample, dimension: str | None = None) -> dict[str, Any]:
        """The processor's output for ``sample``'s prompt, from the cache when it is there.
        Keys are the sample object and dimension: the samples of a run live as long as it."""
        key = (id(sample), dimension)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        enc = self.vlm.encode_one(self.prompt(sample, dimension))
        size = sum(v.nbytes for v in enc.values() if torch.is_tensor(v))
        if size <= self._cache_left:
            self._cache[key] = enc
            self._cache_left -= size
        return enc

    def _collate(self, encoded: Sequence[dict[str, Any]], targets: Sequence[list[int] | None]
                 ) -> dict[str, Any]:
        conts = [t or [] for t in targets]
        batch = self.vlm.collate(encoded, conts)
        width = batch["input_ids"].shape[1]
        # position (in the padded row) of the last prompt token: the anchor of "last"
        batch["prompt_end"] = torch.tensor([width - len(c) - 1 for c in conts])
        if any(targets):
            n_lab = max(len(c) for c in conts)
            index = torch.zeros(len(conts), n_lab, dtype=torch.long)
            labels = torch.full((len(conts), n_lab), -100, dtype=torch.long)
            for b, c in enumerate(conts):
                start = width - len(c) - 1  # logits here predict the first target token
                index[b, :len(c)] = torch.arange(start, start + len(c))
                labels[b, :len(c)] = torch.tensor(c, dtype=torch.long)
            batch["label_index"], batch["labels"] = index, labels
        return batch

    def _tokens(self, text: str) -> list[int]:
        return self.vlm.tokenizer.encode(text, add_special_tokens=False) + [self.eos_id]

    def text_batch(self, samples: Sequence[EditSample]) -> dict[str, Any]:
        """One prompt per (sample, dimension) with its target text as labels; for digit
        targets also ``digit_positions`` ``[B, 3]`` into the compact labels."""
        prompts, targets, digits = [], [], []
        for sample in samples:
            for dim in self.dimensions:
                prompts.append(self.encoded(sample, dim))
                text = self.target_text(sample, dim)
                ids = self._tokens(text)
                targets.append(ids)
                if self.stage.target == "digits":
                    digits.append(self._digit_positions(ids, text))
        batch = self._collate(prompts, targets)
        if digits:
            batch["digit_positions"] = torch.tensor(digits, dtype=torch.long)
        return batch

    @functools.cached_property
    def digit_ids(self) -> list[int]:
        """Token ids of "0".."9" (TDRL and digit targets need single-token digits)."""
        try:
            return digit_token_ids(self.vlm.tokenizer)[0]
        except BackendError as exc:
            raise TrainDataError(f"digit targets (DS-IEQA): {exc}") from None

    def _digit_positions(self, ids: list[int], text: str) -> list[int]:
        digit_ids = self.digit_ids
        want = digit_values(text)
        pos = [j for j, t in enumerate(ids) if t in digit_ids][:3]
        if [digit_ids.index(ids[j]) for j in pos] != want:
            raise TrainDataError(f"target {text!r} does not tokenize into its three digits")
        return pos

    def head_batch(self, samples: Sequence[EditSample], *, with_text: bool = False
                   ) -> dict[str, Any]:
        """One prompt per sample (no dimension in the prompt) with ``targets`` ``[B, D]``
        on the data scale; ``with_text`` adds the critique as labels (ReasonEdit dual)."""
        prompts, conts = [], []
        for sample in samples:
            prompts.append(self.encoded(sample))
            text = self.critique(sample) if with_text else None
            conts.append(self._tokens(text) if text else None)
        batch = self._collate(prompts, conts)
        batch["targets"] = torch.tensor([[self.score(s, d) for d in self.dimensions]
                                         for s in samples], dtype=torch.float32)
        return batch

    def pair_batch(self, samples: Sequence[EditSample], pairs: Sequence[TrainPair]
                   ) -> dict[str, Any]:
        """The first ``B`` rows are the pairs' ``a`` candidates, the next ``B`` their
        ``b``; ``outcome`` (0: a>b, 1: b>a, 2: tie) and ``weight`` per pair."""
        rows = [samples[p.a] for p in pairs] + [samples[p.b] for p in pairs]
        batch = self._collate([self.encoded(s) for s in rows], [None] * len(rows))
        batch["outcome"] = torch.tensor([{"a>b": 0, "b>a": 1, "tie": 2}[p.label] for p in pairs])
        batch["weight"] = torch.tensor([p.weight for p in pairs], dtype=torch.float32)
        return batch
