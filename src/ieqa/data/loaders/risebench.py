"""RISEBench (Reasoning-Informed viSual Editing): its data, its output layout and its
categories.

The full benchmark (RISEBench-360: temporal 85, causal 90, spatial 100, logical 85 items)
is the hub dataset ``PhoenixZ/RISEBench``; the small RISEBench-64 is ``data/`` of the
GitHub repository ``PhoenixZ810/RISEBench``. Either is a JSON list of items, each with
``index`` (its id, e.g. ``temporal_reasoning_1``), ``category``, ``instruction``, ``image``
(the source, relative to the image folder) and, by category, ``reference`` (text: what a
correct edit shows), ``reference_img`` or ``reference_txt`` (logical puzzles' answers),
and the flags ``reasoning_img`` (the reasoning judge also sees the source),
``consistency_free`` (no consistency judgement) and ``subtask``. The image folder is the
JSON file's folder, or ``data/`` beside it.

An editor's outputs follow the released script's layout:
``DIR/images/{category}/{index}.png`` (or ``.jpg``, ``.jpeg``, tried in that order;
:func:`output_path`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    EnglishItem,
    hub_dataset_folder,
    read_json,
)

__all__ = ["RISE_DATASET", "CATEGORIES", "CATEGORY_COUNTS", "OUTPUT_SUFFIXES", "RiseItem",
           "output_path", "read_risebench", "resolve_data"]

RISE_DATASET = "PhoenixZ/RISEBench"
#: the four categories, in the published tables' order
CATEGORIES: tuple[str, ...] = ("temporal_reasoning", "causal_reasoning", "spatial_reasoning",
                               "logical_reasoning")
#: items per category of RISEBench-360 (each published accuracy is a whole number of them)
CATEGORY_COUNTS: dict[str, int] = {"temporal_reasoning": 85, "causal_reasoning": 90,
                                   "spatial_reasoning": 100, "logical_reasoning": 85}
#: the output file suffixes the released script tries, in order
OUTPUT_SUFFIXES: tuple[str, ...] = ("png", "jpg", "jpeg")


def _set(value: Any) -> bool:
    """A field the released code tests with ``not pd.isna(value)``: present and not
    null/NaN."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@dataclass(frozen=True)
class RiseItem(EnglishItem):
    """One RISEBench item.

    Attributes:
        index: its id (``temporal_reasoning_1``).
        category: one of :data:`CATEGORIES`.
        instruction: the edit instruction.
        source: the source image file.
        reference: the text of a correct edit (temporal, causal, spatial), or None.
        reference_img: a logical or spatial item's answer image, or None.
        reference_txt: a logical item's answer text, or None.
        reasoning_img: the reasoning judge also sees the source.
        consistency_free: no consistency judgement for this item.
        reasoning_wo_ins: a logical item with an answer image is judged without its
            instruction; the released code decides this by whether the data file has the
            field at all (any item), not by the item's value, and so does ieqa.
        subtask: the item's subtask, or None.
    """

    index: str
    category: str
    instruction: str
    source: Path
    reference: str | None = None
    reference_img: Path | None = None
    reference_txt: str | None = None
    reasoning_img: bool = False
    consistency_free: bool = False
    reasoning_wo_ins: bool = False
    subtask: str | None = None

    @property
    def id(self) -> str:
        return self.index

    @property
    def key(self) -> str:
        return self.index

    @property
    def task_type(self) -> str:
        return self.category

    def meta(self) -> dict[str, Any]:
        """What the judge needs beyond source, output and instruction (an
        :class:`~ieqa.data.schema.EditSample`'s ``meta``)."""
        return {"category": self.category, "reference": self.reference,
                "reference_img": None if self.reference_img is None else str(self.reference_img),
                "reference_txt": self.reference_txt, "reasoning_img": self.reasoning_img,
                "consistency_free": self.consistency_free,
                "reasoning_wo_ins": self.reasoning_wo_ins, "subtask": self.subtask}


