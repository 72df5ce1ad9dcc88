"""The Emu Edit test set (Sheynin et al. 2024): its data, its output layout and its tasks.

The hub dataset ``facebook/emu_edit_test_set`` holds Parquet files of two splits,
``validation`` (3,589 items) and ``test`` (2,022), with the columns ``idx`` (the item's
number), ``instruction``, ``image`` (the source, an image cell), ``task`` (one of
:data:`TASKS`), ``split``, ``hash``, ``input_caption`` (a caption of the source) and
``output_caption`` (a caption of the wanted edit): what CLIP-T and CLIP-dir compare with
(:mod:`ieqa.scorers.edit_metrics`). ``facebook/emu_edit_test_set_generations`` has the
same columns plus Emu Edit's own edit (``edited_image``) and is read the same way.

An editor's outputs are ``DIR/{idx}.png`` (:func:`output_path`), the layout the public
evaluation scripts of this test set use.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    EnglishItem,
    hub_dataset_folder,
    image_ref,
    read_table_rows,
    table_columns,
)

__all__ = ["EMU_DATASET", "SPLITS", "TASKS", "EmuItem", "output_path", "read_emu_edit",
           "resolve_data"]

EMU_DATASET = "facebook/emu_edit_test_set"
SPLITS: tuple[str, ...] = ("test", "validation")
#: the edit tasks, in the order of the paper's per-task figures
TASKS: tuple[str, ...] = ("add", "remove", "background", "global", "local", "style", "text")
_COLUMNS = ("idx", "instruction", "image", "task", "input_caption", "output_caption")


@dataclass(frozen=True)
class EmuItem(EnglishItem):
    """One item of the Emu Edit test set.

    Attributes:
        idx: its number (``idx``), as text.
        task: its task (one of :data:`TASKS`, or what the data says).
        instruction: the edit instruction.
        source: the source image, written as PNG.
        input_caption: a caption of the source.
        output_caption: a caption of the wanted edit.
        split: ``test`` or ``validation``.
    """

    idx: str
    task: str
    instruction: str
    source: Path
    input_caption: str
    output_caption: str
    split: str

    @property
    def id(self) -> str:
        return self.idx

    @property
    def key(self) -> str:
        return self.idx

    @property
    def task_type(self) -> str:
        return self.task

    def meta(self) -> dict[str, Any]:
        """The captions the CLIP metrics compare with (an EditSample's ``meta``)."""
        return {"input_caption": self.input_caption, "output_caption": self.output_caption,
                "split": self.split}


def output_path(outputs: str | os.PathLike[str], item: EmuItem) -> Path:
    """Where an editor's output of ``item`` lies: ``{idx}.png``."""
    return Path(outputs) / f"{item.idx}.png"


def resolve_data(data: str | os.PathLike[str] | None, split: str) -> list[Path]:
    """The Parquet files of ``split``: under ``data`` (a folder or one file), or the hub
    dataset's when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(EMU_DATASET, "the Emu Edit test set",
                                  allow_patterns=[f"*{split}*.parquet"])
    path = Path(data)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BenchmarkFormatError(f"--data {path}: no such file or folder; it should hold the "
                                   f"Parquet files of {EMU_DATASET}")
    files = sorted(p for p in path.rglob("*.parquet") if split in p.name)
    if not files:
        raise BenchmarkFormatError(f"--data {path}: no Parquet file of the {split} split "
                                   f"(*{split}*.parquet) in it; download {EMU_DATASET} there")
    return files


def read_emu_edit(data: str | os.PathLike[str] | None, sources_dir: str | os.PathLike[str],
                  split: str = "test") -> list[EmuItem]:
    """The items of ``split`` in file order, each source written as PNG under
    ``sources_dir`` (kept when already there).

    Raises:
        BenchmarkFormatError: an unknown split, missing data or columns, an item without
            captions, or an ``idx`` twice.
    """
    if split not in SPLITS:
        raise BenchmarkFormatError(f"unknown split {split!r}; the Emu Edit test set has "
                                   f"{', '.join(SPLITS)}")
    items: list[EmuItem] = []
    seen: set[str] = set()
    for path in resolve_data(data, split):
        missing = [c for c in _COLUMNS if c not in table_columns(path)]
        if missing:
            raise BenchmarkFormatError(f"{path}: no column {', '.join(missing)}; it is not "
                                       f"{EMU_DATASET}'s data")
        for where, row in read_table_rows(path, [*_COLUMNS, "split"]):
            if row.get("split") not in (None, split):
                continue
            idx = str(row["idx"])
            if idx in seen:
                raise BenchmarkFormatError(f"{path}, {where}: idx {idx} twice")
            seen.add(idx)
            captions = [row.get("input_caption"), row.get("output_caption")]
            if not all(isinstance(c, str) and c.strip() for c in captions):
                raise BenchmarkFormatError(f"{path}, {where}: item {idx} has no input or output "
                                           "caption")
            source = Path(sources_dir) / f"{idx}.png"
            if not source.is_file():
                ref = image_ref(row["image"], path.parent, path, where, "image")
                image = Image.open(io.BytesIO(ref) if isinstance(ref, bytes) else ref)
                source.parent.mkdir(parents=True, exist_ok=True)
                tmp = source.with_suffix(".tmp.png")
                image.convert("RGB").save(tmp, format="PNG")
                tmp.replace(source)
            items.append(EmuItem(idx=idx, task=str(row["task"]),
                                 instruction=str(row["instruction"]), source=source,
                                 input_caption=str(captions[0]),
                                 output_caption=str(captions[1]), split=split))
    if not items:
        raise BenchmarkFormatError(f"no item of the {split} split in the data")
    return items
