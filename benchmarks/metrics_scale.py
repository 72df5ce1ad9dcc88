"""Scale check of the grouped metrics on an EditHF-1M-sized synthetic set.

Builds 1,000,000 edits in 44,000 groups of variable size (mean ~22.7, heavy tail, ~29M
within-group pairs), times the vectorised ``grouped_pair_accuracy`` and ``grouped_srcc``
on all of it, and compares them with the straightforward loops public evaluation scripts
use (``itertools.combinations`` per group over the numpy columns, and over Python lists as
a leaner second reference; ``scipy.stats.spearmanr`` per group). The loops
run in the same process on a random subset of groups and their time is extrapolated
linearly to the full set (the pair loop by pair count, the SRCC loop by group count); the
vectorised functions are also run on that subset and must give the loops' results.

    .venv/bin/python benchmarks/metrics_scale.py [--seed 0] [--groups-for-reference 2000]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy import stats

from ieqa.metrics import grouped_pair_accuracy, grouped_pair_counts, grouped_srcc

N_EDITS = 1_000_000
N_GROUPS = 44_000


def group_sizes(rng: np.random.Generator, n_edits: int, n_groups: int) -> np.ndarray:
    """Heavy-tailed sizes >= 2 (2 + negative binomial, mean n_edits / n_groups, sd ~29),
    nudged so that they sum to exactly ``n_edits``."""
    extra_mean = n_edits / n_groups - 2
    r = 0.53  # dispersion: sd ~ 28.7 -> ~29M pairs for 1M edits in 44K groups
    sizes = 2 + rng.negative_binomial(r, r / (r + extra_mean), size=n_groups)
    diff = n_edits - int(sizes.sum())
    while diff != 0:
        step = 1 if diff > 0 else -1
        pick = rng.choice(n_groups, size=abs(diff), replace=True)
        pick = np.unique(pick)
        if step < 0:
            pick = pick[sizes[pick] > 2]
        pick = pick[: abs(diff)]
        sizes[pick] += step
        diff -= step * len(pick)
    return sizes


def synthetic_set(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pred, target, group_ids, sizes): integer MOS 0..100 (ties within groups) and a
    noisy prediction rounded to 0.1 (some prediction ties); items shuffled."""
    rng = np.random.default_rng(seed)
    sizes = group_sizes(rng, N_EDITS, N_GROUPS)
    gid = np.repeat(np.arange(N_GROUPS, dtype=np.int64), sizes)
    group_level = rng.uniform(20, 80, N_GROUPS)[gid]
    target = np.clip(np.round(group_level + rng.normal(0, 12, N_EDITS)), 0, 100)
    pred = np.round(0.05 * target + rng.normal(0, 0.6, N_EDITS), 1)
    perm = rng.permutation(N_EDITS)
    return pred[perm], target[perm], gid[perm], sizes


def loop_pair_accuracy(pred, target, gid, groups, as_lists: bool = False) -> tuple[int, int, float]:
    """(correct, untied pairs, seconds): the per-pair loop of public evaluation scripts.

    By default it indexes the numpy columns element by element, as scripts do that read a
    results table with pandas/numpy and loop over ``itertools.combinations``; with
    ``as_lists=True`` it first converts each group to Python lists (a lean loop few public
    scripts bother to write, reported as a conservative second reference).
    """
    members = _members(gid, groups)
    t0 = time.perf_counter()
    correct = total = 0
    for idx in members:
        p, t = pred[idx], target[idx]
        if as_lists:
            p, t = p.tolist(), t.tolist()
        for i, j in itertools.combinations(range(len(idx)), 2):
            if t[i] == t[j]:
                continue
            total += 1
            if (p[i] - p[j]) * (t[i] - t[j]) > 0:
                correct += 1
    return correct, total, time.perf_counter() - t0


def loop_srcc(pred, target, gid, groups) -> tuple[np.ndarray, float]:
    """(per-group SRCC, NaN where constant; seconds) with scipy.stats.spearmanr per group."""
    members = _members(gid, groups)
    out = np.full(len(groups), np.nan)
    t0 = time.perf_counter()
    for k, idx in enumerate(members):
        p, t = pred[idx], target[idx]
        if np.ptp(p) > 0 and np.ptp(t) > 0:
            out[k] = stats.spearmanr(p, t).statistic
    return out, time.perf_counter() - t0


