"""``imgedit-judge``: ImgEdit-Bench's official judge (PKU-YuanGroup), as released: one
rubric per edit type, three 1-5 scores per edit, on any OpenAI-compatible server
(``gpt-4.1`` by default, the model of the official leaderboard).

What the released ``Benchmark/Basic/basic_bench.py`` does per item, and ieqa with it:

* the rubric is the prompt file's text for the item's edit type (``alter``, the type's old
  name, is read as ``adjust``), the instruction in place of ``<edit_prompt>``;
* one request ``{"model", "stream": false, "messages": [one user message: the text, the
  source image, the edited image]}`` and nothing else (no ``max_tokens``, no temperature:
  the server's defaults); each image is **its file's bytes unchanged**, base64-encoded as
  ``data:image/png;base64,...`` whatever the file's format (the sources are JPEGs);
* the answer is read by the released ``step1_get_avgscore.py`` rule: every line that splits
  on ``": "`` into exactly two parts, the second all digits, is a score; the item's score is
  their mean rounded to 2 decimals
  (:func:`~ieqa.prompts.answers.criteria.released_criteria_mean`).

Where ieqa differs: the released rule takes any number of such lines and any integer; an
answer with none is dropped from the statistics without a word, and an API error stops the
released scoring script. ieqa reads an answer as valid only with exactly three scores, each
1-5 (:func:`~ieqa.prompts.answers.criteria.parse_criteria_answer`); anything else, and every API error, is a row error,
counted in every table. The released reading is kept beside it in ``raw["released"]`` so
that ``bench-editor`` reports the number the released scripts print as well.

Scores: ``instruction_alignment`` is the rubric's first criterion (prompt compliance, style
fidelity, action fidelity, object identity or instruction compliance, by type) and
``overall`` the mean of the three, unrounded; ``raw["criteria"]`` holds the three with the
rubric's names. The prompt texts are read at run time from the benchmark's
``Benchmark/Basic/prompts.json`` at a pinned commit with a SHA-256 check, or from
``prompts=DIR``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.backends import OPENAI_BASE_URL, EncodedImage, Prompt
from ieqa.data.images import file_of
from ieqa.data.loaders.base import BenchmarkFormatError
from ieqa.data.loaders.imgedit_bench import EDIT_TYPES, normalise_edit_type
from ieqa.prompts.answers import (
    JudgeParseError,
    parse_criteria_answer,
    released_criteria_mean,
    released_criteria_scores,
)
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge, local_backend_options
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    failure,
    request_kind,
)

__all__ = ["ImgEditJudge", "ImgEditJudgeLocal", "PROMPT_SOURCES", "DEFAULT_MODEL", "REVISION",
           "IMAGE_MIME", "JUDGE_DATASET", "JUDGE_FOLDER", "resolve_judge"]

#: the commit of PKU-YuanGroup/ImgEdit the prompt file is read at
REVISION = "547185d12c08267a862b94248576e1746e479937"
_PROMPTS = SourceFile("PKU-YuanGroup/ImgEdit", REVISION, "Benchmark/Basic/prompts.json",
                      "f9468dc848776ee0a6c2e2c31e678c7224e9cb61b013747c8c52d4a05627b5a0")
#: one rubric per edit type: the prompt file's key is the type
PROMPT_SOURCES: tuple[PublishedText, ...] = tuple(
    PublishedText(t, _PROMPTS, t, markers=("<edit_prompt>",)) for t in EDIT_TYPES)
#: the official leaderboard's judge (the released script names ``gpt-4o``; its leaderboard
#: caption and the copies in UniWorld-V1 and GPT-Image-Edit use GPT-4.1)
DEFAULT_MODEL = "gpt-4.1"
DEFAULT_BASE_URL = OPENAI_BASE_URL
#: the media type the released script writes for every image
IMAGE_MIME = "image/png"
#: answer limit for a local model (a server gets none, as released)
LOCAL_MAX_NEW_TOKENS = 1024


def _file_image(image: Any) -> EncodedImage:
    """The image as the released script sends it: the bytes of the file it was loaded
    from under ``image/png`` (an image made in memory, which has no file, as PNG bytes)."""
    path = file_of(image)
    if path is not None:
        data = Path(path).read_bytes()
    else:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        data = buf.getvalue()
    return EncodedImage(data=data, mime=IMAGE_MIME, image=image)


class ImgEditJudge(PublishedJudge):
    """ImgEdit-Bench's judge as released (see the module docstring).

    Args:
        model: the judge's model name (default ``gpt-4.1``; the released script says
            ``gpt-4o``), or a local checkpoint (a stand-in for GPT, not the protocol).
        base_url: the OpenAI-compatible endpoint (default OpenAI's); the key comes from
            ``OPENAI_API_KEY``.
        prompts: a local copy of the benchmark's repository (``--prompts``).
        temperature: sent only when given (the released request sends none); a local
            model answers greedily unless it is given.
        max_new_tokens: sent only when given (none as released; a local model uses 1024).
        batch_size: items per backend call.
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "imgedit-judge"
    prompt_sources = PROMPT_SOURCES
    default_model = DEFAULT_MODEL
    default_base_url = DEFAULT_BASE_URL
    released_body = {"stream": False}  # as the released request
    judged = ("instruction_alignment",)

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, temperature: float | None = None,
                 max_new_tokens: int | None = None, batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: Mapping[str, Any] | None = None) -> None:
        if max_new_tokens is not None and int(max_new_tokens) < 1:
            raise ScorerError(f"max_new_tokens must be >= 1 (or None), got {max_new_tokens}")
        self.temperature = None if temperature is None else float(temperature)
        self.max_new_tokens = None if max_new_tokens is None else int(max_new_tokens)
        super().__init__(model=model, base_url=base_url, prompts=prompts, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, backend=backend,
                         backend_options=backend_options)

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "image_encoding": f"file bytes as {IMAGE_MIME}",
                **self.prompts_config()}

    def check_sample(self, sample: Any) -> None:
        super().check_sample(sample)
        if sample.source is None:
            raise ScorerError(f"sample {sample.id!r} has no source image; ImgEdit's judge "
                              "compares the edit with its source")
        try:
            normalise_edit_type(sample.task or "")
        except BenchmarkFormatError as exc:
            raise ScorerError(f"sample {sample.id!r}: ImgEdit's judge picks its rubric by "
                              f"the edit type (the sample's task): {exc}") from None

    def prompt(self, item: LoadedSample) -> Prompt:
        """The request of one edit: the type's rubric, the source, the edit."""
        assert item.source is not None
        text = self.texts[normalise_edit_type(item.sample.task or "")]
        return Prompt(parts=(text.replace("<edit_prompt>", item.sample.instruction),
                             _file_image(item.source), _file_image(item.edited)))

    # ----------------------------------------------------------------------- scoring
    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        return {"answer": self.prompt(item)}

    def generation_options(self) -> dict[str, Any]:
        if self.local:  # a local model has no server default: greedy unless asked
            return {"max_new_tokens": self.max_new_tokens or LOCAL_MAX_NEW_TOKENS,
                    "temperature": self.temperature or 0.0, "top_p": 1.0}
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": None}

    def read_answers(self, item: LoadedSample, answers: Mapping[str, Any]) -> ScoreResult:
        """The one answer, with the raw layout of the released scripts' reading."""
        return self._result(item, answers["answer"])

    def _result(self, item: LoadedSample, gen: Any) -> ScoreResult:
        raw: dict[str, Any] = {"text": gen.text,
                               "edit_type": normalise_edit_type(item.sample.task or "")}
        if gen.server:
            raw["server"] = gen.server
        if gen.error:
            raw["released"] = {"scores": [], "item_score": None, "stopped": True}
            return failure(item.sample.id, raw, [(request_kind(gen), gen.error)])
        raw["released"] = {"scores": released_criteria_scores(gen.text),
                           "item_score": released_criteria_mean(gen.text)}
        try:
            criteria = parse_criteria_answer(gen.text)
        except JudgeParseError as exc:
            return failure(item.sample.id, raw, [("unreadable", exc.reason)])
        raw["criteria"] = [[name, score] for name, score in criteria]
        scores = {"instruction_alignment": float(criteria[0][1]),
                  "overall": sum(s for _, s in criteria) / 3}
        reasoning = [line.split(":", 1)[1].strip() for line in gen.text.splitlines()
                     if line.strip().lower().startswith("brief reasoning")]
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw,
                           explanation=reasoning[0] if reasoning else None)


