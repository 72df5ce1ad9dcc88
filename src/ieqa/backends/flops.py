"""FLOPs of a VLM forward pass, counted from the config and the token counts.

The throughput scripts (``benchmarks/vlm_throughput.py`` and the others behind
``benchmarks/gpu_check.sh``) print beside edits/s the TFLOP an edit costs, the TFLOP/s
achieved and, on a GPU, the share of the device's dense bf16 peak (:func:`peak_tflops`).
The count is the matrix-multiply work, 2 FLOPs per multiply-add, as
``torch.utils.flop_counter.FlopCounterMode`` counts it (the tests check the two agree
exactly on tiny models of every family counted here):

* vision tower: the patch embedding (a convolution with stride = kernel, i.e. a matrix
  product per patch), per block the qkv and output projections, the MLP and the attention
  within each segment (a whole image, or a window: Qwen2.5-VL's windowed blocks), the patch
  merger(s) (Qwen3-VL's deep-stack mergers too);
* language model: per layer the q, k, v, o projections, the MLP, and the attention of the
  new tokens over everything before them **as a dense kernel computes it** (``n x (past +
  n)`` scores, the causal half included, as torch's SDPA and the profiler count it; a
  flash kernel skips about half of that part, which at 448x448 pairs is under 3 % of the
  total);
* the output head only at the positions a readout reads (``head_positions``).

Norms, activations, softmax, the rotary tables and the other elementwise work are not
counted (as the profiler does not): a few per cent of the time, none of the FLOPs that set the peak.

Supported ``model_type`` values: :data:`COUNTED_MODEL_TYPES`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: model types :func:`forward_flops` counts
COUNTED_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")

#: dense bf16 tensor-core peaks in TFLOP/s by GPU model (NVIDIA's data sheets; where a
#: sheet gives the figure "with sparsity", half of it). Matched against the device name in
#: this order (the first pattern found wins), case-insensitively.
GPU_PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("GB200", 2500.0),
    ("B200", 2250.0),
    ("B100", 1750.0),
    ("H200 NVL", 835.0),
    ("H200", 989.4),        # H200 SXM
    ("GH200", 989.4),
    ("H100 NVL", 835.0),
    ("H100 PCIe", 756.0),
    ("H100", 989.4),        # H100 SXM ("NVIDIA H100 80GB HBM3")
    ("H800", 989.4),
    ("A100", 312.0),        # SXM and PCIe alike
    ("A800", 312.0),
    ("L40S", 362.05),
    ("L40", 181.05),
    ("RTX 4090", 165.2),
    ("RTX 6000 Ada", 364.2),
    ("A10", 125.0),         # A10 (not A100: matched after it)
    ("L4", 121.0),
)


def peak_tflops(device_name: str | None) -> float | None:
    """The dense bf16 peak (TFLOP/s) of a GPU by its name (``torch.cuda.get_device_name``),
    or ``None`` for a CPU, ``None`` or a GPU not in :data:`GPU_PEAK_BF16_TFLOPS` (the
    scripts then take ``--peak-tflops``)."""
    if not device_name:
        return None
    for pattern, peak in GPU_PEAK_BF16_TFLOPS:
        if re.search(r"(?<![A-Za-z0-9])" + re.escape(pattern) + r"(?![A-Za-z0-9])",
                     device_name, re.IGNORECASE):
            return peak
    return None


@dataclass(frozen=True)
class Flops:
    """FLOPs of one forward (or the sum of several), by part."""

    vision: float = 0.0
    text: float = 0.0
    head: float = 0.0

    @property
    def total(self) -> float:
        return self.vision + self.text + self.head

    def __add__(self, other: Flops) -> Flops:
        return Flops(self.vision + other.vision, self.text + other.text, self.head + other.head)

    def __mul__(self, k: float) -> Flops:
        return Flops(self.vision * k, self.text * k, self.head * k)


def _get(cfg: Any, name: str, default: Any = None) -> Any:
    return getattr(cfg, name, default) if not isinstance(cfg, dict) else cfg.get(name, default)


def _model_type(config: Any) -> str:
    kind = _get(config, "model_type")
    if kind not in COUNTED_MODEL_TYPES:
        raise ValueError(f"FLOPs are counted for {', '.join(COUNTED_MODEL_TYPES)}; this model is "
                         f"{kind!r}")
    return str(kind)


def window_segments(grid: tuple[int, int, int], window_size: int, patch_size: int,
                    merge: int) -> list[int]:
    """The lengths (patches) of Qwen2.5-VL's attention windows of one image or video grid
    ``(t, h, w)`` in patches: squares of ``window_size`` pixels in whole merged units,
    cut at the right and bottom edges, per frame."""
    t, h, w = grid
    units = window_size // merge // patch_size  # merged units per window side
    gh, gw = h // merge, w // merge
    rows = [min(units, gh - r) for r in range(0, gh, units)]
    cols = [min(units, gw - c) for c in range(0, gw, units)]
    return [r * c * merge * merge for _ in range(t) for r in rows for c in cols]


def vision_flops(config: Any, grids: Iterable[tuple[int, int, int]]) -> float:
    """FLOPs of the vision tower on images of patch grids ``grids`` (``image_grid_thw``)."""
    kind = _model_type(config)
    v = _get(config, "vision_config")
    grids = [tuple(int(x) for x in g) for g in grids]
    n = sum(t * h * w for t, h, w in grids)
    if not n:
        return 0.0
    merge = int(_get(v, "spatial_merge_size", 2))
    patch = int(_get(v, "patch_size"))
    tp = int(_get(v, "temporal_patch_size", 2))
    channels = int(_get(v, "in_channels", 3))
    if kind == "qwen2_vl":
        d, depth = int(_get(v, "embed_dim")), int(_get(v, "depth"))
        mlp = 2 * 2 * n * d * int(d * _get(v, "mlp_ratio"))
        out_dim = int(_get(v, "hidden_size"))
    else:
        d, depth = int(_get(v, "hidden_size")), int(_get(v, "depth"))
        inter = int(_get(v, "intermediate_size"))
        mlp = (3 if kind == "qwen2_5_vl" else 2) * 2 * n * d * inter
        out_dim = int(_get(v, "out_hidden_size"))
    total = 2.0 * n * channels * tp * patch * patch * d  # patch embedding
    full: list[int] = []  # one segment per frame
    for t_, h, w in grids:
        full += [h * w] * t_
    windowed = ([s for g in grids for s in window_segments(g, int(_get(v, "window_size")),
                                                         patch, merge)]
                if kind == "qwen2_5_vl" else full)
    full_blocks = set(_get(v, "fullatt_block_indexes", None) or []) if kind == "qwen2_5_vl" \
        else set(range(depth))
    for block in range(depth):
        segments = full if block in full_blocks else windowed
        total += 2 * n * d * 3 * d + 2 * n * d * d + mlp  # qkv, proj, MLP
        total += 2 * 2 * d * sum(s * s for s in segments)  # scores and weighted values
    m = n // (merge * merge)
    wide = d * merge * merge
    mergers = 1 + len(_get(v, "deepstack_visual_indexes", None) or []) if kind == "qwen3_vl" else 1
    total += mergers * (2 * m * wide * wide + 2 * m * wide * out_dim)
    return float(total)


def text_flops(config: Any, new: int, past: int = 0, batch: int = 1) -> float:
    """FLOPs of the language model's layers on ``new`` tokens that attend to ``past``
    cached ones (and each other: dense count), for each of ``batch`` rows."""
    _model_type(config)
    t = _get(config, "text_config")
    h = int(_get(t, "hidden_size"))
    heads = int(_get(t, "num_attention_heads"))
    kv = int(_get(t, "num_key_value_heads", heads))
    hd = int(_get(t, "head_dim", None) or h // heads)
    inter = int(_get(t, "intermediate_size"))
    layers = int(_get(t, "num_hidden_layers"))
    proj = 2 * new * h * (2 * heads * hd + 2 * kv * hd)  # q, o and k, v
    mlp = 2 * new * h * inter * 3
    attention = 2 * 2 * new * (past + new) * heads * hd
    return float(batch * layers * (proj + mlp + attention))


def head_flops(config: Any, positions: int) -> float:
    """FLOPs of the output head at ``positions`` positions."""
    _model_type(config)
    t = _get(config, "text_config")
    return 2.0 * positions * int(_get(t, "hidden_size")) * int(_get(t, "vocab_size"))


def forward_flops(config: Any, tokens: int, grids: Sequence[tuple[int, int, int]] = (), *,
                  past: int = 0, head_positions: int = 1) -> Flops:
    """FLOPs of one sequence's forward: ``tokens`` new tokens (image placeholders included)
    after ``past`` cached ones, the images of ``grids`` encoded, the head read at
    ``head_positions`` positions."""
    return Flops(vision=vision_flops(config, grids), text=text_flops(config, tokens, past),
                 head=head_flops(config, head_positions))


def utilisation(flops: float, seconds: float, peak: float | None) -> tuple[float, float | None]:
    """``(TFLOP/s achieved, % of peak or None)`` of ``flops`` done in ``seconds``."""
    rate = flops / seconds / 1e12 if seconds > 0 else math.nan
    return rate, (100.0 * rate / peak if peak else None)


def describe_rate(flops_per_item: float | None, items_per_s: float,
                  peak: float | None) -> tuple[str, str, str]:
    """The three columns the throughput scripts print beside items/s: TFLOP per item,
    TFLOP/s achieved and % of peak (``"n/a"`` where unknown: no count for this model, or
    no peak for this device)."""
    if flops_per_item is None:
        return "n/a", "n/a", "n/a"
    rate, share = utilisation(flops_per_item * items_per_s, 1.0, peak)
    return f"{flops_per_item / 1e12:.4g}", f"{rate:.4g}", "n/a" if share is None else f"{share:.1f}"
