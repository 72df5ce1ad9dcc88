"""GRPO (ReasonEdit stage 2) learns on CPU: reward curve and head SRCC, with and without
the auxiliary Huber loss.

A tiny random Qwen2-VL is first trained with the ``reasonedit-sft`` dual objective
(critique text + 3-score head) on ShapesEdit's artifacts world (scaled down by
:func:`ieqa.train.tiny.tiny_recipe`), then a ``grpo`` stage runs TRL's GRPOTrainer on the
critique with the programmatic ShapesEdit judge (:mod:`ieqa.train.judge`) as the reward.
The same run is repeated with ``aux_huber_weight: 0`` (the ablation).

    HF_HUB_OFFLINE=1 PYTHONPATH=src python benchmarks/grpo_learns.py --grpo-steps 300

Prints the mean reward per tenth of the GRPO steps, the first-20% vs last-20% means, and
the head's held-out SRCC (visual quality) after SFT and after GRPO in both runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from ieqa.testing import build_tiny_vlm
from ieqa.train import train
from ieqa.train.recipe import Recipe, apply_overrides, load_recipe
from ieqa.train.tiny import tiny_recipe

DIMS = ["visual_quality", "instruction_alignment", "content_preservation"]


def grpo_recipe(model: str, *, sft_steps: int, grpo_steps: int, aux: float,
                generations: int = 4, prompts: int = 2, completion: int = 64,
                beta: float = 0.04, lr: float = 1e-3, n: int = 400,
                max_eval: int = 80, text_weight: float = 1.0, temperature: float = 1.0,
                trl_args: dict[str, Any] | None = None) -> Recipe:
    """The tiny ``reasonedit-sft`` warm-up stage followed by a ``grpo`` stage."""
    sft = tiny_recipe("reasonedit-sft", model, steps=[sft_steps, 1, 1], n=n,
                      max_eval_samples=max_eval,
                      overrides={f"stages.{i}.text_weight": text_weight for i in range(3)})
    data = sft.model_dump(mode="json")
    data["stages"] = [data["stages"][0], {
        "name": "grpo", "objective": "grpo", "loss": "grpo", "dimensions": DIMS,
        "template": data["stages"][0]["template"], "max_steps": grpo_steps,
        "grpo": {"reward": {"scorer": "shapesedit-judge"}, "num_generations": generations,
                 "prompts_per_step": prompts, "beta": beta, "learning_rate": lr,
                 "max_completion_length": completion, "aux_huber_weight": aux,
                 "temperature": temperature,
                 "lora_r": 16, "lora_alpha": 32, "trl_args": trl_args or {}}}]
    return load_recipe(apply_overrides(data, {}))


def reward_curve(out: Path) -> list[float]:
    """The mean reward logged at each GRPO step of a run folder."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["reward"] for r in rows if r.get("stage") == "grpo" and r.get("event") == "step"
            and "reward" in r]


def run(model: str, out: Path, **kwargs: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = train(grpo_recipe(model, **kwargs), output_dir=out, progress=False)
    curve = reward_curve(out)
    k = max(1, len(curve) // 5)
    return {"seconds": round(time.perf_counter() - t0, 1), "curve": curve,
            "first20": sum(curve[:k]) / k, "last20": sum(curve[-k:]) / k,
            "srcc_sft": result.metrics["warmup"]["after"]["srcc/visual_quality"],
            "srcc_grpo_before": result.metrics["grpo"]["before"]["srcc/visual_quality"],
            "srcc_grpo_after": result.metrics["grpo"]["after"]["srcc/visual_quality"],
            "evaluator": str(result.evaluator_dir)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument("--grpo-steps", type=int, default=300)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--completion", type=int, default=64)
    parser.add_argument("--beta", type=float, default=0.04)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--aux", type=float, default=1.0, help="aux Huber weight of the main run")
    parser.add_argument("--no-ablation", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grpo-learns-"))
    model = str(build_tiny_vlm(tmp / "qwen2-vl", "qwen2-vl"))
    common = {"sft_steps": args.sft_steps, "grpo_steps": args.grpo_steps,
              "generations": args.generations, "prompts": args.prompts,
              "completion": args.completion, "beta": args.beta, "lr": args.lr,
              "temperature": args.temperature}
    runs = {f"aux={args.aux:g}": run(model, tmp / "aux", aux=args.aux, **common)}
    if not args.no_ablation:
        runs["aux=0 (ablation)"] = run(model, tmp / "noaux", aux=0.0, **common)
    for name, r in runs.items():
        curve = r["curve"]
        tenth = max(1, len(curve) // 10)
        means = [sum(curve[i:i + tenth]) / len(curve[i:i + tenth])
                 for i in range(0, len(curve), tenth)]
        print(f"{name}: {r['seconds']} s")
        print("  reward mean per tenth of the steps:", " ".join(f"{m:.3f}" for m in means))
        print(f"  reward first 20%: {r['first20']:.3f}  last 20%: {r['last20']:.3f}")
        print(f"  head SRCC (visual quality) after SFT: {r['srcc_sft']:.3f}  "
              f"before GRPO: {r['srcc_grpo_before']:.3f}  after GRPO: {r['srcc_grpo_after']:.3f}"
              f"  (drop {r['srcc_grpo_before'] - r['srcc_grpo_after']:+.3f})")


if __name__ == "__main__":
    main()
