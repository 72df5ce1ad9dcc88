"""EditReward scoring speed: the ``editreward`` scorer (two forward passes per edit, 1-D
positions, reward heads at ``<|Reward|>``) on a published architecture with RANDOM weights.

    python benchmarks/editreward_throughput.py --arch qwen2.5-vl-7b --device cuda   # GPU check
    python benchmarks/editreward_throughput.py                                      # tiny, CPU

Nothing is downloaded: the architecture is built in memory (``vlm_throughput.py``'s
``--arch``), ``<|Reward|>`` is added to the tokenizer, two random heads of the released
shape (H-1024-16-2) are attached, and the prompts are ieqa's stand-ins
(``ieqa.testing.releases.write_prompt_standins``): speed does not depend on weights or
wording. Every edit is a 448x448 source and edit (the release's 200 704-pixel budget, 256
image tokens each), in groups of ``--k`` candidates per source.

Compared in the same run, each the median of ``--repeats`` passes over all edits: batch 1
(the reference), batch ``--batch`` without and with prefix sharing: edits/s and the ratio
to batch 1. The run fails (exit 1) when a configuration's scores differ from batch 1's by
more than ``--tol`` relative to the largest |score| (default 1e-4 in float32, 1e-1 in
16-bit: see vlm_throughput.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vlm_throughput import (  # noqa: E402
    ARCHS,
    arch_config,
    build_arch_model,
    device_peak,
    peak_note,
    synchronize,
)

from ieqa import EditSample  # noqa: E402
from ieqa.backends import TransformersVLM  # noqa: E402
from ieqa.backends.attention import use_fast_attention  # noqa: E402
from ieqa.backends.flops import describe_rate  # noqa: E402
from ieqa.backends.processor import load_processor  # noqa: E402
from ieqa.scorers.published.editreward import PIXELS, PROMPT_SOURCES, EditRewardScorer  # noqa: E402
from ieqa.scorers.published.editreward_release import RewardRelease  # noqa: E402
from ieqa.testing import build_tiny_vlm  # noqa: E402
from ieqa.testing.releases import RELEASE_HEAD_WIDTHS, write_prompt_standins  # noqa: E402

TOKEN = "<|Reward|>"


def default_dtype(args: argparse.Namespace) -> str:
    return args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")


def build_release(args: argparse.Namespace, workdir: Path) -> tuple[RewardRelease, str]:
    import torch

    family = ARCHS[args.arch]["family"] if args.arch else "qwen2.5-vl"
    tiny = build_tiny_vlm(workdir / "tiny", family, max_pixels=PIXELS)
    processor = load_processor(tiny, min_pixels=PIXELS, max_pixels=PIXELS)
    processor.tokenizer.add_special_tokens({"additional_special_tokens": [TOKEN]})
    dtype = default_dtype(args)
    if args.arch:
        config = arch_config(args.arch, processor.tokenizer, args.layers, None)
        model = build_arch_model(config, args.device, dtype, None, seed=0)
        use_fast_attention(model)  # as TransformersVLM does for a loaded checkpoint
        name = f"{args.arch} architecture, RANDOM weights"
    else:
        from transformers import AutoModelForImageTextToText

        model = AutoModelForImageTextToText.from_pretrained(tiny, dtype=getattr(torch, dtype))
        model.to(args.device)
        use_fast_attention(model)
        name = "tiny qwen2.5-vl (ieqa.testing), random weights"
    if len(processor.tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(processor.tokenizer), mean_resizing=False)
    hidden = model.get_input_embeddings().weight.shape[1]
    gen = torch.Generator().manual_seed(1)
    heads = {}
    for h in ("head_0", "head_1"):
        widths = (hidden, *RELEASE_HEAD_WIDTHS, 2)
        heads[h] = {}
        for index, (w_in, w_out) in zip((0, 3, 5), zip(widths, widths[1:], strict=False), strict=True):
            heads[h][f"{index}.weight"] = torch.randn(w_out, w_in, generator=gen) / w_in ** 0.5
            heads[h][f"{index}.bias"] = torch.zeros(w_out)
    vlm = TransformersVLM.from_model(model.eval(), processor, name=name, positions="1d")
    params = sum(p.numel() for p in model.parameters())
    return (RewardRelease(vlm=vlm, heads=heads, special_token=TOKEN),
            f"{name}: {params:,} parameters, {dtype}, {args.device}")


def edits(groups: int, k: int, seed: int) -> list[EditSample]:
    rng = np.random.default_rng(seed)

    def image() -> Image.Image:
        return Image.fromarray(rng.integers(0, 256, (448, 448, 3), dtype=np.uint8), "RGB")

    out = []
    for g in range(groups):
        source = image()
        for c in range(k):
            out.append(EditSample(id=f"g{g}c{c}", source=source, edited=image(),
                                  instruction="replace the sky with a sunset", group_id=f"g{g}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", choices=sorted(ARCHS), help="published architecture (random "
                    "weights); default: a tiny Qwen2.5-VL")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="default bfloat16 on cuda, float32 on cpu")
    ap.add_argument("--layers", type=int, default=None, help="text layers (--arch; default all)")
    ap.add_argument("--k", type=int, default=4, help="candidates per source")
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tol", type=float, default=None)
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="the device's dense peak (default: by GPU name; none on a CPU)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="ieqa-editreward-bench-") as tmp:
        release, desc = build_release(args, Path(tmp))
        prompts = write_prompt_standins(Path(tmp) / "prompts", PROMPT_SOURCES)
        scorer = EditRewardScorer.from_release(release, prompts=prompts)
        samples = edits(args.groups, args.k, seed=0)
        print(f"model: {desc}\nedits: {len(samples)} ({args.groups} groups x {args.k}), "
              f"448x448, 2 forward passes each")
        configs = {"batch 1 (reference)": (1, False), f"batch {args.batch}": (args.batch, False),
                   f"batch {args.batch}, prefix sharing": (args.batch, True)}
        times: dict[str, list[float]] = {c: [] for c in configs}
        flops: dict[str, float | None] = {}
        scores: dict[str, np.ndarray] = {}
        for repeat in range(-1, args.repeats):  # repeat -1: an untimed warm-up of each
            for name, (batch, share) in configs.items():
                scorer.batch_size = batch
                scorer.backend.share_prefix = share
                synchronize(args.device)
                before = release.vlm.flops_done
                t0 = time.perf_counter()
                results = scorer.score(samples)
                synchronize(args.device)
                if repeat >= 0:
                    times[name].append(time.perf_counter() - t0)
                after = release.vlm.flops_done
                flops[name] = (after.total - before.total) / len(samples) if after else None
                assert all(r.ok for r in results), [r.error for r in results if not r.ok]
                scores[name] = np.array([[r.scores[d] for d in ("instruction_alignment",
                                                                "visual_quality", "overall")]
                                         for r in results])
    dtype = default_dtype(args)
    tol = args.tol if args.tol is not None else (1e-4 if dtype == "float32" else 1e-1)
    ref_name = next(iter(configs))
    ref_s = statistics.median(times[ref_name])
    peak = device_peak(args.device, args.peak_tflops)
    print(f"\n{'configuration':34s} {'edits/s':>9s} {'median s':>9s} {'TFLOP/edit':>10s} "
          f"{'TFLOP/s':>8s} {'% peak':>6s} {'ratio':>7s}  scores vs batch 1")
    failed = []
    scale = max(1e-12, float(np.abs(scores[ref_name]).max()))
    for name in configs:
        med = statistics.median(times[name])
        rel = float(np.abs(scores[name] - scores[ref_name]).max()) / scale
        ok = rel <= tol
        failed += [] if ok else [name]
        per, achieved, share = describe_rate(flops[name], len(samples) / med, peak)
        print(f"{name:34s} {len(samples) / med:9.2f} {med:9.3f} {per:>10s} {achieved:>8s} "
              f"{share:>6s} {ref_s / med:6.2f}x  "
              f"relative diff {rel:.1e} {'ok' if ok else f'MISMATCH (> {tol:g})'}")
    print(peak_note(peak))
    if failed:
        print(f"scores differ where they should agree: {', '.join(failed)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
