"""The ieqa version (``ieqa --version``; recorded in score files, checkpoints and reports)."""

__version__ = "0.1.0.dev0"
