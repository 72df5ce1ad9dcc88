"""``editscore``: EditScore's released judges, scoring as their authors' code does.

EditScore (Luo et al. 2025, VectorSpaceLab) released LoRA adapters on Qwen2.5-VL-Instruct
(7B, 32B, 72B) that answer VIEScore-style prompts on a 0-25 scale. Per edit and pass:

* the **SC prompt** (source and edited image, the instruction) answers two scores,
  prompt following and consistency (over-editing);
* the **PQ prompt** (the edited image) answers two scores, naturalness and artifacts;
* each score is divided by ``score_range / 10`` (0-10); ``SC = min`` of the SC scores,
  ``PQ = min`` of the PQ scores, ``O = sqrt(SC * PQ)``.

Every pass samples (temperature 0.7, top_p 0.9, top_k 20, 512 new tokens) with seed
``seed + pass``; on the transformers path each answer is generated on its own right after
seeding, as the authors' code does, so a pass is reproducible from its seed. Over the
passes:

* ``instruction_alignment`` = mean prompt following, ``content_preservation`` = mean
  consistency, ``visual_quality`` = mean PQ, ``sc_min`` = mean SC (min of the SC scores);
* ``overall`` by ``reduction``: ``average_last`` (default; the mean of the per-pass O),
  ``average_first`` (``sqrt(mean prompt following * mean PQ)``, as the authors'
  ``evaluate()`` computes it) or ``average_first_min_sc`` (``sqrt(mean SC * mean PQ)``, as
  their RL reward server's ``batch_evaluate()`` does).

On Qwen2.5-VL (``7b``, ``32b``, ``72b``) the model sees each image after an ``<imgN>: ``
label, then the prompt text, after the Qwen chat template's default system message
(:data:`SYSTEM`); each image is first resized as ``qwen_vl_utils`` does
(:func:`ieqa.backends.base.fit_qwen_grid`). On Qwen3-VL (``qwen3-vl-4b``, ``-8b``,
``-32b``; the authors' ``qwen3vl`` backbone) the chat is the processor's own template, the
images first without labels and no system message of ieqa's; the transformers path hands
the images to the processor as they are (its own resizing), and a server gets them resized
as ``qwen_vl_utils`` does, as the authors' vLLM path sends them.

**Malformed answers** make the row an error (:class:`~ieqa.scorers.published.vie_judge.VieJudge`);
nothing is guessed. The authors' code retries and then draws a random score
(``evaluate()``); their RL server first repairs malformed JSON with a lenient parser, then
substitutes the midpoint for an answer without scores and ``score_range / 2`` *after*
rescaling (12.5 on 0-10) for an out-of-range one. ``on_malformed="midpoint"`` is ieqa's
labelled, simpler version of that rule: ``score_range / 2`` (5 on 0-10) for each score of
any answer ieqa cannot read, repairs included; counted, and the row flagged.

**EditScore's own reading** of the same answers is kept in ``raw["released"]``
(:meth:`EditScoreScorer.released_reading`): the authors' ``evaluate()`` with their reader
(:func:`~ieqa.prompts.answers.released_editscore_reading`, checked against it on 40,102
answers); where it would fail, ask again or draw, the row's released reading is left out
(``unread``, ``random``) and counted. ``ieqa bench`` reports both readings.

The prompt texts are the authors': read at run time from their repository's
``editscore/vie_prompts.py`` at a pinned commit with a SHA-256 check
(:mod:`ieqa.prompts.published`), or from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.backends import Prompt
from ieqa.backends.base import fit_qwen_grid
from ieqa.data.combine import sqrt_product
from ieqa.prompts.answers import (
    EDITSCORE_REFUSAL,
    ReleasedScores,
    released_editscore_reading,
)
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.vie_judge import VIE_DIMENSIONS, VieJudge, vie_prompt_sources
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["EditScoreScorer", "EditScoreVariant", "VARIANTS", "PROMPT_SOURCES"]

#: the commit of VectorSpaceLab/EditScore the prompt file is read at
REVISION = "6e0f1b9a73b40f227d82d9cb32bd9cfb7189739b"
_PROMPTS = SourceFile("VectorSpaceLab/EditScore", REVISION, "editscore/vie_prompts.py",
                      "14dee0ac57433f096ee3c44aa84577576f546c41df56e19b8d85ac44c175aa29")

#: the authors' texts, by what ieqa calls them. The SC prompt is context, edit rule and SC
#: scale joined by line breaks; the PQ prompt is context and PQ rule. Every "10" of the scale
#: texts becomes the score range, as the authors' code does; the instruction goes into
#: ``<instruction>``.
PROMPT_SOURCES: tuple[PublishedText, ...] = vie_prompt_sources(
    _PROMPTS, context="_context_no_delimit_reasoning_first", scaled=True)

#: the system message of EditScore's hand-written chat template: Qwen2.5-VL's default one
#: (sent explicitly, so that a chat template without that default renders it too)
SYSTEM = "You are a helpful assistant."

#: the pixel budget and grid of qwen_vl_utils' image resizing (Qwen2.5-VL: 28-px cells)
MIN_PIXELS, MAX_PIXELS, GRID = 4 * 28 * 28, 16384 * 28 * 28, 28


def _qwen_vl_utils(image: Any) -> Any:
    """``image`` resized as ``qwen_vl_utils``' ``fetch_image`` does (28-pixel grid)."""
    return fit_qwen_grid(image, factor=GRID, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)


