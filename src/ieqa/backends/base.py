"""What every VLM backend takes and returns: :class:`Prompt`, :class:`Generation`, :class:`VLMBackend`.

A :class:`Prompt` is backend-agnostic: an optional system text, the user message as an
ordered sequence of text and images, and an optional ``answer_prefix`` the model's answer
continues from (readouts that read logits put e.g. ``"Visual quality score: "`` there).
The transformers backend renders it with the checkpoint's own chat template; the
OpenAI-compatible backend sends it as chat-completions messages with base64 images.

Prompts built for candidates that share a source image and instruction carry the same
``share_key`` and ``shared_images`` (how many leading images they share); the transformers
backend then encodes the shared prefix once per group (KV-cache prefix sharing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

#: OpenAI's own endpoint, the default of the judges whose authors call GPT
OPENAI_BASE_URL = "https://api.openai.com/v1"

__all__ = ["ERROR_KINDS", "OPENAI_BASE_URL", "EncodedImage", "Prompt", "Generation", "VLMBackend",
           "fit_pixel_budget",
           "fit_qwen_grid", "key_mismatch"]


@dataclass(frozen=True, eq=False)
class EncodedImage:
    """An image that a server is sent as given bytes under a given media type, not
    re-encoded: a judge whose released code sends each image file's bytes unchanged
    (ImgEdit-Bench's sends every file, JPEG or not, as ``data:image/png;base64,...``).

    Attributes:
        data: the bytes sent (base64-encoded into the data URL).
        mime: the media type written in the data URL, e.g. ``"image/png"``.
        image: the decoded RGB image (what a local model is given, and ``Prompt.images``).
        detail: the ``image_url`` part's ``detail`` (``"high"``, ...), or None (not sent).
    """

    data: bytes
    mime: str
    image: Image.Image
    detail: str | None = None

    @classmethod
    def from_file(cls, path: str | object, mime: str) -> EncodedImage:
        """The file's bytes as they are, labelled ``mime``, with the decoded image."""
        import io
        from pathlib import Path

        data = Path(str(path)).read_bytes()
        with Image.open(io.BytesIO(data)) as im:
            decoded = im.convert("RGB")
        return cls(data=data, mime=mime, image=decoded)

    @classmethod
    def png(cls, image: Image.Image, *, detail: str | None = None) -> EncodedImage:
        """``image`` as lossless PNG bytes (Pillow's default compression), labelled
        ``image/png``: what a released script sends when it saves its in-memory image as PNG."""
        import io

        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return cls(data=buf.getvalue(), mime="image/png", image=image, detail=detail)


@dataclass(frozen=True)
class Prompt:
    """One query to a VLM.

    Attributes:
        parts: the user message in order; each item is text (``str``) or an RGB
            :class:`PIL.Image.Image`.
        system: optional system message.
        answer_prefix: text the assistant answer starts with (not generated; readouts
            that read the next token's logits end the prompt here).
        share_key: prompts with the same key are identical up to (not including) their
            ``shared_images + 1``-th image; ``None`` means no sharing.
        shared_images: how many leading images the prompts of one ``share_key`` share.
        chat: ``True`` (default): the parts are the user message of a chat (the model's
            chat template wraps them); ``False``: they are the model's whole input as
            written, each image standing as the processor's image token (a released
            evaluator that tokenises its prompt without a chat template). Local models
            only: an OpenAI-compatible server always applies its chat template.
        assistant_turn: a whole assistant message after the user message, closed by the
            chat template (rendered without a generation prompt: the model writes after the
            closed turn), as a released evaluator that sends one (IE-Critic-R1's
            ``"<think>"``); to a server it goes as an assistant message and the server's
            template decides. Unlike ``answer_prefix``, which the answer continues.
    """

    parts: tuple[str | Image.Image, ...]
    system: str | None = None
    answer_prefix: str = ""
    share_key: str | None = None
    shared_images: int = 0
    chat: bool = True
    assistant_turn: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        for part in self.parts:
            if not isinstance(part, (str, Image.Image, EncodedImage)):
                raise TypeError("a prompt part must be text, a PIL image or an EncodedImage, "
                                f"got {type(part).__name__}")
        if not self.chat and self.system:
            raise ValueError("a prompt with chat=False has no system message (it is the "
                             "model's whole input as written)")
        if self.assistant_turn is not None and (self.answer_prefix or not self.chat):
            raise ValueError("a prompt with an assistant_turn has no answer_prefix and is a "
                             "chat (the turn is closed by the chat template)")
        if self.shared_images < 0 or self.shared_images > len(self.images):
            raise ValueError(f"shared_images={self.shared_images} but the prompt has "
                             f"{len(self.images)} image(s)")

    @property
    def images(self) -> list[Image.Image]:
        """The images in the order they appear (an :class:`EncodedImage` as its decoded
        image)."""
        return [p.image if isinstance(p, EncodedImage) else p for p in self.parts
                if not isinstance(p, str)]

    def messages(self) -> list[dict[str, Any]]:
        """Chat messages in the transformers chat-template format: images are
        ``{"type": "image"}`` placeholders (the pixels go to the processor separately)."""
        content: list[dict[str, Any]] = [
            {"type": "text", "text": p} if isinstance(p, str) else {"type": "image"}
            for p in self.parts]
        out: list[dict[str, Any]] = []
        if self.system:
            out.append({"role": "system", "content": [{"type": "text", "text": self.system}]})
        out.append({"role": "user", "content": content})
        if self.assistant_turn is not None:
            out.append({"role": "assistant", "content": self.assistant_turn})
        return out


#: what a failed request can be, in words (:attr:`Generation.error_kind`; a judge's answer
#: that its reader cannot read is ``"unreadable"`` too)
ERROR_KINDS: dict[str, str] = {
    "http": "HTTP error",
    "timeout": "timed out",
    "connection": "connection failed",
    "unreadable": "unreadable answer",
}


@dataclass
class Generation:
    """One generated answer.

    Attributes:
        text: the generated text (without the prompt or ``answer_prefix``).
        top_logprobs: per generated token, the natural-log probabilities of the most
            likely tokens as ``{token_text: logprob}`` (``None`` when the backend did not
            return them).
        finish_reason: ``"stop"``, ``"length"``, ... as the backend reports it.
        error: set (and ``text`` empty) when this prompt could not be answered, e.g. an
            HTTP request that failed after its retries; readouts record it per sample.
        error_kind: with ``error``, what failed (:data:`ERROR_KINDS`): ``"http"`` (the
            server answered with an error status), ``"timeout"`` (no answer in time),
            ``"connection"`` (refused or broken), ``"unreadable"`` (an answer that is not a
            chat completion); ``None`` for anything else (an image that cannot be encoded).
        raw: JSON-serialisable backend extras (usage, request id, ...).
    """

    text: str
    top_logprobs: list[dict[str, float]] | None = None
    finish_reason: str | None = None
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    error_kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def server(self) -> dict[str, Any]:
        """What a server said of itself for this answer: ``model``, ``system_fingerprint``
        and ``usage`` where it reported them (empty for a local model)."""
        raw = self.raw or {}
        return {k: raw[k] for k in ("model", "system_fingerprint", "usage")
                if raw.get(k) is not None}


@runtime_checkable
class VLMBackend(Protocol):
    """A model that answers :class:`Prompt` objects (transformers or an HTTP server)."""

    #: a short description recorded in output metadata (model id, endpoint, ...)
    name: str

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int = 256,
                 temperature: float | None = 0.0, top_p: float | None = 1.0,
                 top_k: int | None = None, num_samples: int = 1, seed: int | None = None,
                 seed_per_sample: bool = False, top_logprobs: int = 0,
                 ) -> list[list[Generation]]:
        """``num_samples`` answers per prompt (greedy when ``temperature`` is 0).

        ``top_k`` (``None``: off) limits sampling to the k most likely tokens.
        ``seed_per_sample`` draws answer ``k`` of every prompt on its own with seed
        ``seed + k``, so that it depends only on its prompt and seed, not on the other
        prompts of the call (EditScore's passes). ``temperature``/``top_p`` ``None``: not
        set (a server's own default; only the OpenAI-compatible backend accepts it).
        """
        ...

    def config(self) -> dict[str, Any]:
        """JSON-serialisable settings that reproduce the backend."""
        ...


