"""Declarative registries of what ieqa can build: scorers, benchmarks, recipes, datasets.

Each registry maps a name to an :class:`Entry` (a one-line description plus the factory
or data behind it). Later modules add entries with ``REGISTRY.add(...)``; ``ieqa list``
and the ``list_*`` functions read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    name: str
    description: str
    factory: Callable[..., Any] | None = None
    tags: tuple[str, ...] = field(default=())


class Registry:
    """A named collection of :class:`Entry` objects."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def add(self, name: str, description: str, factory: Callable[..., Any] | None = None,
            tags: tuple[str, ...] = ()) -> Entry:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        entry = Entry(name, description, factory, tags)
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none yet"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self, tag: str | None = None) -> list[str]:
        return sorted(n for n, e in self._entries.items() if tag is None or tag in e.tags)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries[n] for n in sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


SCORERS = Registry("scorer")
BENCHMARKS = Registry("benchmark")
RECIPES = Registry("recipe")
DATASETS = Registry("dataset")

DATASETS.add(
    "shapesedit",
    "Synthetic edits with exact per-dimension ground truth and a known editor ranking (ieqa synth).",
    tags=("synthetic", "offline"),
)