@dataclass(frozen=True)
class EditScoreVariant:
    """One released EditScore model.

    Attributes:
        adapter: hub id of the LoRA adapter.
        base_model: hub id of the VLM it adapts.
        vram_bf16: about how much GPU memory the merged model takes at bf16 (weights only).
        chat: how the authors' code builds the chat of this base family: ``"labelled"``
            (Qwen2.5-VL: their hand-written template, the default system message, an
            ``<imgN>: `` label before each image, each image resized as ``qwen_vl_utils``
            does) or ``"processor"`` (Qwen3-VL: the processor's own chat template with the
            images first and no label; on the transformers path the images go to the
            processor as they are, on the vLLM path resized by ``qwen_vl_utils`` first).
    """

    adapter: str
    base_model: str
    vram_bf16: str
    chat: str = "labelled"


#: the released models (``variant=``); the first is the default
VARIANTS: dict[str, EditScoreVariant] = {
    "7b": EditScoreVariant("EditScore/EditScore-7B", "Qwen/Qwen2.5-VL-7B-Instruct", "17 GB"),
    "32b": EditScoreVariant("EditScore/EditScore-32B", "Qwen/Qwen2.5-VL-32B-Instruct", "67 GB"),
    "72b": EditScoreVariant("EditScore/EditScore-72B", "Qwen/Qwen2.5-VL-72B-Instruct", "147 GB"),
    "qwen3-vl-4b": EditScoreVariant("EditScore/EditScore-Qwen3-VL-4B-Instruct",
                                    "Qwen/Qwen3-VL-4B-Instruct", "9 GB", chat="processor"),
    "qwen3-vl-8b": EditScoreVariant("EditScore/EditScore-Qwen3-VL-8B-Instruct",
                                    "Qwen/Qwen3-VL-8B-Instruct", "18 GB", chat="processor"),
    "qwen3-vl-32b": EditScoreVariant("EditScore/EditScore-Qwen3-VL-32B-Instruct",
                                     "Qwen/Qwen3-VL-32B-Instruct", "67 GB", chat="processor"),
}


