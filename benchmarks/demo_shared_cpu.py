"""``ieqa demo`` alone and next to one other CPU-bound process, and the slowdown ratio.

Runs ``python -m ieqa demo`` twice in a subprocess: once alone, once while a busy loop
(``timeout LIMIT python -c "while True: pass"``) keeps one core busy, and prints the wall
times (seconds), the ratio and the machine's load average before each run. The busy loop
is this script's own child and is stopped (by its process id) when the demo ends.

    # as shipped (ieqa picks its torch thread count itself)
    PYTHONPATH=src python benchmarks/demo_shared_cpu.py
    # another source tree, e.g. an older release exported with `git archive`
    python benchmarks/demo_shared_cpu.py --src /tmp/ieqa-old/src
    # pin a thread count / OpenMP setting for the demo's process
    PYTHONPATH=src python benchmarks/demo_shared_cpu.py --env IEQA_NUM_THREADS=2

Timings are only comparable on the same machine with the same background load: the load
average printed before each run says how quiet the machine was (other users' processes
count too).

Measured on a 2-core Xeon VM shared with other users (their load average 0.5-3 during
the runs), torch 2.13.0+cpu (libgomp), ``ieqa demo --n 200 --train-steps 500``; "before"
is the source of commit 26aaff5 (``git archive 26aaff5 src | tar -x -C /tmp/ieqa-before``,
then ``--src /tmp/ieqa-before/src``), "after" this source (``--src src``):

=========================================================  ===========  ===========  =====
settings                                                   alone (s)    shared (s)   ratio
=========================================================  ===========  ===========  =====
before: torch's default, 2 threads spinning at barriers    79.4, 69.7   682.1 [1]_   9.8
after: ieqa's default (free cores at start, passive wait)  90.6, 92.0   96.4, 97.3   1.06
after, ``--env IEQA_NUM_THREADS=2`` (2 passive threads;      90.1         105.9        1.18
the case of a neighbour starting after ieqa)
before, ``--env OMP_NUM_THREADS=1``                        96.4         98.0         1.02
before, 2 threads, ``--env GOMP_SPINCOUNT=10000``          73.9         160.3        2.17
before, 2 threads, ``--env GOMP_SPINCOUNT=100000``         73.3         435.9        5.95
=========================================================  ===========  ===========  =====

.. [1] 1715.2 s in a first run while other users' processes kept the load average near 8.

The smaller ``--n 40 --train-steps 150`` gave the same picture: 2 spinning threads
57.0 / 303.8 s and 48.4 / 208.7 s, 1 thread 53.5 / 53.7 s and 53.1 / 52.7 s, 2 passive
threads (``OMP_WAIT_POLICY=PASSIVE``) 52.9 / 54.6 s and 53.0 / 55.9 s.

So the slowdown comes from OpenMP threads spinning while a neighbour holds a core; one
thread, or threads that sleep while they wait, remove it. ieqa's default
(:mod:`ieqa.threads`) keeps the demo at about 1.5 minutes beside a busy process instead of
11; it costs about 25 % on an idle machine against spinning threads (sleeping and waking
at each of a tiny model's many small operations). On a machine of your own,
``OMP_WAIT_POLICY=ACTIVE ieqa demo`` gets that back.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY = "while True: pass"


def run_demo(out: Path, args: argparse.Namespace, env: dict[str, str]) -> float:
    """Wall time of one ``ieqa demo`` (seconds); raises when the demo fails."""
    cmd = [sys.executable, "-m", "ieqa", "demo", "--out", str(out), "--n", str(args.n),
           "--train-steps", str(args.train_steps)]
    log = out.with_suffix(".log")
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"`{' '.join(cmd)}` failed (exit {proc.returncode}); see {log}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=None,
                        help="source folder put first on PYTHONPATH (default: as inherited)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable for the demo process (repeatable)")
    parser.add_argument("--n", type=int, default=200, help="edits the demo generates")
    parser.add_argument("--train-steps", type=int, default=500, help="training steps per stage")
    parser.add_argument("--busy", type=int, default=1, help="CPU-bound processes beside the "
                        "second run")
    parser.add_argument("--skip-alone", action="store_true", help="only the shared run")
    parser.add_argument("--limit", type=int, default=1800, help="seconds after which the busy "
                        "loop stops on its own (a bound in case this script is killed)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()

    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if args.src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.src), env.get("PYTHONPATH")]))
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--env takes KEY=VALUE, got {item!r}")
        env[key] = value
    cores = len(os.sched_getaffinity(0))
    record: dict[str, object] = {"cores": cores, "env": args.env, "src": str(args.src),
                                 "n": args.n, "train_steps": args.train_steps, "busy": args.busy}
    with tempfile.TemporaryDirectory(prefix="ieqa-demo-bench-") as tmp:
        if not args.skip_alone:
            record["load_before_alone"] = os.getloadavg()[0]
            record["alone_s"] = run_demo(Path(tmp) / "alone", args, env)
            print(f"alone:  {record['alone_s']:.1f} s (load average before "
                  f"{record['load_before_alone']:.2f}, {cores} cores)", flush=True)
        busy = [subprocess.Popen(["timeout", str(args.limit), sys.executable, "-c", BUSY])
                for _ in range(args.busy)]
        try:
            time.sleep(1.0)
            record["load_before_shared"] = os.getloadavg()[0]
            record["shared_s"] = run_demo(Path(tmp) / "shared", args, env)
        finally:
            for proc in busy:
                proc.terminate()
                proc.wait()
        print(f"shared: {record['shared_s']:.1f} s beside {args.busy} busy loop(s) (load "
              f"average before {record['load_before_shared']:.2f})", flush=True)
    if "alone_s" in record:
        record["ratio"] = record["shared_s"] / record["alone_s"]
        print(f"ratio shared/alone: {record['ratio']:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
