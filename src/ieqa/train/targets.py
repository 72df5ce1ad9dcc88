"""Text targets: what an evaluator must write right after a template's ``answer_prefix``.

Each function writes one paper's answer format, so that supervised fine-tuning teaches the
model exactly what the matching readout or parser of :mod:`ieqa.scorers.vlm` reads back:

* :func:`digits_target` — DS-IEQA (000) §3.2-3.4: a score written ``d.dd`` (``"3.46"``)
  after ``"<Dimension> score: "`` (template ``ds-ieqa-digits``; read by the ``vlm-digits``
  readout or :func:`~ieqa.scorers.vlm.parsing.parse_text_score`).
* :func:`level_target` — EditHF (002) §4.2 textual learning / Q-Align / EPAIQA (001) §4.2:
  one of the five level words (``" good"``) after ``"Harmony level is:"`` (templates
  ``epaiqa-*``; read by the ``vlm-levels`` readout or
  :func:`~ieqa.scorers.vlm.parsing.parse_level`).
* :func:`box_target` — EPAIQA (001) §4.1 stage-1 grounding: the edited region as
  ``" (x, y, w, h)"`` fractions (template ``epaiqa-grounding``; read by
  :func:`~ieqa.scorers.vlm.parsing.parse_region`).
* :func:`critique_target` — ReasonEdit (004) §3.2.1 / appendix F.1: a critique text, then a
  ``[Final Assessment]`` block with one ``Name: score`` line per dimension (template
  ``reasonedit-critique``; read by :func:`~ieqa.scorers.vlm.parsing.parse_critique`).

Targets that follow a prefix ending without a space (the EPAIQA ones) begin with a space:
BPE tokenizers encode a word after a space as its own token (``"Ġgood"``), which is the
token the level readout reads (DESIGN §4, Q-Align readout).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import ValidationError

from ieqa.data.dimensions import CORE_DIMENSIONS, canonical_dimension
from ieqa.data.schema import BBox, EditSample
from ieqa.errors import IeqaError
from ieqa.human.mos import LEVEL_LABELS, level_indices
from ieqa.scorers.vlm.digits import format_digits
from ieqa.scorers.vlm.levels import LEVEL_WORDS as READOUT_LEVEL_WORDS

__all__ = [
    "EXPLANATION_KEY",
    "TrainDataError",
    "box_target",
    "critique_target",
    "digit_values",
    "digits_target",
    "level_index",
    "level_target",
    "rescale",
    "score_ranges",
]

#: The ``EditSample.meta`` key that holds a sample's explanation / critique text.
EXPLANATION_KEY = "explanation"

_DIGITS = re.compile(r"\s*(\d)\.(\d)(\d)\s*")
# the same headings parse_critique recognises as the start of the final block
_FINAL_HEADING = re.compile(r"\[\s*final\s+assessment\s*\]|^[#>*\s-]*final\s+assessment\b",
                            re.I | re.M)


class TrainDataError(IeqaError, ValueError):
    """Training targets, pairs or sampling orders cannot be built from the given inputs."""


def _finite(value: object, name: str) -> float:
    if isinstance(value, bool):
        raise TrainDataError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TrainDataError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise TrainDataError(f"{name} must be finite, got {x}")
    return x


def _range(value: object, name: str) -> tuple[float, float]:
    try:
        lo, hi = value  # type: ignore[misc]
    except (TypeError, ValueError):
        raise TrainDataError(f"{name} must be a (low, high) pair, got {value!r}") from None
    return _finite(lo, f"{name}[0]"), _finite(hi, f"{name}[1]")


def rescale(value: float, src: Sequence[float], dst: Sequence[float]) -> float:
    """Map ``value`` linearly from the range ``src = (lo, hi)`` onto ``dst = (lo, hi)``.

    ``src[0]`` goes to ``dst[0]`` and ``src[1]`` to ``dst[1]`` (a reversed pair flips the
    direction, e.g. ranks ``(5, 1)`` onto scores ``(1, 5)``). Values outside ``src`` are
    extrapolated, not clipped. Raises :class:`TrainDataError` for a non-finite value or
    bound, or a zero-width ``src`` (every point would map to infinity).

    Examples:
        >>> rescale(50, (0, 100), (1, 5))
        3.0
    """
    v = _finite(value, "value")
    lo, hi = _range(src, "src")
    dlo, dhi = _range(dst, "dst")
    if hi == lo:
        raise TrainDataError(f"src range ({lo:g}, {hi:g}) has zero width; cannot rescale from it")
    return dlo + (v - lo) * (dhi - dlo) / (hi - lo)


def _clip(value: float, bounds: tuple[float, float]) -> float:
    lo, hi = min(bounds), max(bounds)
    return min(max(value, lo), hi)


# ----------------------------------------------------------------------------- digits
def digits_target(score: float, *, scale: Sequence[float] = (1, 5),
                  template_scale: Sequence[float] = (1, 5)) -> str:
    """DS-IEQA digit target: ``score`` as ``"d.dd"`` on the template's scale.

    ``score`` is on the data scale ``scale`` (e.g. ``(0, 100)`` for EditHF MOS); it is
    mapped linearly onto ``template_scale`` (the ``ds-ieqa-digits`` template asks for
    1-5), clipped into ``template_scale`` (so rounding noise such as 5.0000001 stays
    writable) and formatted with :func:`~ieqa.scorers.vlm.digits.format_digits`
    (two decimals, round half to even on the binary value). ``template_scale`` must lie in
    [0, 9.99] (one integer digit). Returns the text that follows the answer prefix
    ``"<Dimension> score: "``, e.g. ``digits_target(3.456) == "3.46"``.
    """
    tlo, thi = _range(template_scale, "template_scale")
    if not 0.0 <= tlo < thi < 9.995:
        raise TrainDataError("template_scale must satisfy 0 <= low < high <= 9.99 (the d.dd "
                             f"format has one integer digit), got {tuple(template_scale)!r}")
    value = _clip(rescale(score, scale, (tlo, thi)), (tlo, thi))
    return format_digits(value)


def digit_values(text: str) -> list[int]:
    """The three digits ``[d0, d1, d2]`` of a ``"d.dd"`` target (surrounding whitespace
    allowed): ``digit_values("3.46") == [3, 4, 6]``. These are the ground-truth digits
    ``g_t`` of DS-IEQA's TDRL loss and Definition Value. Raises :class:`TrainDataError`
    for any other text."""
    m = _DIGITS.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise TrainDataError(f"expected a 'd.dd' digit target such as '3.46', got {text!r}")
    return [int(g) for g in m.groups()]


# ----------------------------------------------------------------------------- levels
def score_ranges(samples: Sequence[EditSample]) -> dict[str, tuple[float, float]]:
    """The observed ``(min, max)`` of each score column over ``samples``, keyed by the
    column name as it appears in ``sample.scores``.

    These are EditHF's level ranges (§4.2 textual learning: each dimension is binned over
    its own range) and Q-Align's (the range of the dataset's scores); a sample without a
    column does not count for it. ``{}`` when no sample has a score.

    Examples:
        >>> from ieqa.data.schema import EditSample
        >>> scored = [{"instruction_alignment": 0, "visual_quality": 40},
        ...           {"instruction_alignment": 100, "visual_quality": 90}]
        >>> rows = [EditSample(id=str(i), source="s.png", edited="e.png", instruction="x",
        ...                    scores=sc) for i, sc in enumerate(scored)]
        >>> score_ranges(rows)
        {'instruction_alignment': (0.0, 100.0), 'visual_quality': (40.0, 90.0)}
    """
    ranges: dict[str, tuple[float, float]] = {}
    for sample in samples:
        for column, value in sample.scores.items():
            v = _finite(value, f"sample {sample.id!r} score {column!r}")
            lo, hi = ranges.get(column, (v, v))
            ranges[column] = (min(lo, v), max(hi, v))
    return ranges


def level_target(score: float, *, lo: float, hi: float) -> str:
    """EditHF / Q-Align level word of ``score``, with a leading space: ``" good"``.

    The range ``[lo, hi]`` is cut into five equal bins named bad, poor, fair, good,
    excellent, lowest first (EditHF §4.2 textual learning; the bins of
    :func:`ieqa.human.mos.level_indices`: a score on an inner edge takes the upper level,
    ``hi`` is ``excellent``). EditHF bins each dimension over its own range over the whole
    dataset (:func:`score_ranges`), not over one batch and not over all dimensions pooled:
    with visual quality in [40, 90] and another dimension in [0, 100], a visual-quality 40
    is ``" bad"`` on its own range but ``" fair"`` on the pooled one. A score outside
    ``[lo, hi]`` or ``lo >= hi`` raises.

    The leading space is deliberate: the EPAIQA answer prefixes end without one
    (``"Harmony level is:"``, ``"The harmony of the edited image is"``), and BPE tokenizers
    spell the word after a space as one token (``"Ġgood"``), the one the level readout
    reads. Strip it if your prefix already ends with a space.
    """
    x = _finite(score, "score")
    idx = int(level_indices([x], len(LEVEL_LABELS), lo=lo, hi=hi)[0])
    return " " + LEVEL_LABELS[idx]


def level_index(word: str) -> int:
    """Position of a level word in :data:`ieqa.scorers.vlm.levels.LEVEL_WORDS`
    (``excellent`` = 0 … ``bad`` = 4), i.e. the class index of the five level logits the
    ``vlm-levels`` readout uses (for a cross-entropy over those five). Case and
    surrounding whitespace are ignored, so ``level_index(" good") == 1``."""
    norm = word.strip().lower() if isinstance(word, str) else None
    if norm not in READOUT_LEVEL_WORDS:
        raise TrainDataError(f"unknown level word {word!r}; expected one of "
                             f"{', '.join(READOUT_LEVEL_WORDS)}")
    return READOUT_LEVEL_WORDS.index(norm)


# ------------------------------------------------------------------------------ boxes
def box_target(bbox: BBox | Sequence[float]) -> str:
    """EPAIQA grounding target: ``" (0.42, 0.55, 0.30, 0.25)"``.

    ``bbox`` is a :class:`~ieqa.data.schema.BBox` (or an ``(x, y, w, h)`` sequence): centre
    x, centre y, width and height as fractions of the image, each in [0, 1]. Written with
    two decimals (EPAIQA §4.1) and a leading space, since the ``epaiqa-grounding`` answer
    prefix ends with ``"are:"``.
    """
    if not isinstance(bbox, BBox):
        try:
            x, y, w, h = bbox  # type: ignore[misc]
            bbox = BBox(x=x, y=y, w=w, h=h)
        except (TypeError, ValueError, ValidationError) as exc:
            raise TrainDataError(f"bbox must be a BBox or four fractions (x, y, w, h) in "
                                 f"[0, 1], got {bbox!r}: {exc}") from None
    return f" ({bbox.x:.2f}, {bbox.y:.2f}, {bbox.w:.2f}, {bbox.h:.2f})"


# --------------------------------------------------------------------------- critique
def _critique_label(dimension: str) -> str:
    """``"visual_quality"`` -> ``"Visual Quality"`` (the reasonedit-critique wording)."""
    return dimension.replace("_", " ").title()


def _data_scale(sample: EditSample, data_scale: Sequence[float] | None,
                default: tuple[float, float]) -> tuple[float, float]:
    if data_scale is not None:
        return _range(data_scale, "data_scale")
    stated = sample.meta.get("score_scale")
    if stated is None:
        return default
    try:
        return _range(stated, f"sample {sample.id!r} meta['score_scale']")
    except TrainDataError as exc:
        raise TrainDataError(f"{exc}; pass data_scale=(low, high)") from None


def critique_target(sample: EditSample, dimensions: Sequence[str] = CORE_DIMENSIONS,
                    scale: Sequence[float] = (1, 5), *,
                    data_scale: Sequence[float] | None = None,
                    key: str = EXPLANATION_KEY) -> str:
    """ReasonEdit-style critique target: the sample's explanation, then the scores.

    The answer the ``reasonedit-critique`` template asks for (ReasonEdit §3.2.1, appendix
    F.1 ``[Final Assessment]`` anchor)::

        <explanation text>

        [Final Assessment]
        Visual Quality: 4.25
        Instruction Alignment: 3.00
        Content Preservation: 5.00

    The explanation is ``sample.meta[key]`` (``"explanation"`` by default; ieqa's loaders
    do not fill it, so datasets with critiques put them there). One line per dimension of
    ``dimensions`` (canonical names or aliases, in the given order), with
    ``sample.scores[dim]`` mapped from the data scale onto ``scale`` (the template's,
    1-5), clipped into it and written with two decimals. The data scale is ``data_scale``,
    else ``sample.meta["score_scale"]`` (ShapesEdit sets ``[1, 5]``), else ``scale``
    itself. :func:`~ieqa.scorers.vlm.parsing.parse_critique` reads the scores back.

    Raises :class:`TrainDataError` when the sample has no explanation text (callers decide
    whether to skip such samples), when the explanation already holds a final-assessment
    heading, or when a score is missing.
    """
    text = sample.meta.get(key)
    if not isinstance(text, str) or not text.strip():
        raise TrainDataError(f"sample {sample.id!r} has no explanation text in meta[{key!r}]; "
                             "a critique target needs one (skip such samples)")
    if _FINAL_HEADING.search(text):
        raise TrainDataError(f"the explanation of sample {sample.id!r} already contains a "
                             "'[Final Assessment]' heading; pass the critique text only")
    if isinstance(dimensions, str):
        raise TrainDataError("dimensions must be a list of names, not one string")
    dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions))
    if not dims:
        raise TrainDataError("dimensions is empty: name the dimensions to score")
    missing = [d for d in dims if d not in sample.scores]
    if missing:
        raise TrainDataError(f"sample {sample.id!r} has no score for {', '.join(missing)} "
                             f"(it has {', '.join(sample.scores) or 'none'})")
    target = _range(scale, "scale")
    if target[0] == target[1]:
        raise TrainDataError(f"scale must have low < high, got {tuple(scale)!r}")
    src = _data_scale(sample, data_scale, target)
    lines = [f"{_critique_label(d)}: {_clip(rescale(sample.scores[d], src, target), target):.2f}"
             for d in dims]
    return text.strip() + "\n\n[Final Assessment]\n" + "\n".join(lines)
