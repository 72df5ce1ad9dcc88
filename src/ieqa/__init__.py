"""ieqa: Image Editing Quality Assessment.

Score instruction-guided image edits (source image, edited image, instruction) on
visual quality, instruction alignment and content preservation; benchmark evaluators
against human ratings; train evaluators; serve scores as rewards.

The data model (:mod:`ieqa.data`) and the scorer registry (:mod:`ieqa.scorers`) are
re-exported here and imported on first use (``ieqa.create_scorer``,
``from ieqa import EditSample``), so ``import ieqa`` and the ``ieqa`` command start fast.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any

from ieqa.errors import IeqaError, ManifestError, UnknownDimensionError
from ieqa.version import __version__

#: public name -> the module it is re-exported from (tests/test_package.py checks that
#: these are exactly ieqa.data's __all__ and the scorer names)
_LAZY: dict[str, str] = {
    **{name: "ieqa.data" for name in (
        "DEFAULT_MAX_PIXELS", "LoadResult", "image_size", "iter_load_images", "load_image",
        "load_images", "BBox", "CORE_DIMENSIONS", "EditSample", "Group", "ImageRef",
        "InstructionKind", "Preference", "PreferenceLabel", "Rating", "canonical_dimension",
        "dimension_aliases", "group_samples", "list_dimensions", "register_dimension")},
    **{name: "ieqa.scorers" for name in (
        "Scorer", "ScorerError", "ScoreResult", "ScorerInfo", "create_scorer", "list_scorers",
        "load_evaluator", "save_evaluator", "scorer_info")},
}

__all__ = ["__version__", "IeqaError", "ManifestError", "UnknownDimensionError", *_LAZY]

_PUBLISHED = ("editreward", "editscore", "edithf", "reasonedit", "re_reward", "unifiedreward",
              "viescore", "vie_judge", "gedit_judge", "imgedit_judge", "kris_judge", "rise_judge")
#: old module name -> the module it moved to: importing the old name gives the moved module,
#: with a DeprecationWarning naming it (CHANGELOG, "Moved"); the names go in a later release
MOVED_MODULES: dict[str, str] = {
    **{f"ieqa.scorers.vlm.{m}": f"ieqa.scorers.published.{m}" for m in _PUBLISHED},
    "ieqa.scorers.vlm.published_prompts": "ieqa.scorers.published.base",
    "ieqa.backends.releases": "ieqa.scorers.published.editreward_release",
    "ieqa.backends.lora_release": "ieqa.scorers.published.lora_release",
    "ieqa.backends.internvl_release": "ieqa.scorers.published.internvl_release",
    "ieqa.bench.editors": "ieqa.bench.rank_editors",  # editor leaderboards; bench.editor: benchmarks
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name of :data:`MOVED_MODULES` as the module it moved to."""

    def __init__(self) -> None:
        self.specs: dict[str, Any] = {}  # each moved module's own spec, by its name

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        return importlib.util.spec_from_loader(name, self) if name in MOVED_MODULES else None

    def create_module(self, spec: Any) -> Any:
        warnings.warn(f"{spec.name} moved to {MOVED_MODULES[spec.name]}", DeprecationWarning,
                      stacklevel=2)
        moved = importlib.import_module(MOVED_MODULES[spec.name])
        self.specs.setdefault(moved.__name__, moved.__spec__)
        return moved

    def exec_module(self, module: Any) -> None:
        """The moved module has run already; the import machinery gave it the old name's
        spec, so it gets its own back (``find_spec``, ``reload`` and ``importlib.resources``
        of the new name keep working)."""
        module.__spec__ = self.specs[module.__name__]


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name.startswith("_") or importlib.util.find_spec(f"ieqa.{name}") is None:
            raise AttributeError(f"module 'ieqa' has no attribute {name!r}")
        return importlib.import_module(f"ieqa.{name}")  # a subpackage: ieqa.data, ...
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
