"""Offline test helpers: tiny random VLM checkpoints (:func:`build_tiny_vlm`), a uvicorn
server in a thread (:func:`serve_in_thread`), and slow plain references that fast paths
are checked against (:mod:`ieqa.testing.references`)."""

from ieqa.testing.server import serve_in_thread
from ieqa.testing.tiny_vlm import TINY_FAMILIES, build_tiny_vlm

__all__ = ["TINY_FAMILIES", "build_tiny_vlm", "serve_in_thread"]
