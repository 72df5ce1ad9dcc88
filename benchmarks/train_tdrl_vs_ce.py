"""DS-IEQA ablation at equal budget: TDRL loss vs plain cross-entropy ("w/o TDRL").

Trains a tiny VLM (``ieqa.testing.build_tiny_vlm``, random weights, CPU) with the
trainer behind every recipe (``ieqa.train.train``) on a generated ShapesEdit set, once
with DS-IEQA's token-level distance regression loss (``loss: tdrl``: CE on the non-digit
answer tokens + the distance-aware loss on the three digits of ``X.XX``) and once with
plain token cross-entropy on the whole answer (``loss: ce``, the paper's "w/o TDRL"
ablation). Everything else is equal: the same tiny model, data, held-out split, optimiser
(AdamW, constant lr, batch 16, full fine-tuning), steps and seed. Per seed both losses see
exactly the same batches.

Per run it reports, on the held-out samples (``load_training_data(recipe.data, seed).eval``,
capped by ``data.max_eval_samples``):

* SRCC before / after training (the trainer's own evaluation, ``result.metrics``);
* PLCC and MAE after training, from the *exported* evaluator
  (``ieqa.load_evaluator(result.evaluator_dir).score(held_out)``; its SRCC is printed
  too, it must equal the trainer's), and before training from the untouched tiny model
  through the same ``vlm-digits`` readout. MAE is the mean |expected score - truth| on
  the template's 1-5 scale (the readout's expected value E_0 + E_1/10 + E_2/100);
* wall time of the training run (before/after evaluation and export included).

and at the end mean +- std over seeds per loss and the ratios TDRL / CE of the mean
SRCC and of the mean MAE (SRCC: higher is better, MAE: lower is better).

Prompt: a SHORT DS-IEQA-style digits template (``"<Dimension> score: "`` answer prefix,
one dimension, 1-5 scale) instead of the built-in ``ds-ieqa-digits``: the tiny model's
tokenizer is byte-level, so the real template's long system prompt and definition cost
several hundred text tokens per prompt, which is too slow for a CPU benchmark. The
prompt lengths of both are printed. Tiny random models on synthetic data say nothing
about 8B-scale accuracy; this measures whether the loss helps at all at equal budget on
a learnable toy task, and how fast the trainer runs on CPU.

Run::

    .venv/bin/python benchmarks/train_tdrl_vs_ce.py --quick          # smoke: 60 steps, seed 0
    .venv/bin/python benchmarks/train_tdrl_vs_ce.py                  # 300 steps, seeds 0 1 2
    .venv/bin/python benchmarks/train_tdrl_vs_ce.py --steps 200 --seeds 0 1 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import ieqa
from ieqa.metrics.correlation import plcc, srcc
from ieqa.testing import TINY_FAMILIES, build_tiny_vlm
from ieqa.train import load_recipe, train
from ieqa.train.data import load_training_data

DIMENSION = "visual_quality"
LOSSES = ("tdrl", "ce")

#: a short DS-IEQA-style digit prompt (the built-in ds-ieqa-digits is long in byte tokens)
SHORT_TEMPLATE: dict[str, Any] = {
    "name": "short-digits",
    "description": "short DS-IEQA-style prompt for tiny models",
    "reference": "ieqa benchmark",
    "system": None,
    "user": "<image:source><image:edited>{instruction} Rate the {dimension} from {low} to {high}.",
    "answer_prefix": "{Dimension} score: ",
    "output": "digits",
    "scale": [1, 5],
    "images": ["source", "edited"],
    "dimensions": [DIMENSION],
}


def make_recipe(model: str, loss: str, seed: int, steps: int, n: int, args: argparse.Namespace
                ) -> Any:
    return load_recipe({
        "name": f"bench-{loss}-s{seed}",
        "description": "TDRL vs CE benchmark (benchmarks/train_tdrl_vs_ce.py)",
        "model": {"name": model, "device": args.device},
        "adapter": {"kind": "full"},
        "data": {"train": {"shapesedit": {"n": n, "k": 4, "seed": seed, "size": 112,
                                          "preset": "artifacts", "photo_fraction": 0.0}},
                 "max_eval_samples": args.max_eval},
        "optim": {"lr": args.lr, "batch_size": args.batch_size, "warmup_ratio": 0.0,
                  "scheduler": "constant", "seed": seed},
        "stages": [{"name": "digits", "objective": "text", "target": "digits", "loss": loss,
                    "dimensions": [DIMENSION], "max_steps": steps,
                    "template": SHORT_TEMPLATE}],
    })


def held_out_truth(recipe: Any) -> tuple[list[Any], list[float]]:
    """The trainer's held-out samples and their truth on the template's scale."""
    data = load_training_data(recipe.data, recipe.optim.seed)
    (lo, hi), (tlo, thi) = data.scale, SHORT_TEMPLATE["scale"]
    truth = [tlo + (s.scores[DIMENSION] - lo) * (thi - tlo) / (hi - lo) for s in data.eval]
    return data.eval, truth


def score_metrics(scorer: Any, samples: list[Any], truth: list[float]) -> dict[str, float]:
    """SRCC, PLCC and MAE of ``scorer`` (a vlm-digits readout) on ``samples``."""
    results = scorer.score(samples)
    pairs = [(r.scores[DIMENSION], t) for r, t in zip(results, truth, strict=True) if r.ok]
    pred = np.array([p for p, _ in pairs])
    true = np.array([t for _, t in pairs])

    def safe(fn: Any) -> float:
        try:
            return float(fn(pred, true))
        except ValueError:  # constant predictions: correlation undefined
            return float("nan")

    return {"srcc": safe(srcc), "plcc": safe(plcc),
            "mae": float(np.mean(np.abs(pred - true))) if len(pred) else float("nan"),
            "pred_std": float(pred.std()) if len(pred) else float("nan"),
            "failed": float(len(samples) - len(pairs)), "n": float(len(samples))}


def load_exported(folder: Path, base_model: str, device: str) -> tuple[Any, str]:
    """The exported evaluator, through ``ieqa.load_evaluator`` when that works.

    Fallback (and the note says so): a full fine-tuning export whose ``model/`` folder
    transformers cannot rebuild a processor from. The trainer of commit f83d9b1 saved
    ieqa's image-only processor there, whose ``processor_config.json`` names a class
    transformers does not know, so ``AutoProcessor`` returned a bare tokenizer and
    ``load_evaluator`` raised "the processor has no image processor" (3f46170 saves the
    tokenizer and image processor instead). Then the exported weights
    (``evaluator/model``) are wrapped with the base model's processor, which training
    does not change, and ``load_evaluator`` rebuilds the scorer's template and readout
    from the checkpoint around that backend."""
    from ieqa.backends.processor import BackendError, load_processor

    try:
        return ieqa.load_evaluator(folder, device=device), "ieqa.load_evaluator(evaluator_dir)"
    except BackendError as exc:
        import torch
        from transformers import AutoModelForImageTextToText

        from ieqa.backends.transformers_vlm import TransformersVLM

        weights = AutoModelForImageTextToText.from_pretrained(folder / "model",
                                                              dtype=torch.float32).to(device)
        backend = TransformersVLM.from_model(weights, load_processor(base_model),
                                             name=str(folder / "model"))
        return (ieqa.load_evaluator(folder, model=None, backend=backend),
                f"ieqa.load_evaluator(evaluator_dir) FAILED ({type(exc).__name__}: {exc}); "
                "scored the exported weights evaluator/model with the base model's processor "
                "(load_evaluator(dir, model=None, backend=TransformersVLM.from_model(...)))")


def mean_std(values: list[float]) -> tuple[float, float]:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return float("nan"), float("nan")
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)


def fmt(values: list[float], digits: int = 3) -> str:
    m, s = mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def prompt_lengths(backend: Any, sample: Any) -> dict[str, int]:
    """Tokens per prompt (text + image) with the short and the built-in template."""
    from ieqa.prompts import get_template
    from ieqa.scorers.vlm.base import render_sample, resolve_template

    out = {}
    for name, tpl in (("short-digits", resolve_template(SHORT_TEMPLATE)),
                      ("ds-ieqa-digits", get_template("ds-ieqa-digits"))):
        enc = backend.encode_one(render_sample(tpl, sample, DIMENSION))
        out[name] = int(enc["input_ids"].shape[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="VLM folder or hub id to fine-tune (default: a tiny random "
                    "model built in a temporary folder)")
    ap.add_argument("--tiny", choices=TINY_FAMILIES, default="qwen2-vl",
                    help="tiny model family when --model is not given (default qwen2-vl)")
    ap.add_argument("--steps", type=int, default=None, help="optimiser steps per run "
                    "(default 300; 60 with --quick)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="seeds (data, split, init order); default 0 1 2, 0 with --quick")
    ap.add_argument("--n", type=int, default=400,
                    help="ShapesEdit edits in total (groups of 4; 20%% of groups held out)")
    ap.add_argument("--max-eval", type=int, default=80, help="held-out samples scored")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--device", default="cpu", help="training device (default cpu)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads (default 1 on cpu: the tiny model gains nothing "
                         "from more, and with another process on the cores 2 threads ran "
                         "~10x slower here; torch's own otherwise)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 60 steps, one seed")
    ap.add_argument("--json", type=Path, default=None, help="write all results here")
    args = ap.parse_args()
    steps = args.steps or (60 if args.quick else 300)
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])

    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    if args.threads is None and args.device == "cpu":
        args.threads = 1
    if args.threads:
        torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    load_notes: list[str] = []
    before: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ieqa-tdrl-bench-") as tmp:
        tmpdir = Path(tmp)
        if args.model:
            model, model_desc = args.model, args.model
        else:
            t0 = time.perf_counter()
            model = str(build_tiny_vlm(tmpdir / "tiny", args.tiny))
            n_par = sum(p.numel() for p in
                        transformers.AutoModelForImageTextToText.from_pretrained(model).parameters())
            model_desc = (f"tiny {args.tiny} (ieqa.testing.build_tiny_vlm, random weights, "
                          f"{n_par:,} parameters, built in {time.perf_counter() - t0:.1f} s)")
        hw = (f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch "
              f"threads" if args.device == "cpu" else args.device)
        print(f"model: {model_desc}")
        print(f"device: {args.device} ({hw}); torch {torch.__version__}, transformers "
              f"{transformers.__version__}, ieqa {ieqa.__version__}")
        print(f"data: ShapesEdit n={args.n}, k=4, 112 px, preset artifacts, no photos, "
              f"seed = run seed; held-out: 20% of groups, first {args.max_eval} samples")
        print(f"training: full fine-tuning, AdamW lr {args.lr:g} constant, no warmup, batch "
              f"{args.batch_size}, {steps} steps per run; losses {' vs '.join(LOSSES)}; "
              f"seeds {seeds}")

        for seed in seeds:
            probe = make_recipe(model, "tdrl", seed, steps, args.n, args)
            held, truth = held_out_truth(probe)
            # before training: the untouched model through the same readout and prompt
            base = ieqa.create_scorer("vlm-digits", model=model, template=SHORT_TEMPLATE,
                                      dimensions=[DIMENSION], device=args.device,
                                      batch_size=probe.eval.batch_size)
            if seed == seeds[0]:
                lengths = prompt_lengths(base.backend, held[0])
                print(f"prompt: SHORT DS-IEQA-style template {lengths['short-digits']} tokens "
                      f"vs built-in ds-ieqa-digits {lengths['ds-ieqa-digits']} tokens (byte-level "
                      "tiny tokenizer; the built-in one is too slow for a CPU benchmark)")
                print(f"  user: {SHORT_TEMPLATE['user']!r}; answer prefix "
                      f"{SHORT_TEMPLATE['answer_prefix']!r}, target 'X.XX' on 1-5\n")
            before[seed] = score_metrics(base, held, truth)
            # yardstick: MAE of the best constant guess (the held-out median) on this seed
            before[seed]["mae_constant"] = float(np.mean(np.abs(np.array(truth)
                                                                - np.median(truth))))
            del base
            for loss in LOSSES:
                recipe = make_recipe(model, loss, seed, steps, args.n, args)
                out = tmpdir / f"run-{loss}-s{seed}"
                t0 = time.perf_counter()
                result = train(recipe, output_dir=out, progress=False)
                wall = time.perf_counter() - t0
                m = result.metrics["digits"]
                t1 = time.perf_counter()
                evaluator, how = load_exported(result.evaluator_dir, model, args.device)
                if how not in load_notes:
                    load_notes.append(how)
                    print(f"  note: {how}", flush=True)
                after = score_metrics(evaluator, held, truth)
                score_s = time.perf_counter() - t1
                del evaluator
                last = [v for _, v in result.losses[-10:]]
                run = {"loss": loss, "seed": seed, "steps": steps,
                       "srcc_before": m["before"]["srcc"], "srcc_after": m["after"]["srcc"],
                       "before": before[seed], "after": after,
                       "final_train_loss": statistics.fmean(last) if last else float("nan"),
                       "first_train_loss": result.losses[0][1] if result.losses else float("nan"),
                       "wall_s": wall, "eval_score_s": score_s,
                       "s_per_step": wall / steps, "n_train_eval": len(held)}
                runs.append(run)
                agree = abs(after["srcc"] - m["after"]["srcc"])
                print(f"seed {seed} {loss:4s}: SRCC {m['before']['srcc']:+.3f} -> "
                      f"{m['after']['srcc']:+.3f} (exported evaluator {after['srcc']:+.3f}"
                      f"{'' if agree < 1e-6 or math.isnan(agree) else ' MISMATCH'}), "
                      f"PLCC {before[seed]['plcc']:+.3f} -> {after['plcc']:+.3f}, "
                      f"MAE {before[seed]['mae']:.3f} -> {after['mae']:.3f} "
                      f"(pred std {after['pred_std']:.3f}), train loss "
                      f"{run['first_train_loss']:.3f} -> {run['final_train_loss']:.3f}, "
                      f"{wall:.1f} s ({wall / steps:.2f} s/step)  "
                      f"[{time.perf_counter() - t_start:.0f} s]", flush=True)

    # -------------------------------------------------------------------------- summary
    def col(loss: str, key: Any) -> list[float]:
        return [key(r) for r in runs if r["loss"] == loss]

    rows = [("SRCC before", lambda r: r["srcc_before"]),
            ("SRCC after", lambda r: r["srcc_after"]),
            ("PLCC after", lambda r: r["after"]["plcc"]),
            ("MAE after (1-5)", lambda r: r["after"]["mae"]),
            ("MAE before (1-5)", lambda r: r["before"]["mae"]),
            ("final train loss*", lambda r: r["final_train_loss"]),
            ("wall s / run", lambda r: r["wall_s"])]
    n_eval = runs[0]["n_train_eval"] if runs else 0
    print(f"\n{model_desc}; {args.device}, {steps} steps x batch {args.batch_size}, "
          f"{len(seeds)} seed(s) {seeds}, {n_eval} held-out samples per seed; mean ± std "
          "over seeds\n")
    print("| metric | TDRL | CE (w/o TDRL) |")
    print("|---|---:|---:|")
    for label, key in rows:
        print(f"| {label} | {fmt(col('tdrl', key))} | {fmt(col('ce', key))} |")
    const = [before[sd]["mae_constant"] for sd in seeds]
    print(f"| MAE of a constant (held-out median) | {fmt(const)} | {fmt(const)} |")
    srcc_t, srcc_c = mean_std(col("tdrl", rows[1][1]))[0], mean_std(col("ce", rows[1][1]))[0]
    mae_t, mae_c = mean_std(col("tdrl", rows[3][1]))[0], mean_std(col("ce", rows[3][1]))[0]
    diffs = [a - b for a, b in zip(col("tdrl", rows[1][1]), col("ce", rows[1][1]), strict=True)]
    print(f"\nratio TDRL / CE: mean SRCC after {srcc_t / srcc_c:.2f}x "
          f"({srcc_t:.3f} / {srcc_c:.3f}; higher is better), mean MAE after "
          f"{mae_t / mae_c:.2f}x ({mae_t:.3f} / {mae_c:.3f}; lower is better)")
    print(f"paired SRCC difference TDRL - CE per seed: "
          f"{', '.join(f'{d:+.3f}' for d in diffs)} (mean {fmt(diffs)})")
    print("* TDRL's loss is CE(non-digit tokens) + distance loss on the digits, CE's is the "
          "token CE over the whole answer: not comparable across columns")
    for note in load_notes:
        print(f"PLCC/MAE after: {note}")
    mismatched = [f"{r['loss']} seed {r['seed']}" for r in runs
                  if abs(r["after"]["srcc"] - r["srcc_after"]) > 1e-6
                  or abs(r["before"]["srcc"] - r["srcc_before"]) > 1e-6]
    print("SRCC of our own scoring vs the trainer's evaluation (before and after): "
          + (f"MISMATCH in {', '.join(mismatched)}" if mismatched else "identical"))
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")

    if args.json:
        args.json.write_text(json.dumps({
            "model": model_desc, "device": args.device, "steps": steps, "seeds": seeds,
            "n": args.n, "lr": args.lr, "batch_size": args.batch_size,
            "threads": args.threads, "template": SHORT_TEMPLATE, "evaluator_loading": load_notes,
            "runs": runs,
            "summary": {"srcc_after": {"tdrl": mean_std(col("tdrl", rows[1][1])),
                                       "ce": mean_std(col("ce", rows[1][1]))},
                        "mae_after": {"tdrl": mean_std(col("tdrl", rows[3][1])),
                                      "ce": mean_std(col("ce", rows[3][1]))},
                        "ratio_srcc": srcc_t / srcc_c, "ratio_mae": mae_t / mae_c},
        }, indent=2) + "\n")
        print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