# ------------------------------------------------------------------ the open judge
#: where ImgEdit-Judge is published: a folder of the benchmark's hub dataset
JUDGE_DATASET, JUDGE_FOLDER = "sysuyy/ImgEdit", "ImgEdit_judge"
#: the processor's pixel budget the README's demo sets ("we train our model with this")
JUDGE_PIXELS = (1016064, 1354752)
JUDGE_MAX_NEW_TOKENS = 2048


def resolve_judge(model: str | Path | None, revision: str | None = None) -> Path:
    """ImgEdit-Judge's checkpoint folder: ``model`` when it is a local folder, else the
    ``ImgEdit_judge/`` folder of the hub dataset ``sysuyy/ImgEdit`` (from the local cache,
    downloaded when the hub can be reached)."""
    if model is not None and Path(model).expanduser().is_dir():
        return Path(model).expanduser()
    if model is not None and str(model) != JUDGE_DATASET:
        raise ScorerError(f"{model} is not a local folder; ImgEdit-Judge is the {JUDGE_FOLDER}/ "
                          f"folder of the hub dataset {JUDGE_DATASET}: leave --model out, or "
                          "pass the folder of your copy")
    try:
        from huggingface_hub import snapshot_download

        root = Path(snapshot_download(JUDGE_DATASET, repo_type="dataset", revision=revision,
                                      allow_patterns=[f"{JUDGE_FOLDER}/*"]))
    except Exception as exc:  # offline, not cached, no access: say what to do
        raise ScorerError(
            f"ImgEdit-Judge ({JUDGE_DATASET}, {JUDGE_FOLDER}/) is not available here "
            f"({type(exc).__name__}: {str(exc)[:200]}). Download it with `hf download "
            f"{JUDGE_DATASET} --repo-type dataset --include '{JUDGE_FOLDER}/*' --local-dir DIR` "
            f"and pass --model DIR/{JUDGE_FOLDER}") from None
    if not (root / JUDGE_FOLDER / "config.json").is_file():
        raise ScorerError(f"{root} holds no {JUDGE_FOLDER}/config.json; pass --model with the "
                          "folder of your copy of ImgEdit-Judge")
    return root / JUDGE_FOLDER