def fit_pixel_budget(image: Image.Image, max_pixels: int | None, min_pixels: int | None = None,
                     ) -> Image.Image:
    """``image`` resized (bicubic, aspect ratio kept) so its area lies within
    ``[min_pixels, max_pixels]``; returned unchanged when it already does."""
    w, h = image.size
    area = w * h
    if max_pixels is not None and area > max_pixels:
        scale = math.sqrt(max_pixels / area)
    elif min_pixels is not None and area < min_pixels:
        scale = math.sqrt(min_pixels / area)
    else:
        return image
    size = (max(1, int(w * scale)), max(1, int(h * scale)))
    return image.resize(size, Image.Resampling.BICUBIC)


def fit_qwen_grid(image: Image.Image, *, factor: int = 28, min_pixels: int = 4 * 28 * 28,
                  max_pixels: int = 16384 * 28 * 28) -> Image.Image:
    """``image`` resized as Qwen's ``qwen_vl_utils`` resizes an image before the processor
    (the released inference code of EditScore and others runs it): both sides rounded to
    the nearest multiple of ``factor`` pixels (at least ``factor``); when that area exceeds
    ``max_pixels`` the sides are scaled down to fit and floored to the grid (never below
    ``factor``, as current ``qwen_vl_utils``; older copies could reach 0), when it falls
    below ``min_pixels`` they are scaled up and ceiled to the grid. Resampling is Pillow's
    default for RGB (bicubic). Returned unchanged when the size already fits.

    Raises:
        ValueError: the aspect ratio exceeds 200 (Qwen's limit).
    """
    width, height = image.size
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"the image is {width}x{height}: an aspect ratio over 200, which "
                         "Qwen-VL models refuse")

    def grid(value: float, how: Any) -> int:
        return int(how(value / factor)) * factor

    h_bar = max(factor, grid(height, round))
    w_bar = max(factor, grid(width, round))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, grid(height / beta, math.floor))
        w_bar = max(factor, grid(width / beta, math.floor))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = grid(height * beta, math.ceil), grid(width * beta, math.ceil)
    if (w_bar, h_bar) == (width, height):
        return image
    return image.resize((w_bar, h_bar), Image.Resampling.BICUBIC)


def key_mismatch(unexpected: Sequence[str], missing: Sequence[str]) -> str:
    """``"N unexpected: a, b, ...; M missing: ..."`` of a checkpoint's weight names that do
    not fit a model (the first 5 of each named), ``""`` when they fit: the one wording of an
    adapter that is not the model's."""
    def show(keys: Sequence[str]) -> str:
        keys = sorted(keys)
        return ", ".join(keys[:5]) + (f" (+{len(keys) - 5} more)" if len(keys) > 5 else "")

    parts = ([f"{len(unexpected)} unexpected: {show(unexpected)}"] if unexpected else []) \
        + ([f"{len(missing)} missing: {show(missing)}"] if missing else [])
    return "; ".join(parts)
