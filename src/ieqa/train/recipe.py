"""Training recipes: YAML validated into config objects (one trainer runs them all).

A recipe names the backbone, the adapter (LoRA/QLoRA, full fine-tuning or frozen), an
optional regression head, the data, the optimiser and one or more **stages** run in order
on the same model (EditHF: textual levels -> pointwise MSE -> pairwise BT; EPAIQA:
grounding -> level scoring). Each stage has an ``objective``:

* ``text``: supervised fine-tuning on text targets written in the paper's answer format
  (``target``: ``digits`` for DS-IEQA ``X.XX``, ``level`` for the five level words,
  ``box`` for EPAIQA's ``(x, y, w, h)`` region); ``loss`` ``ce`` or ``tdrl`` (digits).
  Level words bin each dimension over its own range by default (``level_bins``).
* ``pointwise``: the head regresses the scores; ``loss`` ``mse``, ``huber`` or
  ``re-reward`` (Huber + ranking against a rank queue + 1 - PLCC over a PLCC queue,
  ``loss_args`` ``rank_queue_size`` / ``plcc_queue_size``).
* ``pairwise``: the head ranks within-group pairs; ``loss`` ``bt``, ``bt-ties``,
  ``uncertainty`` (Gaussian scores with a logistic link, sampled; ``loss_args.form``
  ``nll`` = EditReward Eq. 4, the default, or ``expected-bt`` = EditReward's released
  trainer) or ``probit`` (Thurstone Case V, ``-log P(s_w > s_l)``) — the last two need a
  Gaussian head, whose dimensions combine by ``aggregation`` (the means) and
  ``sigma_aggregation`` (the sigmas).
* ``dual``: ReasonEdit SFT, CE on the critique text plus Huber on the head.
* ``grpo``: ReasonEdit stage 2, reinforcement learning of the critique text with TRL's
  ``GRPOTrainer`` (``loss: grpo``; settings under ``grpo:``, :class:`GRPOSettings`): G
  sampled critiques per prompt rewarded by a critique scorer in-process or at an ``ieqa
  serve`` URL, KL to the reference policy, LoRA, and the auxiliary Huber loss on the head
  (:mod:`ieqa.train.grpo`).

Built-in recipes (``ieqa list recipes``) carry each paper's hyper-parameters as defaults;
``--set key=value`` (dotted paths, YAML values) overrides any field, e.g.
``--set optim.lr=3e-4 --set stages.0.max_steps=200``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ieqa.errors import IeqaError
from ieqa.registry import RECIPES
from ieqa.train.losses import RE_REWARD_PLCC_QUEUE_SIZE, RE_REWARD_RANK_QUEUE_SIZE

__all__ = ["Recipe", "StageConfig", "GRPOSettings", "RewardSource", "RecipeError", "load_recipe", "list_recipes",
           "apply_overrides", "RECIPE_DIR"]

RECIPE_DIR = Path(__file__).parent / "recipes"

Objective = Literal["text", "pointwise", "pairwise", "dual", "grpo"]
TEXT_LOSSES = ("ce", "tdrl")
POINTWISE_LOSSES = ("mse", "huber", "re-reward")
PAIRWISE_LOSSES = ("bt", "bt-ties", "uncertainty", "probit")


class RecipeError(IeqaError, ValueError):
    """A recipe file or override is invalid (the message names the field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Strict):
    """The backbone: ``name`` is a hub id or a local folder (``ieqa tiny-vlm`` builds one)."""

    name: str
    dtype: str = "auto"
    device: str = "auto"
    attn_implementation: str | None = None
    load_in_4bit: bool = Field(False, description="QLoRA: 4-bit base weights (CUDA + bitsandbytes)")
    min_pixels: int | None = None
    max_pixels: int | None = None
    gradient_checkpointing: bool = False


class AdapterConfig(_Strict):
    """What of the backbone trains: ``lora`` adapters, ``full`` (every weight) or ``none``
    (frozen; only the head trains)."""

    kind: Literal["lora", "full", "none"] = "lora"
    r: int = Field(16, ge=1)
    alpha: float = Field(32, gt=0)
    dropout: float = Field(0.05, ge=0, lt=1)
    targets: str | list[str] = Field(
        "all-linear", description="'all-linear' (language and vision), 'language' (the "
        "language model's linear layers) or a list of module names")
    lr: float | None = Field(None, gt=0, description="default: optim.lr")


