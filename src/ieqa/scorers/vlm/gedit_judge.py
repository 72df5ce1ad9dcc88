"""``gedit-judge``: GEdit-Bench's official judge (StepFun, Step1X-Edit), as released: its copy
of VIEScore's ``tie`` prompts, its request and its rules, on any OpenAI-compatible server
(``gpt-4.1`` by default, as released).

What the released ``GEdit-Bench/test_gedit_score.py`` does per item, and ieqa with it:

* the edited image is converted to RGB and **resized to the source image's size** (Pillow's
  default filter for ``resize``, bicubic) before anything else;
* two requests, exactly as VIEScore's (:mod:`ieqa.scorers.vlm.viescore`): the SC prompt
  (context, two-image edit rule, SC scale with the instruction in place of
  ``<instruction>``) with the source and the resized edit, and the PQ prompt with the
  resized edit alone; text first, each image a JPEG at Pillow's default quality, ``{"model",
  "messages", "max_tokens": 1400}`` and nothing else (the server's default temperature);
* SC = min of the SC answer's two scores, PQ = min of the PQ answer's, O = sqrt(SC * PQ),
  integers 0-10 (``sc_min``, ``visual_quality``, ``overall``; the SC parts are
  ``instruction_alignment`` and ``content_preservation``);
* when an answer does not parse, **both** prompts are asked once more
  (``reask_unparsable=1``).

Where ieqa differs: after that second try the released code substitutes a uniformly random
integer for an unparsable answer, and an API error (a content filter, say) becomes an empty
answer and so a random score. ieqa records both as row errors, counted in every table
(``on_malformed="error"``); ``on_malformed="random"`` reproduces the substitution, seeded
and labelled (flag ``substituted``). The prompt texts are read at run time from the
benchmark's ``GEdit-Bench/viescore/vie_prompts.py`` at a pinned commit with a SHA-256 check
(the same bytes as VIEScore's file), or from ``prompts=DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ieqa.backends import Prompt
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample
from ieqa.scorers.vlm.vie_judge import VieJudge
from ieqa.scorers.vlm.viescore import JPEG_QUALITY, MAX_TOKENS

__all__ = ["GEditJudge", "PROMPT_SOURCES", "DEFAULT_MODEL", "DEFAULT_BASE_URL", "REVISION"]

#: the commit of stepfun-ai/Step1X-Edit the prompt file is read at
REVISION = "570eba6ebda0c45c013983a483afbf2fd12bfcbc"
_PROMPTS = SourceFile("stepfun-ai/Step1X-Edit", REVISION, "GEdit-Bench/viescore/vie_prompts.py",
                      "010234af186eb0a70fcb99047cd32ad1da01bed59ca1a95a01335426417cf838")

#: the benchmark's texts for the ``tie`` task, by what ieqa calls them
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("context", _PROMPTS, "_context_no_delimit"),
    PublishedText("edit_rule", _PROMPTS, "_prompts_0shot_two_image_edit_rule"),
    PublishedText("sc_scale", _PROMPTS, "_prompts_0shot_tie_rule_SC", markers=("<instruction>",)),
    PublishedText("pq_rule", _PROMPTS, "_prompts_0shot_rule_PQ"),
)

#: the released judge's model name (undated, as released) and endpoint
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class GEditJudge(VieJudge):
    """GEdit-Bench's judge as released (see the module docstring).

    Args:
        model: the judge's model name (default ``gpt-4.1``, as released; a dated snapshot
            such as ``gpt-4.1-2025-04-14`` pins it).
        base_url: the OpenAI-compatible endpoint (default OpenAI's); the key comes from
            ``OPENAI_API_KEY`` (``-O backend_options={api_key_env: NAME}`` for another).
        prompts: a local copy of the benchmark's repository (``--prompts``).
        on_malformed: ``"error"`` (default: the row is an error, counted) or ``"random"``
            (the released rule: a random integer 0-10, seeded and flagged).
        reask_unparsable: how many times both prompts are asked again when an answer does
            not parse (1 as released; 0 never).
        max_new_tokens: the request's ``max_tokens`` (1400 as released).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "gedit-judge"
    prompt_sources = PROMPT_SOURCES
    malformed_rules = ("error", "random")

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, on_malformed: str = "error",
                 reask_unparsable: int = 1, max_new_tokens: int = MAX_TOKENS,
                 batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: dict[str, Any] | None = None) -> None:
        if int(reask_unparsable) < 0:
            from ieqa.scorers.base import ScorerError

            raise ScorerError(f"reask_unparsable must be >= 0, got {reask_unparsable}")
        self.reask_unparsable = int(reask_unparsable)
        self.configure(score_range=10, max_new_tokens=max_new_tokens, on_malformed=on_malformed)
        self.texts = self.load_prompts(prompts)
        self.init_server_judge(model=model, base_url=base_url, backend=backend,
                               backend_options=backend_options, default_model=DEFAULT_MODEL,
                               default_base_url=DEFAULT_BASE_URL, batch_size=batch_size,
                               max_instruction_chars=max_instruction_chars,
                               request={"max_pixels": None, "image_format": "jpeg",
                                        "jpeg_quality": JPEG_QUALITY})
        self.sc_text = "\n".join([self.texts["context"], self.texts["edit_rule"],
                                  self.texts["sc_scale"]])
        self.pq_text = "\n".join([self.texts["context"], self.texts["pq_rule"]])

    def readout_config(self) -> dict[str, Any]:
        return {**super().readout_config(), "reask_unparsable": self.reask_unparsable,
                "resize_edited_to_source": True}

    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The SC and the PQ request of one item, the edit resized to the source's size."""
        self.needs_source(item, "GEdit-Bench's judge")
        assert item.source is not None
        edited = item.edited.convert("RGB")
        if edited.size != item.source.size:
            edited = edited.resize(item.source.size)
        sc = Prompt(parts=(self.sc_text.replace("<instruction>", item.sample.instruction),
                           item.source, edited))
        return sc, Prompt(parts=(self.pq_text, edited))
