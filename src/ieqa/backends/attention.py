"""Fast attention for packed vision towers, with nothing but torch.

The vision towers of Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 take every image of a batch
as one packed sequence and attend within segments of it (``cu_seqlens``): one segment per
image, and in Qwen2.5-VL's windowed layers one per 112x112-pixel window (64 patches). With
any attention implementation whose name lacks "flash", transformers splits the sequence
and calls attention once per segment: a batch of 32 edits at 448x448 is 64 images x 16
windows = 1,024 tiny attention calls per windowed layer, 28 layers deep. The
``flash_attention_2`` path takes the segments in one variable-length call, but needs the
flash-attn package (a CUDA toolkit and a compiler to install).

:data:`VARLEN_ATTENTION` is an attention function registered with transformers'
``AttentionInterface`` that takes the flash path's arguments (so transformers hands it the
whole packed sequence and its ``cu_seqlens``) and computes it with
``torch.nn.functional.scaled_dot_product_attention``: the segments of equal length are
stacked into one batch and attended in one call, one call per distinct segment length (a
windowed layer has at most four: whole windows and the windows cut by the right and the
bottom edge and both). Every segment attends to itself only, exactly as the per-segment loop
does, so the result equals it up to float rounding (tests: ``tests/backends/
test_attention.py``, float32, 1e-5 against the eager path); a segment's result does not
depend on the other segments of the batch. Called without ``cu_seqlens`` (a language
model's layers), it is transformers' own SDPA attention.

:func:`use_fast_attention` switches a loaded model's vision tower to it; the transformers
backend does so by default (``attn_implementation=None``), unless a specific
implementation is asked for (``"sdpa"``, ``"eager"``, ``"flash_attention_2"``: kept as
asked).
"""

from __future__ import annotations

from typing import Any

#: the registered name (transformers takes the variable-length route for implementations
#: whose name contains "flash"; the computation is torch's SDPA, no flash-attn package)
VARLEN_ATTENTION = "ieqa_sdpa_varlen_flash_api"

#: model types whose vision tower packs its images into ``cu_seqlens`` segments and that
#: :func:`use_fast_attention` switches (each checked against the eager path on a tiny model
#: in the tests, the ``_moe`` variants share their dense model's vision code)
PACKED_VISION_MODEL_TYPES = frozenset({
    "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"})

_REGISTERED = False


def varlen_sdpa_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                          scaling: float | None = None, dropout: float = 0.0,
                          cu_seq_lens_q: Any = None, cu_seq_lens_k: Any = None,
                          max_length_q: int | None = None, max_length_k: int | None = None,
                          is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """Attention within the segments of a packed sequence (see the module docstring).

    ``query``/``key``/``value``: ``[1, heads, tokens, head_dim]`` with ``cu_seq_lens_q``
    (= ``cu_seq_lens_k``, self-attention) the segments' cumulative boundaries; returns
    ``([1, tokens, heads, head_dim], None)`` as transformers' attention functions do.
    Without ``cu_seq_lens_q``: transformers' SDPA attention, unchanged.
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if cu_seq_lens_q is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      scaling=scaling, dropout=dropout, is_causal=is_causal,
                                      **kwargs)
    if cu_seq_lens_k is not None and not torch.equal(cu_seq_lens_k, cu_seq_lens_q):
        raise ValueError("varlen attention: the query and key segments differ; only "
                         "self-attention within segments is supported")
    if query.shape[0] != 1 or query.shape[1] != key.shape[1]:
        raise ValueError("varlen attention takes one packed sequence [1, heads, tokens, dim] "
                         "with as many key as query heads")
    q, k, v = query[0], key[0], value[0]
    heads, tokens, dim = q.shape
    bounds = cu_seq_lens_q.tolist()
    if bounds[0] != 0 or bounds[-1] != tokens:
        raise ValueError(f"varlen attention: the segments cover tokens {bounds[0]}.."
                         f"{bounds[-1]} of a sequence of {tokens}")
    by_length: dict[int, list[int]] = {}
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        if end > start:
            by_length.setdefault(end - start, []).append(start)
    out = torch.empty_like(q)
    causal = bool(is_causal)
    for length, starts in by_length.items():
        where = (torch.tensor(starts, device=q.device)[:, None]
                 + torch.arange(length, device=q.device)).flatten()
        n = len(starts)

        def segments(t: Any, n: int = n, length: int = length, where: Any = where) -> Any:
            # [heads, n * length, dim] -> [n, heads, length, dim]
            return t[:, where].reshape(heads, n, length, dim).transpose(0, 1)

        got = torch.nn.functional.scaled_dot_product_attention(
            segments(q), segments(k), segments(v), dropout_p=dropout, scale=scaling,
            is_causal=causal)
        out[:, where] = got.transpose(0, 1).reshape(heads, n * length, dim)
    return out.transpose(0, 1).unsqueeze(0), None


def register_attention() -> str:
    """Register :data:`VARLEN_ATTENTION` with transformers (once) and return its name."""
    global _REGISTERED
    if not _REGISTERED:
        from transformers import AttentionInterface

        AttentionInterface.register(VARLEN_ATTENTION, varlen_sdpa_attention)
        _REGISTERED = True
    return VARLEN_ATTENTION


def packs_vision(model: Any) -> bool:
    """Whether ``model`` (a transformers model) has a vision tower :func:`use_fast_attention`
    switches."""
    config = getattr(model, "config", None)
    return (getattr(config, "model_type", None) in PACKED_VISION_MODEL_TYPES
            and getattr(config, "vision_config", None) is not None)


def use_fast_attention(model: Any) -> str | None:
    """Switch ``model``'s packed vision tower to :data:`VARLEN_ATTENTION` when it runs
    transformers' SDPA or default attention, and return the name; ``None`` (nothing
    changed) for a model without such a tower, or one whose vision tower runs an
    implementation asked for on purpose (eager, flash-attn)."""
    if not packs_vision(model):
        return None
    current = getattr(model.config.vision_config, "_attn_implementation", None)
    if current == VARLEN_ATTENTION:
        return VARLEN_ATTENTION
    if current not in (None, "sdpa"):
        return None
    model.set_attn_implementation({"vision_config": register_attention()})
    return VARLEN_ATTENTION
