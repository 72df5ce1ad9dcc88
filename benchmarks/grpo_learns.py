"""GRPO (ReasonEdit stage 2) learns on CPU: reward curve, claim accuracy and head SRCC,
with and without the auxiliary Huber loss.

A tiny random Qwen2-VL (optionally after learning to see first,
:func:`ieqa.train.tiny.perception_backbone`, ``--perception-steps``) is trained with the
``reasonedit-sft`` dual objective (critique text + 3-score head) on ShapesEdit's artifacts
world with the brief critique style (``"Strong noise. Done
completely."``; scaled down by :func:`ieqa.train.tiny.tiny_recipe`), then a ``grpo``
stage runs TRL's GRPOTrainer on the critique with the programmatic ShapesEdit judge
(:mod:`ieqa.scorers.shapesedit_judge`) as the reward. The same run is repeated with
``aux_huber_weight: 0`` (the ablation), from the same SFT starting point.

    HF_HUB_OFFLINE=1 PYTHONPATH=src python benchmarks/grpo_learns.py

Prints, per run: the mean reward per tenth of the GRPO steps and over the first and last
20% of the steps; the judge's three dimensions and the share of critiques whose severity
claim is right (the one claim that depends on the image in this world; chance 1/3) over
the first and last 20%; and the head's held-out SRCC (visual quality) before and after
GRPO.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from ieqa.scorers.shapesedit_judge import SEVERITY_WORDS, ShapesEditCritiqueJudge, severity_word
from ieqa.testing import build_tiny_vlm
from ieqa.train import train
from ieqa.train.recipe import Recipe, apply_overrides, load_recipe
from ieqa.train.tiny import perception_backbone, tiny_recipe

DIMS = ["visual_quality", "instruction_alignment", "content_preservation"]


class RecordingJudge(ShapesEditCritiqueJudge):
    """The ShapesEdit judge, appending each judged critique (text, truth, scores) as a JSON
    line to ``log``."""

    def __init__(self, log: str, completion_key: str = "completion") -> None:
        super().__init__(completion_key)
        self.log = log

    def score_sample(self, sample: Any) -> Any:
        result = super().score_sample(sample)
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"text": sample.meta.get(self.completion_key),
                                "severity": sample.meta.get("artifact_severity"),
                                "scores": result.scores}) + "\n")
        return result


def _sft(model: str, sft_steps: int, n: int, max_eval: int, critique: str,
         lr: float = 3e-4) -> Recipe:
    """The tiny ``reasonedit-sft`` recipe's warm-up stage alone, on ``critique``-style
    critiques."""
    recipe = tiny_recipe("reasonedit-sft", model, steps=[sft_steps, 1, 1], n=n,
                         max_eval_samples=max_eval, lr=lr)
    data = recipe.model_dump(mode="json")
    data["data"]["train"]["shapesedit"]["critique"] = critique
    data["stages"] = data["stages"][:1]
    return load_recipe(apply_overrides(data, {}))


def grpo_recipe(model: str, *, sft_steps: int, grpo_steps: int, aux: float,
                generations: int = 4, prompts: int = 2, completion: int = 40,
                beta: float = 0.04, lr: float = 1e-3, n: int = 400, max_eval: int = 80,
                temperature: float = 0.7, critique: str = "brief", sft_lr: float = 3e-4,
                reward: dict[str, Any] | None = None, seed: int = 0,
                trl_args: dict[str, Any] | None = None) -> Recipe:
    """The tiny ``reasonedit-sft`` warm-up stage on ``critique``-style ShapesEdit critiques
    (:func:`_sft`) followed by a ``grpo`` stage."""
    data = _sft(model, sft_steps, n, max_eval, critique, sft_lr).model_dump(mode="json")
    grpo = {"name": "grpo", "objective": "grpo", "loss": "grpo", "dimensions": DIMS,
            "template": data["stages"][0]["template"], "max_steps": grpo_steps,
            "grpo": {"reward": reward or {"scorer": "shapesedit-judge"},
                     "num_generations": generations, "prompts_per_step": prompts,
                     "beta": beta, "learning_rate": lr, "max_completion_length": completion,
                     "aux_huber_weight": aux, "temperature": temperature,
                     "lora_r": 16, "lora_alpha": 32, "trl_args": trl_args or {}}}
    data["stages"] = [data["stages"][0], grpo]
    data["optim"]["seed"] = seed
    return load_recipe(apply_overrides(data, {}))


def rise(curve: list[float]) -> tuple[float, float, float]:
    """Mean step reward over the first and the last 20% of ``curve``, and the one-sided
    Mann-Whitney p-value that the last 20% of step rewards are larger."""
    from scipy.stats import mannwhitneyu

    k = max(1, len(curve) // 5)
    first, last = curve[:k], curve[-k:]
    p = float(mannwhitneyu(last, first, alternative="greater").pvalue) if k > 1 else 1.0
    return sum(first) / k, sum(last) / k, p


def reward_curve(out: Path) -> list[float]:
    """The mean reward logged at each GRPO step of a run folder."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["reward"] for r in rows if r.get("stage") == "grpo" and r.get("event") == "step"
            and "reward" in r]


