"""Declarative registries of what ieqa can build: scorers, prompt templates, benchmarks (each
with its format detector), recipes and datasets — one :class:`Registry` class for all.

Each registry maps a name to an :class:`Entry` (a one-line description plus the factory
or data behind it). Modules add entries with ``REGISTRY.add(...)`` when imported; a
registry imports its provider modules on first lookup, so ``import ieqa`` stays light. A
provider ``"package.*"`` is every module of that package, so a new module there registers
itself without an edit to any list.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ieqa.errors import IeqaError


class UnknownNameError(IeqaError, KeyError):
    """A name no registry entry has (a KeyError too, for code that looks names up)."""

    def __str__(self) -> str:  # KeyError's would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Entry:
    name: str
    description: str
    factory: Callable[..., Any] | None = None
    tags: tuple[str, ...] = field(default=())
    info: Any = None  # registry-specific description (e.g. a ScorerInfo)


class Registry:
    """A named collection of :class:`Entry` objects."""

    def __init__(self, kind: str, providers: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._providers = providers  # modules that register entries when imported
        self._loaded = not providers

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for module in self._providers:
                if module.endswith(".*"):  # every module of a package: drop a file in to add one
                    import pkgutil

                    package = importlib.import_module(module[:-2])
                    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
                        importlib.import_module(info.name)
                else:
                    importlib.import_module(module)

    def load(self) -> None:
        """Import the provider modules now (they add the built-in entries), once."""
        self._load()

    def add(self, name: str, description: str, factory: Callable[..., Any] | None = None,
            tags: tuple[str, ...] = (), info: Any = None, *, overwrite: bool = False) -> Entry:
        """Add an entry; a taken name raises ``ValueError`` unless ``overwrite``."""
        if name in self._entries and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        entry = Entry(name, description, factory, tags, info)
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Drop the entry called ``name`` (no error when there is none)."""
        self._load()
        self._entries.pop(name, None)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def get(self, name: str) -> Entry:
        """The entry called ``name``; raises :class:`UnknownNameError` listing the known
        names."""
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none yet"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {known} "
                                   f"(`ieqa list {self.kind}s` describes them)") from None

    def names(self, tag: str | None = None) -> list[str]:
        self._load()
        return sorted(n for n, e in self._entries.items() if tag is None or tag in e.tags)

    def __iter__(self) -> Iterator[Entry]:
        self._load()
        return iter(self._entries[n] for n in sorted(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)


SCORERS = Registry("scorer", providers=("ieqa.scorers.table",))
BENCHMARKS = Registry("benchmark", providers=("ieqa.data.loaders",))
#: the editor benchmarks of ``ieqa bench-editor``: each entry's factory is its
#: :class:`~ieqa.bench.editor.protocol.EditorProtocol` class (registered with
#: :func:`ieqa.bench.editor.protocol.register_editor_benchmark`, or ``EDITOR_BENCHMARKS.add``)
EDITOR_BENCHMARKS = Registry("editor benchmark", providers=("ieqa.bench.editor.*",))
TEMPLATES = Registry("template", providers=("ieqa.prompts.builtin",))
RECIPES = Registry("recipe", providers=("ieqa.train.recipe",))
DATASETS = Registry("dataset")

DATASETS.add(
    "shapesedit",
    "Synthetic edits with exact per-dimension ground truth and a known editor ranking (ieqa synth).",
    tags=("synthetic", "offline"),
)
