"""Readouts with a regression head on the VLM's hidden state: ``vlm-head``, ``vlm-gaussian``,
``vlm-dual``.

All three run one forward pass over the prompt and pool the final-layer hidden state at an
*anchor* — the last prompt token (``"last"``, the prefill state), a special token
(``"token:<|im_end|>"``) or the mean over prompt tokens (``"mean"``) — and feed it to an
:class:`MLPHead`:

* ``vlm-head`` (EditHF): one output per dimension.
* ``vlm-gaussian`` (EditReward): ``(mu, log sigma)`` per dimension; the score is ``mu``,
  ``sigma = exp(log sigma)`` is reported, and ``overall`` aggregates the ``mu`` by
  ``min``, ``mean`` (the paper's best) or ``sum`` and the sigma by ``sigma_aggregation``
  (:func:`ieqa.data.combine.aggregate_gaussian`).
* ``vlm-dual`` (ReasonEdit): three scores (visual quality, instruction alignment, content
  preservation) from the prefill state, ``overall = 0.3 VQ + 0.4 IA + 0.3 CP``, while the
  model generates a structured critique (the explanation). ``score_only=True`` skips the
  generation.

A head is trained with ``ieqa train`` and shipped in an evaluator checkpoint
(:mod:`ieqa.scorers.checkpoint`). Without one the head is randomly initialised from
``seed``: the pipeline runs but the scores mean nothing (``raw["untrained_head"]``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ieqa.backends.transformers_vlm import inference_context
from ieqa.data.combine import overall_score
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.vlm.base import LoadedSample, VLMScorer

__all__ = ["MLPHead", "HeadScorer", "GaussianScorer", "DualScorer", "HEAD_FILE", "HEAD_CONFIG"]

log = logging.getLogger(__name__)

HEAD_FILE = "head.safetensors"
HEAD_CONFIG = "head.json"


class MLPHead(nn.Module):
    """``Linear(in, hidden) -> GELU -> ... -> Linear(hidden, out)`` (float32).

    Args:
        in_features: the VLM's hidden size.
        out_features: outputs (dimensions, or 2 per dimension for a Gaussian head).
        hidden_features: width of the hidden layers.
        num_layers: linear layers (1 = a single linear map).
        dropout: dropout between layers during training.
    """

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 1024,
                 num_layers: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError("num_layers must be at least 1")
        self.settings = {"in_features": int(in_features), "out_features": int(out_features),
                         "hidden_features": int(hidden_features),
                         "num_layers": int(num_layers), "dropout": float(dropout)}
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(num_layers - 1):
            layers += [nn.Linear(width, hidden_features), nn.GELU(), nn.Dropout(dropout)]
            width = hidden_features
        layers.append(nn.Linear(width, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.net(hidden.to(self.net[0].weight.dtype))

    def save(self, folder: str | Path) -> None:
        """Write ``head.safetensors`` and ``head.json`` to ``folder``."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()},
                  str(folder / HEAD_FILE))
        (folder / HEAD_CONFIG).write_text(json.dumps(self.settings, indent=2) + "\n")

    @classmethod
    def load(cls, folder: str | Path) -> MLPHead:
        """Read a head written by :meth:`save`."""
        from safetensors.torch import load_file

        folder = Path(folder)
        if not (folder / HEAD_FILE).exists() or not (folder / HEAD_CONFIG).exists():
            raise ScorerError(f"{folder} holds no head ({HEAD_FILE} and {HEAD_CONFIG})")
        head = cls(**json.loads((folder / HEAD_CONFIG).read_text()))
        head.load_state_dict(load_file(str(folder / HEAD_FILE)))
        return head.eval()


