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

from typing import Any

from ieqa.backends import Prompt
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError
from ieqa.scorers.vlm.base import LoadedSample
from ieqa.scorers.vlm.viescore import DEFAULT_BASE_URL, VIEScoreScorer

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

#: the released judge's model name (undated, as released)
DEFAULT_MODEL = "gpt-4.1"


class GEditJudge(VIEScoreScorer):
    """GEdit-Bench's judge as released (see the module docstring): VIEScore's request
    (:class:`~ieqa.scorers.vlm.viescore.VIEScoreScorer`) from the benchmark's prompt file,
    the edit resized to the source's size, one re-ask.

    Args:
        model: the judge's model name (default ``gpt-4.1``, as released; a dated snapshot
            such as ``gpt-4.1-2025-04-14`` pins it).
        on_malformed: ``"error"`` (default: the row is an error, counted) or ``"random"``
            (the released rule: a random integer 0-10, seeded and flagged).
        reask_unparsable: how many times both prompts are asked again when an answer does
            not parse (1 as released; 0 never).
        (other arguments: :class:`~ieqa.scorers.vlm.viescore.VIEScoreScorer`)
    """

    readout = "gedit-judge"
    prompt_sources = PROMPT_SOURCES
    malformed_rules = ("error", "random")
    default_model = DEFAULT_MODEL

    def __init__(self, *, reask_unparsable: int = 1, **kwargs: Any) -> None:
        if int(reask_unparsable) < 0:
            raise ScorerError(f"reask_unparsable must be >= 0, got {reask_unparsable}")
        self.reask_unparsable = int(reask_unparsable)
        super().__init__(**kwargs)

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
        return super().prompts(LoadedSample(item.sample, item.source, edited))
