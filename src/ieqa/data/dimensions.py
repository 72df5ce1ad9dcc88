"""Canonical dimension names and the one alias table every part of ieqa uses.

Benchmarks and papers name the same judgement differently ("SC", "editing fidelity",
"prompt_following" all mean how well the instruction was followed). ieqa stores and
reports scores under canonical names only; :func:`canonical_dimension` maps any known
alias to its canonical name, case- and punctuation-insensitively.

Examples:
    >>> canonical_dimension("Semantic Consistency")
    'instruction_alignment'
    >>> canonical_dimension("PQ")
    'visual_quality'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ieqa.errors import UnknownDimensionError

VISUAL_QUALITY = "visual_quality"
INSTRUCTION_ALIGNMENT = "instruction_alignment"
CONTENT_PRESERVATION = "content_preservation"
OVERALL = "overall"
HARMONY = "harmony"
LOCAL_NATURALNESS = "local_naturalness"
PROMPT_COMPLETION = "prompt_completion"
LOGICALITY = "logicality"
ACCURACY = "accuracy"
USEFULNESS = "usefulness"
SC_MIN = "sc_min"
KNOWLEDGE_PLAUSIBILITY = "knowledge_plausibility"

#: The three core dimensions of image-edit quality, in the order ieqa reports them.
CORE_DIMENSIONS: tuple[str, ...] = (VISUAL_QUALITY, INSTRUCTION_ALIGNMENT, CONTENT_PRESERVATION)
#: The five quality levels, worst to best (ITU-R BT.500's five-grade scale as Q-Align, EditHF
#: and EPAIQA word it; bad = 1 ... excellent = 5). The one definition: MOS binning, the level
#: readout, the level answers and the EPAIQA critiques all use it.
LEVEL_WORDS: tuple[str, ...] = ("bad", "poor", "fair", "good", "excellent")

# canonical name -> (description, aliases). Aliases are matched after normalisation
# (lower case, every run of non-alphanumerics becomes one space).
_BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    VISUAL_QUALITY: (
        "Perceptual quality of the edited image: realism, absence of artifacts, detail.",
        (
            "PQ", "perceptual quality", "visual quality", "visual quality & realism",
            "visual quality and realism", "image quality", "quality", "vq",
        ),
    ),
    INSTRUCTION_ALIGNMENT: (
        "How completely and correctly the edit follows the instruction.",
        (
            "SC", "semantic consistency", "editing fidelity", "edit fidelity",
            "instruction following", "instruction alignment", "prompt following",
            "prompt_following", "editing alignment", "edit alignment", "alignment",
            "text image alignment", "text-image alignment", "editing correspondence",
        ),
    ),
    CONTENT_PRESERVATION: (
        "How well what the instruction did not ask to change stayed the same.",
        (
            "content preservation", "attribute preservation", "consistency",
            "preservation", "identity preservation",
        ),
    ),
    OVERALL: ("Overall judgement of the edit.", ("overall", "overall quality", "O", "total")),
    HARMONY: (
        "EPAIQA: how well the edited region fits the whole image (global harmony).",
        ("harmony", "global harmony"),
    ),
    LOCAL_NATURALNESS: (
        "EPAIQA: naturalness of the edited region itself (judged on its crop).",
        ("local naturalness", "naturalness"),
    ),
    PROMPT_COMPLETION: (
        "EPAIQA: how completely the prompt was realised (levels 1-3).",
        ("prompt completion", "completion"),
    ),
    KNOWLEDGE_PLAUSIBILITY: (
        "Whether an edit that needs world knowledge (science, culture, logic) shows it "
        "correctly (KRIS-Bench's knowledge plausibility).",
        ("knowledge plausibility", "kp", "knowledge score"),
    ),
    LOGICALITY: ("Critique scoring: logical soundness of an explanation.", ("logicality", "logic")),
    ACCURACY: ("Critique scoring: factual accuracy of an explanation.", ("accuracy",)),
    USEFULNESS: ("Critique scoring: usefulness of an explanation.", ("usefulness", "helpfulness")),
    SC_MIN: (
        "VIEScore/EditScore SC as published: the minimum of the SC sub-scores (editing "
        "success, over-editing); EditScore reports its parts as instruction_alignment and "
        "content_preservation.",
        ("sc min", "min sc", "sc_score"),
    ),
}

_DESCRIPTIONS: dict[str, str] = {}
_ALIASES: dict[str, str] = {}


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", name.lower()).strip()


def register_dimension(name: str, description: str = "", aliases: Iterable[str] = ()) -> None:
    """Add a dimension (and optional aliases) to the table.

    Use this for a benchmark with its own judgement (say ``"text_rendering"``). ``name``
    must be lower-case snake case. Raises ``ValueError`` when the name or an alias is
    already taken by another dimension.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"dimension name {name!r} must be lower-case snake_case, e.g. 'text_rendering'")
    for alias in (name, *aliases):
        key = _norm(alias)
        owner = _ALIASES.get(key)
        if owner is not None and owner != name:
            raise ValueError(f"alias {alias!r} already names dimension {owner!r}")
    _DESCRIPTIONS[name] = description or _DESCRIPTIONS.get(name, "")
    for alias in (name, *aliases):
        _ALIASES[_norm(alias)] = name


for _name, (_desc, _aliases) in _BUILTIN.items():
    register_dimension(_name, _desc, _aliases)


def canonical_dimension(name: str) -> str:
    """Return the canonical name for ``name`` (a canonical name or any registered alias).

    Matching ignores case and punctuation: ``"Prompt-Following"`` and
    ``"prompt_following"`` are the same alias. Raises :class:`UnknownDimensionError`
    naming the known dimensions when nothing matches.
    """
    if isinstance(name, str) and name in _DESCRIPTIONS:  # a canonical name is its own alias (fast path: no regex)
        return name
    if not isinstance(name, str):
        raise TypeError(f"dimension name must be a string, got {type(name).__name__}")
    try:
        return _ALIASES[_norm(name)]
    except KeyError:
        raise UnknownDimensionError(
            f"unknown dimension {name!r}; known: {', '.join(sorted(_DESCRIPTIONS))}. "
            "Register new ones with ieqa.register_dimension(name, description, aliases)."
        ) from None


def list_dimensions() -> dict[str, str]:
    """Canonical dimension names mapped to their one-line descriptions."""
    return dict(_DESCRIPTIONS)


def dimension_aliases(name: str) -> list[str]:
    """The normalised aliases that map to the canonical dimension ``name``."""
    canon = canonical_dimension(name)
    return sorted(k for k, v in _ALIASES.items() if v == canon)
