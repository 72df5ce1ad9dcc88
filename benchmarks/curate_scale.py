"""Scale check of ``ieqa curate`` and ``ieqa dpo-pairs`` on an EditHF-1M-sized score file.

Writes a synthetic ``ieqa score`` output of 1,000,000 edits in 44,000 groups (the group
sizes of ``metrics_scale.py``: mean ~22.7, heavy tail), 23 editors, 43 tasks, four
dimensions rounded to 0.01 (so rewards tie), 0.5% error rows, 2% flagged rows, rows in
random order (the worst case for grouping). Then, each in a fresh subprocess, it times
and measures the peak resident memory (``ru_maxrss``) of:

* ``ieqa curate --keep top-k=20000 --by overall`` (:func:`ieqa.curate.curate`, gallery off),
* ``ieqa dpo-pairs --mode global --by overall`` (:func:`ieqa.curate.dpo_pairs`),
* the straightforward pandas versions of both: ``read_parquet`` of the whole file, drop
  the error rows, ``sort_values`` by (reward desc, id asc) then ``head`` / ``groupby``
  ``first`` and ``last``, write JSONL,
* a process that only imports the libraries (the floor of every peak),

checks that each pair of implementations keeps the same ids / pairs, and prints the
times, peaks and ratios (ieqa / pandas). pandas is a benchmark-only dependency (it is in
the development environment; ieqa does not need it).

    .venv/bin/python benchmarks/curate_scale.py [--rows 1000000] [--groups 44000] [--keep 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_scale import group_sizes  # noqa: E402 - the same synthetic group sizes

DIMS = ("visual_quality", "instruction_alignment", "content_preservation", "overall")
N_EDITORS, N_TASKS = 23, 43


def write_scores(path: Path, n_rows: int, n_groups: int, seed: int, chunk: int = 100_000) -> None:
    """The synthetic score file (Parquet, ieqa score's schema), written chunk by chunk."""
    from ieqa.scorers.run import output_schema

    rng = np.random.default_rng(seed)
    sizes = group_sizes(rng, n_rows, n_groups)
    gid = np.repeat(np.arange(n_groups), sizes)
    member = np.arange(n_rows) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    perm = rng.permutation(n_rows)
    gid, member = gid[perm], member[perm]
    task_of_group = rng.integers(0, N_TASKS, n_groups)
    level = rng.uniform(1.5, 4.5, n_groups)
    schema = output_schema(DIMS)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, n_rows, chunk):
            g, m = gid[start:start + chunk], member[start:start + chunk]
            n = g.size
            dims = {d: np.round(np.clip(level[g] + rng.normal(0, 0.8, n), 1, 5), 2) for d in DIMS[:3]}
            dims["overall"] = np.round(0.3 * dims["visual_quality"] + 0.4 * dims["instruction_alignment"]
                                       + 0.3 * dims["content_preservation"], 2)
            error = rng.random(n) < 0.005
            flagged = rng.random(n) < 0.02
            ids = [f"g{a:05d}_c{b:03d}" for a, b in zip(g.tolist(), m.tolist(), strict=True)]
            cols = {
                "id": ids,
                "source": [f"/data/src/g{a:05d}.png" for a in g.tolist()],
                "edited": [f"/data/edited/{i}.png" for i in ids],
                "instruction": [f"instruction of request {a}" for a in g.tolist()],
                "editor": [f"editor{b % N_EDITORS:02d}" for b in m.tolist()],
                "task": [f"task{t:02d}" for t in task_of_group[g].tolist()],
                "group_id": [f"g{a:05d}" for a in g.tolist()],
                "flags": [["no_op"] if f else [] for f in flagged.tolist()],
                "error": [("HTTP 500" if e else None) for e in error.tolist()],
                "input_key": ids,
            }
            for d in DIMS:
                cols[d] = [None if e else v for e, v in zip(error.tolist(), dims[d].tolist(), strict=True)]
            table = pa.Table.from_pydict({f.name: cols.get(f.name, [None] * n) for f in schema}, schema=schema)
            writer.write_table(table)


# --------------------------------------------------------------------------- the runs

def run_ieqa_curate(scores: Path, out: Path, keep: int) -> list[str]:
    from ieqa.curate import curate

    res = curate(scores, out, f"top-k={keep}", rule="overall", gallery=0)
    return res.kept_ids


def run_ieqa_dpo(scores: Path, out: Path) -> list[tuple[str, str]]:
    from ieqa.curate import dpo_pairs

    res = dpo_pairs(scores, out, mode="global", rule="overall")
    return [(p.chosen.id, p.rejected.id) for p in res.pairs]


def run_pandas_curate(scores: Path, out: Path, keep: int) -> list[str]:
    import pandas as pd

    df = pd.read_parquet(scores)
    ok = df[df["error"].isna() & df["overall"].notna()]
    kept = ok.sort_values(["overall", "id"], ascending=[False, True]).head(keep)
    out.mkdir(parents=True, exist_ok=True)
    kept.to_json(out / "manifest.jsonl", orient="records", lines=True)
    return kept["id"].tolist()


