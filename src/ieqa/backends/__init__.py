"""Model backends that answer :class:`Prompt` objects.

* :class:`TransformersVLM` — a local checkpoint (hub id or folder) through transformers.
* :class:`OpenAICompatBackend` — any OpenAI-compatible chat-completions server.

:func:`make_backend` builds one from scorer arguments (``model=`` or ``base_url=``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ieqa.backends.base import (
    ERROR_KINDS,
    OPENAI_BASE_URL,
    EncodedImage,
    Generation,
    Prompt,
    VLMBackend,
    fit_pixel_budget,
)
from ieqa.backends.processor import BackendError, PromptTooLongError

if TYPE_CHECKING:
    from ieqa.backends.openai_compat import OpenAICompatBackend
    from ieqa.backends.transformers_vlm import TransformersVLM

__all__ = ["ERROR_KINDS", "OPENAI_BASE_URL", "BackendError", "EncodedImage", "Generation", "OpenAICompatBackend", "Prompt", "PromptTooLongError",
           "TransformersVLM", "VLMBackend", "fit_pixel_budget", "make_backend"]


def __getattr__(name: str) -> Any:
    if name == "TransformersVLM":
        from ieqa.backends.transformers_vlm import TransformersVLM
        return TransformersVLM
    if name == "OpenAICompatBackend":
        from ieqa.backends.openai_compat import OpenAICompatBackend
        return OpenAICompatBackend
    raise AttributeError(name)


def make_backend(*, model: str | Path | None = None, base_url: str | None = None,
                 backend: VLMBackend | None = None, **options: Any) -> VLMBackend:
    """The backend a VLM scorer runs on.

    Exactly one of:

    * ``backend`` — an already built backend (shared between scorers);
    * ``base_url`` (+ ``model``, the served model's name) — an OpenAI-compatible server;
    * ``model`` — a hub id or local checkpoint folder loaded with transformers.

    ``options`` go to the backend's constructor (``device``, ``dtype``, ``max_pixels``,
    ``timeout_s``, ...).
    """
    if backend is not None:
        if model is not None or base_url is not None or options:
            raise BackendError("pass either backend= or model=/base_url= and their options, "
                               "not both")
        return backend
    if base_url is not None:
        from ieqa.backends.openai_compat import OpenAICompatBackend

        if model is None:
            raise BackendError("an OpenAI-compatible server needs model=<served model name>")
        return OpenAICompatBackend(base_url=base_url, model=str(model), **options)
    if model is None:
        raise BackendError("a VLM scorer needs a model: model=<hub id or checkpoint folder> "
                           "(CLI: --model), or base_url=<OpenAI-compatible server> with "
                           "model=<served name>; a tiny offline model for smoke tests: "
                           "`ieqa tiny-vlm DIR`")
    server_only = sorted(k for k in ("timeout_s", "max_consecutive_failures", "max_retries")
                         if k in options)
    if server_only:
        raise BackendError(f"{', '.join(server_only)} applies to a judge on an OpenAI-compatible "
                           f"server (base_url=URL); {model} runs here, with transformers")
    from ieqa.backends.transformers_vlm import TransformersVLM

    return TransformersVLM(model, **options)
