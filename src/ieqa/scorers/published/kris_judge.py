"""``kris-judge``: KRIS-Bench's official judge (``metrics_*.py`` of mercurystraw/Kris_Bench),
as released: three requests per edit, one per judgement, on any OpenAI-compatible server
(``gpt-4o`` by default, as released) or a local model (a stand-in for GPT).

Per item the released scripts ask, each as one user message (the text parts and images
in this order):

* **consistency** (``consistency_score``): ``prompt_consist`` with the instruction, then
  ``"This is the original image:"``, the source, ``"This is the edited image:"``, the
  edit; multi-element composition: ``prompt_consist_multi``, then ``"Reference Image
  {i}:"`` and each source, ``"Predicted Image:"`` and the edit; temporal prediction:
  ``prompt_consist_temporal``, then the frames in frame order, each after
  ``"Frame {n} (Reference):"`` or, for the edit, ``"Frame {n} (Generated):"``;
* **instruction following** (``instruction_score``): as consistency with
  ``prompt_instruction_following`` (``prompt_view_instruction_following`` for viewpoint
  change, with ``"This is the ground truth image:"`` and the reference view last;
  ``prompt_instruction_multi``; ``prompt_instruction_temporal``). For the ten knowledge
  categories (Social Science, Natural Science, Logical Reasoning) one request,
  ``prompt_dual_evaluation`` with the instruction and the item's explanation, asks for
  both ``instruction_score`` and ``knowledge_score``;
* **quality** (``quality_score``): ``prompt_quality`` as it is, then ``"This is the edited
  image:"`` (``"This is the image to evaluate:"`` for multi-element and temporal items)
  and the edit.

Each image is its file's bytes, base64-encoded as ``data:image/jpeg;base64,...`` whatever
the file's format; temporal items' images (frames and edit) are re-encoded as JPEG at
quality 85 first, as that script does. The body is ``{"model": "gpt-4o", "messages",
"stream": false, "max_tokens": 1000}``: no temperature, the server's default.

Released quirks ieqa keeps, so that the numbers are the benchmark's: anomaly correction
is judged with the plain instruction-following prompt, without its explanation (the
released test ``"abnormality_correction" in category`` never matches the folder
``anomaly_correction``); the knowledge score is not forced to 1 when instruction following
is 2 or less (the prompt asks the judge to do it).

Where ieqa differs: the released readings (:func:`~ieqa.prompts.answers.kris.
released_kris_score`) fall back to the first digit 1-5 anywhere in the answer, keep
out-of-range JSON values, and leave a score None on an API error (three tries, then an
empty answer). ieqa reads a score only under its key, an integer 1-5
(:func:`~ieqa.prompts.answers.kris.parse_kris_scores`); anything else, and every API
error, is a row error, counted. The released readings are kept in ``raw["released"]`` so
that ``bench-editor`` reports the released numbers too.

Scores: ``content_preservation`` (consistency), ``instruction_alignment``,
``visual_quality``, ``knowledge_plausibility`` (knowledge categories; ``unavailable``
elsewhere), all 1-5, and ``overall``, their mean. The prompt texts are read at run time
from the pinned ``prompts.py`` with a SHA-256 check, or from ``prompts=DIR``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from PIL import Image

from ieqa.backends import OPENAI_BASE_URL, EncodedImage, Prompt
from ieqa.data.images import file_of
from ieqa.data.loaders.kris_bench import CATEGORIES, KNOWLEDGE_CATEGORIES, temporal_frames
from ieqa.prompts.answers import parse_kris_scores, released_kris_dual
from ieqa.prompts.answers import released_kris_score as released_score
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedJudge
from ieqa.scorers.vlm.base import (
    LoadedSample,
)

__all__ = ["KrisJudge", "PROMPT_SOURCES", "DEFAULT_MODEL", "REVISION", "JUDGES", "released_reader"]

#: The official repository (mercurystraw/Kris_Bench) is too large to pin here; its
#: prompts.py is kept byte for byte (apart from a three-line licence header) in
#: ByteDance-Seed/Bagel's eval/gen/kris/, whose summarize.py the benchmark's authors point
#: to for the published aggregation. This is the commit that file is read at.
REVISION = "056b5fd51a88c1eb4547318609e25d40080fcf87"
_PROMPTS = SourceFile("ByteDance-Seed/Bagel", REVISION, "eval/gen/kris/prompts.py",
                      "5c4efd450ffcc85c4088d5d6966df24e1d9f56ac8c17a10d04f65893cc915a45")
_FIELDS = {"prompt_consist": ("instruct",), "prompt_quality": (),
           "prompt_instruction_following": ("instruct",),
           "prompt_dual_evaluation": ("instruct", "explanation"),
           "prompt_view_instruction_following": ("instruct",),
           "prompt_consist_temporal": ("instruct",), "prompt_instruction_temporal": ("instruct",),
           "prompt_consist_multi": ("instruct",), "prompt_instruction_multi": ("instruct",)}
#: the nine prompts the released scripts use, by their names in the file
PROMPT_SOURCES: tuple[PublishedText, ...] = tuple(
    PublishedText(name, _PROMPTS, name, placeholders=fields) for name, fields in _FIELDS.items())
#: the released judge and its settings
DEFAULT_MODEL = "gpt-4o"
DEFAULT_BASE_URL = OPENAI_BASE_URL
MAX_TOKENS, TEMPORAL_JPEG_QUALITY = 1000, 85
#: the answer keys and the dimension each becomes
JUDGES: dict[str, str] = {"consistency_score": "content_preservation",
                          "instruction_score": "instruction_alignment",
                          "quality_score": "visual_quality",
                          "knowledge_score": "knowledge_plausibility"}
_MULTI, _TEMPORAL, _VIEW = "multi-element_composition", "temporal_prediction", "viewpoint_change"


def released_reader(category: str) -> str:
    """The released reading (:data:`~ieqa.prompts.answers.kris.READERS`) of a category's
    consistency and quality answers: the script that judges it."""
    if category in KNOWLEDGE_CATEGORIES:
        return "knowledge"
    return "generic" if category in (_MULTI, _TEMPORAL) else "common"


def _file_jpeg(path: str | None, decoded: Image.Image, *, reencode: bool) -> EncodedImage:
    """An image as the released scripts send it: its file's bytes under ``image/jpeg``, or
    (temporal) the image re-encoded as JPEG at quality 85; an image made in memory, which
    has no file, as a JPEG of its pixels."""
    if path is not None and not reencode:
        return EncodedImage(data=Path(path).read_bytes(), mime="image/jpeg", image=decoded)
    if path is not None:
        with Image.open(path) as opened:
            img = opened.convert("RGB")
    else:
        img = decoded.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=TEMPORAL_JPEG_QUALITY)
    return EncodedImage(data=buf.getvalue(), mime="image/jpeg", image=decoded)


def _open(path: str, reencode: bool) -> EncodedImage:
    with Image.open(path) as opened:
        decoded = opened.convert("RGB")
    return _file_jpeg(path, decoded, reencode=reencode)


class KrisJudge(PublishedJudge):
    """KRIS-Bench's judge as released (see the module docstring). A sample carries the
    item's fields in ``meta`` (:meth:`ieqa.data.loaders.kris_bench.KrisItem.meta`).

    Args:
        model: the judge's model name (default ``gpt-4o``, as released; the published
            BAGEL rows used ``gpt-4o-2024-11-20``), or a local checkpoint (a stand-in).
        base_url: the OpenAI-compatible endpoint (default OpenAI's).
        prompts: a local copy of the prompt file's repository (``--prompts``).
        batch_size: items per backend call.
        (other arguments: :class:`~ieqa.scorers.published.base.PublishedJudge`)
    """

    readout = "kris-judge"
    prompt_sources = PROMPT_SOURCES
    default_model = DEFAULT_MODEL
    default_base_url = DEFAULT_BASE_URL
    released_body = {"stream": False}  # as the released request
    judged = tuple(JUDGES.values())
    max_tokens = MAX_TOKENS

    def readout_config(self) -> dict[str, Any]:
        return {"temperature": 0.0 if self.local else None, "max_new_tokens": MAX_TOKENS,
                "image_encoding": "file bytes as image/jpeg (temporal: JPEG q85)",
                **self.prompts_config()}

    def check_sample(self, sample: Any) -> None:
        super().check_sample(sample)
        category = (sample.meta or {}).get("category") or sample.task
        if category not in CATEGORIES:
            raise ScorerError(f"sample {sample.id!r}: KRIS-Bench's judge needs the item's "
                              f"category (meta['category'] or the task), got {category!r}")
        if sample.source is None:
            raise ScorerError(f"sample {sample.id!r} has no source image; KRIS-Bench's judge "
                              "compares the edit with its source")

    # ------------------------------------------------------------------------ requests
    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        """The released requests of one item, by the answer key they are read for
        (``consistency_score``, ``instruction_score``, ``quality_score``)."""
        meta = item.sample.meta or {}
        category = meta.get("category") or item.sample.task
        instruct = item.sample.instruction
        temporal = category == _TEMPORAL
        assert item.source is not None
        edit = _file_jpeg(file_of(item.edited), item.edited, reencode=temporal)
        paths = list(meta.get("sources") or [])
        sources = ([_open(p, temporal) for p in paths] if paths
                   else [_file_jpeg(file_of(item.source), item.source, reencode=temporal)])
        text = self.texts
        if category == _MULTI:
            images: list[Any] = []
            for i, src in enumerate(sources, 1):
                images += [f"Reference Image {i}:", src]
            images += ["Predicted Image:", edit]
            vc = (text["prompt_consist_multi"].format(instruct=instruct), *images)
            if_ = (text["prompt_instruction_multi"].format(instruct=instruct), *images)
        elif category == _TEMPORAL:
            frames, target = temporal_frames(meta.get("source_names") or [])
            if len(frames) != len(sources):
                raise ScorerError(f"sample {item.sample.id!r}: {len(sources)} frames but "
                                  f"{len(frames)} frame names (meta['source_names'])")
            order = sorted([(n, img, "Reference") for n, img in zip(frames, sources,
                                                                     strict=True)]
                           + [(target, edit, "Generated")], key=lambda f: f[0])
            images = [part for n, img, kind in order for part in (f"Frame {n} ({kind}):", img)]
            vc = (text["prompt_consist_temporal"].format(instruct=instruct), *images)
            if_ = (text["prompt_instruction_temporal"].format(instruct=instruct), *images)
        else:
            pair = ("This is the original image:", sources[0], "This is the edited image:", edit)
            vc = (text["prompt_consist"].format(instruct=instruct), *pair)
            if category in KNOWLEDGE_CATEGORIES:
                if_ = (text["prompt_dual_evaluation"].format(
                    instruct=instruct, explanation=meta.get("explanation") or ""), *pair)
            elif category == _VIEW:
                gt = meta.get("gt_img")
                if not gt:
                    raise ScorerError(f"sample {item.sample.id!r}: a viewpoint item needs its "
                                      "reference view (meta['gt_img'])")
                if_ = (text["prompt_view_instruction_following"].format(instruct=instruct),
                       *pair, "This is the ground truth image:", _open(gt, False))
            else:  # anomaly_correction too: the released category test never matches it
                if_ = (text["prompt_instruction_following"].format(instruct=instruct), *pair)
        label = ("This is the image to evaluate:" if category in (_MULTI, _TEMPORAL)
                 else "This is the edited image:")
        return {"consistency_score": Prompt(parts=vc), "instruction_score": Prompt(parts=if_),
                "quality_score": Prompt(parts=(text["prompt_quality"], label, edit))}

    # ----------------------------------------------------------------------- reading
    def released_reading(self, item: LoadedSample, key: str, gen: Any) -> dict[str, Any]:
        text = "" if gen.error else gen.text  # the released scripts' failed request
        if key == "instruction_score" and self._knowledge(item):
            return dict(zip(("instruction_score", "knowledge_score"), released_kris_dual(text),
                            strict=True))
        return {key: released_score(text, key, released_reader(self._category(item)))}

    def read_answer(self, item: LoadedSample, key: str, text: str) -> dict[str, float]:
        wanted = (key, "knowledge_score") if key == "instruction_score" and \
            self._knowledge(item) else (key,)
        return {JUDGES[k]: float(v) for k, v in parse_kris_scores(text, wanted).items()}

    def finish(self, item: LoadedSample, scores: dict[str, float],
               raw: dict[str, Any]) -> ScoreResult:
        unavailable = {} if self._knowledge(item) else {
            "knowledge_plausibility": "KRIS-Bench judges knowledge plausibility only for its "
                                      "Social Science, Natural Science and Logical Reasoning "
                                      "items"}
        scores["overall"] = sum(scores.values()) / len(scores)
        return ScoreResult(id=item.sample.id, scores=scores, unavailable=unavailable, raw=raw)

    @staticmethod
    def _category(item: LoadedSample) -> str:
        return (item.sample.meta or {}).get("category") or item.sample.task

    def _knowledge(self, item: LoadedSample) -> bool:
        return self._category(item) in KNOWLEDGE_CATEGORIES