class EditScoreScorer(VieJudge):
    """EditScore as released (see the module docstring).

    Args:
        model: the base VLM (hub id or local folder; default the variant's), or the served
            model's name with ``base_url`` (a vLLM server with the adapter as a LoRA
            module: ``--lora-modules NAME=EditScore/EditScore-7B``).
        adapter: the LoRA adapter (hub id or local folder); default the variant's. Not used
            with ``base_url`` (the server holds it).
        variant: ``"7b"`` (default), ``"32b"``, ``"72b"`` (Qwen2.5-VL) or
            ``"qwen3-vl-4b"``, ``"qwen3-vl-8b"``, ``"qwen3-vl-32b"`` (Qwen3-VL): the default
            adapter and base, and how the chat is built (:data:`VARIANTS`).
        revision, adapter_revision: hub revisions of the base model and the adapter.
        base_url: an OpenAI-compatible server (``http://host:8000/v1``).
        prompts: a local copy of the authors' repository (``--prompts``).
        score_range: the scale the prompts ask for, 25 (released) or 10.
        num_pass: passes per edit (1 released default; 4 for the RL reward).
        reduction: ``average_last`` (default), ``average_first`` or
            ``average_first_min_sc`` (see the module docstring).
        temperature, top_p, top_k, seed, max_new_tokens: sampling of each pass (pass
            ``k`` uses seed ``seed + k``); the released values are the defaults.
        pq_images: ``"edited"`` (``evaluate()``: the PQ prompt sees the edited image) or
            ``"both"`` (the RL server's ``batch_evaluate()``: source and edited).
        on_malformed: ``"error"`` (default: the row is an error) or ``"midpoint"``
            (labelled substitution of ``score_range / 2``, flag ``substituted``; close to,
            not the same as, the authors' RL server: see the module docstring).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "editscore"
    malformed_rules = ("error", "midpoint")
    prompt_sources = PROMPT_SOURCES

    def __init__(self, *, model: str | Path | None = None, adapter: str | Path | None = None,
                 variant: str = "7b", revision: str | None = None,
                 adapter_revision: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, score_range: int = 25, num_pass: int = 1,
                 reduction: str = "average_last", temperature: float = 0.7, top_p: float = 0.9,
                 top_k: int | None = 20, seed: int = 42, max_new_tokens: int = 512,
                 pq_images: str = "edited", on_malformed: str = "error",
                 batch_size: int = 8, device: str | None = "auto", dtype: str = "auto",
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: dict[str, Any] | None = None) -> None:
        if variant not in VARIANTS:
            raise ScorerError(f"unknown EditScore variant {variant!r}; choose one of "
                              f"{', '.join(VARIANTS)}")
        if score_range not in (10, 25):
            raise ScorerError(f"score_range must be 25 (released) or 10, got {score_range!r}")
        if pq_images not in ("edited", "both"):
            raise ScorerError(f"pq_images must be edited or both, got {pq_images!r}")
        if float(temperature) <= 0:
            raise ScorerError("EditScore samples every pass: temperature must be > 0 "
                              f"(released: 0.7), got {temperature}")
        self.configure(score_range=score_range, num_pass=num_pass, reduction=reduction,
                       temperature=temperature, top_p=top_p, top_k=top_k, seed=seed,
                       max_new_tokens=max_new_tokens, on_malformed=on_malformed)
        chosen = VARIANTS[variant]
        self.texts = self.load_prompts(prompts)  # fails before the model
        self.variant = variant
        self.pq_images = pq_images
        options = dict(backend_options or {})
        if adapter is not None and ("adapter" in options or backend is not None):
            raise ScorerError("the adapter is given twice (adapter= and backend_options' adapter, "
                              "or a ready backend= which holds its own); pass it once, as "
                              "adapter= (CLI --adapter)")
        if backend is None and base_url is None:
            options.setdefault("adapter", str(adapter) if adapter is not None else chosen.adapter)
            for key, value in (("revision", revision), ("adapter_revision", adapter_revision)):
                if value is not None:
                    options.setdefault(key, value)
            model = model if model is not None else chosen.base_model
        elif backend is None:
            if adapter is not None:
                raise ScorerError("with base_url the server holds the adapter (vLLM: --enable-lora "
                                  "--lora-modules NAME=ADAPTER); pass --model NAME, not --adapter")
            if model is None:
                raise ScorerError("with base_url, --model names the served EditScore model (the "
                                  "NAME of vLLM's --lora-modules NAME=ADAPTER)")
            options.setdefault("max_pixels", None)  # images are resized here, as published
            options.setdefault("image_format", "png")
        super().__init__(model=model, base_url=base_url, backend=backend, template="editreward",
                         dimensions=VIE_DIMENSIONS, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, device=device, dtype=dtype,
                         backend_options=options)
        scale = str(self.score_range_asked)
        self.sc_text = "\n".join([self.texts["context"], self.texts["edit_rule"],
                                  self.texts["sc_scale"].replace("10", scale)])
        self.pq_text = "\n".join([self.texts["context"],
                                  self.texts["pq_rule"].replace("10", scale)])

    def readout_config(self) -> dict[str, Any]:
        return {"variant": self.variant, **super().readout_config(),
                "pq_images": self.pq_images}

    # ------------------------------------------------------------ the released reading
    def released_reading(self, result: ScoreResult, item: LoadedSample, sc_gens: Sequence[Any],
                         pq_gens: Sequence[Any], *, asked: int) -> None:
        """``raw["released"]``: what the released ``evaluate()`` computes from the answers
        (see the module docstring): per pass its reader
        (:func:`~ieqa.prompts.answers.released_editscore_reading`), prompt following and
        consistency the SC answer's first two scores, PQ the minimum of the PQ answer's,
        O = sqrt(min SC · PQ), each over ``score_range / 10``; over the passes their means
        (``overall`` by the reduction). ``status``: ``read``, ``random`` (the released code
        would draw: a refusal) or ``unread`` (it would ask again, or fail), with ``reason``."""
        if self.reduction == "average_first_min_sc" or self.pq_images == "both":
            result.raw["released"] = {
                "status": "none", "reason": "the released batch_evaluate() (the RL server) "
                "reads answers with another parser, not reproduced here: evaluate()'s reading "
                "is recorded with reduction average_last or average_first and pq_images edited"}
            return
        unit = self.score_range_asked / 10
        passes: list[tuple[float, float, float, float]] = []
        reasons: list[str] = []
        status = "read"
        for p, (sc_gen, pq_gen) in enumerate(zip(sc_gens, pq_gens, strict=True)):
            texts = ["" if gen.error else gen.text for gen in (sc_gen, pq_gen)]
            give_up = EDITSCORE_REFUSAL in texts  # the released check: an exact match
            sc, pq = (released_editscore_reading(t, give_up=give_up) for t in texts)
            where = f"pass {p + 1}: " if len(sc_gens) > 1 else ""
            if sc.status == "random":
                status = "random" if status == "read" else status
                reasons.append(f"{where}a refusal: the released code draws a random score")
                continue
            problem = next(((n, r) for n, r in (("SC", sc), ("PQ", pq)) if r.status != "read"),
                           None)
            if problem is None and sc.scores is not None and len(sc.scores) < 2:
                problem = ("SC", ReleasedScores("fails", reason="one score: evaluate() takes "
                                                                "the second and fails"))
            if problem is not None:
                status = "unread"
                name, reading = problem
                why = reading.reason
                if reading.status == "ask_again":
                    why += " (twice at most, then it draws a random score; ieqa asked once)"
                reasons.append(f"{where}{name}: {why}")
                continue
            assert sc.scores is not None and pq.scores is not None
            low, quality = min(sc.scores) / unit, min(pq.scores) / unit
            if low * quality < 0:
                status = "unread"
                reasons.append(f"{where}sqrt(SC * PQ) of {low:g} * {quality:g} fails in the "
                               "released code")
                continue
            if p == len(sc_gens) - 1 and not (sc.reasoning and pq.reasoning):
                status = "unread"  # evaluate() returns the last pass's reasoning
                reasons.append(f"{where}no 'reasoning' in the answer: the released evaluate() "
                               "fails on it")
                continue
            passes.append((sc.scores[0] / unit, sc.scores[1] / unit, quality,
                           sqrt_product(low, quality)))
        out: dict[str, Any] = {"status": status, "asked": asked}
        if status == "read":
            mean = [sum(v[k] for v in passes) / len(passes) for k in range(4)]
            overall = mean[3]
            if self.reduction == "average_first":
                product = mean[0] * mean[2]
                overall = math.sqrt(product) if product >= 0 else math.nan
            out["scores"] = {"instruction_alignment": mean[0], "content_preservation": mean[1],
                             "visual_quality": mean[2], "overall": overall}
        else:
            out["reason"] = "; ".join(reasons)
        result.raw["released"] = out

    # ----------------------------------------------------------------------- prompts
    @staticmethod
    def labelled(images: Sequence[Any], text: str) -> Prompt:
        """A prompt as EditScore builds it for Qwen2.5-VL: ``<img1>: IMAGE<img2>:
        IMAGE...TEXT`` after the default system message, each image resized on the Qwen grid
        first (:func:`~ieqa.backends.base.fit_qwen_grid`)."""
        parts: list[Any] = []
        for i, image in enumerate(images, 1):
            parts += [f"<img{i}>: ", _qwen_vl_utils(image)]
        return Prompt(parts=(*parts, text), system=SYSTEM)

    def unlabelled(self, images: Sequence[Any], text: str) -> Prompt:
        """A prompt as EditScore builds it for Qwen3-VL: the images, then the text, in the
        processor's chat template (no system message of its own); the images go as they
        are to a local model's processor, and resized as ``qwen_vl_utils`` does to a
        server (the authors' vLLM path)."""
        local = hasattr(self.backend, "forward")
        return Prompt(parts=(*(image if local else _qwen_vl_utils(image) for image in images),
                             text))

    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The SC and the PQ prompt of one edit."""
        self.needs_source(item, "EditScore")
        build = self.labelled if VARIANTS[self.variant].chat == "labelled" else self.unlabelled
        sc = build([item.source, item.edited],
                   self.sc_text.replace("<instruction>", item.sample.instruction))
        pq_images = [item.edited] if self.pq_images == "edited" else [item.source, item.edited]
        return sc, build(pq_images, self.pq_text)