class HeadConfig(_Strict):
    """The regression head on the pooled hidden state (``kind: none`` for text-only)."""

    kind: Literal["none", "regression", "gaussian"] = "none"
    hidden_features: int = Field(1024, ge=1)
    num_layers: int = Field(2, ge=1)
    dropout: float = Field(0.0, ge=0, lt=1)
    anchor: str = "last"
    lr: float | None = Field(None, gt=0, description="default: optim.lr")


class DataConfig(_Strict):
    """Training data: a manifest / benchmark folder, or a generated ShapesEdit set.

    ``train`` is a path (anything ``ieqa bench`` reads) or a mapping
    ``{shapesedit: {n: 400, k: 4, seed: 1, size: 112, preset: default}}`` (``critique:
    brief`` gives each sample the short critique of
    :func:`ieqa.data.shapesedit.describe`; the default ``full`` is the sentence form).
    Without ``eval``, ``eval_fraction`` of the groups is held out (by group, seeded).
    """

    train: str | dict[str, Any]
    eval: str | dict[str, Any] | None = None
    eval_fraction: float = Field(0.2, gt=0, lt=1)
    max_eval_samples: int | None = Field(None, ge=1)
    score_scale: tuple[float, float] | None = Field(
        None, description="data score range, one for every dimension (digit and critique "
        "targets are rescaled from it; level targets use it with level_bins: scale); "
        "default: the samples' meta score_scale, else their observed min and max over all "
        "dimensions")
    explanation_key: str = "explanation"
    cache_mb: float = Field(
        1024, ge=0, description="keep up to this many MiB of processed model inputs (token "
        "ids, pixel values) in memory, so later epochs skip image decoding and the "
        "processor; 0 turns the cache off")


