"""Simulated editors: profiles of how often and how badly an editor fails.

An editor turns an :class:`~ieqa.data.shapesedit.ops.EditOp` into a candidate image by
one of five *modes*:

============  ==================================================================
perfect       the complete edit (strength 1)
partial       the edit at a strength drawn from ``partial`` (e.g. 0.25-0.75)
no_op         the source returned unchanged
wrong_target  the same kind of edit aimed at the wrong object (or the wrong global
              effect), and nothing of what was asked
over_edit     the complete edit plus an unrequested change elsewhere (another shape
              recoloured or removed, a colour cast, a changed background)
============  ==================================================================

and then, with probability ``artifact_prob``, leaves one visual artifact (noise, blur,
JPEG, seam) of a severity drawn from ``artifact_severity``, over the whole image or
only over the edited region. :data:`DEFAULT_EDITORS` is ordered best first: that order
is the known true ranking by expected overall score (checked by the test suite).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ieqa.data.shapesedit.scene import COLORS, World

MODES = ("perfect", "partial", "no_op", "wrong_target", "over_edit")
OVER_EDITS = ("recolor_other", "remove_other", "color_cast", "background")


@dataclass(frozen=True)
class EditorProfile:
    """How a simulated editor behaves. Probabilities need not be normalised."""

    name: str
    modes: dict[str, float]
    partial: tuple[float, float] = (0.25, 0.75)
    artifact_prob: float = 0.2
    artifact_severity: tuple[float, float] = (0.1, 0.5)
    artifacts: tuple[str, ...] = ("noise", "blur", "jpeg", "seam")
    region_artifact_prob: float = 0.5  # share of artifacts confined to the edited region
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.modes) - set(MODES)
        if unknown:
            raise ValueError(f"editor {self.name!r}: unknown modes {sorted(unknown)}; known: {MODES}")
        if not self.modes or min(self.modes.values()) < 0 or sum(self.modes.values()) <= 0:
            raise ValueError(f"editor {self.name!r}: mode probabilities must be >= 0 and not all 0")
        for lo, hi, what in (*self.partial, "partial"), (*self.artifact_severity, "artifact_severity"):
            if not 0 <= lo <= hi <= 1:
                raise ValueError(f"editor {self.name!r}: {what} range must satisfy 0 <= lo <= hi <= 1")
        if not 0 <= self.artifact_prob <= 1:
            raise ValueError(f"editor {self.name!r}: artifact_prob must be in [0, 1]")

    def draw_mode(self, rng: np.random.Generator) -> str:
        names = list(self.modes)
        p = np.asarray([self.modes[m] for m in names], dtype=float)
        return names[int(rng.choice(len(names), p=p / p.sum()))]


#: Built-in editors, best first (the true ranking by expected overall score).
DEFAULT_EDITORS: tuple[EditorProfile, ...] = (
    EditorProfile("oracle", {"perfect": 0.9, "partial": 0.1}, partial=(0.7, 0.95),
                  artifact_prob=0.05, artifact_severity=(0.05, 0.2),
                  description="almost always complete, clean edits"),
    EditorProfile("strong", {"perfect": 0.75, "partial": 0.12, "over_edit": 0.08, "no_op": 0.03, "wrong_target": 0.02},
                  partial=(0.5, 0.9), artifact_prob=0.15, artifact_severity=(0.1, 0.35),
                  description="good, sometimes over-edits"),
    EditorProfile("overeager", {"perfect": 0.2, "over_edit": 0.65, "partial": 0.1, "wrong_target": 0.05},
                  artifact_prob=0.35, artifact_severity=(0.15, 0.55),
                  description="does what is asked and changes other things too"),
    EditorProfile("timid", {"perfect": 0.25, "partial": 0.4, "no_op": 0.3, "wrong_target": 0.05},
                  partial=(0.15, 0.6), artifact_prob=0.2, artifact_severity=(0.1, 0.5),
                  description="often does too little or nothing"),
    EditorProfile("noisy", {"perfect": 0.35, "partial": 0.2, "over_edit": 0.15, "no_op": 0.1, "wrong_target": 0.2},
                  artifact_prob=0.85, artifact_severity=(0.35, 0.95),
                  description="degrades image quality"),
    EditorProfile("broken", {"perfect": 0.05, "partial": 0.1, "no_op": 0.35, "wrong_target": 0.35, "over_edit": 0.15},
                  artifact_prob=0.6, artifact_severity=(0.4, 1.0),
                  description="mostly fails"),
)


#: Editors for learning proofs: every edit is carried out and then degraded by global
#: noise of uniform severity, so visual quality (and overall) spread evenly over 1-5 and
#: follow a signal a tiny VLM trained for seconds on a CPU can pick up. Four editors
#: with the same behaviour (groups of up to 4 candidates).
ARTIFACT_EDITORS: tuple[EditorProfile, ...] = tuple(
    EditorProfile(f"noise-{i}", {"perfect": 1.0}, artifact_prob=1.0,
                  artifact_severity=(0.0, 1.0), artifacts=("noise",), region_artifact_prob=0.0,
                  description="complete edit, global noise of uniform severity")
    for i in range(4))

#: Named editor sets (``ieqa synth --preset``, training recipes' ``preset``).
EDITOR_PRESETS: dict[str, tuple[EditorProfile, ...]] = {
    "default": DEFAULT_EDITORS, "artifacts": ARTIFACT_EDITORS}


def over_edit(world: World, intended: World, rng: np.random.Generator) -> tuple[World, str]:
    """Add one unrequested change to ``intended``; returns (world, kind of change)."""
    untouched = [
        i for i, s in enumerate(intended.shapes) if i < len(world.shapes) and s == world.shapes[i]
    ]
    kinds = list(OVER_EDITS) if untouched else ["color_cast", "background"]
    kind = kinds[int(rng.integers(len(kinds)))]
    if kind in ("recolor_other", "remove_other"):
        i = untouched[int(rng.integers(len(untouched)))]
        shapes = list(intended.shapes)
        if kind == "remove_other":
            shapes[i] = replace(shapes[i], alpha=0.0)
        else:
            names = [c for c in COLORS if c != shapes[i].color]
            new = names[int(rng.integers(len(names)))]
            shapes[i] = replace(shapes[i], rgb=tuple(c / 255 for c in COLORS[new]))
        return intended.with_shapes(shapes), kind
    if kind == "color_cast":
        direction = rng.normal(size=3)
        cast = (direction / np.linalg.norm(direction) * rng.uniform(0.08, 0.2)).astype(np.float32)
        return intended.with_post(lambda img: img + cast), kind
    tint = rng.uniform(0.0, 1.0, 3).astype(np.float32)
    weight = float(rng.uniform(0.3, 0.55))
    background = intended.background * (1 - weight) + tint[None, None, :] * weight
    return replace(intended, background=background.astype(np.float32)), kind
