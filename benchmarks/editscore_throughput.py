"""EditScore generation speed: the ``editscore`` scorer (an SC and a PQ prompt per edit,
``--passes`` sampled passes of up to ``--max-new-tokens`` tokens) through transformers on a
published architecture with RANDOM weights.

    python benchmarks/editscore_throughput.py --arch qwen2.5-vl-7b --device cuda   # GPU check
    python benchmarks/editscore_throughput.py                                      # tiny, CPU

Nothing is downloaded: the architecture is built in memory (``vlm_throughput.py``'s
``--arch``; a merged LoRA adapter has the base model's shapes, so its speed is the base
model's) and the prompts are ieqa's stand-ins (``write_prompt_standins``). Random weights
rarely emit the end token, so each answer runs to ``--max-new-tokens``: an upper bound of
a real answer's length (EditScore's answers are a short JSON object).

Compared in the same run (the median of ``--repeats``, after a short untimed warm-up): the
released loop (each answer generated on its own right after seeding, the reference;
``seeded_batching=False``) and ieqa's seeded batch (what the scorer does by default: one
``generate`` over all prompts and passes, each pass sampling from its own generator seeded
``seed + pass``). Printed: edits/s, generated tokens/s (the backend's count of generated
token ids, end token included), TFLOP per edit, TFLOP/s and % of peak, the ratio to the
reference, and how many of the answers the two give are identical. The run fails (exit 1)
when the released loop does not give the same answers twice (checked on the first two
prompts, up to 32 tokens), or, in float32, when the seeded batch's answers differ from the
loop's (in 16-bit the batch's shapes change the logits' rounding, which can move a
sampled token: counted, not failed).
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
from ieqa.scorers.published.editscore import PROMPT_SOURCES, EditScoreScorer  # noqa: E402
from ieqa.scorers.vlm.base import LoadedSample  # noqa: E402
from ieqa.testing import build_tiny_vlm  # noqa: E402
from ieqa.testing.releases import write_prompt_standins  # noqa: E402


def build_backend(args: argparse.Namespace, workdir: Path) -> tuple[TransformersVLM, str]:
    import torch

    family = ARCHS[args.arch]["family"] if args.arch else "qwen2.5-vl"
    tiny = build_tiny_vlm(workdir / "tiny", family, max_pixels=16384 * 28 * 28)
    processor = load_processor(tiny)
    dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
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
    params = sum(p.numel() for p in model.parameters())
    vlm = TransformersVLM.from_model(model.eval(), processor, name=name)
    return vlm, f"{name}: {params:,} parameters, {dtype}, {args.device}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", choices=sorted(ARCHS), help="published architecture (random "
                    "weights); default: a tiny Qwen2.5-VL")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="default bfloat16 on cuda, float32 on cpu")
    ap.add_argument("--layers", type=int, default=None, help="text layers (--arch; default all)")
    ap.add_argument("--edits", type=int, default=1)
    ap.add_argument("--passes", type=int, default=4, help="passes per edit (RL reward: 4)")
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--image-size", type=int, default=448, help="square side, pixels")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--static-cache", action="store_true",
                    help="also time the seeded batch with a static KV cache (on CUDA "
                         "transformers compiles the decoding step: the first call compiles)")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="the device's dense peak (default: by GPU name; none on a CPU)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)

    def image() -> Image.Image:
        side = args.image_size
        return Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8), "RGB")

    samples = [EditSample(id=f"e{i}", source=image(), edited=image(),
                          instruction="replace the sky with a sunset") for i in range(args.edits)]
    with tempfile.TemporaryDirectory(prefix="ieqa-editscore-bench-") as tmp:
        vlm, desc = build_backend(args, Path(tmp))
        prompts = write_prompt_standins(Path(tmp) / "prompts", PROMPT_SOURCES)
        scorer = EditScoreScorer(backend=vlm, prompts=prompts, num_pass=args.passes,
                                 max_new_tokens=args.max_new_tokens)
        items = [LoadedSample(s, s.source, s.edited) for s in samples]  # type: ignore[arg-type]
        queries = [p for item in items for p in scorer.prompts(item)]
        sampling = dict(max_new_tokens=args.max_new_tokens, temperature=scorer.temperature,
                        top_p=scorer.top_p, top_k=scorer.top_k, num_samples=args.passes,
                        seed=scorer.seed)
        n_answers = len(queries) * args.passes
        print(f"model: {desc}\nedits: {args.edits} ({args.image_size}x{args.image_size}), "
              f"{args.passes} passes x 2 prompts, up to {args.max_new_tokens} new tokens each")
        configs = {"released loop, one answer at a time (reference)": (False, "dynamic"),
                   f"seeded batch, one generate ({n_answers} sequences)": (True, "dynamic")}
        if args.static_cache:
            configs[f"seeded batch, static cache{' (compiled)' if args.device.startswith('cuda') else ''}"] = (True, "static")
        times: dict[str, list[float]] = {c: [] for c in configs}
        tokens: dict[str, int] = {}
        flops: dict[str, float | None] = {}
        texts: dict[str, list[str]] = {}
        short = {**sampling, "max_new_tokens": min(8, args.max_new_tokens)}
        for batched, cache in configs.values():  # an untimed warm-up of each (a static
            vlm.seeded_batching, vlm.generation_cache = batched, cache  # cache compiles here)
            vlm.generate(queries[:2] if cache == "dynamic" else queries, seed_per_sample=True,
                         **(short if cache == "dynamic" else sampling))
        for _ in range(args.repeats):
            for name, (batched, cache) in configs.items():
                vlm.seeded_batching, vlm.generation_cache = batched, cache
                synchronize(args.device)
                before = vlm.flops_done
                t0 = time.perf_counter()
                out = vlm.generate(queries, seed_per_sample=True, **sampling)
                synchronize(args.device)
                times[name].append(time.perf_counter() - t0)
                tokens[name] = sum(g.raw["usage"]["completion_tokens"] for gens in out
                                   for g in gens)
                texts[name] = [g.text for gens in out for g in gens]
                flops[name] = (None if before is None
                               else (vlm.flops_done.total - before.total) / args.edits)
        # a pass is reproducible from its seed: the released loop twice on the first prompts
        vlm.seeded_batching, vlm.generation_cache = False, "dynamic"
        check = {**sampling, "max_new_tokens": min(32, args.max_new_tokens)}
        answers = [[g.text for gens in vlm.generate(queries[:2], seed_per_sample=True, **check)
                    for g in gens] for _ in range(2)]
    ref = next(iter(configs))
    ref_s = statistics.median(times[ref])
    peak = device_peak(args.device, args.peak_tflops)
    print(f"\n{'configuration':52s} {'edits/s':>9s} {'tokens/s':>9s} {'median s':>9s} "
          f"{'TFLOP/edit':>10s} {'TFLOP/s':>8s} {'% peak':>6s} {'ratio':>7s}")
    for name in configs:
        med = statistics.median(times[name])
        per, achieved, share = describe_rate(flops[name], args.edits / med, peak)
        print(f"{name:52s} {args.edits / med:9.3f} {tokens[name] / med:9.1f} {med:9.2f} "
              f"{per:>10s} {achieved:>8s} {share:>6s} {ref_s / med:6.2f}x")
    print(peak_note(peak))
    same = all(a == answers[0] for a in answers[1:])
    print(f"released loop reproducible from its seeds: {'ok' if same else 'MISMATCH'} "
          f"({len(answers)} runs compared)")
    strict = (args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")) \
        == "float32"
    mismatch = False
    for name in list(configs)[1:]:
        equal = sum(a == b for a, b in zip(texts[ref], texts[name], strict=True))
        label = "seeded batch" if configs[name][1] == "dynamic" else "static cache"
        print(f"{label} vs released loop: {equal} of {len(texts[ref])} answers identical"
              + ("" if equal == len(texts[ref]) else
                 " (MISMATCH)" if strict else " (16-bit: the batch's rounding moved some draws)"))
        mismatch |= strict and equal != len(texts[ref])
    if not same or mismatch:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
