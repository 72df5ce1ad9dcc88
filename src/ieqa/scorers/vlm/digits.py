"""``vlm-digits``: DS-IEQA's digit readout and Definition Value V_d.

The answer is written as ``"<Dimension> score: d0.d1d2"`` (the template's
``answer_prefix`` ends right before ``d0``). For each digit position ``t`` (integer,
tenths, hundredths) the readout takes the model's next-token logits restricted to the ten
digit tokens, normalises them (softmax over the ten) and takes the expected digit
``E_t = sum_k k * P_t(k)``; the next position is conditioned on the most likely digit
(and the ``"."`` after ``d0``). The score is ``E_0 + E_1 / 10 + E_2 / 100``. Three forward
passes per prompt (teacher-forced continuations; prefix sharing applies to each).

Given ground truth ``g = g0.g1g2``, the **Definition Value** (DS-IEQA eq. 2) is
``V_d = sum_t 10^-t * P(d_t = g_t | g_<t)`` with ``P`` the model's probability over its
whole vocabulary at position ``t`` after teacher-forcing ``g_<t``; range [0, 1.11].
FDMPO keeps the prompt with the highest mean V_d.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ieqa.backends import BackendError
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.images import load_image
from ieqa.data.schema import EditSample
from ieqa.errors import TrainDataError
from ieqa.prompts.answers import format_digits
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.vlm.base import LoadedSample, VLMScorer

__all__ = ["DigitsScorer", "DefinitionValue", "digit_expectation", "definition_value_formula",
           "digit_token_ids"]

_WEIGHTS = (1.0, 0.1, 0.01)


def digit_expectation(digit_logits: Sequence[Sequence[float]]) -> tuple[float, list[list[float]]]:
    """``(score, per-position probabilities)`` from three rows of ten digit logits
    (positions d0, d1, d2; columns digits 0..9): ``sum_t 10^-t sum_k k softmax_t(k)``."""
    import torch

    logits = torch.as_tensor(digit_logits, dtype=torch.float64)
    if logits.shape != (3, 10):
        raise ValueError(f"need 3x10 digit logits, got {tuple(logits.shape)}")
    probs = torch.softmax(logits, -1)
    expected = (probs * torch.arange(10, dtype=torch.float64)).sum(-1)
    value = float(sum(w * float(e) for w, e in zip(_WEIGHTS, expected, strict=True)))
    return value, probs.tolist()


def definition_value_formula(target_probs: Sequence[float]) -> float:
    """V_d of one sample from ``P(d_t = g_t | g_<t)`` for t = 0, 1, 2."""
    if len(target_probs) != 3:
        raise ValueError("need the probabilities of the three ground-truth digits")
    return float(sum(w * p for w, p in zip(_WEIGHTS, target_probs, strict=True)))


def digit_token_ids(tokenizer: Any) -> tuple[list[int], int]:
    """``(ids of "0".."9", id of ".")``; raises :class:`BackendError` when the tokenizer
    does not encode each as a single token (the digit readout and TDRL need that)."""
    ids = []
    for ch in "0123456789.":
        enc = tokenizer.encode(ch, add_special_tokens=False)
        if len(enc) != 1:
            raise BackendError(f"the digit readout needs {ch!r} to be one token; this "
                               f"tokenizer splits it into {len(enc)}")
        ids.append(enc[0])
    return ids[:10], ids[10]


@dataclass
class DefinitionValue:
    """V_d over a set of samples: ``mean`` (over samples and dimensions) and
    ``per_sample[id][dimension]``."""

    mean: float
    per_sample: dict[str, dict[str, float]]


class DigitsScorer(VLMScorer):
    """DS-IEQA digit readout (see the module docstring); scores on the template's scale."""

    readout = "digits"
    default_template = "ds-ieqa-digits"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.digit_ids, self.dot_id = digit_token_ids(self.backend.tokenizer)

    def readout_config(self) -> dict[str, Any]:
        return {"format": "d.dd", "conditioning": "argmax digit"}

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        prompts = [p for item in items for p in self.render_dimensions(item, self.score_dimensions)]
        rows: list[list[list[float]]] = [[] for _ in prompts]
        conts: list[list[int]] = [[] for _ in prompts]
        encoded = [self.backend.encode_one(p) for p in prompts]  # images processed once
        for step in range(3):
            out = self.backend.forward(prompts, continuations=conts if step else None,
                                       encoded=encoded)
            for i, logits in enumerate(out.logits):
                digit_logits = logits[-1, self.digit_ids]
                rows[i].append(digit_logits.tolist())
                best = self.digit_ids[int(digit_logits.argmax())]
                conts[i] = conts[i] + ([best, self.dot_id] if step == 0 else [best])
        results = []
        n = len(self.score_dimensions)
        for k, item in enumerate(items):
            scores, raw = {}, {}
            for j, dim in enumerate(self.score_dimensions):
                value, probs = digit_expectation(rows[k * n + j])
                scores[dim] = value
                raw[dim] = {"digit_probs": probs,
                            "greedy": self.backend.tokenizer.decode(conts[k * n + j])}
            results.append(ScoreResult(id=item.sample.id, scores=scores, raw=raw))
        return results

    def definition_value(self, samples: Sequence[EditSample],
                         targets: Mapping[str, Mapping[str, float]] | None = None,
                         *, template: Any = None) -> DefinitionValue:
        """V_d of this scorer's prompt (or of ``template``) on labelled samples.

        The prompts of ``batch_size`` samples go through one teacher-forced forward pass
        (the four answer tokens ``d0 . d1 d2`` as continuations); candidates of one source
        share their prompt prefix (``share_key``) as in :meth:`score_items`.

        Args:
            samples: the samples; their images must load.
            targets: ``{sample id: {dimension: ground truth}}`` on the template's scale;
                default: each sample's own ``scores``.
            template: the prompt template to evaluate instead of :attr:`template` (a
                name, file, dict or :class:`~ieqa.prompts.PromptTemplate`); FDMPO passes
                each candidate definition this way.

        Raises:
            ScorerError: a sample lacks a ground truth for a scored dimension.
        """
        from ieqa.scorers.vlm.base import resolve_template

        template = resolve_template(template) if template is not None else self.template
        per_sample: dict[str, dict[str, float]] = {}
        values: list[float] = []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start:start + self.batch_size]
            prompts, conts, keys = [], [], []
            for sample in chunk:
                truth = {canonical_dimension(k): v for k, v in
                         (targets[sample.id] if targets is not None else sample.scores).items()}
                item = LoadedSample(sample, load_image(sample.source) if sample.source else None,
                               load_image(sample.edited))
                for dim in self.score_dimensions:
                    if dim not in truth:
                        raise ScorerError(f"sample {sample.id!r} has no ground truth for {dim!r}")
                    try:
                        text = format_digits(truth[dim])
                    except TrainDataError as exc:
                        raise ScorerError(f"sample {sample.id!r} {dim}: {exc}") from None
                    prompts.append(self.render(item, dim, template))
                    conts.append([self.digit_ids[int(text[0])], self.dot_id,
                                  self.digit_ids[int(text[2])], self.digit_ids[int(text[3])]])
                    keys.append((sample.id, dim))
            out = self.backend.forward(prompts, continuations=conts)
            for (sid, dim), cont, logits in zip(keys, conts, out.logits, strict=True):
                probs = logits.double().softmax(-1)
                target = [float(probs[0, cont[0]]), float(probs[2, cont[2]]),
                          float(probs[3, cont[3]])]
                value = definition_value_formula(target)
                per_sample.setdefault(sid, {})[dim] = value
                values.append(value)
        return DefinitionValue(mean=sum(values) / len(values) if values else float("nan"),
                               per_sample=per_sample)
