"""Ground truth of ShapesEdit, computed exactly from how each candidate was made.

All scores are on a 1-5 scale (1 worst, 5 best): ``score = 1 + 4 * unit`` with
``unit`` in [0, 1]:

* instruction_alignment: unit = the strength of the requested edit that was carried out
  (1 perfect, 0.25-0.75 partial, 0 for no-op and wrong target).
* content_preservation: unit = 1 / (1 + u / 0.1), where u is the mean over pixels of
  min(1, max_channel |clean - intended| / 0.3): the unrequested change between the
  editor's artifact-free output and the requested edit rendered at the strength the
  editor achieved. Artifacts do not count here; they are visual quality.
* visual_quality: unit = 1 - artifact severity (1 when the editor left no artifact).
* overall: 0.3 * visual_quality + 0.4 * instruction_alignment + 0.3 * content_preservation
  (ReasonEdit's released weights).
"""

from __future__ import annotations

import numpy as np

from ieqa.data.combine import REASONEDIT_WEIGHTS, weighted_sum
from ieqa.data.images import channel_max

CHANGE_SCALE = 0.3
PRESERVATION_HALF = 0.1
OVERALL_WEIGHTS = REASONEDIT_WEIGHTS  # EditHF's / ReasonEdit's 0.3 / 0.4 / 0.3


def unintended_change(clean: np.ndarray, intended: np.ndarray) -> float:
    """Mean saturated per-pixel change between two float images (H, W, 3), in [0, 1]."""
    d = np.abs(clean.astype(np.float32) - intended.astype(np.float32))
    return float(np.minimum(1.0, channel_max(d) / CHANGE_SCALE).mean())


def to_scale(unit: float) -> float:
    """Map [0, 1] to the 1-5 score scale."""
    return 1.0 + 4.0 * float(unit)


def ground_truth(alignment: float, change: float, severity: float) -> dict[str, float]:
    """Per-dimension ground truth (1-5) from the strength done, the unintended change and
    the artifact severity (all in [0, 1])."""
    scores = {
        "visual_quality": to_scale(1.0 - severity),
        "instruction_alignment": to_scale(alignment),
        "content_preservation": to_scale(1.0 / (1.0 + change / PRESERVATION_HALF)),
    }
    scores["overall"] = weighted_sum(scores, OVERALL_WEIGHTS)
    return {k: round(v, 6) for k, v in scores.items()}


_MODE_TEXT = {
    "perfect": "The requested edit was carried out completely.",
    "partial": "The requested edit was only partly carried out.",
    "no_op": "The requested edit was not carried out: the image is unchanged where it "
             "should change.",
    "wrong_target": "The edit was applied to the wrong target.",
    "over_edit": "The requested edit was carried out, but other content changed as well.",
}


#: The brief critique's phrase per editor mode (:func:`describe` with ``style="brief"``).
_MODE_BRIEF = {
    "perfect": "Done completely.",
    "partial": "Done partly.",
    "no_op": "Edit not carried out.",
    "wrong_target": "Applied to the wrong target.",
    "over_edit": "Done, but other content changed.",
}

#: The critique styles :func:`describe` writes.
CRITIQUE_STYLES: tuple[str, ...] = ("full", "brief")


def severity_word(severity: float) -> str:
    """The word for an artifact's ``severity`` (0-1): ``slight`` <= 0.33 < ``moderate``
    <= 0.66 < ``strong``."""
    return "strong" if severity > 0.66 else "moderate" if severity > 0.33 else "slight"


def describe(meta: dict, style: str = "full") -> str:
    """A short factual critique of a ShapesEdit candidate from its generation record
    (``sample.meta``). Used as the explanation text when training critique models on
    ShapesEdit.

    ``style="full"`` (the default) says what the editor did, what else changed, and any
    artifact, in sentences (about 120 characters). ``style="brief"`` says the artifact
    and its severity, then the edit outcome, in the same key words (about 30 characters,
    e.g. ``"Strong noise. Done completely."``): a target that a tiny character-level
    model reproduces within a few dozen generated tokens.
    """
    if style not in CRITIQUE_STYLES:
        raise ValueError(f"critique style {style!r} is unknown; choose one of "
                         f"{', '.join(CRITIQUE_STYLES)}")
    artifact, severity = meta.get("artifact"), float(meta.get("artifact_severity") or 0.0)
    if style == "brief":
        first = (f"{severity_word(severity).capitalize()} {artifact}." if artifact
                 else "No visible artifacts.")
        return f"{first} {_MODE_BRIEF.get(str(meta.get('mode')), 'Outcome unknown.')}"
    parts = [_MODE_TEXT.get(str(meta.get("mode")), "The edit outcome is unknown.")]
    change = float(meta.get("unintended_change") or 0.0)
    if change > 0.02:
        parts.append(f"About {100 * change:.0f}% of the image changed without being asked.")
    else:
        parts.append("The rest of the image is preserved.")
    if artifact:
        level = severity_word(severity)
        where = " in the edited region" if meta.get("artifact_scope") == "region" else ""
        parts.append(f"There is {level} {artifact} degradation{where}.")
    else:
        parts.append("There are no visible artifacts.")
    return " ".join(parts)