def claim_summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Means of the judge's dimensions and the share of critiques with exactly one severity
    word that is right, over recorded critiques."""
    n = max(1, len(rows))
    out = {d: sum(r["scores"][d] for r in rows) / n
           for d in ("logicality", "accuracy", "usefulness")}
    right = 0
    for r in rows:
        said = [w for w in SEVERITY_WORDS if re.search(rf"\b{w}", str(r["text"]).lower())]
        right += said == [severity_word(float(r["severity"] or 0))]
    out["severity_right"] = right / n
    return out


def run(model: str, out: Path, **kwargs: Any) -> dict[str, Any]:
    """One GRPO run from ``model``; its reward curve, claim summaries and head SRCC."""
    log = out.with_suffix(".critiques.jsonl")
    log.unlink(missing_ok=True)
    reward = {"scorer": "grpo_learns:RecordingJudge", "options": {"log": str(log)}}
    t0 = time.perf_counter()
    result = train(grpo_recipe(model, reward=reward, **kwargs), output_dir=out, progress=False)
    curve = reward_curve(out)
    k = max(1, len(curve) // 5)
    first20, last20, p = rise(curve)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    per_step = max(1, len(rows) // max(1, len(curve)))
    first, last = rows[:k * per_step], rows[-k * per_step:]
    return {"seconds": round(time.perf_counter() - t0, 1), "curve": curve,
            "first20": first20, "last20": last20, "p": p,
            "claims_first20": claim_summary(first), "claims_last20": claim_summary(last),
            "srcc_sft": result.metrics["warmup"]["after"]["srcc/visual_quality"],
            "srcc_before": result.metrics["grpo"]["before"]["srcc/visual_quality"],
            "srcc_after": result.metrics["grpo"]["after"]["srcc/visual_quality"],
            "evaluator": str(result.evaluator_dir)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--perception-steps", type=int, default=0,
                        help="perception pre-training steps first (default 0: the random "
                             "backbone; 600 gives a head SRCC of ~0.8, but then SFT leaves "
                             "GRPO little to gain)")
    parser.add_argument("--backbone", help="start from this backbone folder (e.g. a previous "
                        "run's perception/evaluator/model) instead of building one")
    parser.add_argument("--sft-steps", type=int, default=300)
    parser.add_argument("--sft-lr", type=float, default=3e-4)
    parser.add_argument("--grpo-steps", type=int, default=200)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--completion", type=int, default=40)
    parser.add_argument("--beta", type=float, default=0.04)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--critique", choices=("brief", "full"), default="brief")
    parser.add_argument("--aux", type=float, default=1.0, help="aux Huber weight of the main run")
    parser.add_argument("--seed", type=int, default=0, help="training seed of both stages")
    parser.add_argument("--no-ablation", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grpo-learns-"))
    t0 = time.perf_counter()
    model = args.backbone or str(build_tiny_vlm(tmp / "qwen2-vl", "qwen2-vl"))
    if args.perception_steps and not args.backbone:
        model, srcc = perception_backbone(model, tmp / "perception", steps=args.perception_steps)
        print(f"perception: {args.perception_steps} steps, held-out SRCC {srcc:.3f} "
              f"({time.perf_counter() - t0:.0f} s)")
    common = {"sft_steps": args.sft_steps, "sft_lr": args.sft_lr, "grpo_steps": args.grpo_steps, "generations": args.generations,
              "prompts": args.prompts, "completion": args.completion, "beta": args.beta,
              "lr": args.lr, "temperature": args.temperature, "critique": args.critique,
              "seed": args.seed}
    runs = {f"aux={args.aux:g}": run(model, tmp / "aux", aux=args.aux, **common)}
    if not args.no_ablation:  # the same SFT (same seed) again, then GRPO without the Huber term
        runs["aux=0 (ablation)"] = run(model, tmp / "noaux", aux=0.0, **common)
    for name, r in runs.items():
        curve = r["curve"]
        tenth = max(1, len(curve) // 10)
        means = [sum(curve[i:i + tenth]) / len(curve[i:i + tenth])
                 for i in range(0, len(curve), tenth)]
        print(f"{name}: {r['seconds']} s")
        print("  reward mean per tenth of the steps:", " ".join(f"{m:.3f}" for m in means))
        print(f"  reward first 20%: {r['first20']:.3f}  last 20%: {r['last20']:.3f}  (one-sided "
              f"Mann-Whitney p = {r['p']:.2g})")
        for when in ("first20", "last20"):
            c = r[f"claims_{when}"]
            print(f"  {when}: " + "  ".join(f"{k} {v:.3f}" for k, v in c.items()))
        print(f"  head SRCC (visual quality) before GRPO: {r['srcc_before']:.3f}  after: "
              f"{r['srcc_after']:.3f}  (change {r['srcc_after'] - r['srcc_before']:+.3f})")


if __name__ == "__main__":
    main()
