"""Scoring throughput (edits/s) of ieqa's transformers VLM backend, forward-only readout.

The Q-Align style readouts (``vlm-levels``, digits, heads) score an edit with one forward
pass that ends at the answer prefix and read the next token's logits. This times exactly
that, ``TransformersVLM.forward(prompts, logits=True)`` (processor encoding, the model
forward and the copy of the logits to the CPU all included), on synthetic edits laid out
as the built-in templates do::

    "Source image: " <source> "\\nInstruction: ...\\nEdited image: " <edited> "\\n<question>"
    answer_prefix "The quality of the edited image is"

The edits come in ``--groups`` groups of ``--k`` candidates (default 8 x 4 = 32 edits)
that share a source image and instruction (same ``share_key``, ``shared_images=1``);
every image is ``--image-size`` (default 448x448: 256 image tokens per image with Qwen2/2.5
14-px patches, so the images dominate the prompt as in real use). Compared, in the same
run, interleaved (every configuration once per repeat) and as the median of ``--repeats``
timed passes over all edits after ``--warmup`` untimed batches:

1. batch sizes 1, 8 and 32 without prefix sharing: edits/s and the ratio to batch 1;
2. prefix sharing (the source image and instruction encoded once per group, KV cache
   reused by the K candidates) against no sharing at batch sizes 8 and 32 (whole groups
   per batch): ratio shared / unshared;
3. the check that they compute the same thing: max |diff| of the next-token logits,
   shared vs unshared and batch N vs batch 1 (the run fails when above ``--tol``, relative
   to the largest |logit|).

Models (one of):

* ``--tiny FAMILY`` (default ``qwen2-vl``): a tiny random model from
  ``ieqa.testing.build_tiny_vlm`` in a temporary folder (CPU smoke runs; not 7B numbers).
* ``--arch qwen2.5-vl-7b | qwen2-vl-7b | qwen3-vl-8b``: the published architecture with
  RANDOM weights, built in memory directly on ``--device`` in ``--dtype`` (nothing
  downloaded, no weights written). Throughput does not depend on the weights' values, so
  this gives real-size GPU numbers without a checkpoint. Tokens come from the tiny
  byte-level tokenizer (a text token is a byte, so the text part is a few times longer
  than with Qwen's BPE; the image tokens, which dominate, are exact) unless ``--processor``
  names a real checkpoint's processor (its tokenizer, image processor and chat template;
  no weights read). ``--layers`` / ``--vision-layers`` shrink the towers for smoke tests;
  ``--device meta`` only builds the model and prints its parameter count (it matches the
  published checkpoints exactly, a check of the config).
* ``--model PATH_OR_ID``: a real checkpoint (local folder or hub id).

Run::

    .venv/bin/python benchmarks/vlm_throughput.py                      # tiny, CPU, < 1 min
    .venv/bin/python benchmarks/vlm_throughput.py --arch qwen2.5-vl-7b --device cuda
    .venv/bin/python benchmarks/vlm_throughput.py --model Qwen/Qwen2.5-VL-7B-Instruct --device cuda
    .venv/bin/python benchmarks/vlm_throughput.py --arch qwen2.5-vl-7b --device meta   # config check
    .venv/bin/python benchmarks/vlm_throughput.py --arch qwen2.5-vl-7b --device cpu \\
        --layers 1 --vision-layers 1 --image-size 224 --batch-sizes 1,8 --shared-batch-sizes 8
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ieqa.backends import Prompt
from ieqa.backends.attention import VARLEN_ATTENTION, packs_vision, use_fast_attention
from ieqa.backends.flops import describe_rate, peak_tflops
from ieqa.backends.processor import load_processor
from ieqa.backends.transformers_vlm import TransformersVLM, resolve_device
from ieqa.testing import TINY_FAMILIES, build_tiny_vlm

QUESTION = ("How would you rate the visual quality of the edited image? Answer with one word: "
            "excellent, good, fair, poor or bad.")
ANSWER_PREFIX = "The quality of the edited image is"
INSTRUCTIONS = (
    "Replace the sky with a dramatic orange sunset.",
    "Add a red umbrella next to the bench.",
    "Make the photo look like a watercolor painting.",
    "Remove the person standing on the left.",
    "Change the season to winter, with snow on the ground and the trees.",
    "Turn the car blue.",
    "Put a small cat on the windowsill.",
    "Make it night time, with the street lamps switched on.",
)

# Published sizes (config.json of the Instruct checkpoints). The token ids are taken from
# the tiny tokenizer at build time; vocab_size stays the published one (the tokenizer only
# uses its first few hundred ids, which does not matter for random weights or for speed).
ARCHS: dict[str, dict[str, Any]] = {
    "qwen2-vl-7b": dict(
        family="qwen2-vl", published="Qwen/Qwen2-VL-7B-Instruct: 8,291,375,616",
        text=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                  num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                  hidden_act="silu", rms_norm_eps=1e-6, max_position_embeddings=32768,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                   "mrope_section": [16, 24, 24]}),
        vision=dict(depth=32, embed_dim=1280, hidden_size=3584, mlp_ratio=4, num_heads=16,
                    hidden_act="quick_gelu", in_channels=3, patch_size=14,
                    spatial_merge_size=2, temporal_patch_size=2)),
    "qwen2.5-vl-7b": dict(
        family="qwen2.5-vl", published="Qwen/Qwen2.5-VL-7B-Instruct: 8,292,166,656",
        text=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                  num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                  hidden_act="silu", rms_norm_eps=1e-6, max_position_embeddings=128000,
                  rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                   "mrope_section": [16, 24, 24]}),
        vision=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                    out_hidden_size=3584, hidden_act="silu", in_channels=3, patch_size=14,
                    spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                    tokens_per_second=2, fullatt_block_indexes=[7, 15, 23, 31])),
    "qwen3-vl-8b": dict(
        family="qwen3-vl", published="Qwen/Qwen3-VL-8B-Instruct: 8,767,123,696",
        text=dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288,
                  num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
                  head_dim=128, hidden_act="silu", rms_norm_eps=1e-6,
                  max_position_embeddings=262144, attention_bias=False,
                  rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                   "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
        vision=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16,
                    out_hidden_size=4096, hidden_act="gelu_pytorch_tanh", in_channels=3,
                    patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                    num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24])),
}


# ------------------------------------------------------------------------------- models
def torch_dtype_name(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}
    return aliases.get(dtype, dtype)


def arch_config(arch: str, tokenizer: Any, layers: int | None, vision_layers: int | None) -> Any:
    """The transformers config of ``arch`` (published sizes) with ``tokenizer``'s
    special-token ids, optionally with fewer text layers / vision blocks."""
    from transformers import Qwen2_5_VLConfig, Qwen2VLConfig, Qwen3VLConfig

    spec = ARCHS[arch]

    def token(text: str) -> int:
        tid = tokenizer.convert_tokens_to_ids(text)
        if tid is None or tid == tokenizer.unk_token_id:
            raise SystemExit(f"the tokenizer has no {text} token: not a Qwen-VL processor")
        return int(tid)

    ids = {"image_token_id": token("<|image_pad|>"), "video_token_id": token("<|video_pad|>"),
           "vision_start_token_id": token("<|vision_start|>"),
           "vision_end_token_id": token("<|vision_end|>")}
    text = copy.deepcopy(spec["text"])
    text.update(eos_token_id=token("<|im_end|>"), bos_token_id=None,
                pad_token_id=tokenizer.pad_token_id)
    if len(tokenizer) > text["vocab_size"]:
        raise SystemExit(f"the tokenizer has {len(tokenizer)} tokens, more than {arch}'s "
                         f"vocabulary ({text['vocab_size']})")
    vision = copy.deepcopy(spec["vision"])
    if layers is not None:
        text["num_hidden_layers"] = layers
    if vision_layers is not None:
        vision["depth"] = vision_layers
        for key in ("fullatt_block_indexes", "deepstack_visual_indexes"):
            if key in vision:  # keep the blocks that still exist (at least the last one)
                vision[key] = [i for i in vision[key] if i < vision_layers] or [vision_layers - 1]
    cls = {"qwen2-vl": Qwen2VLConfig, "qwen2.5-vl": Qwen2_5_VLConfig,
           "qwen3-vl": Qwen3VLConfig}[spec["family"]]
    return cls(text_config=text, vision_config=vision, tie_word_embeddings=False, **ids)


def build_arch_model(config: Any, device: str, dtype: str, attn: str | None, seed: int) -> Any:
    """A model of ``config`` with random weights, created directly on ``device`` in ``dtype``
    (transformers' own initialisation; on ``meta`` no memory is allocated)."""
    import torch
    from transformers import AutoModelForImageTextToText

    kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype)}
    if attn:
        kwargs["attn_implementation"] = attn
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, **kwargs)
    return model.eval()


