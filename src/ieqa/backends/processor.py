"""Loading a VLM's processor (tokenizer + image processor + chat template) without video support.

The stock Qwen-VL processors insist on a video processor, and the video processors need
torchvision, which ieqa never installs (it breaks transformers' Qwen-VL imports on CPU-only
torch). ieqa scores images only, so when :func:`transformers.AutoProcessor` cannot build
the video part, :func:`load_processor` builds the same processor class without it: the
tokenizer, image processor and chat template are the checkpoint's own, so the encoded
inputs are identical to what the full processor produces for images.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError

__all__ = ["load_processor", "image_only_processor_class", "BackendError", "PromptTooLongError"]

log = logging.getLogger(__name__)


class BackendError(IeqaError):
    """A model backend cannot be loaded or cannot run (the message says what to do)."""


class PromptTooLongError(BackendError):
    """A prompt has more tokens than the model's context holds.

    Attributes:
        tokens: the prompt's length in tokens.
        limit: the model's context in tokens.
    """

    def __init__(self, message: str, *, tokens: int, limit: int) -> None:
        super().__init__(message)
        self.tokens, self.limit = int(tokens), int(limit)


@cache
def image_only_processor_class(processor_class: type) -> type:
    """A subclass of a multimodal ``ProcessorMixin`` class whose constructor takes no video
    processor (``image_processor``, ``tokenizer``, ``chat_template`` only)."""
    from transformers.processing_utils import ProcessorMixin

    class _NoVideo(ProcessorMixin):
        # Sits between the stock processor and ProcessorMixin in the MRO: the stock
        # __init__ calls super().__init__(image_processor, tokenizer, video_processor, ...)
        def __init__(self, image_processor=None, tokenizer=None, video_processor=None,
                     chat_template=None, **kwargs):
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        processor_class.__init__(self, image_processor, tokenizer, None,
                                 chat_template=chat_template, **kwargs)

    name = f"ImageOnly{processor_class.__name__}"
    return type(name, (processor_class, _NoVideo), {"__init__": __init__,
                                                    "__module__": __name__,
                                                    "video_processor": None})


def _stock_processor_class(model: str | Path, **hub: Any) -> type:
    from transformers import AutoConfig
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING

    config = AutoConfig.from_pretrained(model, **hub)
    try:
        return PROCESSOR_MAPPING[type(config)]
    except KeyError as exc:
        raise BackendError(f"{model}: transformers has no processor class for model type "
                           f"{config.model_type!r}") from exc


def check_local_path(model: str | Path) -> None:
    """Raise :class:`BackendError` when ``model`` is written as a local path (it starts
    with ``.``, ``/`` or ``~``, or has more than one ``/``, which no hub id has) and no such
    folder exists: the hub's complaint about the id's characters would hide that."""
    text = str(model)
    looks_local = isinstance(model, Path) or text.startswith((".", "/", "~")) \
        or text.count("/") > 1 or "\\" in text
    if looks_local and not Path(text).expanduser().exists():
        raise BackendError(f"{text}: no such folder; give the folder of a downloaded "
                           "checkpoint, or a hub id such as Qwen/Qwen2.5-VL-7B-Instruct")


def load_processor(model: str | Path, *, min_pixels: int | None = None,
                   max_pixels: int | None = None, revision: str | None = None,
                   trust_remote_code: bool = False, config_from: str | Path | None = None,
                   ) -> Any:
    """The processor of a VLM checkpoint (hub id or local folder).

    Args:
        model: hub id (``"Qwen/Qwen2.5-VL-7B-Instruct"``) or a local folder.
        min_pixels, max_pixels: image pixel budget given to the image processor (pixels,
            e.g. ``256*28*28``); ``None`` keeps the checkpoint's own.
        revision: hub revision (branch, tag or commit).
        trust_remote_code: allow a checkpoint's own processor code.
        config_from: the model whose config names the processor class, when ``model`` is a
            folder of processor files without a model config (a release package).

    Raises:
        BackendError: the checkpoint has no usable processor, or ``model`` is written as a
            path (``./x``, ``/x``, ``~/x``, ``x/y/z``) and no such folder exists.
    """
    check_local_path(model)
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    hub: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
    pixels = {k: v for k, v in (("min_pixels", min_pixels), ("max_pixels", max_pixels))
              if v is not None}
    try:
        if config_from is not None:  # processor files without a model config
            processor = _stock_processor_class(config_from).from_pretrained(model, **hub)
        else:
            processor = AutoProcessor.from_pretrained(model, **hub)
    except (ImportError, ValueError) as exc:  # the video part needs torchvision
        if "torchvision" not in str(exc).lower():
            if isinstance(exc, ValueError):
                raise
            raise BackendError(f"{model}: the processor cannot be imported: {exc}") from exc
        log.debug("%s: building the processor without its video part (%s)", model, exc)
        stock = _stock_processor_class(config_from if config_from is not None else model,
                                       **({} if config_from is not None else hub))
        tokenizer = AutoTokenizer.from_pretrained(model, **hub)
        image_processor = AutoImageProcessor.from_pretrained(model, **hub)
        processor = image_only_processor_class(stock)(
            image_processor=image_processor, tokenizer=tokenizer,
            chat_template=getattr(tokenizer, "chat_template", None))
    except OSError as exc:
        raise BackendError(f"{model}: no processor found ({exc}); pass a folder that holds the "
                           "tokenizer and preprocessor_config.json, or a hub id") from exc
    image_processor = getattr(processor, "image_processor", None)
    if image_processor is None:
        raise BackendError(f"{model}: the processor has no image processor; is this a "
                           "vision-language model?")
    _set_pixel_budget(image_processor, **pixels)
    if getattr(processor, "chat_template", None) is None:
        processor.chat_template = getattr(processor.tokenizer, "chat_template", None)
    if processor.chat_template is None:
        raise BackendError(f"{model}: the checkpoint has no chat template; ieqa builds the "
                           "conversation with the model's own template")
    return processor


def _set_pixel_budget(image_processor: Any, *, min_pixels: int | None = None,
                      max_pixels: int | None = None) -> None:
    """Apply a pixel budget in the image processor's own terms (``size`` edges in
    transformers 5, ``min_pixels``/``max_pixels`` attributes in older processors)."""
    if min_pixels is None and max_pixels is None:
        return
    size = dict(getattr(image_processor, "size", None) or {})
    if "shortest_edge" in size or "longest_edge" in size:
        if min_pixels is not None:
            size["shortest_edge"] = int(min_pixels)
        if max_pixels is not None:
            size["longest_edge"] = int(max_pixels)
        image_processor.size = size
    for name, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if value is not None and hasattr(image_processor, name):
            setattr(image_processor, name, int(value))
