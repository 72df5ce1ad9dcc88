"""Moved to :mod:`ieqa.scorers.published.gedit_judge` (issue 42: the released evaluators beside
their release loaders); this name stays for old imports, with a ``DeprecationWarning``, and
goes in a later release. The module is imported by name, so that the package
imports no module of :mod:`ieqa.scorers.published` (which builds on this one)."""

import importlib
import sys
import warnings

warnings.warn("ieqa.scorers.vlm.gedit_judge moved to ieqa.scorers.published.gedit_judge",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ieqa.scorers.published.gedit_judge")
