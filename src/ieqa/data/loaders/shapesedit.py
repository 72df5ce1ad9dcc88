"""A generated ShapesEdit folder (``ieqa synth``): exact ground truth, as any protocol.

ieqa's own layout (:func:`ieqa.data.shapesedit.generate`): ``manifest.jsonl`` (or
``.parquet``) plus ``shapesedit.json`` (configuration, editor profiles, the true editor
ranking). Scores are on 1-5 for every dimension. The native protocol is pointwise;
``view="pairwise"`` or ``"multiway"`` derives the within-group preferences from the ground
truth of one dimension (equal scores are ties).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    dimensions_of,
    preferences_from_groups,
    register_format,
    resolve_root,
)

NAME = "shapesedit"
CARD = "shapesedit.json"
_MANIFESTS = ("manifest.jsonl", "manifest.parquet", "manifest.jsonl.gz")
_HINT = "Generate one with `ieqa synth <folder>` or ieqa.data.shapesedit.generate(<folder>)."


def _manifest(root: Path) -> Path:
    for name in _MANIFESTS:
        if (root / name).is_file():
            return root / name
    raise BenchmarkFormatError(f"{root}: no manifest.jsonl / manifest.parquet next to {CARD}. {_HINT}")


def load_shapesedit(root: PathLike | None = None, *,
                    view: Literal["pointwise", "pairwise", "multiway"] = "pointwise",
                    dimension: str = "overall") -> BenchmarkData:
    """Load a ShapesEdit folder. ``view`` chooses the protocol; for ``"pairwise"`` /
    ``"multiway"`` the preferences are all within-group pairs labelled by the ground truth
    of ``dimension`` (multi-way ones carry ``meta["group_id"]`` and ``meta["K"]``)."""
    from ieqa.data.manifest import read_manifest

    root = resolve_root(root, NAME, _HINT)
    if root.is_file():
        root = root.parent
    if view not in ("pointwise", "pairwise", "multiway"):
        raise BenchmarkFormatError(f"view must be 'pointwise', 'pairwise' or 'multiway', got {view!r}")
    card_path = root / CARD
    if not card_path.is_file():
        raise BenchmarkFormatError(f"{root}: no {CARD}; this is not a ShapesEdit folder. {_HINT}")
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchmarkFormatError(f"{card_path}: not valid JSON ({e})") from e
    samples = read_manifest(_manifest(root))
    scale = card.get("score_scale", [1, 5])
    meta: dict[str, Any] = {
        "source": str(root), "score_scale": scale, "view": view,
        "true_editor_ranking": card.get("true_editor_ranking"),
        "config": card.get("config"), "generator_version": card.get("generator_version"),
    }
    if view == "pointwise":
        return BenchmarkData(name=NAME, protocol="pointwise", samples=samples,
                             dimensions=dimensions_of(samples), meta=meta)
    dim = canonical_dimension(dimension)
    prefs = preferences_from_groups(samples, dim, multiway=view == "multiway")
    meta["preference_dimension"] = dim
    return BenchmarkData(name=NAME, protocol=view, samples=samples, preferences=prefs,
                         dimensions=dimensions_of(samples), meta=meta)


def _sniff(path: Path) -> bool:
    if path.is_file() and path.name not in (CARD, *_MANIFESTS):
        return False
    folder = path if path.is_dir() else path.parent
    return (folder / CARD).is_file() and any((folder / n).is_file() for n in _MANIFESTS)


register_format(NAME, "ShapesEdit folder (manifest + shapesedit.json); view= pointwise/pairwise/multiway",
                _sniff, lambda p, **kw: load_shapesedit(p, **kw), priority=10,
                summary="ShapesEdit folder: synthetic edits with exact 1-5 ground truth (view= "
                "pointwise, pairwise or multiway)",
                tags=("pointwise", "pairwise", "multiway", "synthetic", "offline"), benchmark=load_shapesedit)
