"""The mutants of ``scripts/mutation_check.py``, one module per area of the code.

Each module defines ``MUTATIONS``, a tuple of :class:`Mutation`; :data:`ALL` joins them
(names must be unique across modules). Add a module to ``AREAS`` to include it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    """One broken variant: ``old`` (exactly once in ``file``) replaced by ``new``."""

    name: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    slow: bool = False


#: the modules below, in the order the check runs them
AREAS = ("core", "bench_editor", "edit_metrics_vlm", "scorefile", "curate_studio_human")


_AREA: dict[str, str] = {}


def area_of(m: Mutation) -> str:
    """The module of scripts/mutants/ that defines ``m``."""
    return _AREA[m.name]


def _load() -> tuple[Mutation, ...]:
    out: list[Mutation] = []
    for area in AREAS:
        try:
            module = importlib.import_module(f"mutants.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"mutants.{area}":
                raise
            continue
        out.extend(module.MUTATIONS)
        _AREA.update({m.name: area for m in module.MUTATIONS})
    names = [m.name for m in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"mutation names used twice: {dupes}")
    return tuple(out)


ALL: tuple[Mutation, ...] = _load()
