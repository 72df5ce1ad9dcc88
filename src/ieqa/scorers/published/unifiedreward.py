"""``unifiedreward-edit``: UnifiedReward-Edit's pointwise scoring (CodeGoat24), as its
authors' inference scripts request it from their vLLM server.

UnifiedReward-Edit is a fine-tuned Qwen-VL served with vLLM (``vllm serve
CodeGoat24/UnifiedReward-Edit-qwen-7b --served-model-name UnifiedReward``). Its pointwise
mode asks two questions per edit, each answered with two scores on 0-25 in VIEScore's
format:

* **instruction following** (``edit_pointwise_instruction_following.py``): the source and
  the edited image, then the prompt with the instruction and a line break appended;
  editing success and over-editing;
* **quality** (``edit_pointwise_quality.py``): the edited image, then the prompt;
  naturalness and artifacts.

Each request is ``{"model", "messages": [one user message: the images, then the text],
"do_sample": false, "max_tokens": 4096}``; each image is a JPEG at quality 95 as a
``data:image/jpeg;base64,`` URL, not resized. The scores are divided by 2.5 (0-10) and
reported as for VIEScore (:class:`~ieqa.scorers.published.vie_judge.VieJudge`):
``instruction_alignment`` (editing success), ``content_preservation`` (over-editing),
``sc_min``, ``visual_quality`` (the lower quality score). The authors define no overall
score; ``overall`` here is VIEScore's ``sqrt(SC * PQ)``, the rule of the format the model
answers in.

A malformed answer is a row error. The authors' scripts print the answer and read no
score from it, so, unlike ``viescore`` and ``editscore``, there is no released reading to
record beside ieqa's. The prompt texts are the authors': the ``problem``
strings of the two scripts, read by parsing them at a pinned commit with a SHA-256 check,
or from ``prompts=DIR`` (``--prompts``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ieqa.backends import Prompt
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.published.vie_judge import VieJudge
from ieqa.scorers.vlm.base import DEFAULT_MAX_INSTRUCTION_CHARS, LoadedSample

__all__ = ["UnifiedRewardEditScorer", "PROMPT_SOURCES", "DEFAULT_MODEL", "DEFAULT_BASE_URL"]

#: the commit of CodeGoat24/UnifiedReward the scripts are read at
REVISION = "ff6f520247a2d36e2aff7b2ba53a935afd437f66"
_FOLLOWING = SourceFile("CodeGoat24/UnifiedReward", REVISION,
                        "UnifiedReward-Edit/edit_pointwise_instruction_following.py",
                        "fc27991f59a91eaf83cfa4630e4dcaefb901678c153ec9ae7507cd30280d4115")
_QUALITY = SourceFile("CodeGoat24/UnifiedReward", REVISION,
                      "UnifiedReward-Edit/edit_pointwise_quality.py",
                      "985898661f905192ea3193e2e9d1ec2fb12bec222c30c56d314f7b5cf40ac2d6")

#: the authors' texts, by what ieqa calls them (the instruction goes into ``{instruction}``)
PROMPT_SOURCES: tuple[PublishedText, ...] = (
    PublishedText("instruction_following", _FOLLOWING, "problem", ("instruction",)),
    PublishedText("quality", _QUALITY, "problem"),
)

#: the served model name and the address of the authors' scripts
DEFAULT_MODEL = "UnifiedReward"
DEFAULT_BASE_URL = "http://localhost:8080/v1"
#: the authors' request settings: answer limit, JPEG quality, score range
MAX_TOKENS, JPEG_QUALITY, SCORE_RANGE = 4096, 95, 25


class UnifiedRewardEditScorer(VieJudge):
    """UnifiedReward-Edit's pointwise scores as published (see the module docstring).

    Args:
        model: the served model name (default ``UnifiedReward``, as the authors serve it).
        base_url: the server (default ``http://localhost:8080/v1``, the authors' address).
        prompts: a local copy of the authors' repository (``--prompts``).
        max_new_tokens: the request's ``max_tokens`` (4096 as published).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "unifiedreward-edit"
    prompt_sources = PROMPT_SOURCES

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, max_new_tokens: int = MAX_TOKENS,
                 batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: dict[str, Any] | None = None) -> None:
        self.configure(score_range=SCORE_RANGE, max_new_tokens=max_new_tokens)
        self.texts = self.load_prompts(prompts)
        self.init_server_judge(model=model, base_url=base_url, backend=backend,
                               backend_options=backend_options, default_model=DEFAULT_MODEL,
                               default_base_url=DEFAULT_BASE_URL, batch_size=batch_size,
                               max_instruction_chars=max_instruction_chars,
                               request={"max_pixels": None, "image_format": "jpeg",
                                        "jpeg_quality": JPEG_QUALITY,
                                        "extra_body": {"do_sample": False}})

    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The instruction-following and the quality request of one edit: the images,
        then the text."""
        self.needs_source(item, "UnifiedReward-Edit")
        text = self.texts["instruction_following"].replace("{instruction}",
                                                           item.sample.instruction)
        return (Prompt(parts=(item.source, item.edited, text)),
                Prompt(parts=(item.edited, self.texts["quality"])))
