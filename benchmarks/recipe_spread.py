"""The spread of a tiny recipe run's held-out metrics over CPU kernels, thread counts and seeds.

A learning test (``tests/train/test_recipes_learn.py``) runs one seed on one thread count;
its bar must hold for the seeds and thread counts it was not run with, and be beyond what
a trivial predictor scores, on every machine. This runs the same scaled-down recipe
(:func:`ieqa.train.tiny.tiny_recipe`, the tests' settings) for every ``--profiles`` x
``--threads`` x ``--seeds`` combination, each in its own process, ``--workers`` at a time,
and prints each stage's headline metric (and the baselines the stage reports, such as
``iou/full_image``) before and after, per run and as min / mean / max.

A profile (:mod:`ieqa.testing.machines`) runs torch, MKL and oneDNN on one instruction set
(``avx512``, ``avx2``, ``default``), as another machine would: float sums, and so every
trained number, differ between them. With ``--perception-steps`` the backbone is trained
once per profile, on one thread (as the tests' ``seeing_vlm``), so each run starts from
the backbone its machine would have.

    HF_HUB_OFFLINE=1 PYTHONPATH=src python benchmarks/recipe_spread.py epaiqa \\
        --steps 150,150,150 --profiles avx512,avx2,default --seeds 0,1 --threads 1,2 --workers 2

``--perception-steps`` (default 600, as the tests' ``seeing_vlm``; 0: the random tiny
model) trains the shared backbone once first. ``--seed-field`` chooses what a seed
changes: ``optim`` (the training seed, default) or ``data`` (the generated ShapesEdit set).
``--backbone DIR`` starts from a model made earlier instead (every profile). ``--profiles``
defaults to ``native`` (no caps: the widest code paths this CPU has). ``--json FILE`` writes every run's
metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def one_run(recipe: str, model: str, out: Path, steps: list[int], seed: int,
            seed_field: str, dimensions: list[str] | None,
            overrides: list[str] | None = None) -> dict[str, Any]:
    """One tiny run in this process; its per-stage metrics before and after."""
    from ieqa.train import train
    from ieqa.train.tiny import tiny_recipe

    kwargs: dict[str, Any] = {"steps": steps if len(steps) > 1 else steps[0]}
    if dimensions:
        kwargs["dimensions"] = dimensions
    kwargs["overrides"] = list(overrides or [])
    if seed_field == "data":
        kwargs["seed"] = seed
    else:
        kwargs["overrides"].append(f"optim.seed={seed}")
    t0 = time.perf_counter()
    result = train(tiny_recipe(recipe, model, **kwargs), output_dir=out, progress=False)
    runs = result.children or {"": result}
    return {"seconds": round(time.perf_counter() - t0, 1),
            "metrics": {f"{dim}/{stage}".lstrip("/"): ms for dim, run in runs.items()
                        for stage, ms in run.metrics.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recipe", help="built-in recipe name (ieqa train --list) or YAML path")
    ap.add_argument("--steps", default="150", help="steps per stage, comma-separated")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    ap.add_argument("--threads", default="2", help="comma-separated torch thread counts")
    ap.add_argument("--profiles", default="native",
                    help="comma-separated CPU kernel profiles (avx512, avx2, default; "
                         "native: none set); see ieqa.testing.machines")
    ap.add_argument("--workers", type=int, default=1, help="runs at a time")
    ap.add_argument("--seed-field", choices=("optim", "data"), default="optim")
    ap.add_argument("--dimensions", default=None, help="comma-separated dimensions to train")
    ap.add_argument("--perception-steps", type=int, default=600)
    ap.add_argument("--backbone", default=None, help="start every run from this model folder "
                    "(e.g. a perception backbone made earlier) instead of building one")
    ap.add_argument("--override", action="append", default=[],
                    help="recipe override KEY=VALUE after the tiny settings (repeatable), "
                         "e.g. data.train.shapesedit.size=224")
    ap.add_argument("--json", default=None, help="write every run's metrics here")
    ap.add_argument("--work", default=None,
                    help="work folder (default: a new temporary one); the backbones trained "
                         "there are reused by later calls with the same --work")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: one run
    ap.add_argument("--perception-one", default=None, help=argparse.SUPPRESS)  # internal
    args = ap.parse_args()
    if args.perception_one:
        from ieqa.testing import build_tiny_vlm
        from ieqa.train.tiny import perception_backbone

        out = Path(args.perception_one)
        model = str(build_tiny_vlm(out / "qwen2-vl", "qwen2-vl"))
        model, srcc = perception_backbone(model, out / "perception", steps=args.perception_steps)
        print("RESULT " + json.dumps({"model": model, "srcc": srcc}))
        return
    steps = [int(s) for s in args.steps.split(",")]
    dims = args.dimensions.split(",") if args.dimensions else None
    if args.one:
        spec = json.loads(args.one)
        res = one_run(args.recipe, spec["model"], Path(spec["out"]), steps, spec["seed"],
                      args.seed_field, dims, args.override)
        print("RESULT " + json.dumps(res))
        return

    from ieqa.testing.machines import NATIVE, profile_env, supported_profiles

    profiles = args.profiles.split(",")
    unknown = [p for p in profiles if p != NATIVE and p not in supported_profiles()]
    if unknown:
        sys.exit(f"profiles {unknown} are not supported by this CPU; it runs "
                 f"{', '.join(supported_profiles())} (and native)")

    tmp = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="recipe-spread-"))
    tmp.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def backbone(profile: str) -> tuple[str, str]:
        """``profile``'s backbone: the random tiny VLM, or it after perception training
        (one thread, in a child process under the profile)."""
        out = tmp / f"backbone-{profile}-p{args.perception_steps}"
        done = out / "backbone.json"
        if done.exists():  # made by an earlier call with this --work
            return profile, json.loads(done.read_text())["model"]
        if not args.perception_steps:
            from ieqa.testing import build_tiny_vlm

            model = str(build_tiny_vlm(out / "qwen2-vl", "qwen2-vl", overwrite=True))
            done.write_text(json.dumps({"model": model}))
            return profile, model
        cmd = [sys.executable, __file__, args.recipe, "--perception-steps",
               str(args.perception_steps), "--perception-one", str(out)]
        proc = subprocess.run(cmd, env=profile_env(profile, 1, os.environ), capture_output=True, text=True,
                              check=False)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not lines:
            sys.exit(f"perception training under {profile} failed:\n{proc.stderr[-2000:]}")
        res = json.loads(lines[-1][len("RESULT "):])
        done.write_text(json.dumps(res))
        print(f"perception ({profile}): {args.perception_steps} steps, held-out SRCC "
              f"{res['srcc']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
        return profile, res["model"]

    if args.backbone:
        models = {p: args.backbone for p in profiles}
    elif not args.perception_steps:
        # built here, one after another: transformers' lazy imports are not thread-safe
        # (two threads importing Qwen2Tokenizer at once: ImportError in one of them)
        models = dict(map(backbone, profiles))
    else:
        with ThreadPoolExecutor(args.workers) as pool:
            models = dict(pool.map(backbone, profiles))
    jobs = [(p, s, t) for p in profiles for t in map(int, args.threads.split(","))
            for s in map(int, args.seeds.split(","))]

    def launch(job: tuple[str, int, int]) -> tuple[tuple[str, int, int], dict[str, Any]]:
        profile, seed, threads = job
        env = profile_env(profile, threads, os.environ)
        spec = {"model": models[profile],
                "out": str(tmp / f"{args.recipe}-{profile}-s{seed}-t{threads}-{time.time_ns()}"),
                "seed": seed}
        cmd = [sys.executable, __file__, args.recipe, "--steps", args.steps,
               "--seed-field", args.seed_field, "--one", json.dumps(spec)]
        if args.dimensions:
            cmd += ["--dimensions", args.dimensions]
        for o in args.override:
            cmd += ["--override", o]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not lines:
            return job, {"error": proc.stderr[-2000:]}
        return job, json.loads(lines[-1][len("RESULT "):])

    with ThreadPoolExecutor(args.workers) as pool:
        results = dict(pool.map(launch, jobs))
    table: dict[str, list[float]] = {}
    for (profile, seed, threads), res in sorted(results.items()):
        if "error" in res:
            print(f"{profile} seed {seed} threads {threads}: FAILED\n{res['error']}")
            continue
        cells = []
        for stage, ms in res["metrics"].items():
            for key in sorted(ms.get("after", {})):
                if key in ("failed", "parsed") or key.startswith("srcc/"):
                    continue
                b, a = ms.get("before", {}).get(key), ms["after"][key]
                table.setdefault(f"{stage} {key} after", []).append(a)
                if b is not None:
                    table.setdefault(f"{stage} {key} before", []).append(b)
                cells.append(f"{stage}.{key} {'' if b is None else f'{b:.3f} -> '}{a:.3f}")
        print(f"{profile} seed {seed} threads {threads} ({res['seconds']} s): "
              + "; ".join(cells))
    print("\nover runs: min / mean / max")
    for key, vals in sorted(table.items()):
        clean = [v for v in vals if v == v]
        if clean:
            print(f"  {key}: {min(clean):.3f} / {statistics.fmean(clean):.3f} / "
                  f"{max(clean):.3f}  (n={len(clean)}, NaN {len(vals) - len(clean)})")
    print(f"total {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {f"profile={p},seed={s},threads={t}": r for (p, s, t), r in results.items()},
            indent=1))


if __name__ == "__main__":
    main()
