"""Moved to :mod:`ieqa.scorers.published.re_reward` (issue 42: the released evaluators beside
their release loaders); this name stays for old imports, with a ``DeprecationWarning``, and
goes in a later release. The module is imported by name, so that the package
imports no module of :mod:`ieqa.scorers.published` (which builds on this one)."""

import importlib
import sys
import warnings

warnings.warn("ieqa.scorers.vlm.re_reward moved to ieqa.scorers.published.re_reward",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ieqa.scorers.published.re_reward")