class ImgEditJudgeLocal(ImgEditJudge):
    """ImgEdit-Judge, the benchmark's open judge (a Qwen2.5-VL-7B fine-tune published in the
    ``ImgEdit_judge/`` folder of the hub dataset ``sysuyy/ImgEdit``), run here as the
    authors' README demo runs it: the edit type's rubric from ``prompts.json`` with the
    instruction in place of ``<edit_prompt>``, one user message of that text, the source
    image and the edit (in that order), the chat template with the generation prompt; each
    image resized as ``qwen_vl_utils.process_vision_info`` resizes it, then the processor's
    budget (1016064 to 1354752 pixels, as the demo says the judge was trained); at most 2048
    new tokens, decoded without special tokens. The demo calls ``generate`` with the
    checkpoint's own generation settings; ieqa decodes greedily (a Qwen2.5-VL checkpoint's
    settings, ``top_k=1``, are greedy too; another checkpoint's would differ). The answer is
    read as ``imgedit-judge`` reads it.

    Not checked: the folder on the hub also holds the authors' judge code, which the README
    says uses its own prompt and system role; ieqa cannot read it offline and follows the
    README (see the docs).

    Args:
        model: the checkpoint folder; default the hub dataset's ``ImgEdit_judge/``.
        revision: the hub dataset's revision.
        prompts, batch_size, max_instruction_chars: as :class:`ImgEditJudge`.
        device, dtype, attn_implementation: the local model's settings.
    """

    readout = "imgedit-judge-7b"
    local_stand_in = True

    def __init__(self, *, model: str | Path | None = None, revision: str | None = None,
                 prompts: str | Path | None = None, max_new_tokens: int = JUDGE_MAX_NEW_TOKENS,
                 device: str | None = "auto", dtype: str = "auto",
                 attn_implementation: str | None = None, batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: Mapping[str, Any] | None = None) -> None:
        options = dict(backend_options or {})
        if backend is None:
            model = str(resolve_judge(model, revision))
            options = local_backend_options(options, device=device, dtype=dtype,
                                            pixels=JUDGE_PIXELS,
                                            attn_implementation=attn_implementation)
        super().__init__(model=None if model is None else str(model), prompts=prompts,
                         max_new_tokens=max_new_tokens, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, backend=backend,
                         backend_options=options)
        if not self.local:
            raise ScorerError("imgedit-judge-7b runs the checkpoint here; for a served copy "
                              "use the judge imgedit-judge (--scorer imgedit-judge with ieqa "
                              "score, --judge imgedit-judge with ieqa bench-editor) with "
                              "-O base_url=URL --model NAME")

    def readout_config(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": 0.0,
                "pixels": list(JUDGE_PIXELS), **self.prompts_config()}

    def prompt(self, item: LoadedSample) -> Prompt:
        """The README demo's message: the rubric, then the source and the edit, each resized
        as ``process_vision_info`` does."""
        from ieqa.backends.base import fit_qwen_grid

        assert item.source is not None
        text = self.texts[normalise_edit_type(item.sample.task or "")]
        return Prompt(parts=(text.replace("<edit_prompt>", item.sample.instruction),
                             fit_qwen_grid(item.source.convert("RGB")),
                             fit_qwen_grid(item.edited.convert("RGB"))))

    def generation_options(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "temperature": 0.0, "top_p": 1.0}
