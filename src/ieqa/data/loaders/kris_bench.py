"""KRIS-Bench (Knowledge-based Reasoning in Image-editing Systems): its data, its output
layout and its taxonomy.

The data is the hub dataset ``Liang0223/KRIS_Bench``: one folder per category (20), each
with ``annotation.json`` and the category's images. ``annotation.json`` is an object keyed
by the item's id (``"1"``, ``"2"``, ...) whose values hold ``ori_img`` (the source file
name, or a list of them: the 2-5 sources of ``multi-element_composition``, the three known
frames ``{id}-{frame}.jpg`` of ``temporal_prediction``), ``gt_img`` (a reference image:
the target view of ``viewpoint_change``, the missing frame of ``temporal_prediction``;
``""`` elsewhere), ``ins_en`` (the instruction) and ``explain_en`` (the knowledge the edit
needs; ``""`` for most non-knowledge categories). The folders sit in ``KRIS_Bench/`` of
the dataset (``--data`` may name either folder).

1,267 items (:data:`CATEGORY_COUNTS`) in 7 groups (:data:`GROUPS`) of 3 knowledge types
(:data:`KNOWLEDGE_TYPES`), as the released ``summarize.py`` groups them.

An editor's outputs follow the released scripts' layout: ``DIR/{category}/{id}.jpg``, or
``.png`` when there is no ``.jpg`` (:func:`output_path`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    EnglishItem,
    hub_dataset_folder,
    read_json,
)

__all__ = ["KRIS_DATASET", "GROUPS", "KNOWLEDGE_TYPES", "CATEGORIES", "CATEGORY_COUNTS",
           "KNOWLEDGE_CATEGORIES", "OUTPUT_SUFFIXES", "KrisItem", "output_path", "read_kris",
           "resolve_root", "temporal_frames"]

KRIS_DATASET = "Liang0223/KRIS_Bench"
#: the seven groups (the published tables' rows), each with its categories, in order
GROUPS: dict[str, tuple[str, ...]] = {
    "Attribute Perception": ("count_change", "color_change", "size_adjustment",
                             "part_completion", "anomaly_correction"),
    "Spatial Perception": ("viewpoint_change", "position_movement"),
    "Temporal Prediction": ("temporal_prediction",),
    "Social Science": ("humanities", "practical_knowledge"),
    "Natural Science": ("biology", "chemistry", "geography", "medicine", "mathematics",
                        "physics"),
    "Logical Reasoning": ("abstract_reasoning", "rule-based_reasoning"),
    "Instruction Decomposition": ("multi-element_composition", "multi-instruction_execution"),
}
#: the three knowledge types, each with its groups
KNOWLEDGE_TYPES: dict[str, tuple[str, ...]] = {
    "Factual Knowledge": ("Attribute Perception", "Spatial Perception", "Temporal Prediction"),
    "Conceptual Knowledge": ("Social Science", "Natural Science"),
    "Procedural Knowledge": ("Logical Reasoning", "Instruction Decomposition"),
}
#: the 20 categories (the data's folder names), in the groups' order
CATEGORIES: tuple[str, ...] = tuple(c for cats in GROUPS.values() for c in cats)
#: items per category (1,267 in all)
CATEGORY_COUNTS: dict[str, int] = {
    "count_change": 50, "color_change": 50, "size_adjustment": 50, "part_completion": 50,
    "anomaly_correction": 75, "viewpoint_change": 50, "position_movement": 50,
    "temporal_prediction": 74, "humanities": 75, "practical_knowledge": 50, "biology": 68,
    "chemistry": 75, "geography": 75, "medicine": 50, "mathematics": 50, "physics": 75,
    "abstract_reasoning": 75, "rule-based_reasoning": 75, "multi-element_composition": 75,
    "multi-instruction_execution": 75}
#: the categories judged for knowledge plausibility too (Social Science, Natural Science,
#: Logical Reasoning)
KNOWLEDGE_CATEGORIES: tuple[str, ...] = (*GROUPS["Social Science"], *GROUPS["Natural Science"],
                                         *GROUPS["Logical Reasoning"])
#: the output file suffixes the released scripts try, in order
OUTPUT_SUFFIXES: tuple[str, ...] = ("jpg", "png")
_FRAME = re.compile(r"(\d+)-(\d+)")


@dataclass(frozen=True)
class KrisItem(EnglishItem):
    """One KRIS-Bench item.

    Attributes:
        category: its folder, one of :data:`CATEGORIES`.
        index: its key in the folder's ``annotation.json`` (``"1"``).
        instruction: ``ins_en``.
        explanation: ``explain_en`` (``""`` when the item has none).
        sources: the source images (several for multi-element composition and temporal
            prediction, in the file's order).
        source_names: the ``ori_img`` names as written (temporal frames are numbered by
            them).
        gt: the reference image (``gt_img``), or None.
    """

    category: str
    index: str
    instruction: str
    explanation: str
    sources: tuple[Path, ...]
    source_names: tuple[str, ...]
    gt: Path | None = None

    @property
    def id(self) -> str:
        return f"{self.category}/{self.index}"

    @property
    def key(self) -> str:
        return self.index

    @property
    def task_type(self) -> str:
        return self.category

    @property
    def source(self) -> Path:
        """The first source image (the only one for most categories)."""
        return self.sources[0]

    def meta(self) -> dict[str, Any]:
        """What the judge needs beyond source, output and instruction (an
        :class:`~ieqa.data.schema.EditSample`'s ``meta``)."""
        return {"category": self.category, "index": self.index,
                "explanation": self.explanation, "sources": [str(p) for p in self.sources],
                "source_names": list(self.source_names),
                "gt_img": None if self.gt is None else str(self.gt)}


def temporal_frames(names: tuple[str, ...] | list[str]) -> tuple[list[int], int]:
    """``(frame numbers of the known frames, the frame to predict)`` of a temporal item,
    from its ``ori_img`` names (``{id}-{frame}.jpg``): the frame of 1-4 that is missing,
    or the last known one plus one, as the released script numbers them.

    Raises:
        BenchmarkFormatError: a name without ``{id}-{frame}`` (the released script would
            mis-number the frames).
    """
    frames = []
    for name in names:
        found = _FRAME.search(name)
        if found is None:
            raise BenchmarkFormatError(f"temporal frame {name!r} is not named {{id}}-{{frame}}"
                                       " (e.g. 1-2.jpg); its frame number is unknown")
        frames.append(int(found.group(2)))
    missing = {1, 2, 3, 4} - set(frames)
    return frames, (missing.pop() if len(missing) == 1 else max(frames, default=0) + 1)


def output_path(outputs: str | os.PathLike[str], item: KrisItem) -> Path:
    """Where an editor's output of ``item`` lies: ``{category}/{id}.jpg``, else ``.png``
    (the ``.png`` path, which ``ieqa generate`` writes, when neither exists)."""
    base = Path(outputs) / item.category
    for suffix in OUTPUT_SUFFIXES:
        if (base / f"{item.index}.{suffix}").is_file():
            return base / f"{item.index}.{suffix}"
    return base / f"{item.index}.png"


def resolve_root(data: str | os.PathLike[str] | None) -> Path:
    """The folder holding the category folders: ``data`` or its ``KRIS_Bench/``; without
    ``data`` the hub dataset's when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(KRIS_DATASET, "KRIS-Bench's data")
    path = Path(data)
    for root in (path, path / "KRIS_Bench"):
        if any((root / c / "annotation.json").is_file() for c in CATEGORIES):
            return root
    raise BenchmarkFormatError(
        f"--data {path}: no KRIS-Bench category folder ({CATEGORIES[0]}/annotation.json, ...)"
        f" in it or in its KRIS_Bench/; pass the folder of {KRIS_DATASET}")


def _names(value: Any, where: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and n for n in names):
        raise BenchmarkFormatError(f"{where}: ori_img must be a file name or a list of them")
    return tuple(names)


def read_kris(data: str | os.PathLike[str] | None) -> list[KrisItem]:
    """The items of every category folder present, in :data:`CATEGORIES`' order and each
    file's order (see the module docstring).

    Raises:
        BenchmarkFormatError: no category folder, a folder that is not a category, an item
            without ``ori_img`` or ``ins_en``, or images that are not there (listed).
    """
    root = resolve_root(data)
    unknown = sorted(p.parent.name for p in root.glob("*/annotation.json")
                     if p.parent.name not in CATEGORIES)
    if unknown:
        raise BenchmarkFormatError(f"{root}: unknown category folder(s) {', '.join(unknown)}; "
                                   f"KRIS-Bench has {', '.join(CATEGORIES)}")
    items: list[KrisItem] = []
    absent: list[str] = []
    for category in CATEGORIES:
        path = root / category / "annotation.json"
        if not path.is_file():
            continue
        rows = read_json(path, dict, "an object keyed by item id")
        for index, row in rows.items():
            where = f"{path}, item {index!r}"
            if not isinstance(row, dict) or not isinstance(row.get("ins_en"), str):
                raise BenchmarkFormatError(f"{where}: needs ori_img and ins_en")
            names = _names(row.get("ori_img"), where)
            if category == "temporal_prediction":
                temporal_frames(names)  # the frames must be numbered
            gt_name = row.get("gt_img") or None
            gt = root / category / gt_name if isinstance(gt_name, str) else None
            sources = tuple(root / category / n for n in names)
            absent += [str(p) for p in sources if not p.is_file()]
            if category == "viewpoint_change":  # the released judge needs it
                if gt is None:
                    raise BenchmarkFormatError(f"{where}: a viewpoint item needs gt_img")
                if not gt.is_file():
                    absent.append(str(gt))
            items.append(KrisItem(category=category, index=str(index),
                                  instruction=row["ins_en"],
                                  explanation=str(row.get("explain_en") or ""),
                                  sources=sources, source_names=names, gt=gt))
    if absent:
        raise BenchmarkFormatError(f"{len(absent)} images of {root} are missing, e.g. "
                                   f"{', '.join(absent[:3])}; they are relative to their "
                                   "category's folder")
    return items
