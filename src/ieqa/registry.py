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
import os
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


#: the environment variable naming plugin modules (comma-separated), and the entry-point
#: group of installed packages: their modules register benchmarks, evaluators or templates
#: of their own, imported before any registry is first read (:func:`load_plugins`)
PLUGINS_ENV = "IEQA_PLUGINS"
PLUGIN_GROUP = "ieqa.plugins"
_PLUGINS: list[str] = []


def load_plugins() -> list[str]:
    """Import the plugin modules, once: each module named in ``$IEQA_PLUGINS``
    (comma-separated) and each ``ieqa.plugins`` entry point of an installed package. A
    plugin registers from its own code (``register_scorer``, ``register_format``,
    ``@register_editor_benchmark``), so the ``ieqa`` command knows what it adds. Returns
    the names imported.

    Raises:
        IeqaError: a plugin that cannot be imported, named, with what to do.
    """
    if _PLUGINS:
        return list(_PLUGINS[1:])
    _PLUGINS.append("")  # loading (a plugin's own registry reads must not load again)
    try:
        _import_plugins()
    except BaseException:
        _PLUGINS.clear()  # the next read tries again, and says so again
        raise
    return list(_PLUGINS[1:])


def _import_plugins() -> None:
    names = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of the user's module
            raise IeqaError(f"{PLUGINS_ENV} names {name!r}, which cannot be imported "
                            f"({type(exc).__name__}: {exc}); fix the module (or its folder on "
                            f"PYTHONPATH) or take it out of {PLUGINS_ENV}") from exc
        _PLUGINS.append(name)
    from importlib.metadata import entry_points

    for point in entry_points(group=PLUGIN_GROUP):
        try:
            point.load()
        except Exception as exc:  # noqa: BLE001
            raise IeqaError(f"the {PLUGIN_GROUP} entry point {point.name!r} ({point.value}) "
                            f"cannot be loaded ({type(exc).__name__}: {exc}); fix or "
                            "uninstall the package that declares it") from exc
        _PLUGINS.append(point.value)


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
            load_plugins()

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
BENCHMARKS = Registry("benchmark", providers=("ieqa.data.loaders.*",))
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
