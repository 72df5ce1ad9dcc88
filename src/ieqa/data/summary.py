"""Summaries of an edit dataset: what is in it, by task and failure mode.

Per-editor means and ranks are the leaderboard's job (:func:`ieqa.bench.leaderboard.editor_leaderboard`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ieqa.data.schema import EditSample


@dataclass
class DatasetSummary:
    """Counts of a set of samples and mean scores per failure mode."""

    n_samples: int = 0
    n_groups: int = 0
    dimensions: list[str] = field(default_factory=list)
    tasks: Counter = field(default_factory=Counter)
    modes: Counter = field(default_factory=Counter)
    mode_means: dict[str, dict[str, float]] = field(default_factory=dict)


def _means(buckets: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    return {k: {d: float(np.mean(v)) for d, v in dims.items()} for k, dims in buckets.items()}


def summarize(samples: Iterable[EditSample]) -> DatasetSummary:
    """Count samples by task and failure mode (``meta['mode']`` when present) and average
    every score dimension per mode. Streams: memory is O(#groups)."""
    out = DatasetSummary()
    groups: set[str] = set()
    by_mode: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    dims: dict[str, None] = {}
    for s in samples:
        out.n_samples += 1
        groups.add(s.group_id or s.id)
        out.tasks[s.task or "?"] += 1
        mode = s.meta.get("mode")
        if mode:
            out.modes[mode] += 1
        for d, v in s.scores.items():
            dims.setdefault(d)
            if mode:
                by_mode[mode][d].append(v)
    out.n_groups = len(groups)
    out.dimensions = list(dims)
    out.mode_means = _means(by_mode)
    return out