class HeadScorer(VLMScorer):
    """``vlm-head``: an MLP on the pooled hidden state, one output per dimension.

    Args:
        anchor: ``"last"``, ``"mean"`` or ``"token:<text>"`` (see the module docstring).
        head: folder with ``head.safetensors`` + ``head.json`` (trained head), or an
            :class:`MLPHead` in memory (a head being trained); ``None``
            initialises a random head from ``seed`` (untrained: scores are meaningless).
        hidden_features, num_layers: shape of a newly initialised head.
        seed: initialisation seed of a new head.
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "head"
    default_template = "editreward"

    def __init__(self, *, anchor: str = "last", head: str | Path | MLPHead | None = None,
                 hidden_features: int = 1024, num_layers: int = 2, seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.anchor = anchor
        self.backend.anchor_token(anchor)  # validates the anchor against the tokenizer
        if isinstance(head, MLPHead):  # an in-memory head (a model being trained)
            self.head = head
            self.trained = True
        elif head is not None:
            self.head = MLPHead.load(head)
            expected = (self.backend.hidden_size, self.head_outputs)
            got = (self.head.settings["in_features"], self.head.settings["out_features"])
            if got != expected:
                raise ScorerError(f"head in {head} maps {got[0]} -> {got[1]} but this model and "
                                  f"readout need {expected[0]} -> {expected[1]}")
            self.trained = True
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.head = MLPHead(self.backend.hidden_size, self.head_outputs,
                                    hidden_features, num_layers).eval()
            self.trained = False
            log.warning("%s: no trained head given (head= or checkpoint=); a random head from "
                        "seed %d is used and its scores are meaningless", self.readout, seed)
        self.head_source = ("in-memory" if isinstance(head, MLPHead) else str(head)
                            if head is not None else f"random(seed={seed})")

    @property
    def head_outputs(self) -> int:
        return len(self.score_dimensions)

    def readout_config(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "head": self.head_source}

    def checkpoint_args(self) -> dict[str, Any]:
        return {"anchor": self.anchor}

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        return (None, None)

    def head_outputs_of(self, items: Sequence[LoadedSample]) -> Any:
        """Head outputs ``[n_items, head_outputs]`` (float32 tensor) for a batch."""
        prompts = [self.render(item) for item in items]
        hidden = self.backend.forward(prompts, logits=False, anchor=self.anchor).hidden
        device = next(self.head.parameters()).device
        with inference_context():
            return self.head(hidden.to(device)).float().cpu()

    def _result(self, item: LoadedSample, scores: dict[str, float], **extra: Any) -> ScoreResult:
        raw = {"untrained_head": True} if not self.trained else {}
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw, **extra)

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        out = self.head_outputs_of(items)
        return [self._result(item, dict(zip(self.score_dimensions, row.tolist(), strict=True)))
                for item, row in zip(items, out, strict=True)]


class GaussianScorer(HeadScorer):
    """``vlm-gaussian``: per-dimension ``(mu, log sigma)`` heads (EditReward).

    Args:
        aggregation: how ``overall`` combines the dimensions' ``mu``: ``"min"``,
            ``"mean"`` or ``"sum"``; ``None`` reports no overall.
        sigma_aggregation: how the ``overall`` sigma combines the dimensions' sigma:
            ``"independent"`` (default) or ``"elementwise"`` (EditReward's released model);
            see :func:`ieqa.data.combine.aggregate_gaussian`. A checkpoint records the
            training stage's choice.
        (other arguments: :class:`HeadScorer`)
    """

    readout = "gaussian"

    def __init__(self, *, aggregation: str | None = "mean",
                 sigma_aggregation: str = "independent", **kwargs: Any) -> None:
        if aggregation not in (None, "min", "mean", "sum"):
            raise ScorerError(f"aggregation must be min, mean, sum or None, got {aggregation!r}")
        if sigma_aggregation not in ("independent", "elementwise"):
            raise ScorerError("sigma_aggregation must be independent or elementwise, got "
                              f"{sigma_aggregation!r}")
        self.aggregation = aggregation
        self.sigma_aggregation = sigma_aggregation
        super().__init__(**kwargs)

    @property
    def dimensions(self) -> tuple[str, ...]:
        extra = ("overall",) if self.aggregation and "overall" not in self.score_dimensions else ()
        return (*self.score_dimensions, *extra)

    @property
    def head_outputs(self) -> int:
        return 2 * len(self.score_dimensions)

    def readout_config(self) -> dict[str, Any]:
        return {**super().readout_config(), "aggregation": self.aggregation,
                "sigma_aggregation": self.sigma_aggregation}

    def checkpoint_args(self) -> dict[str, Any]:
        return {**super().checkpoint_args(), "aggregation": self.aggregation,
                "sigma_aggregation": self.sigma_aggregation}

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        from ieqa.data.combine import aggregate_gaussian

        out = self.head_outputs_of(items).double().view(len(items), len(self.score_dimensions), 2)
        mu, log_sigma = out.unbind(-1)
        if self.aggregation:  # the training loss's aggregation, so the two cannot drift
            overall_mu, overall_log_sigma = aggregate_gaussian(
                mu, log_sigma, self.aggregation, self.sigma_aggregation)
        results = []
        for k, item in enumerate(items):
            scores = dict(zip(self.score_dimensions, mu[k].tolist(), strict=True))
            sigma = dict(zip(self.score_dimensions, log_sigma[k].exp().tolist(), strict=True))
            if self.aggregation:
                scores["overall"] = float(overall_mu[k])
                sigma["overall"] = float(overall_log_sigma[k].exp())
            results.append(self._result(item, scores, sigma=sigma))
        return results


class DualScorer(HeadScorer):
    """``vlm-dual``: ReasonEdit's dual head — regression scores from the prefill state plus
    a generated structured critique.

    Args:
        score_only: skip the critique generation (scores only, one forward pass).
        max_new_tokens: critique length limit (tokens).
        (other arguments: :class:`HeadScorer`)
    """

    readout = "dual"
    default_template = "reasonedit-critique"

    def __init__(self, *, score_only: bool = False, max_new_tokens: int = 512,
                 **kwargs: Any) -> None:
        self.score_only = bool(score_only)
        self.max_new_tokens = int(max_new_tokens)
        kwargs.setdefault("dimensions", ("visual_quality", "instruction_alignment",
                                         "content_preservation"))
        super().__init__(**kwargs)
        dims = set(self.score_dimensions)
        if dims != {"visual_quality", "instruction_alignment", "content_preservation"}:
            raise ScorerError("vlm-dual reads exactly visual_quality, instruction_alignment and "
                              "content_preservation")

    @property
    def dimensions(self) -> tuple[str, ...]:
        return (*self.score_dimensions, "overall")

    def readout_config(self) -> dict[str, Any]:
        return {**super().readout_config(), "score_only": self.score_only,
                "max_new_tokens": self.max_new_tokens, "overall": "reasonedit"}

    def checkpoint_args(self) -> dict[str, Any]:
        return {**super().checkpoint_args(), "score_only": self.score_only,
                "max_new_tokens": self.max_new_tokens}

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        out = self.head_outputs_of(items)
        critiques: list[Any] = [None] * len(items)
        if not self.score_only:
            prompts = [self.render(item) for item in items]
            critiques = [gens[0] for gens in self.backend.generate(
                prompts, max_new_tokens=self.max_new_tokens)]
        results = []
        for item, row, critique in zip(items, out, critiques, strict=True):
            scores = dict(zip(self.score_dimensions, row.tolist(), strict=True))
            scores["overall"] = overall_score(scores, "reasonedit")
            result = self._result(item, scores,
                                  explanation=critique.text if critique is not None else None)
            if critique is not None and critique.finish_reason == "length":
                result.raw["critique_truncated"] = True
            results.append(result)
        return results
