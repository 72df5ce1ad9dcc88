"""Local VLMs through transformers: :class:`TransformersVLM`.

Loads any ``AutoModelForImageTextToText`` checkpoint (hub id or local folder: Qwen2-VL,
Qwen2.5-VL, Qwen3-VL, MiMo-VL, InternVL3.5 (transformers port), ...) with its processor,
renders :class:`~ieqa.backends.base.Prompt` objects with the checkpoint's own chat
template and runs them batched:

* :meth:`TransformersVLM.forward` — one left-padded forward pass that returns, per prompt,
  the logits of the next token (and of each token of an optional teacher-forced
  continuation) and/or the final hidden state pooled at an anchor. Readouts that read
  logits or hidden states (levels, digits, heads) use it.
* :meth:`TransformersVLM.generate` — batched generation (greedy or sampled), with the
  top log-probabilities of each generated token on request.

**Prefix sharing.** Prompts with the same ``share_key`` (candidates of one source and
instruction) share everything before their first non-shared image. With
``share_prefix=True`` that prefix is encoded once per group (one KV cache, one vision
pass for the source image) and each candidate runs only its own suffix; the results equal
full recomputation (tested). It needs a model with Qwen-style ``image_grid_thw`` inputs;
for other models it is reported unsupported in :meth:`config` and every prompt runs in
full (same numbers, no speed-up).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.backends.attention import VARLEN_ATTENTION, use_fast_attention
from ieqa.backends.base import Generation, Prompt, key_mismatch
from ieqa.backends.flops import COUNTED_MODEL_TYPES, Flops, forward_flops
from ieqa.backends.processor import BackendError, PromptTooLongError, load_processor

_INFERENCE_MODE = [True]


def inference_context() -> contextlib.AbstractContextManager[Any]:
    """The no-gradient context of the backends' forward passes: ``torch.inference_mode()``,
    or ``torch.no_grad()`` inside :func:`without_inference_mode`."""
    import torch

    return torch.inference_mode() if _INFERENCE_MODE[-1] else torch.no_grad()


@contextlib.contextmanager
def without_inference_mode() -> Iterator[None]:
    """Score with ``torch.no_grad()`` instead of ``torch.inference_mode()`` for the duration:
    a model being trained with sharded weights (FSDP) gathers them into buffers that its
    next training step updates in place, which inference tensors forbid."""
    _INFERENCE_MODE.append(False)
    try:
        yield
    finally:
        _INFERENCE_MODE.pop()

__all__ = ["TransformersVLM", "ForwardOutput", "resolve_adapter", "resolve_device", "POSITION_MODES",
           "inference_context", "sequential_positions", "without_inference_mode"]

log = logging.getLogger(__name__)

_SEQUENCE_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")

#: the position-id modes of :class:`TransformersVLM` (``positions=``)
POSITION_MODES = ("model", "1d")


def sequential_positions(attention_mask: Any) -> Any:
    """1-D position ids on every M-RoPE axis: ``[3, B, T]``, the index of each real token
    counted from the row's first real token (padding gets 1), as transformers computes
    them for a Qwen-VL forward that has no image grid."""
    pos = attention_mask.long().cumsum(-1) - 1
    pos = pos.masked_fill(attention_mask == 0, 1)
    return pos.unsqueeze(0).expand(3, -1, -1)


def resolve_adapter(adapter: str | Path, revision: str | None = None) -> Path:
    """The local folder of a PEFT adapter: ``adapter`` itself when it is a folder, else a
    hub id downloaded by huggingface_hub (``revision`` pins it).

    Raises:
        BackendError: the folder holds no ``adapter_config.json``, or the hub id cannot be
            had (offline without a cached copy, unknown repository).
    """
    local = Path(adapter).expanduser()
    if local.exists() or str(adapter).startswith((".", "/", "~")) or str(adapter).count("/") != 1:
        if not (local / "adapter_config.json").is_file():
            raise BackendError(f"{adapter} holds no PEFT adapter (adapter_config.json missing); "
                               "pass the adapter's folder or its hub id (owner/name)")
        return local
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    try:
        folder = Path(snapshot_download(str(adapter), revision=revision))
    except (OSError, ValueError, HFValidationError) as exc:
        raise BackendError(f"cannot download the adapter {adapter}"
                           f"{f' at {revision}' if revision else ''}: {exc}. Without network "
                           "(HF_HUB_OFFLINE=1 or none reachable), pass a local copy of it "
                           "(--adapter DIR)") from exc
    if not (folder / "adapter_config.json").is_file():
        raise BackendError(f"the hub repository {adapter} holds no adapter_config.json; is it a "
                           "PEFT adapter?")
    return folder


def resolve_device(device: str | None) -> str:
    """``"auto"``/``None`` → ``"cuda"`` when available, else ``"cpu"``; other values unchanged."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


@dataclass
class ForwardOutput:
    """What :meth:`TransformersVLM.forward` returns.

    Attributes:
        logits: per prompt, a float32 CPU tensor ``[1 + len(continuation), vocab]``: row 0
            predicts the first token after the prompt, row ``t`` the token after the
            ``t``-th continuation token. ``None`` when not requested.
        hidden: float32 CPU tensor ``[n_prompts, hidden_size]`` of the final-layer hidden
            state pooled at the anchor; ``None`` when no anchor was given.
        input_ids: per prompt, the token ids of the prompt (without padding or
            continuation), for inspection.
    """

    logits: list[Any] | None
    hidden: Any | None
    input_ids: list[list[int]]


