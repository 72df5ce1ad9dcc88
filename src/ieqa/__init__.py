"""ieqa: Image Editing Quality Assessment.

Score instruction-guided image edits (source image, edited image, instruction) on
visual quality, instruction alignment and content preservation; benchmark evaluators
against human ratings; train evaluators; serve scores as rewards.
"""

from ieqa.data import *  # noqa: E402,F403
from ieqa.data import __all__ as _data_all  # noqa: E402
from ieqa.errors import IeqaError, ManifestError, UnknownDimensionError  # noqa: E402
from ieqa.scorers import (  # noqa: E402
    Scorer,
    ScorerError,
    ScoreResult,
    ScorerInfo,
    create_scorer,
    list_scorers,
    load_evaluator,
    save_evaluator,
    scorer_info,
)
from ieqa.version import __version__  # noqa: E402

__all__ = ["__version__", "IeqaError", "ManifestError", "UnknownDimensionError", *_data_all,
           "Scorer", "ScorerError", "ScoreResult", "ScorerInfo", "create_scorer", "list_scorers",
           "load_evaluator", "save_evaluator", "scorer_info"]
