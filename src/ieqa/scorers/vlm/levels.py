"""``vlm-levels``: the Q-Align expected score over the five level words.

The prompt asks for a level and ends right where the answer's level word begins (the
template's ``answer_prefix``, e.g. "The visual quality of the edited image is"). The
readout takes the logits of the next token restricted to the level words' tokens
(``excellent, good, fair, poor, bad``), applies a softmax over those five only, and
returns the expected value with weights 5, 4, 3, 2, 1 (a score in [1, 5]). With BPE
tokenizers a word is read as the token it is written as after a space (" good") unless
the answer prefix already ends with whitespace.

On an OpenAI-compatible server the same expectation is computed from the top
log-probabilities of the first answer token (requested with ``top_logprobs``); level
words outside the returned top-k count as probability 0 (recorded in ``raw``), and an
answer whose top-k holds no level word is a recorded failure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ieqa.backends import ERROR_KINDS, BackendError
from ieqa.prompts.answers import READOUT_LEVEL_WORDS
from ieqa.scorers.base import ScoreResult
from ieqa.scorers.vlm.base import LoadedSample, VLMScorer, request_kind

__all__ = ["LevelsScorer", "level_expectation"]

#: level words, best first, and their weights
_WEIGHTS = (5.0, 4.0, 3.0, 2.0, 1.0)


def level_expectation(level_logits: Sequence[float]) -> tuple[float, list[float]]:
    """``(expected score in [1, 5], probabilities)`` from the five level words' logits
    (ordered as :data:`READOUT_LEVEL_WORDS`): softmax over the five, weights 5..1."""
    if len(level_logits) != len(READOUT_LEVEL_WORDS):
        raise ValueError(f"need {len(READOUT_LEVEL_WORDS)} level logits, got {len(level_logits)}")
    top = max(level_logits)
    exps = [math.exp(v - top) for v in level_logits]
    total = sum(exps)
    probs = [e / total for e in exps]
    return sum(w * p for w, p in zip(_WEIGHTS, probs, strict=True)), probs


class LevelsScorer(VLMScorer):
    """Q-Align level readout (see the module docstring); scores in [1, 5] per dimension.

    Args:
        top_logprobs: how many top tokens to request from an OpenAI-compatible server.
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "levels"
    default_template = "epaiqa-levels"
    needs_local_model = False

    def __init__(self, *, top_logprobs: int = 20, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.top_logprobs = int(top_logprobs)
        self._ids: dict[bool, list[int]] = {}

    def readout_config(self) -> dict[str, Any]:
        return {"level_words": list(READOUT_LEVEL_WORDS), "weights": list(_WEIGHTS)}

    def checkpoint_args(self) -> dict[str, Any]:
        return {"top_logprobs": self.top_logprobs}

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        return (1.0, 5.0)

    def level_token_ids(self, after_space: bool) -> list[int]:
        """Token id of each level word as the next token (``after_space``: the prompt
        already ends with whitespace). Raises when two words share their first token."""
        if after_space not in self._ids:
            tokenizer = self.backend.tokenizer
            ids = [tokenizer.encode(word if after_space else " " + word,
                                    add_special_tokens=False)[0] for word in READOUT_LEVEL_WORDS]
            if len(set(ids)) != len(ids):
                raise BackendError("this tokenizer gives two level words the same first token; "
                                   "the level readout cannot tell them apart")
            self._ids[after_space] = ids
        return self._ids[after_space]

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        prompts = [p for item in items for p in self.render_dimensions(item, self.score_dimensions)]
        if hasattr(self.backend, "forward"):
            rows = self._local(prompts)
        else:
            rows = self._remote(prompts)
        results = []
        n = len(self.score_dimensions)
        for k, item in enumerate(items):
            scores, raw, errors = {}, {}, []
            for j, dim in enumerate(self.score_dimensions):
                row = rows[k * n + j]
                if isinstance(row, str):
                    errors.append(f"{dim}: {row}")
                    continue
                value, probs, missing = row
                scores[dim] = value
                raw[dim] = {"probs": dict(zip(READOUT_LEVEL_WORDS, probs, strict=True))}
                if missing:
                    raw[dim]["missing_from_top_logprobs"] = missing
            if errors:
                results.append(ScoreResult.failed(item.sample.id, "; ".join(errors)))
            else:
                results.append(ScoreResult(id=item.sample.id, scores=scores, raw=raw))
        return results

    def _local(self, prompts: Sequence[Any]) -> list[Any]:
        out = self.backend.forward(prompts, logits=True)
        rows = []
        for prompt, logits in zip(prompts, out.logits, strict=True):
            ids = self.level_token_ids(prompt.answer_prefix[-1:].isspace())
            value, probs = level_expectation(logits[0, ids].tolist())
            rows.append((value, probs, []))
        return rows

    def _remote(self, prompts: Sequence[Any]) -> list[Any]:
        answers = self.backend.generate(prompts, max_new_tokens=1, temperature=0.0,
                                        top_logprobs=self.top_logprobs)
        rows: list[Any] = []
        for (gen,) in answers:
            if gen.error:
                rows.append(f"{ERROR_KINDS.get(request_kind(gen), 'request failed')}: {gen.error}")
                continue
            if not gen.top_logprobs:
                rows.append("the server returned no logprobs; the level readout needs "
                            "top_logprobs (vLLM: --max-logprobs) or use vlm-judge")
                continue
            best: dict[str, float] = {}
            for token, logprob in gen.top_logprobs[0].items():
                word = token.strip().lower()
                if word in READOUT_LEVEL_WORDS:
                    best[word] = math.log(math.exp(best.get(word, -math.inf)) + math.exp(logprob))
            if not best:
                rows.append(f"no level word among the top {self.top_logprobs} first tokens "
                            f"(answer {gen.text!r})")
                continue
            missing = [w for w in READOUT_LEVEL_WORDS if w not in best]
            probs_raw = [math.exp(best[w]) if w in best else 0.0 for w in READOUT_LEVEL_WORDS]
            total = sum(probs_raw)
            probs = [p / total for p in probs_raw]
            rows.append((sum(w * p for w, p in zip(_WEIGHTS, probs, strict=True)), probs, missing))
        return rows
