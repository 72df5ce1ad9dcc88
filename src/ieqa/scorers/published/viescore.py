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
``O = sqrt(SC * PQ)`` (:class:`~ieqa.scorers.published.vie_judge.VieJudge`, one pass). ieqa
reports SC's parts as ``instruction_alignment`` (editing success) and
``content_preservation`` (over-editing), SC itself as ``sc_min``, PQ as ``visual_quality``
and O as ``overall``.

Two readings of the same answers. ieqa's: a malformed answer (not exactly two numbers
0-10) is a row error. VIEScore's own, in ``raw["released"]`` (:meth:`~VIEScoreScorer.
released_reading`, the rules of :func:`~ieqa.prompts.answers.released_vie_reading`, the
reader GEdit-Bench copied): the minimum of whatever list or number its reader finds, and
its re-ask rule (both prompts asked once more when its reader returns nothing,
``reask_unparsable=1``); where VIEScore's code then guesses a random score, ieqa leaves the
row's released reading out (``status: "random"``) and guesses nothing. ``ieqa bench``
reports a benchmark's metrics over both readings. The prompt texts are the authors': read at run time from
``viescore/vie_prompts.py`` of their repository at a pinned commit with a SHA-256 check, or
from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ieqa.backends import OPENAI_BASE_URL, Prompt
from ieqa.prompts.answers import released_vie_reading
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.vie_judge import VieJudge, vie_prompt_sources
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["VIEScoreScorer", "PROMPT_SOURCES", "DEFAULT_MODEL", "DEFAULT_BASE_URL"]

#: the commit of TIGER-AI-Lab/VIEScore the prompt file is read at
REVISION = "2cbea4e8ce5721425a8772590ecdbe7d2edd1721"
_PROMPTS = SourceFile("TIGER-AI-Lab/VIEScore", REVISION, "viescore/vie_prompts.py",
                      "010234af186eb0a70fcb99047cd32ad1da01bed59ca1a95a01335426417cf838")

#: the authors' texts for the ``tie`` task, by what ieqa calls them
PROMPT_SOURCES: tuple[PublishedText, ...] = vie_prompt_sources(_PROMPTS)

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
        reask_unparsable: how many times both prompts are asked again when the released
            reader cannot read an answer (1 as released; 0 never; above 1 goes beyond the
            released code, which gives up on its second try: a later try is asked for while
            the give-up reading, the one ``raw["released"]`` holds, does not read every
            answer).
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
                 backend: Any = None, backend_options: dict[str, Any] | None = None,
                 reask_unparsable: int = 1) -> None:
        if int(reask_unparsable) < 0:
            raise ScorerError(f"reask_unparsable must be >= 0, got {reask_unparsable}")
        self.reask_unparsable = int(reask_unparsable)
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

    def readout_config(self) -> dict[str, Any]:
        return {**super().readout_config(), "reask_unparsable": self.reask_unparsable}

    # ------------------------------------------------------------ the released reading
    def _readable(self, gens: Sequence[Any], *, asked: int = 1) -> bool:
        """Whether the released loop goes on without asking again: on the first try, its
        reader returned something for every answer (an API error is an empty answer to
        it). The released code asks once more and then gives up; a later try (only with
        ``reask_unparsable`` above 1, beyond the released code) is asked for until the
        give-up reading, the one :meth:`released_reading` applies to every try after the
        first, reads every answer."""
        give_up = asked > 1
        for gen in gens:
            status = released_vie_reading("" if gen.error else gen.text, give_up=give_up).status
            if status == "ask_again" or (give_up and status != "read"):
                return False
        return True

    def released_reading(self, result: ScoreResult, item: LoadedSample, sc_gens: Sequence[Any],
                         pq_gens: Sequence[Any], *, asked: int) -> None:
        """``raw["released"]``: SC, PQ and O as the released code reads the final answers
        (the released ``mllm_output_to_dict`` and its re-ask rule, see the module docstring),
        with ``status`` (``read``, ``drawn``, ``random``,
        ``unread``) and, when not read, ``reason``."""
        give_up = asked > 1  # every try after the first is the released give-up pass
        out: dict[str, Any] = {"sc": None, "pq": None, "o": None, "asked": asked}
        values: dict[str, float] = {}
        reasons, status = [], "read"
        for name, gen in (("SC", sc_gens[0]), ("PQ", pq_gens[0])):
            reading = released_vie_reading("" if gen.error else gen.text, give_up=give_up)
            out[f"{name.lower()}_status"] = reading.status
            if reading.status == "read":
                assert reading.score is not None
                values[name] = reading.score
            elif reading.status == "random" and self.on_malformed == "random":
                values[name] = float(random.Random(f"{result.id}|0|{name}|released").randint(0, 10))
                out[f"{name.lower()}_drawn"] = values[name]
                status = "drawn" if status == "read" else status
            else:
                status = "random" if reading.status == "random" and status != "unread" else "unread"
                if reading.status == "ask_again":
                    reasons.append(f"{name}: {reading.reason} (ieqa asked {asked} time"
                                   f"{'s' if asked > 1 else ''})")
                else:
                    reasons.append(f"{name}: {reading.reason}")
        if len(values) == 2 and status in ("read", "drawn"):
            product = values["SC"] * values["PQ"]
            if product < 0:
                status = "unread"
                reasons.append(f"sqrt(SC * PQ) of {values['SC']:g} * {values['PQ']:g} fails in "
                               "the released code")
            else:
                out.update(sc=values["SC"], pq=values["PQ"], o=math.sqrt(product))
                out["scores"] = {"sc_min": out["sc"], "visual_quality": out["pq"],
                                 "overall": out["o"]}
        out["status"] = status
        if reasons:
            out["reason"] = "; ".join(reasons)
        result.raw["released"] = out
        if status == "drawn" and "substituted" not in result.flags:
            result.flags.append("substituted")
