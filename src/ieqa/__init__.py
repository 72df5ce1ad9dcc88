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
import importlib.util
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
