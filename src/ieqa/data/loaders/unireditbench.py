"""UniREditBench (Han et al. 2025, Maplebb/UniREditBench): 2,700 reasoning edits, each
judged against a text reference and a ground-truth image.

The data is the hub dataset ``maplebb/UniREditBench`` (``data.json`` and the two zips
``original_image.zip`` and ``reference_image.zip``, unpacked in place, as the authors'
README says). ``data.json`` is a list of items with ``original_image_path`` and
``reference_image_path`` (relative to the dataset folder), ``instruction``, ``name`` (the
evaluation dimension, one of 18 sub-categories), ``idx`` (the item's number within it),
``reference_effect`` (the text reference) and, for game-world items, ``rules`` (which the
judge reads before the instruction). An item's key is ``{name}#{idx}``, as the released
``eval/gpt_eval_uniredit.py`` keys it.

An editor's outputs follow the released layout: ``DIR/{name}/{idx}.png`` (the released
script looks for ``.png`` only; :func:`output_path`).
"""

from __future__ import annotations

import json
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

__all__ = ["UNIREDIT_DATASET", "UniREditItem", "output_path", "read_unireditbench",
           "resolve_data"]

UNIREDIT_DATASET = "maplebb/UniREditBench"
_FIELDS = ("original_image_path", "reference_image_path", "instruction", "name", "idx")


@dataclass(frozen=True)
class UniREditItem(EnglishItem):
    """One UniREditBench item.

    Attributes:
        name: its evaluation dimension (the released results' ``Class-{name}`` rows).
        idx: its number within ``name``.
        instruction: the edit instruction.
        rules: a game-world item's rules (the judge reads ``rules + "\\n" + instruction``),
            or ``""``.
        source: the original image file.
        reference_img: the ground-truth edited image file.
        reference_effect: the text reference of the edit's effect.
    """

    name: str
    idx: str
    instruction: str
    rules: str
    source: Path
    reference_img: Path
    reference_effect: str

    @property
    def id(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        return f"{self.name}#{self.idx}"

    @property
    def task_type(self) -> str:
        return self.name

    def meta(self) -> dict[str, Any]:
        """What the judge needs beyond source, output and instruction (an
        :class:`~ieqa.data.schema.EditSample`'s ``meta``)."""
        return {"name": self.name, "idx": self.idx, "rules": self.rules,
                "reference_img": str(self.reference_img),
                "reference_effect": self.reference_effect}


def output_path(outputs: str | os.PathLike[str], item: UniREditItem) -> Path:
    """Where an editor's output of ``item`` lies: ``{name}/{idx}.png``."""
    return Path(outputs) / item.name / f"{item.idx}.png"


def resolve_data(data: str | os.PathLike[str] | None) -> Path:
    """The items' ``data.json``: ``data`` itself, ``data.json`` in the folder ``data``, or
    the hub dataset's when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(UNIREDIT_DATASET, "UniREditBench's data",
                                  after_download=", unzip original_image.zip and "
                                                 "reference_image.zip there,")
    path = Path(data)
    if path.is_dir():
        path = path / "data.json"
    if not path.is_file():
        raise BenchmarkFormatError(
            f"--data {data}: no data.json; it should be UniREditBench's folder "
            f"(`huggingface-cli download {UNIREDIT_DATASET} --repo-type dataset --local-dir "
            "DIR`, then unzip original_image.zip and reference_image.zip in DIR) or its "
            "data.json")
    return path


def is_item_list(path: Path) -> bool:
    """Whether ``path`` is a UniREditBench ``data.json`` (a cheap look at its first item)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) \
        and "reference_image_path" in data[0] and "reference_effect" in data[0]


def read_unireditbench(data: str | os.PathLike[str] | None) -> list[UniREditItem]:
    """The items in the file's order (see the module docstring).

    Raises:
        BenchmarkFormatError: no item list, an item without its fields, a key twice, or
            images that are not there (listed, with the unzip step).
    """
    path = resolve_data(data)
    rows = read_json(path, list, "a JSON list of UniREditBench items", nonempty=True)
    root = path.parent
    items: list[UniREditItem] = []
    seen: set[str] = set()
    absent: list[str] = []
    for n, row in enumerate(rows):
        where = f"{path}, item {n}"
        if not isinstance(row, dict) or any(row.get(f) in (None, "") for f in _FIELDS):
            raise BenchmarkFormatError(f"{where}: needs the fields {', '.join(_FIELDS)}")
        rules = row.get("rules") or ""
        if not isinstance(rules, str):
            raise BenchmarkFormatError(f"{where}: rules must be text, got "
                                       f"{type(rules).__name__}")
        item = UniREditItem(
            name=str(row["name"]), idx=str(row["idx"]), instruction=str(row["instruction"]),
            rules=rules, source=root / str(row["original_image_path"]),
            reference_img=root / str(row["reference_image_path"]),
            reference_effect=str(row.get("reference_effect") or ""))
        if item.key in seen:
            raise BenchmarkFormatError(f"{where}: {item.key!r} (name#idx) twice")
        seen.add(item.key)
        absent += [str(p) for p in (item.source, item.reference_img) if not p.is_file()]
        items.append(item)
    if absent:
        raise BenchmarkFormatError(
            f"{len(absent)} images of {path} are missing, e.g. {', '.join(absent[:3])}; the "
            f"paths are relative to {root}: unzip original_image.zip and reference_image.zip "
            "there")
    return items