class TransformersVLM:
    """A vision-language model loaded with transformers.

    Args:
        model: hub id (``"Qwen/Qwen2.5-VL-7B-Instruct"``) or local checkpoint folder.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
            Ignored when ``device_map`` is given.
        device_map: passed to ``from_pretrained`` (e.g. ``"auto"`` to spread a large model
            over several GPUs).
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU), or ``"bfloat16"``,
            ``"float16"``, ``"float32"``.
        attn_implementation: ``"sdpa"``, ``"flash_attention_2"``, ``"eager"`` or ``None``
            (default: transformers' default for the language model, and for a packed vision
            tower (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5) ieqa's variable-length SDPA,
            :data:`ieqa.backends.attention.VARLEN_ATTENTION`: all windows of all images in
            one attention call per window size instead of one call per window; recorded
            as ``vision_attention`` in :meth:`config`). A named implementation is used
            everywhere as asked.
        load_in_4bit: quantise the language model to 4 bit with bitsandbytes (CUDA only).
        min_pixels, max_pixels: per-image pixel budget (pixels) for the image processor;
            ``None`` keeps the checkpoint's own. Images are resized (aspect ratio kept) to
            fit, which sets the number of image tokens.
        adapter: a PEFT (LoRA) adapter to apply and merge: a local folder or a hub id
            (``"EditScore/EditScore-7B"``, downloaded by huggingface_hub into its cache).
            Its weights must match the model's modules one for one: unexpected or missing
            adapter weights are an error that lists them (never a silent no-op merge).
        adapter_revision: hub revision (branch, tag or commit) of a hub-id ``adapter``.
        merge_adapter: merge the adapter into the weights (default; faster) or keep its
            LoRA layers (``False``: as a release's own inference runs it unmerged, which in
            16 bit differs from merged weights by rounding).
        share_prefix: encode the shared source+instruction prefix once per group.
        positions: ``"model"`` (default): the model's own position ids (3-D M-RoPE for
            Qwen-VL: image tokens get their grid row and column); ``"1d"``: every M-RoPE
            axis gets the plain token index, as a forward that passes no ``position_ids``
            and no ``image_grid_thw`` to the language model computes them (EditReward's
            released reward models were trained and run so). Used in the plain and the
            prefix-sharing path; generation refuses ``"1d"``.
        seeded_batching: how :meth:`generate_batch` runs ``seed_per_sample`` (answer ``k``
            of a prompt drawn with seed ``seed + k``): ``True`` (default) in one batch over
            all prompts and answers, each answer sampling from its own generator seeded
            ``seed + k``, so its draws do not depend on the batch; ``False``: each answer
            generated on its own right after seeding torch (EditScore's released loop; a
            batch of one each, slower). The two give the same answers where the batch
            does not change the logits (float32 on the CPU, tested); in 16-bit on a GPU the
            batch's shapes change the logits' rounding, and a token whose sampling boundary
            falls within it can change (recorded as ``seeded_batching: False`` when off).
        generation_cache: ``"dynamic"`` (default: transformers' growing KV cache) or
            ``"static"`` (a cache of fixed size; on a CUDA device transformers then compiles
            the decoding step with ``torch.compile``, which pays off for long answers;
            same answers as dynamic in float32 on the CPU, tested). Recorded when static.
        revision, trust_remote_code: passed to ``from_pretrained``.
    """

    def __init__(self, model: str | Path, *, device: str | None = "auto",
                 device_map: str | dict[str, Any] | None = None, dtype: str = "auto",
                 attn_implementation: str | None = None, load_in_4bit: bool = False,
                 min_pixels: int | None = None, max_pixels: int | None = None,
                 adapter: str | Path | None = None, adapter_revision: str | None = None,
                 merge_adapter: bool = True, share_prefix: bool = True, positions: str = "model",
                 seeded_batching: bool = True, generation_cache: str = "dynamic",
                 revision: str | None = None,
                 trust_remote_code: bool = False) -> None:
        from transformers import AutoModelForImageTextToText

        _check_cache(generation_cache)  # before anything loads
        self.model_id = str(model)
        self.device = resolve_device(device) if device_map is None else None
        self.dtype_name = dtype
        torch_dtype = self.torch_dtype_of(dtype)
        kwargs: dict[str, Any] = {"dtype": torch_dtype, "revision": revision,
                                  "trust_remote_code": trust_remote_code}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        if device_map is not None:
            kwargs["device_map"] = device_map
        if load_in_4bit:
            kwargs["quantization_config"] = self._four_bit(torch_dtype)
        self.processor = load_processor(model, min_pixels=min_pixels, max_pixels=max_pixels,
                                        revision=revision, trust_remote_code=trust_remote_code)
        try:
            self.model = AutoModelForImageTextToText.from_pretrained(model, **kwargs)
        except OSError as exc:
            raise BackendError(f"cannot load {model}: {exc}. Pass a local checkpoint folder or "
                               "a hub id you can download (set HF_HUB_OFFLINE=0)") from exc
        except ValueError as exc:
            raise BackendError(f"{model} is not an image-text-to-text model transformers "
                               f"can load: {exc}") from exc
        if adapter is not None:
            self._apply_adapter(adapter, adapter_revision, merge=merge_adapter)
        vision_attention = use_fast_attention(self.model) if attn_implementation is None else None
        if self.device is not None and not load_in_4bit:
            self.model.to(self.device)
        self._finish({"model": self.model_id, "dtype": dtype,
                      "attn_implementation": attn_implementation, "load_in_4bit": load_in_4bit,
                      "min_pixels": min_pixels, "max_pixels": max_pixels, "revision": revision,
                      "adapter": str(adapter) if adapter is not None else None,
                      **({"adapter_revision": adapter_revision} if adapter_revision else {}),
                      **({"merge_adapter": False} if adapter is not None and not merge_adapter
                         else {}),
                      **({"vision_attention": vision_attention} if vision_attention else {}),
                      **({"seeded_batching": False} if not seeded_batching else {}),
                      **({"generation_cache": generation_cache}
                         if generation_cache != "dynamic" else {})},
                     share_prefix, positions)
        self.seeded_batching = bool(seeded_batching)
        self.generation_cache = _check_cache(generation_cache)

    #: see the ``seeded_batching`` argument
    seeded_batching: bool = True
    #: see the ``generation_cache`` argument
    generation_cache: str = "dynamic"

    @classmethod
    def from_model(cls, model: Any, processor: Any, *, name: str = "in-memory",
                   share_prefix: bool = True, positions: str = "model",
                   settings: dict[str, Any] | None = None) -> TransformersVLM:
        """Wrap a model and processor already in memory (a model being trained, a model
        built from a config for benchmarks, a released checkpoint assembled by a loader).
        ``name`` is what :meth:`config` records as the model, ``settings`` adds to what it
        records; nothing is moved or converted (a vision tower switched to
        :func:`~ieqa.backends.attention.use_fast_attention` beforehand is recorded as
        ``vision_attention``)."""
        vlm = cls.__new__(cls)
        vlm.model_id = name
        vlm.device = None
        vlm.model = model
        vlm.processor = processor
        dtype = str(model.get_input_embeddings().weight.dtype).removeprefix("torch.")
        vlm.dtype_name = dtype
        vlm._finish({"model": name, "dtype": dtype,
                     "attn_implementation": getattr(model.config, "_attn_implementation", None),
                     "load_in_4bit": False, "min_pixels": None, "max_pixels": None,
                     "revision": None, "adapter": None,
                     **({"vision_attention": VARLEN_ATTENTION}
                        if getattr(getattr(model.config, "vision_config", None),
                                   "_attn_implementation", None) == VARLEN_ATTENTION else {}),
                     **(settings or {})},
                    share_prefix, positions)
        return vlm

    def _finish(self, settings: dict[str, Any], share_prefix: bool, positions: str) -> None:
        if positions not in POSITION_MODES:
            raise BackendError(f"positions must be one of {', '.join(POSITION_MODES)}, got "
                               f"{positions!r}")
        self.model.eval()
        self.positions = positions
        #: the FLOPs this backend has computed so far (:mod:`ieqa.backends.flops`; padding
        #: not counted), ``None`` for a model type the count does not cover
        self.flops_done: Flops | None = (
            Flops() if getattr(self.model.config, "model_type", None) in COUNTED_MODEL_TYPES
            else None)
        #: ``[padding, all]`` token positions of the forward batches so far: the share of
        #: a batch's width that is padding (left padding of whole prompts, right padding of
        #: suffixes after a shared prefix)
        self.padding_done = [0, 0]
        # recorded only when not the default, so that earlier score files resume unchanged
        self._settings = {**settings, **({"positions": positions} if positions != "model" else {})}
        self._init_tokens(share_prefix)
        if positions == "1d" and not self._mrope:
            raise BackendError(f"{self.model_id}: positions='1d' applies to M-RoPE models "
                               "(Qwen2-VL, Qwen2.5-VL, Qwen3-VL); this model has its own 1-D "
                               "positions already, leave positions='model'")

    # ----------------------------------------------------------------- loading helpers
    @staticmethod
    def torch_dtype_of(dtype: str) -> Any:
        """The torch dtype a ``dtype`` setting names (``"auto"``: bfloat16 on a GPU, else
        float32); :class:`BackendError` for an unknown name."""
        import torch

        if dtype == "auto":
            return torch.bfloat16 if torch.cuda.is_available() else torch.float32
        try:
            value = getattr(torch, dtype)
        except AttributeError:
            value = None
        if not isinstance(value, torch.dtype):
            raise BackendError(f"unknown dtype {dtype!r}; use auto, bfloat16, float16 or float32")
        return value

    @staticmethod
    def _four_bit(torch_dtype: Any, *, double_quant: bool = False) -> Any:
        """bitsandbytes' nf4 config computing in ``torch_dtype`` (``double_quant``: also
        quantise the quantisation constants)."""
        from transformers import BitsAndBytesConfig

        try:
            import bitsandbytes  # noqa: F401
        except ImportError as exc:
            raise BackendError("load_in_4bit needs bitsandbytes and a CUDA GPU: "
                               "pip install bitsandbytes") from exc
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch_dtype,
                                  bnb_4bit_quant_type="nf4",
                                  bnb_4bit_use_double_quant=double_quant)

    def _apply_adapter(self, adapter: str | Path, revision: str | None = None, *,
                       merge: bool = True) -> None:
        """Apply a PEFT adapter (local folder or hub id), checking that its weights and the
        model's adapted modules match one for one; ``merge``: into the weights, else its
        LoRA layers stay in the model."""
        import warnings

        from peft import PeftModel
        from peft.utils import get_peft_model_state_dict, load_peft_weights

        folder = resolve_adapter(adapter, revision)
        mapping = getattr(self.model, "_checkpoint_conversion_mapping", None) or None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Found missing adapter keys")
            try:
                peft_model = PeftModel.from_pretrained(self.model, str(folder))
            except ValueError as exc:  # e.g. target modules that the model does not have
                raise BackendError(f"the adapter {adapter} does not fit {self.model_id}: {exc}. "
                                   "Is it an adapter of this base model?") from exc
        expected = set(get_peft_model_state_dict(peft_model))
        stored = set(load_peft_weights(str(folder), device="cpu", key_mapping=mapping))
        mismatch = key_mismatch(sorted(stored - expected), sorted(expected - stored))
        if mismatch:
            raise BackendError(f"the adapter {adapter} does not match {self.model_id}: adapter "
                               f"weights {mismatch}. Is it an adapter of this base model "
                               "(and its transformers layout)?")
        self.model = peft_model.merge_and_unload() if merge else peft_model.get_base_model()

    def _init_tokens(self, share_prefix: bool) -> None:
        tokenizer = self.tokenizer
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        config = self.model.config
        self.image_token_id = getattr(config, "image_token_id", None)
        if self.image_token_id is None:
            self.image_token_id = getattr(config, "image_token_index", None)
        self._mrope = hasattr(self._base, "get_rope_index")
        self.share_prefix_supported = self._mrope and self.image_token_id is not None
        self.share_prefix = bool(share_prefix and self.share_prefix_supported)
        if share_prefix and not self.share_prefix_supported:
            log.info("%s: prefix sharing needs Qwen-style image_grid_thw inputs; every prompt "
                     "runs in full", self.model_id)
        text_config = getattr(config, "text_config", config)
        self._softcap = getattr(text_config, "final_logit_softcapping", None)
        limit = getattr(text_config, "max_position_embeddings", None)
        #: the model's context in tokens (``max_position_embeddings``); a longer prompt
        #: raises :class:`PromptTooLongError` before the model runs. ``None``: unknown.
        self.max_prompt_tokens: int | None = int(limit) if limit else None

    # ---------------------------------------------------------------------- properties
    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    @property
    def name(self) -> str:
        return f"transformers:{self.model_id}"

    @property
    def _base(self) -> Any:
        return self.model.model

    @functools.cached_property
    def _cache_argument(self) -> str:
        """The name the base model's ``forward`` takes a KV cache under: ``cache`` from the
        transformers release that renamed it (``past_key_values`` then warns on every call
        and goes away in 5.40), ``past_key_values`` before it."""
        params = inspect.signature(self._base.forward).parameters
        return "cache" if "cache" in params else "past_key_values"

    @property
    def input_device(self) -> Any:
        return self.model.get_input_embeddings().weight.device

    @property
    def hidden_size(self) -> int:
        return int(self.model.get_input_embeddings().weight.shape[1])

    def config(self) -> dict[str, Any]:
        """Settings that reproduce this backend (recorded in score files)."""
        return {**self._settings, "share_prefix": self.share_prefix if self.share_prefix_supported
                else "unsupported"}

    # ------------------------------------------------------------------------ encoding
    def render(self, prompt: Prompt) -> str:
        """The prompt as the model reads it: its chat template with the generation prompt,
        followed by ``answer_prefix`` (with an ``assistant_turn``: the closed turn and no
        generation prompt); a prompt with ``chat=False`` as written, each image
        standing as the processor's image token (``processor.image_token``)."""
        if not prompt.chat:
            token = getattr(self.processor, "image_token", None)
            if prompt.images and not token:
                raise BackendError(f"{self.model_id}: the processor names no image token, so a "
                                   "prompt with chat=False cannot place its images")
            return "".join(p if isinstance(p, str) else token for p in prompt.parts) \
                + prompt.answer_prefix
        text = self.processor.apply_chat_template(
            prompt.messages(), add_generation_prompt=prompt.assistant_turn is None,
            tokenize=False)
        return text + prompt.answer_prefix

    def encode_one(self, prompt: Prompt) -> dict[str, Any]:
        """Processor output of one prompt (batch of one, no padding, CPU tensors).

        Raises:
            PromptTooLongError: the prompt has more tokens than :attr:`max_prompt_tokens`.
        """
        images = prompt.images or None
        encoded = dict(self.processor(text=[self.render(prompt)], images=images,
                                      return_tensors="pt"))
        n = int(encoded["input_ids"].shape[-1])
        if self.max_prompt_tokens is not None and n > self.max_prompt_tokens:
            n_images = len(prompt.images)
            raise PromptTooLongError(
                f"the prompt has {n} tokens ({n_images} image(s)) and {self.model_id} reads at "
                f"most {self.max_prompt_tokens} (max_position_embeddings); shorten the "
                "instruction, or lower max_pixels (the image pixel budget) for fewer image "
                "tokens",
                tokens=n, limit=self.max_prompt_tokens)
        return encoded

    def collate(self, encoded: Sequence[dict[str, Any]],
                continuations: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
        """Left-pad single-prompt encodings (each optionally extended by continuation token
        ids) into one batch; image tensors are concatenated in row order."""
        import torch

        rows = []
        for i, enc in enumerate(encoded):
            row = {k: enc[k][0] for k in _SEQUENCE_KEYS if k in enc}
            extra = list(continuations[i]) if continuations else []
            if extra:
                ids = torch.tensor(extra, dtype=row["input_ids"].dtype)
                row["input_ids"] = torch.cat([row["input_ids"], ids])
                for k in row:
                    if k != "input_ids":
                        fill = torch.ones if k == "attention_mask" else torch.zeros
                        row[k] = torch.cat([row[k], fill(len(extra), dtype=row[k].dtype)])
            rows.append(row)
        width = max(len(r["input_ids"]) for r in rows)
        pad_id = self.tokenizer.pad_token_id
        batch: dict[str, Any] = {}
        for k in rows[0]:
            value = pad_id if k == "input_ids" else 0
            batch[k] = torch.stack([torch.cat([torch.full((width - len(r[k]),), value,
                                                          dtype=r[k].dtype), r[k]])
                                    for r in rows])
        for k in encoded[0]:
            if k not in _SEQUENCE_KEYS:
                parts = [enc[k] for enc in encoded if enc.get(k) is not None]
                if parts:
                    batch[k] = torch.cat(parts)
        return batch

    def _to_device(self, batch: dict[str, Any]) -> dict[str, Any]:
        import torch

        device = self.input_device
        dtype = self.model.get_input_embeddings().weight.dtype
        out = {}
        for k, v in batch.items():
            if torch.is_tensor(v):
                v = v.to(device)
                if k in ("pixel_values", "pixel_values_videos") and v.is_floating_point():
                    v = v.to(dtype)
            out[k] = v
        return out

    # ------------------------------------------------------------------------- forward
    def forward(self, prompts: Sequence[Prompt], *,
                continuations: Sequence[Sequence[int]] | None = None, logits: bool = True,
                anchor: str | None = None, share_prefix: bool | None = None,
                encoded: Sequence[dict[str, Any]] | None = None) -> ForwardOutput:
        """One forward pass over ``prompts`` (one batch; the caller chunks).

        Args:
            prompts: the prompts; each ends where the answer begins (``answer_prefix``).
            continuations: optional token ids per prompt appended after it (teacher
                forcing); the logits then cover each continuation position.
            logits: return the logits (see :class:`ForwardOutput`).
            anchor: pool the final hidden state of the prompt tokens: ``"last"`` (last
                prompt token), ``"mean"`` (mean over prompt tokens), ``"token:<text>"``
                (the last occurrence of that single token in the prompt) or
                ``"from_end:<k>"`` (the k-th token from the end, ``k >= 1``; 1 is ``"last"``:
                a released evaluator that reads a fixed position).
            share_prefix: override the backend's prefix-sharing setting for this call.
            encoded: :meth:`encode_one` of each prompt, when the caller already has them
                (a readout running several passes over the same prompts encodes once).
        """
        import torch

        if continuations is not None and len(continuations) != len(prompts):
            raise ValueError("continuations must have one entry per prompt")
        if anchor is not None:
            self.anchor_token(anchor)  # validate early
        share = self.share_prefix if share_prefix is None else bool(share_prefix)
        if share and not self.share_prefix_supported:
            raise BackendError(f"{self.model_id}: prefix sharing is not supported for this "
                               "model (needs Qwen-style image_grid_thw inputs)")
        if encoded is None:
            encoded = [self.encode_one(p) for p in prompts]
        elif len(encoded) != len(prompts):
            raise ValueError("encoded must have one entry per prompt")
        conts = [list(c) for c in continuations] if continuations is not None else [[] for _ in prompts]
        rows: list[tuple[Any, Any]] = [(None, None)] * len(prompts)
        with inference_context():
            groups = _share_groups(prompts) if share else []
            grouped = {i for g in groups for i in g}
            for group in groups:
                for i, out in zip(group, self._forward_shared(
                        [encoded[i] for i in group], [conts[i] for i in group], logits, anchor),
                        strict=True):
                    rows[i] = out
            rest = [i for i in range(len(prompts)) if i not in grouped]
            if rest:
                for i, out in zip(rest, self._forward_padded(
                        [encoded[i] for i in rest], [conts[i] for i in rest], logits, anchor),
                        strict=True):
                    rows[i] = out
        ids = [enc["input_ids"][0].tolist() for enc in encoded]
        return ForwardOutput(
            logits=[r[0] for r in rows] if logits else None,
            hidden=torch.stack([r[1] for r in rows]) if anchor is not None else None,
            input_ids=ids)

    def _head_logits(self, hidden: Any) -> Any:
        import torch

        out = self.model.get_output_embeddings()(hidden).float()
        if self._softcap:
            out = torch.tanh(out / self._softcap) * self._softcap
        return out.cpu()

    def anchor_token(self, anchor: str) -> int | None:
        """The token id a readout ``anchor`` reads at (``token:TEXT``), or None for a
        position anchor (``last``, ``mean``, ``from_end:K``); :class:`BackendError` for an
        anchor the tokenizer cannot serve (a text that is not one token) or a malformed one."""
        if anchor.startswith("from_end:"):
            k = anchor[len("from_end:"):]
            if not k.isdigit() or int(k) < 1:
                raise BackendError(f"anchor {anchor!r}: from_end takes a whole number >= 1 "
                                   "(from_end:1 is the last prompt token)")
            return None
        if anchor in ("last", "mean"):
            return None
        if anchor.startswith("token:"):
            ids = self.tokenizer.encode(anchor[len("token:"):], add_special_tokens=False)
            if len(ids) != 1:
                raise BackendError(f"anchor {anchor!r}: the text must be exactly one token of "
                                   f"this tokenizer, it is {len(ids)}")
            return ids[0]
        raise BackendError(f"unknown anchor {anchor!r}; use 'last', 'mean', 'token:<text>' or "
                           "'from_end:<k>'")

    def _pool(self, hidden: Any, ids: Any, anchor: str) -> Any:
        """Pool ``hidden`` ``[T, H]`` of one prompt's tokens ``ids`` ``[T]``."""
        token = self.anchor_token(anchor)
        if anchor == "last":
            vec = hidden[-1]
        elif anchor == "mean":
            vec = hidden.mean(0)
        elif anchor.startswith("from_end:"):
            k = int(anchor[len("from_end:"):])
            if k > len(hidden):
                raise BackendError(f"anchor {anchor!r}: the prompt has only {len(hidden)} tokens")
            vec = hidden[-k]
        else:
            where = (ids == token).nonzero().flatten()
            if len(where) == 0:
                raise BackendError(f"anchor {anchor!r}: the token does not occur in the prompt; "
                                   "add it to the template")
            vec = hidden[int(where[-1])]
        return vec.float().cpu()

    def _forward_padded(self, encoded: Sequence[dict[str, Any]], conts: Sequence[list[int]],
                        logits: bool, anchor: str | None) -> list[tuple[Any, Any]]:
        batch = self.collate(encoded, conts)
        width = batch["input_ids"].shape[1]
        if self.positions == "1d":
            batch["position_ids"] = sequential_positions(batch["attention_mask"])
        out = self._base(**self._to_device(batch), use_cache=False)
        self._count_padding(batch["attention_mask"])
        hidden = out.last_hidden_state
        results = []
        for i, enc in enumerate(encoded):
            n = len(conts[i])
            prompt_len = enc["input_ids"].shape[1]
            self._count(prompt_len + n, _grids(enc), head=n + 1 if logits else 0)
            end = width - n  # exclusive end of the prompt tokens (left padding)
            row_logits = self._head_logits(hidden[i, end - 1:]) if logits else None
            pooled = None
            if anchor is not None:
                pooled = self._pool(hidden[i, end - prompt_len:end], enc["input_ids"][0].to(hidden.device), anchor)
            results.append((row_logits, pooled))
        return results

    def _forward_shared(self, encoded: Sequence[dict[str, Any]],
                        conts: Sequence[list[int]], logits: bool, anchor: str | None,
                        ) -> list[tuple[Any, Any]]:
        """Encode the shared prefix once, then the K suffixes as one right-padded batch."""
        import torch

        ids = [enc["input_ids"][0] for enc in encoded]
        cut = _common_prefix_length(ids)
        runs = [_image_runs(i, self.image_token_id) for i in ids]
        # the prefix holds whole images only, and only images that are identical in every
        # member (a share_key is a promise the caller makes; the pixels are checked)
        grids = [enc["image_grid_thw"] for enc in encoded]
        offsets = [torch.cat([torch.zeros(1, dtype=torch.long), g.prod(-1).cumsum(0)]) for g in grids]
        shared = 0
        while shared < len(runs[0]) and runs[0][shared][0] < cut:
            start, end = runs[0][shared]
            same = end <= cut and all(
                torch.equal(grids[m][shared], grids[0][shared]) and torch.equal(
                    encoded[m]["pixel_values"][offsets[m][shared]:offsets[m][shared + 1]],
                    encoded[0]["pixel_values"][offsets[0][shared]:offsets[0][shared + 1]])
                for m in range(1, len(encoded)))
            if not same:
                cut = start
                break
            shared += 1
        cut = min(cut, min(len(i) for i in ids) - 1)  # every member keeps a suffix token
        grid = grids[0]
        n_shared_rows = int(offsets[0][shared])
        if self.positions == "1d":
            positions = [sequential_positions(enc["attention_mask"]) for enc in encoded]
        else:
            positions = [self._base.get_rope_index(
                enc["input_ids"], mm_token_type_ids=enc["mm_token_type_ids"],
                image_grid_thw=enc["image_grid_thw"], attention_mask=enc["attention_mask"])[0]
                for enc in encoded]
        first = encoded[0]
        prefix = {"input_ids": first["input_ids"][:, :cut],
                  "attention_mask": first["attention_mask"][:, :cut],
                  "mm_token_type_ids": first["mm_token_type_ids"][:, :cut],
                  "position_ids": positions[0][..., :cut]}
        if shared:
            prefix["pixel_values"] = first["pixel_values"][:n_shared_rows]
            prefix["image_grid_thw"] = grid[:shared]
        pre = self._base(**self._to_device(prefix), use_cache=True)
        self._count(cut, _grids(first)[:shared], head=0)
        k = len(encoded)
        # renamed in transformers 5.x; asking for the old name there logs a deprecation
        cache = pre["cache"] if "cache" in pre else pre.get("past_key_values")
        cache.batch_repeat_interleave(k)

        suffix_rows = []
        for enc, pos, cont in zip(encoded, positions, conts, strict=True):
            row_ids = enc["input_ids"][0, cut:]
            row_types = enc["mm_token_type_ids"][0, cut:]
            row_pos = pos[:, 0, cut:]
            if cont:
                extra = torch.tensor(cont, dtype=row_ids.dtype)
                row_ids = torch.cat([row_ids, extra])
                row_types = torch.cat([row_types, torch.zeros(len(cont), dtype=row_types.dtype)])
                last = row_pos[:, -1:]
                row_pos = torch.cat([row_pos, last + torch.arange(1, len(cont) + 1)], dim=1)
            suffix_rows.append((row_ids, row_types, row_pos))
        width = max(len(r[0]) for r in suffix_rows)
        pad_id = self.tokenizer.pad_token_id

        def right_pad(x: Any, value: int) -> Any:
            pad = torch.full((*x.shape[:-1], width - x.shape[-1]), value, dtype=x.dtype)
            return torch.cat([x, pad], dim=-1)

        suffix = {
            "input_ids": torch.stack([right_pad(r[0], pad_id) for r in suffix_rows]),
            "mm_token_type_ids": torch.stack([right_pad(r[1], 0) for r in suffix_rows]),
            "position_ids": torch.stack([right_pad(r[2], 0) for r in suffix_rows], dim=1),
            "attention_mask": torch.cat([torch.ones(k, cut, dtype=torch.long), torch.stack(
                [right_pad(torch.ones(len(r[0]), dtype=torch.long), 0) for r in suffix_rows])], 1),
        }
        rest_grids = torch.cat([enc["image_grid_thw"][shared:] for enc in encoded])
        if len(rest_grids):
            suffix["pixel_values"] = torch.cat([enc["pixel_values"][n_shared_rows:] for enc in encoded])
            suffix["image_grid_thw"] = rest_grids
        out = self._base(**self._to_device(suffix), **{self._cache_argument: cache}, use_cache=True)
        self._count_padding(suffix["attention_mask"][:, cut:])
        hidden = out.last_hidden_state
        results = []
        for i, enc in enumerate(encoded):
            n = len(conts[i])
            self._count(len(suffix_rows[i][0]), _grids(enc)[shared:], past=cut,
                        head=n + 1 if logits else 0)
            end = len(suffix_rows[i][0]) - n  # exclusive end of the prompt within the suffix
            row_logits = self._head_logits(hidden[i, end - 1:end + n]) if logits else None
            pooled = None
            if anchor is not None:
                full = torch.cat([pre.last_hidden_state[0], hidden[i, :end]])
                pooled = self._pool(full, enc["input_ids"][0].to(full.device), anchor)
            results.append((row_logits, pooled))
        return results

    # ------------------------------------------------------------------------ generate
    #: the judge log prompts go to and may be served from (None: none;
    #: :mod:`ieqa.backends.judge_log`)
    judge_log: Any = None

    def generate(self, prompts: Sequence[Prompt], **settings: Any) -> list[list[Generation]]:
        """:meth:`generate_batch` (see it), through the judge log when one is attached:
        each prompt's answers are taken from the log where it serves them (``resume``,
        ``replay``), generated otherwise, and written to it."""
        log = self.judge_log
        if log is None:
            return self.generate_batch(prompts, **settings)
        import time

        from ieqa.backends.judge_log import local_request

        requests = [local_request(p, settings) for p in prompts]
        numbers = [log.occurrence(key) for key, _ in requests]
        out: list[list[Generation] | None] = [None] * len(prompts)
        if log.mode != "record":
            for i, (key, images) in enumerate(requests):
                recorded = log.take(key, numbers[i])
                if recorded is not None:
                    out[i] = [Generation(text=g["text"], finish_reason=g.get("finish_reason"),
                                         top_logprobs=g.get("top_logprobs"))
                              for g in recorded["response"]["answers"]]
                    log.write(key, b"", self.model_id, {"response": recorded["response"]},
                              attempts=1, latency_s=0.0, source="log", images=images,
                              occurrence=numbers[i])
                elif log.mode == "replay":
                    from ieqa.errors import RunStopped

                    raise RunStopped(f"stopped: a prompt is not in the judge log {log.source} "
                                     f"(context {log.context or 'none'}, request {key[:12]}): "
                                     "a replay needs the run's judge, options and inputs "
                                     "unchanged")
        todo = [i for i, gens in enumerate(out) if gens is None]
        start = time.monotonic()
        fresh = self.generate_batch([prompts[i] for i in todo], **settings) if todo else []
        latency = (time.monotonic() - start) / max(len(todo), 1)
        for i, gens in zip(todo, fresh, strict=True):
            out[i] = gens
            key, images = requests[i]
            log.write(key, b"", self.model_id,
                      {"response": {"model": self.model_id, "answers": [
                          {"text": g.text, "finish_reason": g.finish_reason,
                           "top_logprobs": g.top_logprobs} for g in gens]}},
                      attempts=1, latency_s=latency, source="live", images=images,
                      occurrence=numbers[i])
        return out  # type: ignore[return-value]

    def generate_batch(self, prompts: Sequence[Prompt], *, max_new_tokens: int = 256,
                       temperature: float | None = 0.0, top_p: float | None = 1.0,
                       top_k: int | None = None, num_samples: int = 1, seed: int | None = None,
                       seed_per_sample: bool = False, top_logprobs: int = 0,
                       ) -> list[list[Generation]]:
        """``num_samples`` answers per prompt, generated as one left-padded batch.

        Args:
            max_new_tokens: generation limit (tokens).
            temperature: 0 for greedy decoding; sampling otherwise.
            top_p: nucleus sampling threshold (0-1], used when sampling.
            top_k: sample among the ``top_k`` most likely tokens only (``None``: no
                limit), used when sampling. transformers applies temperature, then top-k,
                then top-p.
            num_samples: answers per prompt (self-ensemble); needs ``temperature > 0``
                to differ.
            seed: seeds sampling (the global torch RNG is restored afterwards).
            seed_per_sample: answer ``k`` of each prompt drawn with seed ``seed + k``, as
                EditScore's transformers path does per pass (it generates each on its own
                right after seeding torch): an answer then depends only on its prompt and
                seed. One batch with a generator per answer by default, the released loop
                with ``seeded_batching=False`` (see the class); needs ``seed``.
            top_logprobs: also return, per generated token, the log-probabilities of
                the ``top_logprobs`` most likely tokens under the model's raw distribution.
        """
        if num_samples < 1:
            raise ValueError("num_samples must be at least 1")
        if temperature is None or top_p is None:
            raise BackendError("the transformers backend needs a temperature and a top_p "
                               "(None, a server's own default, applies to OpenAI-compatible "
                               "servers only)")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
        if seed_per_sample and seed is None:
            raise ValueError("seed_per_sample needs a seed")
        if self.positions != "model":
            raise BackendError(f"generation runs with the model's own positions; this backend "
                               f"was built with positions={self.positions!r} (a reward model's "
                               "forward), build another with positions='model' to generate")
        if not prompts:
            return []
        sampling = temperature > 0
        kwargs: dict[str, Any] = dict(max_new_tokens=max_new_tokens, do_sample=sampling,
                                      **({"cache_implementation": "static"}
                                         if _check_cache(self.generation_cache) == "static"
                                         else {}),
                                      return_dict_in_generate=True,
                                      output_logits=top_logprobs > 0,
                                      pad_token_id=self.tokenizer.pad_token_id)
        if sampling:
            kwargs.update(temperature=temperature, top_p=top_p, top_k=top_k)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if not seed_per_sample or not sampling:
            return self._generate_batch(prompts, num_samples, seed, kwargs, top_logprobs)
        assert seed is not None
        if self.seeded_batching:
            # transformers' own warpers in its order, then each row drawn from its own
            # generator as torch.multinomial draws from the global one after seeding; the
            # drawn token is left as the only finite score, so transformers' own draw (no
            # warpers of its own: temperature 1, no top-k, top-p 1) can only take it
            kwargs.update(temperature=1.0, top_p=1.0, top_k=0,
                          logits_processor=_row_seeded_sampling(
                              temperature, top_k, top_p,
                              [seed + k for _ in prompts for k in range(num_samples)]))
            return self._generate_batch(prompts, num_samples, seed, kwargs, top_logprobs)
        results: list[list[Generation]] = [[] for _ in prompts]
        for k in range(num_samples):
            for i, prompt in enumerate(prompts):
                results[i].extend(self._generate_batch([prompt], 1, seed + k, kwargs,
                                                       top_logprobs)[0])
        return results

    def _generate_batch(self, prompts: Sequence[Prompt], num_samples: int, seed: int | None,
                        kwargs: dict[str, Any], top_logprobs: int) -> list[list[Generation]]:
        """One ``model.generate`` call over ``prompts`` (left-padded), seeded with ``seed``."""

        encoded = [self.encode_one(p) for p in prompts]
        grids = [_grids(enc) for enc in encoded]
        batch = self._to_device(self.collate(encoded))
        with _seeded(seed), inference_context():
            out = self.model.generate(**batch, **kwargs, num_return_sequences=num_samples)
        width = batch["input_ids"].shape[1]
        new = out.sequences[:, width:].cpu()
        eos = self._eos_ids()
        results: list[list[Generation]] = []
        for i in range(len(prompts)):
            row: list[Generation] = []
            prompt_len = int(encoded[i]["input_ids"].shape[1])
            for s in range(num_samples):
                j = i * num_samples + s
                tokens = new[j].tolist()
                length = next((t + 1 for t, tok in enumerate(tokens) if tok in eos), len(tokens))
                # the images once per prompt, its text once per answer (transformers repeats
                # the prompt after the vision tower), then a token at a time
                self._count(prompt_len, grids[i] if s == 0 else [], head=1)
                for t in range(1, length):
                    self._count(1, [], past=prompt_len + t - 1, head=1)
                finish = "stop" if length < len(tokens) or (tokens and tokens[-1] in eos) else "length"
                text = self.tokenizer.decode(tokens[:length], skip_special_tokens=True)
                top = None
                if top_logprobs > 0:
                    top = [self._top_logprobs(step[j], top_logprobs) for step in out.logits[:length]]
                row.append(Generation(text=text, top_logprobs=top, finish_reason=finish,
                                      raw={"usage": {"completion_tokens": length}}))
            results.append(row)
        return results

    def _count_padding(self, mask: Any) -> None:
        self.padding_done[0] += int(mask.numel() - mask.sum())
        self.padding_done[1] += int(mask.numel())

    def _count(self, tokens: int, grids: Sequence[Any], *, past: int = 0, head: int) -> None:
        """Add one sequence's forward to :attr:`flops_done`."""
        if self.flops_done is not None:
            self.flops_done = self.flops_done + forward_flops(
                self.model.config, tokens, grids, past=past, head_positions=head)

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        return set(eos if isinstance(eos, list) else [eos])

    def _top_logprobs(self, logits: Any, k: int) -> dict[str, float]:
        """The ``k`` most likely next tokens as ``{text: logprob}``; tokens that decode to
        the same text (e.g. partial UTF-8 bytes) are merged by adding their probabilities."""
        import torch

        logp = torch.log_softmax(logits.float(), -1)
        values, ids = logp.topk(k)
        out: dict[str, float] = {}
        for value, token in zip(values.tolist(), ids.tolist(), strict=True):
            text = self.tokenizer.decode([token])
            out[text] = float(np.logaddexp(out[text], value)) if text in out else value
        return out


def _check_cache(kind: str) -> str:
    if kind not in ("dynamic", "static"):
        raise BackendError(f"generation_cache must be 'dynamic' or 'static', got {kind!r}")
    return kind


def _row_seeded_sampling(temperature: float, top_k: int | None, top_p: float,
                         seeds: Sequence[int]) -> Any:
    """A ``LogitsProcessorList``: transformers' sampling warpers as ``generate`` builds them
    (temperature, top-k, top-p, in that order, each only when it changes anything), then a
    draw per row from a generator seeded ``seeds[row]``; the scores come back as 0 at the
    drawn token and -inf elsewhere, so transformers' own sampling can only emit it."""
    import torch
    from transformers import (
        LogitsProcessor,
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    class RowSeededDraw(LogitsProcessor):
        def __init__(self) -> None:
            self.generators: list[Any] | None = None

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if self.generators is None:
                if scores.shape[0] != len(seeds):
                    raise BackendError(f"seeded sampling: {scores.shape[0]} rows for "
                                       f"{len(seeds)} seeds")
                self.generators = [torch.Generator(device=scores.device).manual_seed(s)
                                   for s in seeds]
            probs = torch.nn.functional.softmax(scores, dim=-1)
            drawn = torch.cat([torch.multinomial(probs[r:r + 1], num_samples=1, generator=g)
                               for r, g in enumerate(self.generators)])
            out = torch.full_like(scores, -float("inf"))
            return out.scatter_(1, drawn, 0.0)

    steps: list[Any] = []
    if temperature != 1.0:
        steps.append(TemperatureLogitsWarper(temperature))
    if top_k is not None and top_k != 0:
        steps.append(TopKLogitsWarper(top_k=top_k, min_tokens_to_keep=1))
    if top_p < 1.0:
        steps.append(TopPLogitsWarper(top_p=top_p, min_tokens_to_keep=1))
    return LogitsProcessorList([*steps, RowSeededDraw()])


@contextlib.contextmanager
def _seeded(seed: int | None) -> Iterator[None]:
    import torch

    if seed is None:
        yield
        return
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _grids(encoded: dict[str, Any]) -> list[Any]:
    """The image grids ``(t, h, w)`` of one encoding (none without images)."""
    grid = encoded.get("image_grid_thw")
    return grid.tolist() if grid is not None else []


def _share_groups(prompts: Sequence[Prompt]) -> list[list[int]]:
    """Indices of prompts grouped by ``share_key`` (groups of two or more with at least one
    shared image)."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        if p.share_key is not None and p.shared_images > 0:
            groups.setdefault(f"{p.shared_images}\x00{p.share_key}", []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _common_prefix_length(rows: Sequence[Any]) -> int:
    import torch

    n = min(len(r) for r in rows)
    same = torch.ones(n, dtype=torch.bool)
    for r in rows[1:]:
        same &= rows[0][:n] == r[:n]
    diff = (~same).nonzero()
    return int(diff[0]) if len(diff) else n


def _image_runs(ids: Any, image_token_id: int) -> list[tuple[int, int]]:
    """``(start, end)`` (end exclusive) of each run of image placeholder tokens, one run
    per image."""
    import torch

    is_img = torch.cat([torch.zeros(1, dtype=torch.long), (ids == image_token_id).long(),
                        torch.zeros(1, dtype=torch.long)])
    step = is_img[1:] - is_img[:-1]
    starts = (step == 1).nonzero().flatten().tolist()
    ends = (step == -1).nonzero().flatten().tolist()
    return list(zip(starts, ends, strict=True))