def load_backend(args: argparse.Namespace, device: str, dtype: str, workdir: Path,
                 ) -> tuple[TransformersVLM | None, str]:
    """(backend, or None on ``meta``; description of the model)."""
    # the tiny processors cap images at 224x224; by default let --image-size through
    tiny_pixels = args.max_pixels or args.image_size[0] * args.image_size[1]
    if args.model:
        vlm = TransformersVLM(args.model, device=device, dtype=dtype,
                              max_pixels=args.max_pixels, attn_implementation=args.attn)
        return vlm, args.model
    if not args.arch:
        path = build_tiny_vlm(workdir / "tiny", args.tiny, max_pixels=tiny_pixels,
                              **({"num_layers": args.layers} if args.layers else {}))
        vlm = TransformersVLM(path, device=device, dtype=dtype, attn_implementation=args.attn)
        return vlm, f"tiny {args.tiny} (ieqa.testing.build_tiny_vlm, random weights)"

    spec = ARCHS[args.arch]
    if args.processor:
        processor = load_processor(args.processor, max_pixels=args.max_pixels)
        tokens = f"processor of {args.processor}"
    else:  # only the tokenizer, image processor and chat template of this folder are used
        tiny_dir = build_tiny_vlm(workdir / "processor", spec["family"], max_pixels=tiny_pixels)
        processor = load_processor(tiny_dir)
        tokens = "tiny byte-level tokenizer of ieqa.testing (text ~4x longer than Qwen's BPE)"
    patch = getattr(processor.image_processor, "patch_size", None)
    if patch is not None and patch != spec["vision"]["patch_size"]:
        raise SystemExit(f"the processor uses {patch}-px patches, {args.arch} "
                         f"{spec['vision']['patch_size']}-px: pass a {spec['family']} processor")
    config = arch_config(args.arch, processor.tokenizer, args.layers, args.vision_layers)
    t0 = time.perf_counter()
    model = build_arch_model(config, device, dtype, args.attn, args.seed)
    n_vis = sum(p.numel() for n, p in model.named_parameters() if ".visual." in f".{n}")
    n_all = sum(p.numel() for p in model.parameters())
    text, vision = config.text_config, config.vision_config
    desc = (f"{args.arch} architecture, RANDOM weights (built in {time.perf_counter() - t0:.1f} s): "
            f"{n_all:,} parameters (vision {n_vis / 1e9:.3f} B; full size published: "
            f"{spec['published']}); text: {text.num_hidden_layers} layers of {text.hidden_size}, "
            f"vision: {vision.depth} blocks"
            + ("" if args.layers is None and args.vision_layers is None
               else " (REDUCED with --layers/--vision-layers)") + f"; tokens: {tokens}")
    if device == "meta":
        return None, desc
    if not args.attn:  # as TransformersVLM does for a loaded checkpoint
        use_fast_attention(model)
    return TransformersVLM.from_model(model, processor, name=f"random-{args.arch}"), desc


