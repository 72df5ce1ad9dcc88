"""``ieqa judge-diff``: what changed between two runs of the same editor benchmark
(:func:`judge_diff`).

Two runs of ``bench-editor`` on the same benchmark and outputs (another day, another model
snapshot, a changed prompt) are compared item by item from their ``items.jsonl``, on each
item's main number (GEdit-Bench's O, ImgEdit-Bench's and KRIS-Bench's item score,
RISEBench's judged score; with repeats, the mean over them):

* ``changed`` — the items whose number differs (or that scored in one run only), first;
* ``srcc``, ``kendall`` — the rank agreement of the two runs over the items both scored;
* ``headline`` — each headline number of the benchmark's first part (GEdit-Bench's
  official G_SC, G_PQ, G_O; ...), in both runs, their difference B - A and a 95 % **paired**
  bootstrap interval of it: items resampled within their task types, the same draws for
  both runs (with repeats: repeat 1's numbers and interval, labelled);
* ``judge`` — the judge's model, the models and system fingerprints the server reported,
  and the configuration keys, where the runs differ;
* ``noise`` — with ``--repeats`` in both runs: whether each headline change lies within
  twice the larger of the two runs' standard deviations over their repeats (the judge's
  own run-to-run spread).
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.bench.editor.run import get_protocol
from ieqa.bench.errors import BenchError

__all__ = ["judge_diff"]


def _load(run: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = Path(run)
    results, items = folder / "results.json", folder / "items.jsonl"
    if not results.is_file() or not items.is_file():
        raise BenchError(f"{folder}: not a finished bench-editor run (results.json and "
                         "items.jsonl are written at its end); run ieqa bench-editor with "
                         f"-o {folder} first")
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return json.loads(results.read_text(encoding="utf-8")), rows


def _item_key(row: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (str(row["editor"]), str(row["language"]), str(row["task_type"]), str(row["key"]))


def _values(rows: Sequence[Mapping[str, Any]], field: str) -> dict[tuple, float | None]:
    """Each item's number: the mean over its repeats that have one (None: none has)."""
    per: dict[tuple, list[float]] = defaultdict(list)
    seen: set[tuple] = set()
    for row in rows:
        key = _item_key(row)
        seen.add(key)
        value = row.get(field)
        if value is not None and math.isfinite(float(value)):
            per[key].append(float(value))
    return {key: (sum(per[key]) / len(per[key]) if per[key] else None) for key in seen}


def _judge_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("name", "model", "served_models", "system_fingerprints", "temperature", "seed"):
        if a.get(key) != b.get(key):
            out[key] = [a.get(key), b.get(key)]
    ca, cb = a.get("config") or {}, b.get("config") or {}
    keys = []
    for k in sorted(set(ca) | set(cb)):
        x, y = ca.get(k), cb.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            keys += [f"{k}.{sub}" for sub in sorted(set(x) | set(y)) if x.get(sub) != y.get(sub)]
        elif x != y:
            keys.append(k)
    if keys:
        out["config_keys"] = keys
    return out


def judge_diff(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], *,
               n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Compare two ``bench-editor`` runs (see the module docstring).

    Raises:
        BenchError: a folder is not a finished run, or the runs are of different
            benchmarks.
    """
    if n_boot < 2:
        raise BenchError(f"--n-boot must be >= 2, got {n_boot}")
    res_a, rows_a = _load(run_a)
    res_b, rows_b = _load(run_b)
    if res_a["benchmark"] != res_b["benchmark"]:
        raise BenchError(f"the runs are of different benchmarks ({res_a['benchmark']} and "
                         f"{res_b['benchmark']}); judge-diff compares two runs of one")
    protocol = get_protocol(res_a["benchmark"])
    field = protocol.main_field
    va, vb = _values(rows_a, field), _values(rows_b, field)
    keys = sorted(set(va) | set(vb))
    changed = []
    for key in keys:
        x, y = va.get(key), vb.get(key)
        if (x is None) != (y is None) or (x is not None and y is not None and abs(x - y) > 1e-12):
            changed.append({"editor": key[0], "language": key[1], "task_type": key[2],
                            "key": key[3], "a": x, "b": y,
                            "change": None if x is None or y is None else y - x})
    changed.sort(key=lambda c: -abs(c["change"]) if c["change"] is not None else -math.inf)
    both = [k for k in keys if va.get(k) is not None and vb.get(k) is not None]
    out: dict[str, Any] = {
        "benchmark": res_a["benchmark"], "runs": [str(run_a), str(run_b)],
        "field": field, "items": len(keys), "compared": len(both),
        "changed": changed, "n_changed": len(changed),
        "judge": _judge_changes(res_a.get("judge") or {}, res_b.get("judge") or {})}
    if len(both) >= 2:
        from scipy.stats import kendalltau, spearmanr

        xs, ys = [va[k] for k in both], [vb[k] for k in both]
        constant = len(set(xs)) < 2 or len(set(ys)) < 2
        out["srcc"] = math.nan if constant else float(spearmanr(xs, ys).statistic)
        out["kendall"] = math.nan if constant else float(kendalltau(xs, ys).statistic)
    else:
        out["srcc"] = out["kendall"] = math.nan
    out["headline"] = _headline(protocol, res_a, res_b, rows_a, rows_b, n_boot, seed)
    return out


def _aggregate(protocol: Any, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The protocol's numbers of ``rows`` (its own interval, not used here, on 2 draws).

    Raises:
        BenchError: the rows lack a field this ieqa's protocol reads (a run of an earlier
            ieqa).
    """
    try:
        return protocol.aggregate(rows, 2)
    except KeyError as exc:
        raise BenchError(f"items.jsonl has no {exc.args[0]!r} field: the run was written by "
                         "an earlier ieqa; run ieqa bench-editor again into a new folder "
                         "(with --replay RUN when RUN holds a judge_log.jsonl, nothing is sent "
                         "to the judge) and compare that") from None