def run_pandas_dpo(scores: Path, out: Path) -> list[tuple[str, str]]:
    import pandas as pd

    df = pd.read_parquet(scores)
    ok = df[df["error"].isna() & df["overall"].notna()]
    ordered = ok.sort_values(["source", "instruction", "overall", "id"], ascending=[True, True, False, True])
    grouped = ordered.groupby(["source", "instruction"], sort=False)
    best, worst, size = grouped.first(), grouped.last(), grouped.size()
    pairs = pd.DataFrame({"prompt": best.index.get_level_values("instruction"),
                          "images": [[s] for s in best.index.get_level_values("source")],
                          "chosen": best["edited"].to_numpy(), "rejected": worst["edited"].to_numpy(),
                          "chosen_id": best["id"].to_numpy(), "rejected_id": worst["id"].to_numpy(),
                          "margin": (best["overall"] - worst["overall"]).to_numpy(),
                          "task": best["task"].to_numpy(), "n": size.to_numpy()})
    pairs = pairs[(pairs["n"] >= 2) & (pairs["margin"] > 0)]
    out.mkdir(parents=True, exist_ok=True)
    pairs.to_json(out / "dpo.jsonl", orient="records", lines=True)
    return list(zip(pairs["chosen_id"], pairs["rejected_id"], strict=True))


RUNS = {"ieqa-curate": run_ieqa_curate, "pandas-curate": run_pandas_curate,
        "ieqa-dpo": run_ieqa_dpo, "pandas-dpo": run_pandas_dpo}


def peak_rss_mb() -> float:
    """This process's peak resident memory (``VmHWM``; unlike ``ru_maxrss`` it is not
    inherited from the parent across fork + exec), in MiB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def child(name: str, scores: Path, out: Path, keep: int, result: Path) -> None:
    """Runs one implementation in this (fresh) process and writes its numbers."""
    import pandas  # noqa: F401 - every run pays for the same imports

    import ieqa.curate  # noqa: F401

    ids: list = []
    seconds = 0.0
    if name != "imports":
        t0 = time.perf_counter()
        fn = RUNS[name]
        ids = fn(scores, out, keep) if "curate" in name else fn(scores, out)
        seconds = time.perf_counter() - t0
    peak_mb = peak_rss_mb()
    result.write_text(json.dumps({"seconds": seconds, "peak_mb": peak_mb,
                                  "ids": sorted(map(list, ids) if ids and isinstance(ids[0], tuple) else ids)}))


def measure(name: str, scores: Path, work: Path, keep: int) -> dict:
    result = work / f"{name}.json"
    cmd = [sys.executable, __file__, "--child", name, "--scores", str(scores), "--out", str(work / name),
           "--keep", str(keep), "--result", str(result)]
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return json.loads(result.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=44_000)
    ap.add_argument("--keep", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child")
    ap.add_argument("--scores", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--result", type=Path)
    args = ap.parse_args()
    if args.child == "write":
        write_scores(args.scores, args.rows, args.groups, args.seed)
        return
    if args.child:
        child(args.child, args.scores, args.out, args.keep, args.result)
        return
    with tempfile.TemporaryDirectory(prefix="curate_scale_") as tmp:
        work = Path(tmp)
        scores = work / "scores.parquet"
        t0 = time.perf_counter()
        # in a subprocess, so that this parent stays small while the children run
        subprocess.run([sys.executable, __file__, "--child", "write", "--scores", str(scores),
                        "--rows", str(args.rows), "--groups", str(args.groups), "--seed", str(args.seed)],
                       check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        print(f"synthetic score file: {args.rows:,} rows, {args.groups:,} groups, "
              f"{scores.stat().st_size / 2**20:.0f} MiB Parquet, written in {time.perf_counter() - t0:.1f} s")
        print(f"CPU: {os.cpu_count()} cores visible, load average {os.getloadavg()[0]:.1f} at start")
        base = measure("imports", scores, work, args.keep)
        print(f"imports only (floor of every peak): {base['peak_mb']:.0f} MB")
        print(f"{'task':<8} {'impl':<7} {'wall s':>8} {'peak MB':>8} {'peak - floor':>13}")
        for task in ("curate", "dpo"):
            res = {impl: measure(f"{impl}-{task}", scores, work, args.keep) for impl in ("ieqa", "pandas")}
            for impl, r in res.items():
                print(f"{task:<8} {impl:<7} {r['seconds']:>8.1f} {r['peak_mb']:>8.0f} "
                      f"{r['peak_mb'] - base['peak_mb']:>13.0f}")
            same = res["ieqa"]["ids"] == res["pandas"]["ids"]
            i, p = res["ieqa"], res["pandas"]
            print(f"{task:<8} ratio ieqa/pandas: time {i['seconds'] / p['seconds']:.2f}x, peak "
                  f"{i['peak_mb'] / p['peak_mb']:.2f}x, peak above floor "
                  f"{(i['peak_mb'] - base['peak_mb']) / max(1.0, p['peak_mb'] - base['peak_mb']):.2f}x; "
                  f"{len(i['ids']):,} {'ids' if task == 'curate' else 'pairs'}, "
                  f"{'identical' if same else 'DIFFERENT'} to pandas")
        print(f"load average at the end {os.getloadavg()[0]:.1f} (a shared machine slows both sides)")


if __name__ == "__main__":
    main()