# -------------------------------------------------------------------------------- edits
def synthetic_edits(groups: int, k: int, size: tuple[int, int], seed: int) -> list[Prompt]:
    """``groups * k`` prompts; the ``k`` of a group share source image and instruction."""
    rng = np.random.default_rng(seed)
    w, h = size

    def image() -> Image.Image:
        return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")

    prompts = []
    for g in range(groups):
        source = image()
        instruction = INSTRUCTIONS[g % len(INSTRUCTIONS)]
        for _ in range(k):
            prompts.append(Prompt(
                parts=("Source image: ", source, f"\nInstruction: {instruction}\nEdited image: ",
                       image(), f"\n{QUESTION}"),
                answer_prefix=ANSWER_PREFIX, share_key=f"group-{g}", shared_images=1))
    return prompts


# ------------------------------------------------------------------------------- timing
def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def score_all(vlm: TransformersVLM, prompts: Sequence[Prompt], batch: int, share: bool,
              device: str) -> list[Any]:
    """Next-token logits of every prompt, ``batch`` prompts per forward call."""
    out: list[Any] = []
    for i in range(0, len(prompts), batch):
        res = vlm.forward(prompts[i:i + batch], logits=True, share_prefix=share)
        out.extend(row[0] for row in res.logits)
    synchronize(device)
    return out