def _members(gid: np.ndarray, groups: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(gid, kind="stable")
    starts = np.searchsorted(gid[order], groups)
    ends = np.searchsorted(gid[order], groups, side="right")
    return [order[s:e] for s, e in zip(starts, ends, strict=True)]


def best_time(fn, repeats: int):
    best, result = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--groups-for-reference", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3, help="best-of-N for the vectorised timings")
    args = ap.parse_args()

    t0 = time.perf_counter()
    pred, target, gid, sizes = synthetic_set(args.seed)
    n_pairs = int((sizes * (sizes - 1) // 2).sum())
    counts = grouped_pair_counts(pred, target, gid)
    print(
        f"synthetic EditHF-1M-sized set (seed {args.seed}, built in "
        f"{time.perf_counter() - t0:.1f} s): {N_EDITS:,} edits in {N_GROUPS:,} groups, "
        f"sizes {sizes.min()}..{sizes.max()} (mean {sizes.mean():.2f})"
    )
    print(f"within-group pairs: {n_pairs:,} exactly ({counts['untied']:,} with distinct targets)")

    t_acc, acc = best_time(lambda: grouped_pair_accuracy(pred, target, gid), args.repeats)
    t_srcc, gs = best_time(lambda: grouped_srcc(pred, target, gid), args.repeats)
    print(
        f"vectorised grouped_pair_accuracy: {t_acc:.3f} s (best of {args.repeats}), "
        f"value {acc.value:.6f}"
    )
    print(
        f"vectorised grouped_srcc:          {t_srcc:.3f} s (best of {args.repeats}), "
        f"value {gs.value:.6f} ({gs.n_groups:,} groups, {gs.n_skipped} skipped)"
    )

    rng = np.random.default_rng(args.seed + 1)
    n_ref = min(args.groups_for_reference, N_GROUPS)
    groups = np.sort(rng.choice(N_GROUPS, size=n_ref, replace=False))
    sub = np.isin(gid, groups)
    sub_pairs = int((sizes[groups] * (sizes[groups] - 1) // 2).sum())
    correct, untied, t_loop_pairs = loop_pair_accuracy(pred, target, gid, groups)
    correct_l, untied_l, t_loop_lists = loop_pair_accuracy(pred, target, gid, groups, as_lists=True)
    loop_s, t_loop_srcc = loop_srcc(pred, target, gid, groups)
    full_loop_pairs = t_loop_pairs * n_pairs / sub_pairs
    full_loop_lists = t_loop_lists * n_pairs / sub_pairs
    full_loop_srcc = t_loop_srcc * N_GROUPS / n_ref
    print(
        f"reference loops, same run, on {n_ref:,} random groups ({sub_pairs:,} pairs): "
        f"itertools.combinations over numpy columns {t_loop_pairs:.2f} s, over Python lists "
        f"{t_loop_lists:.2f} s, spearmanr per group {t_loop_srcc:.2f} s"
    )
    print(
        f"  extrapolated linearly to the full set: pair loop ~{full_loop_pairs:.1f} s "
        f"(lists ~{full_loop_lists:.1f} s; x {n_pairs / sub_pairs:.1f} pairs), spearmanr loop "
        f"~{full_loop_srcc:.1f} s (x {N_GROUPS / n_ref:.1f} groups)"
    )

    vec_acc = grouped_pair_accuracy(pred[sub], target[sub], gid[sub])
    vec_srcc = grouped_srcc(pred[sub], target[sub], gid[sub])
    acc_equal = vec_acc.value == correct / untied and (correct, untied) == (correct_l, untied_l)
    diff = np.nanmax(np.abs(vec_srcc.per_group - loop_s))
    srcc_equal = np.array_equal(np.isnan(vec_srcc.per_group), np.isnan(loop_s)) and diff < 1e-12
    print(
        f"check on the subset: pair accuracy {vec_acc.value:.12f} vs loop "
        f"{correct}/{untied} = {correct / untied:.12f} -> {'equal' if acc_equal else 'DIFFER'}; "
        f"per-group SRCC max |diff| {diff:.1e} -> {'equal' if srcc_equal else 'DIFFER'}"
    )
    print(
        f"speed-up (extrapolated loop / vectorised): grouped_pair_accuracy x{full_loop_pairs / t_acc:.0f} "
        f"(x{full_loop_lists / t_acc:.0f} against the list loop), grouped_srcc x{full_loop_srcc / t_srcc:.0f}"
    )
    print(f"total wall time {time.perf_counter() - t0:.1f} s")
    if not (acc_equal and srcc_equal):
        raise SystemExit("vectorised results differ from the reference loops")


if __name__ == "__main__":
    main()
