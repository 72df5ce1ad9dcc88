"""Offline test helpers: tiny random VLM checkpoints (:func:`build_tiny_vlm`)."""

from ieqa.testing.tiny_vlm import TINY_FAMILIES, build_tiny_vlm

__all__ = ["TINY_FAMILIES", "build_tiny_vlm"]
