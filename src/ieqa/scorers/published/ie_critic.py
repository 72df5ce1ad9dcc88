"""``ie-critic-r1``: IE-Critic-R1 (Qu et al. 2025, Coobiw/IE-Critic-R1), a pointwise critic
that reasons before it scores: ``<think>...</think><answer>score</answer>``, one overall
quality score of the edit on 1-5.

What the authors' ``scripts/iebench_eval.py`` (the README's evaluation) does, and ieqa with
it on a local model:

* the model is ``Coobiw/IE-Critic-R1-7B`` (a whole Qwen2.5-VL-7B, no adapter); its
  processor with ``min_pixels=262144``, ``max_pixels=1048576``, left padding;
* one chat per edit: a user turn with the source image, the edited image and the authors'
  ``CoT_PROMPT`` with the instruction in ``{edit_instruction}`` (the text begins with two
  literal ``<image>`` strings, which stay), then an assistant turn ``"<think>"``, rendered
  by the chat template *without* a generation prompt, so the model writes after the closed
  turn (:attr:`~ieqa.backends.Prompt.assistant_turn`);
* the images go through ``qwen_vl_utils.process_vision_info`` first (resized to Qwen's
  default grid budget, :func:`~ieqa.backends.base.fit_qwen_grid`) and then the processor's
  own budget;
* greedy decoding, at most 2048 new tokens, special tokens skipped;
* the answer read by ``extract_answer_from_response(text.strip().rstrip("."))``: the text
  between ``<answer>`` and ``</answer>`` (after ``<answer>`` when there is no end tag; the
  whole text when there is no tag) as a float; an answer it cannot read is left out of the
  correlations.

ieqa reads the answer with that same rule (:func:`released_answer`, kept in
``raw["released"]``) and, strictly, requires the number to lie on the released 1-5 scale:
an answer the rule cannot read, or a number off the scale, is a row error, counted, never a
score. The reasoning inside ``<think>`` is the explanation.

On a server (``-O base_url=URL``, vLLM as the authors' ``scripts/vllm_serve.sh`` starts it,
with their ``qwen25vl_think_template.jina`` chat template and the same pixel budget as
``--mm-processor-kwargs``), the request is their ``iebench_eval_vllm.py``'s: the user turn
with both images as PNG, the ``"<think>"`` assistant turn, ``max_tokens`` 2048 and
``temperature`` 0 with ``top_p`` 1.0 (their script samples at ``temperature`` 1.0 with
``top_p`` 0.9 unless told otherwise; ``-O temperature=1.0`` gives that).

The prompt text is read at run time from the authors' ``scripts/iebench_eval.py`` at a
pinned commit with a SHA-256 check, or from ``prompts=DIR``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.backends import EncodedImage, Prompt
from ieqa.backends.base import fit_qwen_grid
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge, local_backend_options
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    failure,
    request_kind,
)

__all__ = ["IECriticR1", "PROMPT_SOURCES", "HUB_ID", "REVISION", "released_answer"]

#: the commit of Coobiw/IE-Critic-R1 the prompt is read at
REVISION = "357c239709aeabb3393ac8af76c2c9103568d70c"
_EVAL = SourceFile("Coobiw/IE-Critic-R1", REVISION, "scripts/iebench_eval.py",
                   "b77d6b3fc0136f89d1cb4e847048a2311eed4227f269b49fb32423bdb4e70737")
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("cot", _EVAL, "CoT_PROMPT", ("edit_instruction",),
                  markers=("<think>", "<answer>")),)
#: the released weights
HUB_ID = "Coobiw/IE-Critic-R1-7B"
#: the processor's pixel budget in the released evaluation
PIXELS = (262144, 1048576)
#: the closed assistant turn the released chat ends with
ASSISTANT_TURN = "<think>"
MAX_NEW_TOKENS = 2048
SCALE = (1.0, 5.0)
_THINK = re.compile(r"<think>(.*?)</think>", re.S)


def released_answer(text: str) -> float | None:
    """The released ``extract_answer_from_response(text.strip().rstrip("."))``: the float
    between ``<answer>`` and the next ``</answer>`` (to the end without an end tag; the whole
    text without tags), ``None`` when that is not a float."""
    response = text.strip().rstrip(".")
    start = response.find("<answer>")
    end = response.find("</answer>", start + len("<answer>"))
    if end == -1:
        body = response if start == -1 else response[start + len("<answer>"):]
    else:
        body = response[start + len("<answer>"):end]
    try:
        return float(body.strip())
    except ValueError:
        return None


class IECriticR1(PublishedJudge):
    """IE-Critic-R1 as released (see the module docstring).

    Args:
        model: the release (hub id, default ``Coobiw/IE-Critic-R1-7B``, or a local folder);
            with ``base_url``, the served model's name.
        base_url: an OpenAI-compatible server (vLLM) serving it; default: run it locally.
        prompts: a local copy of the authors' repository (``--prompts``).
        temperature: 0 (default, greedy as the transformers evaluation); above 0 samples
            with ``top_p`` 0.9 as their vLLM script does.
        max_new_tokens: the answer limit (2048 as released).
        device, dtype, attn_implementation: the local model's settings.
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "ie-critic-r1"
    prompt_sources = PROMPT_SOURCES
    default_model = HUB_ID
    judged = ("overall",)
    released_range = SCALE
    released_body: Mapping[str, Any] = {}

    def __init__(self, *, model: str | Path | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, temperature: float = 0.0,
                 max_new_tokens: int = MAX_NEW_TOKENS, device: str | None = "auto",
                 dtype: str = "auto", attn_implementation: str | None = None,
                 batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: Mapping[str, Any] | None = None) -> None:
        if float(temperature) < 0:
            raise ScorerError(f"temperature must be >= 0, got {temperature}")
        if int(max_new_tokens) < 1:
            raise ScorerError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        options = dict(backend_options or {})
        if backend is None and base_url is None:  # the transformers evaluation
            model = str(model) if model is not None else HUB_ID
            options = local_backend_options(options, device=device, dtype=dtype, pixels=PIXELS,
                                            attn_implementation=attn_implementation)
        super().__init__(model=None if model is None else str(model), base_url=base_url,
                         prompts=prompts, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, backend=backend,
                         backend_options=options)

    @property
    def dimensions(self) -> tuple[str, ...]:
        return ("overall",)

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "assistant_turn": ASSISTANT_TURN, **self.prompts_config()}

    def check_sample(self, sample: Any) -> None:
        super().check_sample(sample)
        if sample.source is None:
            raise ScorerError(f"sample {sample.id!r} has no source image; IE-Critic-R1 "
                              "compares the edit with its source")

    def prompt(self, item: LoadedSample) -> Prompt:
        """The released chat of one edit (see the module docstring)."""
        assert item.source is not None
        text = self.texts["cot"].format(edit_instruction=item.sample.instruction)
        if self.local:  # process_vision_info's resize, then the processor's budget
            images = tuple(fit_qwen_grid(im.convert("RGB")) for im in (item.source, item.edited))
        else:
            images = tuple(EncodedImage.png(im) for im in (item.source, item.edited))
        return Prompt(parts=(*images, text), assistant_turn=ASSISTANT_TURN)

    # ----------------------------------------------------------------------- scoring
    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        return {"answer": self.prompt(item)}

    def generation_options(self) -> dict[str, Any]:
        sampled = self.temperature > 0
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": 0.9 if sampled else 1.0}

    def read_answers(self, item: LoadedSample, answers: Mapping[str, Any]) -> ScoreResult:
        gen = answers["answer"]
        raw: dict[str, Any] = {"text": gen.text}
        if gen.server:
            raw["server"] = gen.server
        if gen.error:
            raw["released"] = {"score": None}
            return failure(item.sample.id, raw, [(request_kind(gen), gen.error)])
        score = released_answer(gen.text)
        raw["released"] = {"score": score}
        if score is None:
            return failure(item.sample.id, raw, [("unreadable", "no number in <answer> (the "
                                                  "released reading leaves this edit out)")])
        if not math.isfinite(score) or not SCALE[0] <= score <= SCALE[1]:
            return failure(item.sample.id, raw, [("unreadable", f"the answer {score} is off "
                                                  "the released 1-5 scale")])
        thought = _THINK.search(ASSISTANT_TURN + gen.text) or _THINK.search(gen.text)
        return ScoreResult(id=item.sample.id, scores={"overall": score}, raw=raw,
                           explanation=thought.group(1).strip() if thought else None)
