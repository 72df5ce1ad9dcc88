"""Moved to :mod:`ieqa.scorers.published.internvl_release` (issue 42: the released evaluators beside
their release loaders); this name stays for old imports, with a ``DeprecationWarning``, and
goes in a later release. The module is imported by name on first use, so that
``ieqa.backends`` still imports nothing above it."""

from typing import Any


def __getattr__(name: str) -> Any:
    import importlib
    import warnings

    warnings.warn("ieqa.backends.internvl_release moved to ieqa.scorers.published.internvl_release",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module("ieqa.scorers.published.internvl_release"), name)
