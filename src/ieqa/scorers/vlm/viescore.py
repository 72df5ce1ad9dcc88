"""``viescore``: VIEScore (Ku et al., ACL 2024) for text-guided image editing, as published:
its prompts, its request, its rules, on any OpenAI-compatible judge (GPT-4o by default, as
released).

Per edit, VIEScore's ``tie`` task sends two requests:

* **SC**: the context, the two-image edit rule and the SC scale (the instruction in place of
  ``<instruction>``), joined by line breaks; then the source and the edited image;
* **PQ**: the context and the PQ rule; then the edited image.

Each request is ``{"model", "messages": [one user message: the text, then the images],
"max_tokens": 1400}`` and nothing else (no temperature: the server's default); each image is
a JPEG at Pillow's default quality (75) as a ``data:image/jpeg;base64,`` URL, not resized.
The answers are read on 0-10: ``SC = min`` of its two scores, ``PQ = min`` of its two,
``O = sqrt(SC * PQ)`` (:class:`~ieqa.scorers.vlm.vie_judge.VieJudge`, one pass). ieqa
reports SC's parts as ``instruction_alignment`` (editing success) and
``content_preservation`` (over-editing), SC itself as ``sc_min``, PQ as ``visual_quality``
and O as ``overall``.

A malformed answer is a row error: VIEScore's code asks again and then guesses a random
score, which ieqa never does. The prompt texts are the authors': read at run time from
``viescore/vie_prompts.py`` of their repository at a pinned commit with a SHA-256 check, or
from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ieqa.backends import OPENAI_BASE_URL, Prompt
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample
from ieqa.scorers.vlm.vie_judge import VieJudge

__all__ = ["VIEScoreScorer", "PROMPT_SOURCES", "DEFAULT_MODEL", "DEFAULT_BASE_URL"]

#: the commit of TIGER-AI-Lab/VIEScore the prompt file is read at
REVISION = "2cbea4e8ce5721425a8772590ecdbe7d2edd1721"
_PROMPTS = SourceFile("TIGER-AI-Lab/VIEScore", REVISION, "viescore/vie_prompts.py",
                      "010234af186eb0a70fcb99047cd32ad1da01bed59ca1a95a01335426417cf838")

#: the authors' texts for the ``tie`` task, by what ieqa calls them
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("context", _PROMPTS, "_context_no_delimit"),
    PublishedText("edit_rule", _PROMPTS, "_prompts_0shot_two_image_edit_rule"),
    PublishedText("sc_scale", _PROMPTS, "_prompts_0shot_tie_rule_SC", markers=("<instruction>",)),
    PublishedText("pq_rule", _PROMPTS, "_prompts_0shot_rule_PQ"),
)

#: VIEScore's released judge (its GPT-4o wrapper's model) and endpoint
DEFAULT_MODEL = "gpt-4o-2024-05-13"
DEFAULT_BASE_URL = OPENAI_BASE_URL
#: VIEScore's request settings: the answer limit and the JPEG quality of its images
MAX_TOKENS, JPEG_QUALITY = 1400, 75


class VIEScoreScorer(VieJudge):
    """VIEScore as published (see the module docstring).

    Args:
        model: the judge's model name (default ``gpt-4o-2024-05-13``, VIEScore's GPT-4o).
        base_url: the OpenAI-compatible endpoint (default OpenAI's); the key comes from
            ``OPENAI_API_KEY`` (``-O backend_options={api_key_env: NAME}`` for another).
        prompts: a local copy of the authors' repository (``--prompts``).
        max_new_tokens: the request's ``max_tokens`` (1400 as published).
        on_malformed: ``"error"``, the only rule here (a subclass may allow more).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "viescore"
    prompt_sources = PROMPT_SOURCES
    #: the judge's model name when none is given (a subclass with other prompt files,
    #: GEdit-Bench's judge, sets its own)
    default_model = DEFAULT_MODEL

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, max_new_tokens: int = MAX_TOKENS,
                 on_malformed: str = "error", batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: dict[str, Any] | None = None) -> None:
        self.configure(score_range=10, max_new_tokens=max_new_tokens, on_malformed=on_malformed)
        self.texts = self.load_prompts(prompts)
        self.init_server_judge(model=model, base_url=base_url, backend=backend,
                               backend_options=backend_options, default_model=self.default_model,
                               default_base_url=DEFAULT_BASE_URL, batch_size=batch_size,
                               max_instruction_chars=max_instruction_chars,
                               request={"max_pixels": None, "image_format": "jpeg",
                                        "jpeg_quality": JPEG_QUALITY})
        self.sc_text = "\n".join([self.texts["context"], self.texts["edit_rule"],
                                  self.texts["sc_scale"]])
        self.pq_text = "\n".join([self.texts["context"], self.texts["pq_rule"]])

    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The SC and the PQ request of one edit: the text, then the images."""
        self.needs_source(item, "VIEScore")
        sc = Prompt(parts=(self.sc_text.replace("<instruction>", item.sample.instruction),
                           item.source, item.edited))
        return sc, Prompt(parts=(self.pq_text, item.edited))