class OptimConfig(_Strict):
    lr: float = Field(1e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    scheduler: str = "cosine"
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    batch_size: int = Field(8, ge=1)
    grad_accum: int = Field(1, ge=1)
    max_grad_norm: float | None = 1.0
    seed: int = 0


class RewardSource(_Strict):
    """Where a ``grpo`` stage's reward comes from: ``scorer`` (in-process: a registered
    scorer name such as ``critique`` with ``options`` e.g. ``{checkpoint: DIR}``, the
    built-in programmatic ``shapesedit-judge``, or ``module:Class``) or ``url`` (an ``ieqa
    serve`` server). ``weights`` combine the critique dimensions into the reward, a
    weighted mean (divided by their sum, :func:`ieqa.data.combine.normalise_weights`;
    RE-Reward: accuracy weighted most)."""

    scorer: str | None = None
    url: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    weights: dict[str, float] = Field(
        default_factory=lambda: {"logicality": 0.25, "accuracy": 0.5, "usefulness": 0.25})

    @model_validator(mode="after")
    def _check(self) -> RewardSource:
        if (self.scorer is None) == (self.url is None):
            raise ValueError("reward: give exactly one of scorer (in-process, e.g. critique or "
                             "shapesedit-judge) or url (an ieqa serve server)")
        if not self.weights or any(w < 0 for w in self.weights.values()) \
                or not sum(self.weights.values()):
            raise ValueError("reward.weights: one non-negative weight per critique dimension, "
                             "not all zero (e.g. {logicality: 0.25, accuracy: 0.5, usefulness: "
                             "0.25})")
        return self

    def rule(self) -> str:
        """The weights as a reward-rule expression (:class:`ieqa.rewards.rule.RewardRule`)."""
        return " + ".join(f"{w!r}*{d}" for d, w in self.weights.items())


class GRPOSettings(_Strict):
    """A ``grpo`` stage's settings (TRL ``GRPOConfig`` names where they exist)."""

    reward: RewardSource
    num_generations: int = Field(4, ge=2, description="G: critiques sampled per prompt")
    prompts_per_step: int = Field(2, ge=1, description="prompts per optimiser step (the "
                                  "batch is prompts_per_step * num_generations completions)")
    beta: float = Field(0.04, ge=0, description="KL weight to the reference policy (0: none)")
    learning_rate: float | None = Field(None, gt=0, description="default: adapter.lr, "
                                        "then optim.lr")
    max_completion_length: int = Field(256, ge=1)
    temperature: float = Field(1.0, gt=0)
    aux_huber_weight: float = Field(1.0, ge=0, description="weight of the auxiliary Huber "
                                    "loss on the head (0: off, the ablation)")
    aux_batch_size: int | None = Field(None, ge=1, description="samples with MOS per step "
                                       "for the Huber term (default: optim.batch_size)")
    huber_delta: float = Field(1.0, gt=0)
    lora_r: int = Field(16, ge=1, description="the stage's LoRA when adapter.kind is full "
                        "or none (merged into the weights after the stage)")
    lora_alpha: float = Field(32, gt=0)
    lora_targets: str | list[str] = "all-linear"
    trl_args: dict[str, Any] = Field(default_factory=dict, description="further GRPOConfig "
                                     "fields, passed as they are")


class StageConfig(_Strict):
    """One training phase."""

    name: str
    objective: Objective
    loss: str
    loss_args: dict[str, Any] = Field(default_factory=dict)
    target: Literal["digits", "level", "box", "epaiqa-cot"] | None = None
    template: str | dict[str, Any] | None = None
    definitions: dict[str, str] = Field(
        default_factory=dict, description="dimension -> FDMPO output (the --out folder of "
        "`ieqa optimize-prompt`, its best_template.yaml, or a .txt file): the optimised "
        "definition replaces the template's {definition} for that dimension (DS-IEQA: the "
        "Best Metric Definition in the system prompt)")
    dimensions: list[str] = Field(default_factory=lambda: ["overall"])
    labels: dict[str, str] = Field(
        default_factory=dict, description="prompt dimension -> data column when they differ "
        "(e.g. harmony: visual_quality)")
    epochs: float = Field(1.0, gt=0)
    max_steps: int | None = Field(None, ge=1)
    sampler: Literal["shuffle", "curriculum", "stratified"] = "shuffle"
    sampler_args: dict[str, Any] = Field(default_factory=dict)
    pairs: dict[str, Any] = Field(default_factory=dict, description="build_pairs options")
    aggregation: Literal["mean", "sum", "min"] = "mean"
    sigma_aggregation: Literal["independent", "elementwise"] = Field(
        "independent", description="Gaussian heads: how the dimensions' sigma combine. "
        "'independent' (default): the sigma of the aggregated score of independent Gaussian "
        "dimensions (sqrt(sum sigma^2)/D for mean, sqrt(sum sigma^2) for sum, the sigma of "
        "the smallest-mu dimension for min); 'elementwise': the rule applied to log sigma "
        "as to mu, as EditReward's released model does (mean / min of log sigma)")
    level_bins: Literal["dimension", "scale"] = Field(
        "dimension", description="level targets: 'dimension' (default, EditHF / Q-Align) "
        "cuts each dimension's own [min, max] over the training data into the five level "
        "bins; 'scale' uses one range for every dimension: data.score_scale, else the "
        "samples' meta score_scale, else the [min, max] of all dimensions pooled")
    max_new_tokens: int | None = Field(
        None, ge=1, description="epaiqa-cot stages: answer length limit (tokens) of the "
        "critiques generated in evaluation and by the exported vlm-judge (default 512)")
    text_weight: float = Field(1.0, ge=0)
    head_weight: float = Field(1.0, ge=0)
    samples: Literal["all", "with_text", "without_text"] = "all"
    grpo: GRPOSettings | None = Field(None, description="settings of a grpo stage")

    @model_validator(mode="after")
    def _check(self) -> StageConfig:
        allowed = {"text": TEXT_LOSSES, "pointwise": POINTWISE_LOSSES,
                   "pairwise": PAIRWISE_LOSSES, "dual": ("ce+huber",),
                   "grpo": ("grpo",)}[self.objective]
        if self.objective == "grpo" and self.grpo is None:
            raise ValueError(f"stage {self.name!r}: a grpo stage needs grpo: settings with at "
                             "least reward: {scorer: NAME} or reward: {url: URL}")
        if self.objective != "grpo" and self.grpo is not None:
            raise ValueError(f"stage {self.name!r}: grpo: settings belong to objective: grpo")
        if self.loss not in allowed:
            raise ValueError(f"stage {self.name!r}: loss {self.loss!r} does not fit objective "
                             f"{self.objective!r}; choose one of {', '.join(allowed)}")
        if self.objective == "text" and self.target is None:
            raise ValueError(f"stage {self.name!r}: a text stage needs target (digits, level, "
                             "box or epaiqa-cot)")
        if self.target == "epaiqa-cot" and self.objective != "text":
            raise ValueError(f"stage {self.name!r}: target epaiqa-cot (EPAIQA stage-3 answers) "
                             "goes with objective: text")
        if self.loss == "tdrl" and self.target != "digits":
            raise ValueError(f"stage {self.name!r}: tdrl needs target: digits")
        if not self.dimensions:
            raise ValueError(f"stage {self.name!r}: dimensions is empty")
        if self.definitions:
            self._check_definitions()
        if self.loss == "uncertainty" and self.loss_args.get("form", "nll") not in (
                "nll", "expected-bt"):
            raise ValueError(f"stage {self.name!r}: loss_args.form must be nll (EditReward "
                             "Eq. 4, -log E[sigmoid(z)]) or expected-bt (EditReward's released "
                             f"trainer, E[-log sigmoid(z)]), got {self.loss_args['form']!r}")
        if self.loss == "re-reward":
            if "queue_size" in self.loss_args:
                raise ValueError(f"stage {self.name!r}: loss_args.queue_size was split into "
                                 "rank_queue_size and plcc_queue_size (ReasonEdit Table 7; "
                                 f"defaults {RE_REWARD_RANK_QUEUE_SIZE} and "
                                 f"{RE_REWARD_PLCC_QUEUE_SIZE})")
            for key in ("rank_queue_size", "plcc_queue_size"):
                size = self.loss_args.get(key, 0)
                if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                    raise ValueError(f"stage {self.name!r}: loss_args.{key} must be an "
                                     f"integer >= 0 (rows; 0 turns the queue off), got {size!r}")
        return self


    def _check_definitions(self) -> None:
        from ieqa.data.dimensions import canonical_dimension
        from ieqa.prompts.redefine import load_definition

        dims = {canonical_dimension(d) for d in self.dimensions}
        for dim, source in self.definitions.items():
            try:
                canon = canonical_dimension(dim)
            except IeqaError as exc:
                raise ValueError(f"stage {self.name!r}: definitions: {exc}") from None
            if canon not in dims:
                raise ValueError(f"stage {self.name!r}: definitions names {dim!r}, which the "
                                 f"stage does not train (dimensions: {self.dimensions})")
            try:
                load_definition(source, canon)
            except IeqaError as exc:
                raise ValueError(f"stage {self.name!r}: definitions.{dim}: {exc}") from None

    def definition_texts(self) -> dict[str, str]:
        """``{canonical dimension: definition text}`` read from :attr:`definitions`."""
        from ieqa.data.dimensions import canonical_dimension
        from ieqa.prompts.redefine import load_definition

        return {canonical_dimension(d): load_definition(src, d)
                for d, src in self.definitions.items()}


class EvalConfig(_Strict):
    every_steps: int | None = Field(None, ge=1, description="also evaluate every N steps")
    batch_size: int = Field(16, ge=1)


#: Experiment trackers ``output.report_to`` may name (accelerate's trackers; TRL's
#: ``report_to`` for GRPO stages).
TRACKERS = ("tensorboard", "wandb")


class OutputConfig(_Strict):
    dir: str = "runs/{recipe}"
    save_every_steps: int | None = Field(None, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    report_to: list[Literal["tensorboard", "wandb"]] = Field(
        default_factory=list, description="experiment trackers that also get every logged "
        "scalar (tensorboard writes under the run folder's tracking/); [] or 'none': "
        "metrics.jsonl only")

    @model_validator(mode="before")
    @classmethod
    def _none_is_empty(cls, values: Any) -> Any:
        if isinstance(values, dict):
            value = values.get("report_to")
            if value is None or value == "none" or value == ["none"]:
                values = {**values, "report_to": []}
            elif isinstance(value, str):
                values = {**values, "report_to": [v.strip() for v in value.split(",")]}
        return values


class Recipe(_Strict):
    """A whole training recipe (see the module docstring)."""

    name: str
    description: str = ""
    reference: str = ""
    model: ModelConfig
    adapter: AdapterConfig = Field(default_factory=AdapterConfig)
    head: HeadConfig = Field(default_factory=HeadConfig)
    data: DataConfig
    optim: OptimConfig = Field(default_factory=OptimConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    per_dimension: bool = Field(False, description="DS-IEQA: train one model per dimension "
                                "of the (single) stage, each in its own sub-folder")
    stages: list[StageConfig]

    @model_validator(mode="after")
    def _check(self) -> Recipe:
        if not self.stages:
            raise ValueError("stages is empty")
        for stage in self.stages:
            needs_head = stage.objective in ("pointwise", "pairwise", "dual") or (
                stage.grpo is not None and stage.grpo.aux_huber_weight > 0)
            if needs_head and self.head.kind == "none":
                raise ValueError(f"stage {stage.name!r} ({stage.objective}) trains the head; "
                                 "set head.kind to regression or gaussian")
            if stage.loss in ("uncertainty", "probit") and self.head.kind != "gaussian":
                raise ValueError(f"stage {stage.name!r}: loss {stage.loss} needs head.kind: "
                                 "gaussian")
            if stage.objective == "pointwise" and self.head.kind == "gaussian":
                raise ValueError(f"stage {stage.name!r}: pointwise losses need head.kind: "
                                 "regression")
        head_dims = {tuple(s.dimensions) for s in self.stages if s.objective != "text"}
        if len(head_dims) > 1:
            raise ValueError("the stages that train the head must list the same dimensions "
                             f"(the head has one output per dimension); got {sorted(head_dims)}")
        if self.adapter.kind == "none" and self.head.kind == "none":
            raise ValueError("nothing trains: adapter.kind is none and head.kind is none")
        if self.per_dimension and len(self.stages) != 1:
            raise ValueError("per_dimension recipes have exactly one stage")
        return self

    def output_dir(self) -> Path:
        return Path(self.output.dir.format(recipe=self.name))


def _register_builtin_recipes() -> None:
    """Add each ``recipes/*.yaml`` to :data:`ieqa.registry.RECIPES` (its description
    folded onto one line); the file is parsed in full only when the recipe is loaded."""
    for path in sorted(RECIPE_DIR.glob("*.yaml")):
        if path.stem not in RECIPES:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            RECIPES.add(path.stem, " ".join(str(raw.get("description", "")).split()),
                        factory=load_recipe, info=path)


def list_recipes() -> list[str]:
    """Names of the built-in recipes (:data:`ieqa.registry.RECIPES`)."""
    return RECIPES.names()


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_overrides(data: dict[str, Any], overrides: list[str] | dict[str, Any]) -> dict[str, Any]:
    """Apply ``key=value`` overrides (dotted paths; list items by index; values parsed as
    YAML) to a recipe mapping, in place; returns it."""
    items = overrides.items() if isinstance(overrides, dict) else [
        _split_override(o) for o in overrides]
    for key, value in items:
        parts = key.split(".")
        node: Any = data
        for i, part in enumerate(parts[:-1]):
            node = _child(node, part, ".".join(parts[:i + 1]), create=True)
        last = parts[-1]
        if isinstance(node, list):
            index = _index(node, last, key)
            node[index] = value
        elif isinstance(node, dict):
            node[last] = value
        else:
            raise RecipeError(f"override {key!r}: {'.'.join(parts[:-1])} is not a mapping")
    return data


def _split_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise RecipeError(f"override {text!r} must look like key=value (e.g. optim.lr=3e-4)")
    key, value = text.split("=", 1)
    if not key.strip():
        raise RecipeError(f"override {text!r} has an empty key")
    return key.strip(), _parse_value(value)


def _index(node: list[Any], part: str, where: str) -> int:
    try:
        index = int(part)
    except ValueError:
        raise RecipeError(f"override {where!r}: {part!r} must be a list index") from None
    if not -len(node) <= index < len(node):
        raise RecipeError(f"override {where!r}: index {index} is out of range "
                          f"({len(node)} items)")
    return index


def _child(node: Any, part: str, where: str, create: bool) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, where)]
    if not isinstance(node, dict):
        raise RecipeError(f"override path {where!r} goes through a value that is not a mapping")
    if part not in node or node[part] is None:
        node[part] = {}
    return node[part]


def load_recipe(source: str | Path | dict[str, Any], overrides: list[str] | dict[str, Any] = (),
                ) -> Recipe:
    """Load and validate a recipe.

    Args:
        source: a built-in recipe name (``ieqa list recipes``), a YAML file, or a mapping.
        overrides: ``["optim.lr=3e-4", "stages.0.max_steps=100"]`` or a mapping of dotted
            keys to values, applied before validation.

    Raises:
        RecipeError: unknown name, unreadable file, or invalid fields (named).
    """
    if isinstance(source, dict):
        data, origin = dict(source), "<dict>"
    else:
        path = Path(source)
        if not path.suffix and not path.exists():
            path = RECIPE_DIR / f"{source}.yaml"
            if not path.exists():
                raise RecipeError(f"no recipe {source!r}; built-in recipes: "
                                  f"{', '.join(list_recipes())} (or give a YAML file)")
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise RecipeError(f"cannot read recipe {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise RecipeError(f"{path}: a recipe is a YAML mapping")
        origin = str(path)
    import copy

    data = apply_overrides(copy.deepcopy(data), overrides or [])
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<recipe>'}: {err['msg']}"
            for err in exc.errors())
        raise RecipeError(f"{origin}: {problems}") from None


_register_builtin_recipes()
