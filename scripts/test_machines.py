"""The claim tests on every kind of CPU this machine can imitate (``make test-machines``).

A test that asserts learning, agreement or a statistical margin (marked ``claim``) must
pass on every machine CI may land on, not only on the one its bar was set on. This runs
``pytest -m claim`` (or ``--tests``/``-m`` of your choice) once for every combination of

* a CPU kernel profile (:mod:`ieqa.testing.machines`: ``avx512``, ``avx2``, ``default``,
  those this CPU supports): torch, MKL and oneDNN run that instruction set's code, so
  float sums come out as on a machine that has only it;
* a thread count (``--threads``, default 1 and 2: CI's pytest-xdist workers run one
  thread each, ``pytest`` alone uses every core);
* a run (``--runs``, default 3), each in another shuffled order
  (pytest-random-order, seed = the run number, counted from ``--first-run``, default 0),
  so a test that passes only after another one ran fails here;
* a training seed (``--seeds``, default 0: ``IEQA_TEST_SEED``, which the claim tests take
  as their optim seed through the ``claim_seed`` fixture): a seed stands in for the
  machines a profile cannot imitate, since a training run amplifies any float difference
  into a seed-sized one;

each in its own process, and prints a table: per test, how many runs passed under each
profile and thread count, and the numbers the test recorded (``record_property``) as
min..max over the runs.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/test_machines.py --markdown machines.md
    .venv/bin/python scripts/test_machines.py --profiles avx2 --threads 1 --runs 1 \\
        --tests tests/train/test_recipes_learn.py -k epaiqa

It is not part of CI (a full run is hours on 2 cores). Exit status: 0 when every run of
every test passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ieqa.testing.machines import PROFILES, profile_env, supported_profiles  # noqa: E402


def run_one(profile: str, threads: int, seed: int, run: int, args: argparse.Namespace,
            out: Path) -> dict[str, dict]:
    """One pytest process; {test id: {"outcome": passed|failed|skipped, "props": {...}}}."""
    tag = f"{profile}-t{threads}-s{seed}-r{run}"
    report = out / f"{tag}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "random_order",
           f"--random-order-seed={run}", "--random-order-bucket=global",
           f"--junitxml={report}", "-m", args.marker, "--claims=run", *args.tests]
    if args.k:
        cmd += ["-k", args.k]
    env = profile_env(profile, threads, {**os.environ, "HF_HUB_OFFLINE": "1",
                                         "IEQA_TEST_SEED": str(seed)})
    env.pop("PYTEST_XDIST_WORKER", None)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    print(f"{profile} threads {threads} seed {seed} run {run}: exit {proc.returncode} "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    (out / f"{tag}.log").write_text(proc.stdout + proc.stderr)
    results: dict[str, dict] = {}
    if not report.exists():
        results["(pytest wrote no report)"] = {"outcome": "failed", "props": {}}
        return results
    for case in ET.parse(report).iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome = ("failed" if case.find("failure") is not None or case.find("error") is not None
                   else "skipped" if case.find("skipped") is not None else "passed")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        results[name] = {"outcome": outcome, "props": props}
    return results


def _span(values: list[str]) -> str:
    nums = []
    for v in values:
        try:
            nums.append(float(v))
        except (TypeError, ValueError):
            return " / ".join(sorted(set(values)))
    lo, hi = min(nums), max(nums)
    return f"{lo:.3f}" if lo == hi else f"{lo:.3f}..{hi:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiles", default=",".join(supported_profiles()),
                    help=f"comma-separated CPU profiles ({', '.join(PROFILES)}); default: "
                         "those this CPU supports")
    ap.add_argument("--threads", default="1,2", help="comma-separated torch thread counts")
    ap.add_argument("--runs", type=int, default=3, help="shuffled runs per profile and thread count")
    ap.add_argument("--first-run", type=int, default=0,
                    help="number of the first run (its shuffle seed): --first-run 1 --runs 2 "
                         "adds runs 1 and 2 to an earlier --runs 1")
    ap.add_argument("--seeds", default="0", help="comma-separated training seeds of the claim "
                    "tests (IEQA_TEST_SEED), each a column of its own")
    ap.add_argument("--tests", nargs="*", default=["tests"], help="test paths (default: tests)")
    ap.add_argument("-m", dest="marker", default="claim", help="marker expression (default: claim)")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("--workers", type=int, default=1,
                    help="pytest processes at a time (their threads add up: mind the cores)")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    ap.add_argument("--keep", default=None, help="keep the JUnit reports and logs in this folder")
    args = ap.parse_args()
    profiles = args.profiles.split(",")
    bad = [p for p in profiles if p not in supported_profiles()]
    if bad:
        print(f"profiles {bad} are not supported by this CPU; it runs "
              f"{', '.join(supported_profiles())}", file=sys.stderr)
        return 2
    threads = [int(t) for t in args.threads.split(",")]
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="test-machines-"))
    out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = [(p, t, s, r) for p in profiles for t in threads for s in seeds
            for r in range(args.first_run, args.first_run + args.runs)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        done = dict(zip(jobs, pool.map(lambda j: run_one(*j, args, out), jobs), strict=True))
    columns = [(p, t, s) for p in profiles for t in threads for s in seeds]
    tests = sorted({name for res in done.values() for name in res})
    table = ["| test | " + " | ".join(f"{p}, {t} thread{'s' if t > 1 else ''}"
                                      + (f", seed {s}" if len(seeds) > 1 else "")
                                      for p, t, s in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    all_passed = True
    for name in tests:
        cells = []
        for p, t, s in columns:
            runs = [done[(p, t, s, r)].get(name)
                    for r in range(args.first_run, args.first_run + args.runs)]
            ran = [x for x in runs if x is not None and x["outcome"] != "skipped"]
            passed = sum(x["outcome"] == "passed" for x in ran)
            all_passed &= passed == len(ran) == args.runs
            props: dict[str, list[str]] = defaultdict(list)
            for x in ran:
                for k, v in x["props"].items():
                    props[k].append(v)
            shown = "; ".join(f"{k} {_span(v)}" for k, v in sorted(props.items()))
            cells.append(f"{passed}/{args.runs}" + (f": {shown}" if shown else ""))
        table.append(f"| `{name}` | " + " | ".join(cells) + " |")
    print("\n".join(table))
    print(f"{len(jobs)} runs in {time.perf_counter() - t0:.0f} s; reports in {out}")
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n", encoding="utf-8")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