def output_path(outputs: str | os.PathLike[str], item: RiseItem) -> Path:
    """Where an editor's output of ``item`` lies: the first of
    ``images/{category}/{index}.png|jpg|jpeg`` that exists (the ``.png`` path when none
    does)."""
    base = Path(outputs) / "images" / item.category
    for suffix in OUTPUT_SUFFIXES:
        if (base / f"{item.index}.{suffix}").is_file():
            return base / f"{item.index}.{suffix}"
    return base / f"{item.index}.png"


def resolve_data(data: str | os.PathLike[str] | None) -> Path:
    """The items' JSON file: ``data`` itself, the one JSON list in the folder ``data``, or
    the hub dataset's when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(RISE_DATASET, "RISEBench's data",
                                  after_download=", unpack its images there,")
    path = Path(data)
    if path.is_file():
        return path
    if not path.is_dir():
        raise BenchmarkFormatError(f"--data {path}: no such file or folder; it should be "
                                   f"RISEBench's JSON file ({RISE_DATASET}) or its folder")
    found = [p for p in sorted(path.glob("*.json")) + sorted(path.glob("data/*.json"))
             if _is_item_list(p)]
    if len(found) != 1:
        raise BenchmarkFormatError(
            f"--data {path}: {'no' if not found else len(found)} RISEBench item list(s) "
            "(a JSON list of items with index, category, instruction, image) in it or in "
            "data/; pass the JSON file itself")
    return found[0]


def _is_item_list(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) \
        and "index" in data[0] and "category" in data[0]


def read_risebench(data: str | os.PathLike[str] | None) -> list[RiseItem]:
    """The items in the file's order (see the module docstring).

    Raises:
        BenchmarkFormatError: no item list, an item without its fields or with an unknown
            category, an id twice, or images that are not there (listed).
    """
    path = resolve_data(data)
    rows = read_json(path, list, "a JSON list of RISEBench items", nonempty=True)
    first = rows[0].get("image") if isinstance(rows[0], dict) else None
    roots = [path.parent, path.parent / "data"]
    root = next((r for r in roots if first and (r / first).is_file()), path.parent)
    wo_ins = any(isinstance(r, dict) and "reasoning_wo_ins" in r for r in rows)
    items: list[RiseItem] = []
    seen: set[str] = set()
    absent: list[str] = []
    for n, row in enumerate(rows):
        where = f"{path}, item {n}"
        if not isinstance(row, dict) or not all(isinstance(row.get(f), str) for f in
                                                ("index", "category", "instruction", "image")):
            raise BenchmarkFormatError(f"{where}: needs the string fields index, category, "
                                       "instruction and image")
        if row["category"] not in CATEGORIES:
            raise BenchmarkFormatError(f"{where}: unknown category {row['category']!r}; "
                                       f"RISEBench has {', '.join(CATEGORIES)}")
        if row["index"] in seen:
            raise BenchmarkFormatError(f"{where}: index {row['index']!r} twice")
        seen.add(row["index"])
        ref_img = root / row["reference_img"] if _set(row.get("reference_img")) else None
        for image in (root / row["image"], ref_img):
            if image is not None and not image.is_file():
                absent.append(str(image))
        items.append(RiseItem(
            index=row["index"], category=row["category"], instruction=row["instruction"],
            source=root / row["image"],
            reference=str(row["reference"]) if _set(row.get("reference")) else None,
            reference_img=ref_img,
            reference_txt=str(row["reference_txt"]) if _set(row.get("reference_txt")) else None,
            reasoning_img=_set(row.get("reasoning_img")),
            consistency_free=_set(row.get("consistency_free")),
            reasoning_wo_ins=wo_ins,
            subtask=str(row["subtask"]) if _set(row.get("subtask")) else None))
    if absent:
        raise BenchmarkFormatError(
            f"{len(absent)} images of {path} are missing, e.g. {', '.join(absent[:3])}; the "
            f"image paths are relative to {root} (the JSON file's folder, or data/ beside it)")
    return items
