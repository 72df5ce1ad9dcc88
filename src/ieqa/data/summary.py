"""Summaries of an edit dataset: what is in it and how its editors score."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ieqa.data.schema import EditSample


@dataclass
class DatasetSummary:
    """Counts and per-editor mean scores of a set of samples."""

    n_samples: int = 0
    n_groups: int = 0
    dimensions: list[str] = field(default_factory=list)
    tasks: Counter = field(default_factory=Counter)
    modes: Counter = field(default_factory=Counter)
    editor_means: dict[str, dict[str, float]] = field(default_factory=dict)
    editor_counts: Counter = field(default_factory=Counter)
    mode_means: dict[str, dict[str, float]] = field(default_factory=dict)


def _means(buckets: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    return {k: {d: float(np.mean(v)) for d, v in dims.items()} for k, dims in buckets.items()}


def summarize(samples: Iterable[EditSample]) -> DatasetSummary:
    """Count samples by task, failure mode (``meta['mode']`` when present) and editor, and
    average every score dimension per editor and per mode. Streams: memory is O(#editors)."""
    out = DatasetSummary()
    groups: set[str] = set()
    by_editor: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_mode: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    dims: dict[str, None] = {}
    for s in samples:
        out.n_samples += 1
        groups.add(s.group_id or s.id)
        out.tasks[s.task or "?"] += 1
        mode = s.meta.get("mode")
        if mode:
            out.modes[mode] += 1
        editor = s.editor or "?"
        out.editor_counts[editor] += 1
        for d, v in s.scores.items():
            dims.setdefault(d)
            by_editor[editor][d].append(v)
            if mode:
                by_mode[mode][d].append(v)
    out.n_groups = len(groups)
    out.dimensions = list(dims)
    out.editor_means = _means(by_editor)
    out.mode_means = _means(by_mode)
    return out
