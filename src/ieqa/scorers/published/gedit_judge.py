"""``gedit-judge``: GEdit-Bench's official judge (StepFun, Step1X-Edit), as released: its copy
of VIEScore's ``tie`` prompts, its request and its rules, on any OpenAI-compatible server
(``gpt-4.1`` by default, as released).

What the released ``GEdit-Bench/test_gedit_score.py`` does per item, and ieqa with it:

* the edited image is converted to RGB and **resized to the source image's size** (Pillow's
  default filter for ``resize``, bicubic) before anything else;
* two requests, exactly as VIEScore's (:mod:`ieqa.scorers.published.viescore`): the SC prompt
  (context, two-image edit rule, SC scale with the instruction in place of
  ``<instruction>``) with the source and the resized edit, and the PQ prompt with the
  resized edit alone; text first, each image a JPEG at Pillow's default quality, ``{"model",
  "messages", "max_tokens": 1400}`` and nothing else (the server's default temperature);
* SC = min of the SC answer's two scores, PQ = min of the PQ answer's, O = sqrt(SC * PQ),
  integers 0-10 (``sc_min``, ``visual_quality``, ``overall``; the SC parts are
  ``instruction_alignment`` and ``content_preservation``);
* when an answer does not parse, **both** prompts are asked once more
  (``reask_unparsable=1``).

The released code's other judge, ``protocol="qwen25vl"``
(``viescore/mllm_tools/qwen25vl_eval.py``): Qwen2.5-VL-72B-Instruct (AWQ) run locally with
transformers, the same texts with the **images first**, each image sent as PNG (lossless)
and resized as ``qwen_vl_utils`` does (sides to multiples of 28, 4·28² to 16384·28²
pixels, Pillow's bicubic), greedy decoding (``do_sample=False``) and at most 512 new tokens;
ieqa runs it on a local model (default ``Qwen/Qwen2.5-VL-72B-Instruct-AWQ``) or, with
``base_url``, on a server of that model (PNG, temperature 0).

Two readings of the same answers. ``raw["released"]`` holds the released code's
(:func:`~ieqa.prompts.answers.released_vie_reading`, checked against the released
``mllm_output_to_dict`` on 40,078 answers): the minimum of whatever list or number it finds
(``[12, 11]`` gives 11, ``{"score": 7}`` gives 7, ``{"score": [6, 4, 9]}`` gives 4), its JSON
repair, and its re-ask rule, which decides when both prompts are asked again (an answer its
reader returns nothing for, an API error included: the released client turns it into an
empty answer). On the give-up pass the released code draws a random integer for an answer
without ``{`` (a valid ``[6, 4]`` or ``7`` included); ieqa leaves such an item out of the
official numbers and counts it (``status: "random"``), unless ``on_malformed="random"``:
then it draws too, seeded by the sample id and labelled (``status: "drawn"``, flag
``substituted``). An answer the released code would go on asking about, or fail on (no
``score``, JSON it cannot mend, an empty list, a score that is not a number, ``sqrt`` of
a negative product),
is ``status: "unread"``, left out and counted. ``bench-editor``'s ``official`` numbers are
this reading; the row's scores are ieqa's strict reading
(:func:`~ieqa.prompts.answers.parse_vie_answer`: two numbers 0-10 or the row is an error),
its ``ieqa`` block. The prompt texts are read at run time from the benchmark's
``GEdit-Bench/viescore/vie_prompts.py`` at a pinned commit with a SHA-256 check (the same
bytes as VIEScore's file), or from ``prompts=DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from ieqa.backends import Prompt
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError
from ieqa.scorers.published.vie_judge import VIE_DIMENSIONS, vie_prompt_sources
from ieqa.scorers.published.viescore import DEFAULT_BASE_URL, VIEScoreScorer
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample, VLMScorer

__all__ = ["GEditJudge", "PROMPT_SOURCES", "DEFAULT_MODEL", "DEFAULT_BASE_URL", "REVISION",
           "PROTOCOLS", "QWEN_MODEL", "qwen_image"]

#: the commit of stepfun-ai/Step1X-Edit the prompt file is read at
REVISION = "570eba6ebda0c45c013983a483afbf2fd12bfcbc"
_PROMPTS = SourceFile("stepfun-ai/Step1X-Edit", REVISION, "GEdit-Bench/viescore/vie_prompts.py",
                      "010234af186eb0a70fcb99047cd32ad1da01bed59ca1a95a01335426417cf838")

#: the benchmark's texts for the ``tie`` task, by what ieqa calls them
PROMPT_SOURCES: tuple[PublishedText, ...] = vie_prompt_sources(_PROMPTS)

#: the released judge's model name (undated, as released)
DEFAULT_MODEL = "gpt-4.1"
#: the released code's judges: GPT through the API, or Qwen2.5-VL-72B run locally
PROTOCOLS: tuple[str, ...] = ("gpt", "qwen25vl")
#: the released local judge (an AWQ checkpoint in float16) and its answer limit
QWEN_MODEL = "Qwen/Qwen2.5-VL-72B-Instruct-AWQ"
QWEN_MAX_NEW_TOKENS = 512
#: qwen_vl_utils' image sizes: sides multiples of 28, 4 * 28^2 to 16384 * 28^2 pixels
QWEN_FACTOR, QWEN_MIN_PIXELS, QWEN_MAX_PIXELS = 28, 4 * 28 * 28, 16384 * 28 * 28


def qwen_image(image: Image.Image) -> Image.Image:
    """An image as ``qwen_vl_utils.fetch_image`` hands it to Qwen2.5-VL's processor (the
    released judge sends it as a PNG data URL, which is lossless): RGB, resized with
    Pillow's default filter (bicubic) to the size transformers' ``smart_resize`` gives for
    :data:`QWEN_FACTOR`, :data:`QWEN_MIN_PIXELS` and :data:`QWEN_MAX_PIXELS`."""
    try:  # transformers' Pillow image processor (the other one needs torchvision)
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize
    except ImportError:  # releases before the split
        from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    image = image.convert("RGB")
    height, width = smart_resize(image.height, image.width, factor=QWEN_FACTOR,
                                 min_pixels=QWEN_MIN_PIXELS, max_pixels=QWEN_MAX_PIXELS)
    return image if (width, height) == image.size else image.resize((width, height))


class GEditJudge(VIEScoreScorer):
    """GEdit-Bench's judge as released (see the module docstring): VIEScore's request
    (:class:`~ieqa.scorers.published.viescore.VIEScoreScorer`) from the benchmark's prompt file,
    the edit resized to the source's size, one re-ask.

    Args:
        model: the judge's model name (default ``gpt-4.1``, as released; a dated snapshot
            such as ``gpt-4.1-2025-04-14`` pins it).
        on_malformed: where the released code draws a random score: ``"error"`` (default:
            the item is left out of the official numbers, counted) or ``"random"`` (drawn
            too: a random integer 0-10, seeded and flagged). ieqa's own reading never draws.
        reask_unparsable: how many times both prompts are asked again when an answer does
            not parse (1 as released; 0 never; above 1 goes beyond the released code,
            which gives up on its second try: a later try is asked for while the give-up
            reading, the one the official numbers use, does not read every answer).
        protocol: ``"gpt"`` (default) or ``"qwen25vl"``, the released local judge (then
            ``model`` is a local checkpoint, default ``Qwen/Qwen2.5-VL-72B-Instruct-AWQ``,
            or a served model with ``base_url``).
        (other arguments: :class:`~ieqa.scorers.published.viescore.VIEScoreScorer`)
    """

    readout = "gedit-judge"
    prompt_sources = PROMPT_SOURCES
    malformed_rules = ("error", "random")
    default_model = DEFAULT_MODEL
    random_in_released_reading = True

    def __init__(self, *, reask_unparsable: int = 1, protocol: str = "gpt",
                 **kwargs: Any) -> None:
        if int(reask_unparsable) < 0:
            raise ScorerError(f"reask_unparsable must be >= 0, got {reask_unparsable}")
        if protocol not in PROTOCOLS:
            raise ScorerError(f"protocol must be one of {', '.join(PROTOCOLS)}, got "
                              f"{protocol!r}")
        self.protocol = protocol
        if protocol == "qwen25vl":
            self._init_qwen(**kwargs)
        else:
            super().__init__(**kwargs)
        self.reask_unparsable = int(reask_unparsable)

    def _init_qwen(self, *, model: str | None = None, base_url: str | None = None,
                   prompts: str | Path | None = None,
                   max_new_tokens: int = QWEN_MAX_NEW_TOKENS, on_malformed: str = "error",
                   batch_size: int = 1,
                   max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                   backend: Any = None, backend_options: dict[str, Any] | None = None) -> None:
        """The released local judge (see the module docstring): greedy, images first; one
        item per batch by default, as released (no padding)."""
        self.configure(score_range=10, temperature=0.0, top_p=1.0,
                       max_new_tokens=max_new_tokens, on_malformed=on_malformed)
        self.texts = self.load_prompts(prompts)
        options = dict(backend_options or {})
        if backend is None:
            model = model or QWEN_MODEL
            if base_url is None:  # the images come resized already; the processor keeps them
                options.setdefault("min_pixels", QWEN_MIN_PIXELS)
                options.setdefault("max_pixels", QWEN_MAX_PIXELS)
            else:
                options.setdefault("max_pixels", None)
                options.setdefault("image_format", "png")
        VLMScorer.__init__(self, model=model, base_url=base_url, backend=backend,
                           template="editreward", dimensions=VIE_DIMENSIONS,
                           batch_size=batch_size, max_instruction_chars=max_instruction_chars,
                           backend_options=options)
        self.sc_text = "\n".join([self.texts["context"], self.texts["edit_rule"],
                                  self.texts["sc_scale"]])
        self.pq_text = "\n".join([self.texts["context"], self.texts["pq_rule"]])

    def readout_config(self) -> dict[str, Any]:
        return {**super().readout_config(), "resize_edited_to_source": True,
                "protocol": self.protocol}

    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The SC and the PQ request of one item, the edit resized to the source's size."""
        self.needs_source(item, "GEdit-Bench's judge")
        assert item.source is not None
        edited = item.edited.convert("RGB")
        if edited.size != item.source.size:
            edited = edited.resize(item.source.size)
        if self.protocol == "qwen25vl":  # images first, as qwen_vl_utils sizes them
            source, edited = qwen_image(item.source), qwen_image(edited)
            text = self.sc_text.replace("<instruction>", item.sample.instruction)
            return Prompt(parts=(source, edited, text)), Prompt(parts=(edited, self.pq_text))
        return super().prompts(LoadedSample(item.sample, item.source, edited))

