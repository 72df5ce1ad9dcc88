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
released loop (each answer generated on its own right after seeding, the reference; what
the scorer does) and one batched ``generate`` over all prompts and passes (faster, but a
pass then depends on its batch: not reproducible from its seed). Printed: edits/s,
generated tokens/s (the backend's count of generated token ids, end token included) and the ratio to the reference. The run fails
(exit 1) when the released loop does not give the same answers twice (checked on the first
two prompts, up to 32 tokens).
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
from vlm_throughput import ARCHS, arch_config, build_arch_model, synchronize  # noqa: E402

from ieqa import EditSample  # noqa: E402
from ieqa.backends import TransformersVLM  # noqa: E402
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
        name = f"{args.arch} architecture, RANDOM weights"
    else:
        from transformers import AutoModelForImageTextToText

        model = AutoModelForImageTextToText.from_pretrained(tiny, dtype=getattr(torch, dtype))
        model.to(args.device)
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
        configs = {"released loop, one answer at a time (reference)": True,
                   f"one batched generate ({n_answers} sequences)": False}
        times: dict[str, list[float]] = {c: [] for c in configs}
        tokens: dict[str, int] = {}
        short = {**sampling, "max_new_tokens": min(8, args.max_new_tokens)}
        for one_at_a_time in configs.values():  # an untimed, short warm-up of each
            vlm.generate(queries[:2], seed_per_sample=one_at_a_time, **short)
        for _ in range(args.repeats):
            for name, one_at_a_time in configs.items():
                synchronize(args.device)
                t0 = time.perf_counter()
                out = vlm.generate(queries, seed_per_sample=one_at_a_time, **sampling)
                synchronize(args.device)
                times[name].append(time.perf_counter() - t0)
                tokens[name] = sum(g.raw["usage"]["completion_tokens"] for gens in out
                                   for g in gens)
        # a pass is reproducible from its seed: the released loop twice on the first prompts
        check = {**sampling, "max_new_tokens": min(32, args.max_new_tokens)}
        answers = [[g.text for gens in vlm.generate(queries[:2], seed_per_sample=True, **check)
                    for g in gens] for _ in range(2)]
    ref = next(iter(configs))
    ref_s = statistics.median(times[ref])
    print(f"\n{'configuration':52s} {'edits/s':>9s} {'tokens/s':>9s} {'median s':>9s} {'ratio':>7s}")
    for name in configs:
        med = statistics.median(times[name])
        print(f"{name:52s} {args.edits / med:9.3f} {tokens[name] / med:9.1f} {med:9.2f} "
              f"{ref_s / med:6.2f}x")
    same = all(a == answers[0] for a in answers[1:])
    print(f"released loop reproducible from its seeds: {'ok' if same else 'MISMATCH'} "
          f"({len(answers)} runs compared)")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
