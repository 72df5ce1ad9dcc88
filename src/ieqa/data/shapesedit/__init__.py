"""ShapesEdit: an offline world of image edits whose quality is known exactly.

Sources are coloured shapes over procedural textures or real scikit-image photos;
instructions come from templates (recolour, remove, add, move, resize, brightness,
background blur, restyle); simulated editors carry them out with controlled failures
(partial, no-op, wrong target, over-editing, artifacts). Ground truth per dimension
follows from the parameters (:mod:`.truth`). Each (source, instruction) yields a group of
``k`` candidates from different editors, whose true ranking is known.

Examples:
    >>> from ieqa.data.shapesedit import ShapesEditConfig, generate
    >>> from ieqa.data.manifest import read_manifest
    >>> manifest = generate("shapes", ShapesEditConfig(n=6, k=3, seed=1, size=64))
    >>> samples = read_manifest(manifest)
    >>> len(samples), len({s.group_id for s in samples})
    (6, 2)
"""

from ieqa.data.shapesedit.editors import (
    ARTIFACT_EDITORS,
    DEFAULT_EDITORS,
    EDITOR_PRESETS,
    MODES,
    EditorProfile,
)
from ieqa.data.shapesedit.generator import (
    ShapesEditConfig,
    SynthGroup,
    dataset_card,
    generate,
    iter_groups,
    make_group,
)
from ieqa.data.shapesedit.ops import LOCALISED_TASKS, TASKS
from ieqa.data.shapesedit.truth import describe, ground_truth

__all__ = [
    "ARTIFACT_EDITORS", "DEFAULT_EDITORS", "EDITOR_PRESETS", "describe", "EditorProfile", "LOCALISED_TASKS", "MODES", "ShapesEditConfig",
    "SynthGroup", "TASKS", "dataset_card", "generate", "ground_truth", "iter_groups", "make_group",
]