def _headline(protocol: Any, res_a: Mapping[str, Any], res_b: Mapping[str, Any],
              rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]],
              n_boot: int, seed: int) -> list[dict[str, Any]]:
    """Each headline number per editor and language: A, B, B - A, its paired bootstrap
    interval and, with repeats in both runs, whether it is within their noise."""
    part = protocol.parts[0]
    first_a = {_item_key(r): r for r in rows_a if int(r.get("repeat", 1)) == 1}
    first_b = {_item_key(r): r for r in rows_b if int(r.get("repeat", 1)) == 1}
    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for key in sorted(set(first_a) & set(first_b)):
        groups[(key[0], key[1])].append(key)
    rng = np.random.default_rng(seed)
    out = []
    for (editor, language), keys in sorted(groups.items()):
        try:
            got_a = res_a["editors"][editor][language]
            got_b = res_b["editors"][editor][language]
        except KeyError:
            continue
        by_type: dict[str, list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            by_type[key[2]].append(i)
        draws = []
        for _ in range(n_boot):
            pick = [idx[j] for idx in by_type.values()
                    for j in rng.integers(0, len(idx), size=len(idx))]
            draws.append(pick)
        several = int(res_a.get("repeats") or 1) > 1 or int(res_b.get("repeats") or 1) > 1
        if several:  # the interval is over repeat 1: so are the numbers it is set against
            whole_a = _aggregate(protocol, [first_a[k] for k in keys])[part]
            whole_b = _aggregate(protocol, [first_b[k] for k in keys])[part]
        headline = {}
        for metric in protocol.metrics:
            a, b = got_a[part].get(metric), got_b[part].get(metric)
            if several:
                a, b = whole_a.get(metric), whole_b.get(metric)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                headline[metric] = (a, b)
        diffs: dict[str, list[float]] = {metric: [] for metric in headline}
        for pick in draws:  # each draw aggregated once, for every metric
            xa = _aggregate(protocol, [first_a[keys[i]] for i in pick])[part]
            xb = _aggregate(protocol, [first_b[keys[i]] for i in pick])[part]
            for metric in headline:
                diffs[metric].append(xb[metric] - xa[metric])
        for metric, (a, b) in headline.items():
            finite = [d for d in diffs[metric] if math.isfinite(d)]
            low, high = ((float(np.quantile(finite, 0.025)), float(np.quantile(finite, 0.975)))
                         if len(finite) >= 2 else (math.nan, math.nan))
            entry = {"editor": editor, "language": language,
                     "metric": f"{part} {metric}" + (" (repeat 1)" if several else ""),
                     "a": a, "b": b, "change": b - a, "ci": [low, high],
                     "ci_excludes_0": bool(low > 0 or high < 0)}
            std_a = (got_a[part].get("std") or {}).get(metric)
            std_b = (got_b[part].get("std") or {}).get(metric)
            if std_a is not None and std_b is not None and math.isfinite(std_a) \
                    and math.isfinite(std_b):
                noise = 2 * max(std_a, std_b)
                entry["noise"] = noise
                entry["within_noise"] = abs(b - a) <= noise
            out.append(entry)
    return out
