"""Any ieqa manifest (pointwise) or preference file (pairwise / multi-way) as a benchmark.

Follows ieqa's own formats (:mod:`ieqa.data.manifest`): JSONL (``.jsonl``, ``.jsonl.gz``) or
Parquet rows of :class:`~ieqa.data.schema.EditSample`, or preference rows ``{a, b, label,
dimension, rater, meta}``. A preference file is multi-way when its preferences carry
``meta["group_id"]`` and a ``meta["K"]`` above 2.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    dimensions_of,
    distinct_samples,
    register_format,
    resolve_root,
)

NAME = "manifest"
_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")
_HINT = "Pass a manifest file (.jsonl, .jsonl.gz or .parquet) written by ieqa."


def _is_manifest_name(path: Path) -> bool:
    return path.name.endswith(_SUFFIXES)


def manifest_kind(path: PathLike) -> str | None:
    """``"samples"``, ``"preferences"`` or ``None`` (not an ieqa manifest), from the first
    row (JSONL) or the schema (Parquet)."""
    path = Path(path)
    if not path.is_file() or not _is_manifest_name(path):
        return None
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            names = set(pq.read_schema(path).names)
        else:
            opener: Any = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                line = next((ln for ln in f if ln.strip()), "")
            row = json.loads(line) if line else {}
            names = set(row) if isinstance(row, dict) else set()
    except Exception:
        return None
    if {"a", "b", "label"} <= names:
        return "preferences"
    if {"id", "edited"} <= names:
        return "samples"
    return None


def load_manifest(root: PathLike | None = None, *, name: str = NAME, strict: bool = True) -> BenchmarkData:
    """Load an ieqa manifest (pointwise) or preference file (pairwise / multi-way); ``root``
    is the file, or a folder holding exactly one.
    ``strict=False`` skips malformed rows with a warning instead of raising."""
    from ieqa.data import manifest as mf

    path = resolve_root(root, NAME, _HINT)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if manifest_kind(p))
        if len(found) != 1:
            raise BenchmarkFormatError(f"{path}: found {len(found)} manifests ({[p.name for p in found][:6]}); "
                                       "pass the file itself")
        path = found[0]
    kind = manifest_kind(path)
    if kind is None:
        raise BenchmarkFormatError(f"{path}: not an ieqa manifest. {_HINT}")
    meta: dict[str, Any] = {"source": str(path), "kind": kind}
    if kind == "samples":
        samples = list(mf.iter_manifest(path, strict=strict))
        return BenchmarkData(name=name, protocol="pointwise", samples=samples,
                             dimensions=dimensions_of(samples), meta=meta)
    prefs = mf.read_preferences(path, strict=strict)
    multiway = any((p.meta.get("K") or 0) > 2 and p.meta.get("group_id") is not None for p in prefs)
    return BenchmarkData(name=name, protocol="multiway" if multiway else "pairwise",
                         samples=distinct_samples(prefs), preferences=prefs,
                         dimensions=dimensions_of((), prefs), meta=meta)


def _sniff(path: Path) -> bool:
    return manifest_kind(path) is not None


register_format(NAME, "ieqa manifest (.jsonl/.jsonl.gz/.parquet rows of EditSample) or preference "
                "file (rows {a, b, label, ...})", _sniff, lambda p, **kw: load_manifest(p, **kw), priority=90,
                summary="Any ieqa manifest (pointwise) or preference file (pairwise/multiway)",
                tags=("pointwise", "pairwise", "multiway", "offline"), benchmark=load_manifest)