def device_peak(device: str, override: float | None = None) -> float | None:
    """The dense bf16 peak (TFLOP/s) for the '% of peak' columns: ``override``
    (``--peak-tflops``), else by GPU name; ``None`` on a CPU or an unknown GPU."""
    import torch

    if override:
        return override
    if not device.startswith("cuda"):
        return None
    return peak_tflops(torch.cuda.get_device_name(torch.device(device)))


PEAK_NOTE = ("peak: {peak}; FLOPs: ieqa.backends.flops (matmuls as torch's profiler counts "
             "them, padding not counted)")


def peak_note(peak: float | None) -> str:
    return PEAK_NOTE.format(peak=f"{peak:g} TFLOP/s dense bf16" if peak else
                            "n/a (CPU, or a GPU not in the table: --peak-tflops)")


def parse_sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_image_size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h or w)


def max_diff(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, float]:
    """(max |a - b|, max |a|) over all rows."""
    diff = max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))
    scale = max(float(x.abs().max()) for x in a)
    return diff, scale


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--model", help="checkpoint folder or hub id (real weights)")
    which.add_argument("--arch", choices=sorted(ARCHS),
                       help="published architecture with random weights, built in memory")
    which.add_argument("--tiny", choices=TINY_FAMILIES, default="qwen2-vl",
                       help="tiny random model family (the default model: --tiny qwen2-vl)")
    ap.add_argument("--processor", help="--arch: the processor (tokenizer, image processor, chat "
                    "template) of a real checkpoint of that family, folder or hub id, instead of "
                    "the tiny byte-level one; no weights are read")
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, "
                    "cuda:1, or meta (--arch only: build and count parameters, no timing)")
    ap.add_argument("--dtype", default="auto",
                    help="auto (bfloat16 on cuda, float32 on cpu), bfloat16, float16, float32")
    ap.add_argument("--attn", default=None,
                    help="attn_implementation: sdpa, flash_attention_2, eager (default: "
                         "transformers' for the language model, ieqa's variable-length SDPA "
                         "for a packed vision tower, compared in the same run with "
                         "transformers' per-window SDPA at the largest batch size)")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="the device's dense peak in TFLOP/s for the '%% of peak' column "
                         "(default: ieqa.backends.flops.GPU_PEAK_BF16_TFLOPS by GPU name; "
                         "none on a CPU)")
    ap.add_argument("--layers", type=int, default=None,
                    help="text decoder layers (--arch/--tiny; default: the architecture's)")
    ap.add_argument("--vision-layers", type=int, default=None,
                    help="vision blocks (--arch; default: the architecture's)")
    ap.add_argument("--image-size", type=parse_image_size, default=(448, 448),
                    help="WxH of every source and edited image (default 448x448)")
    ap.add_argument("--max-pixels", type=int, default=None,
                    help="processor pixel budget per image (default: the image area for "
                         "--tiny/--arch, i.e. no resizing; the checkpoint's own for --model)")
    ap.add_argument("--k", type=int, default=4, help="candidates per source+instruction group")
    ap.add_argument("--groups", type=int, default=None,
                    help="groups of --k edits (default: enough for the largest batch)")
    ap.add_argument("--batch-sizes", type=parse_sizes, default=[1, 8, 32],
                    help="unshared batch sizes, the first is the reference (default 1,8,32)")
    ap.add_argument("--shared-batch-sizes", type=parse_sizes, default=[8, 32],
                    help="batch sizes compared with and without prefix sharing (multiples of --k)")
    ap.add_argument("--repeats", type=int, default=5, help="timed passes per configuration (median)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed batches per configuration")
    ap.add_argument("--tol", type=float, default=None, help="max |logit diff| / max |logit| "
                    "allowed (default 1e-4 in float32, with TF32 off on cuda; 1e-1 in 16-bit)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads (default: 1 for --tiny on cpu, whose tiny ops gain "
                         "nothing from more and suffer from any other load; torch's otherwise)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    import transformers

    device = "meta" if args.device == "meta" else resolve_device(args.device)
    if device == "meta" and not args.arch:
        ap.error("--device meta needs --arch")
    if args.processor and not args.arch:
        ap.error("--processor goes with --arch")
    if args.model or args.arch:
        args.tiny = None
    dtype = torch_dtype_name(args.dtype, device)
    if args.threads is None and args.tiny and device == "cpu":
        args.threads = 1
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.k < 2:
        ap.error("--k must be at least 2 (prefix sharing needs groups)")
    bad = [b for b in args.shared_batch_sizes if b % args.k]
    if bad:
        ap.error(f"--shared-batch-sizes must be multiples of --k={args.k} (whole groups): {bad}")
    args.batch_sizes = list(dict.fromkeys(args.batch_sizes))
    args.shared_batch_sizes = list(dict.fromkeys(args.shared_batch_sizes))
    largest = max([*args.batch_sizes, *args.shared_batch_sizes])
    groups = args.groups or -(-largest // args.k)
    n_edits = groups * args.k
    if n_edits < largest:
        ap.error(f"{n_edits} edits cannot fill a batch of {largest}; raise --groups")
    # 16-bit: rounding alone moves the next-token logits of random 7B weights by 3.4-6.0 % of
    # the largest logit between batch sizes (H200, 2026-11-26: qwen2.5-vl-7b 5.2-6.0e-2,
    # qwen2-vl-7b and qwen3-vl-8b 3.4-3.8e-2), so 1e-1 there; the strict check is float32,
    # where the same runs agree to 1.6e-5 once TF32 is off (below).
    tol = args.tol if args.tol is not None else (1e-4 if dtype == "float32" else 1e-1)
    if dtype == "float32" and device.startswith("cuda"):
        # cuDNN convolutions (the vision patch embedding) default to TF32, whose 10-bit
        # mantissa alone gave 1.5e-3 between batch 32 and batch 1 in float32: off, so the
        # float32 check tests the code, not the kernels' precision.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False

    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ieqa-vlm-bench-") as tmp:
        vlm, model_desc = load_backend(args, device, dtype, Path(tmp))
        print(f"model: {model_desc}")
        if vlm is None:
            print("device meta: built without memory; nothing to time")
            return
        prompts = synthetic_edits(groups, args.k, args.image_size, args.seed)

        hw = (torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda")
              else f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads")
        enc = vlm.encode_one(prompts[0])
        ids = enc["input_ids"][0]
        is_img = [t == vlm.image_token_id for t in ids.tolist()]
        n_img = sum(is_img)
        runs = [i for i, x in enumerate(is_img) if x and (i == 0 or not is_img[i - 1])]
        # tokens before the edited image: what prefix sharing encodes once per group
        prefix = runs[1] if len(runs) > 1 else "?"
        vision_attn = getattr(getattr(vlm.model.config, "vision_config", None),
                              "_attn_implementation", None)
        print(f"device: {device} ({hw}); dtype {dtype}; attention "
              f"{vlm.model.config._attn_implementation} (vision tower: {vision_attn}); "
              f"torch {torch.__version__}, "
              f"transformers {transformers.__version__}")
        improc = vlm.processor.image_processor
        budget = (getattr(improc, "max_pixels", None)
                  or (getattr(improc, "size", None) or {}).get("longest_edge"))
        print(f"edits: {n_edits} ({groups} groups x K={args.k}), images "
              f"{args.image_size[0]}x{args.image_size[1]}, processor max_pixels {budget}; "
              f"prompt {len(ids)} tokens, {n_img} of them image tokens ({n_img // 2} per image), "
              f"shared prefix {prefix} tokens; prefix sharing "
              f"{'supported' if vlm.share_prefix_supported else 'UNSUPPORTED'}")

        t0 = time.perf_counter()
        for p in prompts:
            vlm.encode_one(p)
        encode_rate = n_edits / (time.perf_counter() - t0)

        configs: list[tuple[str, int, bool]] = [(f"batch {b}", b, False) for b in args.batch_sizes]
        if vlm.share_prefix_supported:
            configs += [(f"batch {b}, prefix sharing", b, True) for b in args.shared_batch_sizes]
            extra = [(f"batch {b}", b, False) for b in args.shared_batch_sizes
                     if b not in args.batch_sizes]  # the unshared reference of a shared row
            configs[len(args.batch_sizes):len(args.batch_sizes)] = extra
        # the vision tower's attention: ieqa's variable-length SDPA against transformers'
        # per-window SDPA loop, at the largest unshared batch size
        varlen = (packs_vision(vlm.model)
                  and vlm.model.config.vision_config._attn_implementation == VARLEN_ATTENTION)
        per_window = f"batch {max(args.batch_sizes)}, per-window SDPA (transformers)"
        if varlen:
            configs.append((per_window, max(args.batch_sizes), False))

        def timed(name: str, b: int, s: bool, items: Sequence[Prompt]) -> list[Any]:
            if name != per_window:
                return score_all(vlm, items, b, s, device)
            vlm.model.set_attn_implementation({"vision_config": "sdpa"})
            try:
                return score_all(vlm, items, b, s, device)
            finally:
                vlm.model.set_attn_implementation({"vision_config": VARLEN_ATTENTION})

        for name, b, s in configs:  # warm-up: a few batches of each configuration
            for _ in range(args.warmup):
                timed(name, b, s, prompts[:b])
        times: dict[str, list[float]] = {name: [] for name, _, _ in configs}
        logits: dict[str, list[Any]] = {}
        # FLOPs per edit as each configuration computes them (the backend's own count: a
        # shared prefix once per group; padding not counted)
        flops: dict[str, float | None] = {}
        for r in range(args.repeats):  # interleaved, so slow drifts hit every configuration
            for name, b, s in configs:
                before = vlm.flops_done
                t0 = time.perf_counter()
                logits[name] = timed(name, b, s, prompts)
                times[name].append(time.perf_counter() - t0)
                flops[name] = (None if before is None or vlm.flops_done is None
                               else (vlm.flops_done.total - before.total) / n_edits)
            print(f"  repeat {r + 1}/{args.repeats} done ({time.perf_counter() - t_start:.0f} s)")

    rate = {name: n_edits / statistics.median(ts) for name, ts in times.items()}
    ref = f"batch {args.batch_sizes[0]}"
    rows: list[tuple[str, str, float, str]] = []  # (name, label, ratio, against)
    for name, b, s in configs:
        if s:
            rows.append((name, f"{name} (K={args.k})", rate[name] / rate[f"batch {b}"],
                         f"shared / unshared at batch {b}"))
        elif name == per_window:
            rows.append((name, name, rate[name] / rate[f"batch {b}"],
                         f"vs batch {b} (ieqa varlen SDPA)"))
        elif b in args.batch_sizes:
            rows.append((name, name + (" (reference)" if name == ref else ""),
                         rate[name] / rate[ref], f"vs {ref}"))
    peak = device_peak(device, args.peak_tflops)
    cols = {name: describe_rate(flops[name], rate[name], peak) for name in rate}

    print(f"\n{'configuration':52s} {'edits/s':>9s} {'median s':>9s} {'min s':>8s} {'max s':>8s} "
          f"{'TFLOP/edit':>10s} {'TFLOP/s':>8s} {'% peak':>6s} {'ratio':>7s}  against")
    for name, label, ratio, against in rows:
        ts = times[name]
        per, achieved, share = cols[name]
        print(f"{label:52s} {rate[name]:9.3f} {statistics.median(ts):9.3f} {min(ts):8.3f} "
              f"{max(ts):8.3f} {per:>10s} {achieved:>8s} {share:>6s} {ratio:6.2f}x  {against}")
    print(peak_note(peak))
    print(f"{'processor only (encode_one, CPU)':36s} {encode_rate:9.3f}  (included in every row)")

    print("\nchecks (next-token logits, all edits; relative = max|diff| / max|logit|):")
    failed = []
    checks = [(f"batch {b} vs {ref}", f"batch {b}", ref) for b in args.batch_sizes[1:]]
    checks += [(f"batch {b}: shared vs unshared", f"batch {b}, prefix sharing", f"batch {b}")
               for _, b, s in configs if s]
    if varlen:
        checks.append(("varlen vs per-window SDPA", per_window, f"batch {max(args.batch_sizes)}"))
    worst = 0.0
    for label, a, b in checks:
        diff, scale = max_diff(logits[b], logits[a])
        rel = diff / max(scale, 1e-12)
        worst = max(worst, rel)
        ok = rel <= tol
        failed += [] if ok else [label]
        print(f"  {label:36s} max |diff| {diff:.2e} (max |logit| {scale:.2e}, relative "
              f"{rel:.1e}) {'ok' if ok else f'MISMATCH (> {tol:g})'}")
    # the yardstick: how much candidates of one group (same prefix, another edited image)
    # differ; a path that mixed up or dropped the edited image would be off by about this
    base = logits[ref]
    spread, scale = max_diff([base[i] for i in range(0, n_edits, args.k)],
                             [base[i + 1] for i in range(0, n_edits, args.k)])
    spread_rel = spread / max(scale, 1e-12)
    sensitive = spread_rel > tol and spread_rel > 5 * worst
    print(f"  {'yardstick: spread within groups':36s} max |diff| {spread:.2e} (relative "
          f"{spread_rel:.1e}) "
          + ("ok, well above the diffs above" if sensitive else
             "TOO SMALL: the checks above cannot tell the edits apart"))

    if device.startswith("cuda"):
        hw += f", peak memory {torch.cuda.max_memory_allocated(torch.device(device)) / 2**30:.1f} GiB"
    print(f"\n{model_desc}\n{device} ({hw}), {dtype}, images {args.image_size[0]}x{args.image_size[1]}, "
          f"{len(ids)} tokens per prompt ({n_img} image), {n_edits} edits, median of "
          f"{args.repeats}\n")
    print("| what | edits/s | TFLOP/edit | TFLOP/s | % of peak | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, label, ratio, against in rows:
        per, achieved, share = cols[name]
        print(f"| {label} | {rate[name]:.3g} | {per} | {achieved} | {share} | {ratio:.2f}x {against} |")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
    if failed:
        raise SystemExit(f"logits differ where they should agree: {', '.join(failed)}")


if __name__ == "__main__":
    main()
