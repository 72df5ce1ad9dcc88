"""GEdit-Bench (StepFun, Step1X-Edit): its data, its output layout and its task types.

The hub dataset ``stepfun-ai/GEdit-Bench`` holds 606 items per language in Parquet files,
with the columns ``task_type`` (one of the 11 :data:`TASK_TYPES`), ``key``, ``instruction``,
``instruction_language`` (``en`` or ``cn``), ``input_image`` and ``input_image_raw``
(images as ``{"bytes", "path"}``) and ``Intersection_exist`` (bool). ``key`` is not unique
across task types, so an item is ``(task_type, language, key)``: its id is
``"{task_type}/{language}/{key}"`` (:func:`item_id`).

An editor's outputs follow the benchmark's layout: ``DIR/fullset/{task_type}/{language}/
{key}.png`` (:func:`output_path`). The judge sees ``input_image`` as the source, as the
released script does (its generation example saves it as ``{key}_SRCIMG.png``):
:func:`read_gedit` writes each source once as PNG under ``sources_dir`` with the same
layout.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from ieqa.data.loaders.base import BenchmarkFormatError, hub_dataset_folder

__all__ = ["GEDIT_DATASET", "LANGUAGES", "TASK_TYPES", "GEditItem", "item_id", "output_path",
           "read_gedit", "resolve_data", "normalise_language"]

GEDIT_DATASET = "stepfun-ai/GEdit-Bench"
#: the 11 task types, in the released scripts' order
TASK_TYPES: tuple[str, ...] = (
    "background_change", "color_alter", "material_alter", "motion_change", "ps_human",
    "style_change", "subject-add", "subject-remove", "subject-replace", "text_change",
    "tone_transfer")
#: the languages as the data spells them
LANGUAGES: tuple[str, ...] = ("en", "cn")
_COLUMNS = ("task_type", "key", "instruction", "instruction_language", "input_image",
            "Intersection_exist")


@dataclass(frozen=True)
class GEditItem:
    """One GEdit-Bench item.

    Attributes:
        task_type: one of :data:`TASK_TYPES`.
        language: ``en`` or ``cn``.
        key: the item's key (unique only within a task type and language).
        instruction: the edit instruction.
        intersection: ``Intersection_exist``: the item is in the "-I" subset.
        source: the PNG of ``input_image`` written by :func:`read_gedit`.
    """

    task_type: str
    language: str
    key: str
    instruction: str
    intersection: bool
    source: Path

    @property
    def id(self) -> str:
        return item_id(self.task_type, self.language, self.key)


def item_id(task_type: str, language: str, key: str) -> str:
    """An item's id: ``"{task_type}/{language}/{key}"``."""
    return f"{task_type}/{language}/{key}"


def output_path(outputs: str | os.PathLike[str], item: GEditItem) -> Path:
    """Where an editor's output of ``item`` lies: ``fullset/{task_type}/{language}/{key}.png``."""
    return Path(outputs) / "fullset" / item.task_type / item.language / f"{item.key}.png"


def normalise_language(language: str) -> str:
    """``en`` or ``cn``; ``zh`` (the released scripts' option) is read as ``cn``, the
    data's spelling (with ``zh`` the released statistics come out NaN)."""
    lang = language.strip().lower()
    lang = {"zh": "cn"}.get(lang, lang)
    if lang not in LANGUAGES:
        raise BenchmarkFormatError(f"unknown GEdit-Bench language {language!r}; choose en or cn (zh is "
                         "read as cn)")
    return lang


def resolve_data(data: str | os.PathLike[str] | None) -> list[Path]:
    """The Parquet (or Arrow) files of the dataset: under ``data`` (a folder or one file),
    or the hub dataset's files when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(GEDIT_DATASET, "GEdit-Bench's data",
                                  allow_patterns=["*.parquet"])
    path = Path(data)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".arrow"))
    else:
        raise BenchmarkFormatError(f"--data {path}: no such file or folder; it should hold the Parquet "
                         f"files of {GEDIT_DATASET}")
    if not files:
        raise BenchmarkFormatError(f"--data {path}: no .parquet or .arrow file in it; download "
                         f"{GEDIT_DATASET} there (`hf download {GEDIT_DATASET} --repo-type "
                         "dataset --local-dir DIR`)")
    return files


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    if path.suffix == ".parquet":
        yield from pq.ParquetFile(path).iter_batches(batch_size=64)
        return
    with pa.memory_map(str(path)) as source:
        try:
            reader: Any = pa.ipc.open_stream(source)
        except pa.ArrowInvalid:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)
            return
        yield from reader


def _image_bytes(cell: Any, base: Path, where: str) -> bytes:
    if isinstance(cell, dict):
        if cell.get("bytes"):
            return bytes(cell["bytes"])
        if cell.get("path") and (base / cell["path"]).is_file():
            return (base / cell["path"]).read_bytes()
    elif isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    raise BenchmarkFormatError(f"{where}: input_image holds no image bytes")


def read_gedit(data: str | os.PathLike[str] | None, languages: Sequence[str],
               sources_dir: str | os.PathLike[str]) -> list[GEditItem]:
    """The items of ``languages`` in file order, each source written as PNG under
    ``sources_dir`` (kept when already there).

    Raises:
        BenchmarkFormatError: missing data or columns, an unknown task type or language, or an
            item id twice.
    """
    langs = {normalise_language(lang) for lang in languages}
    items: list[GEditItem] = []
    seen: dict[str, str] = {}
    for path in resolve_data(data):
        for b, batch in enumerate(_batches(path)):
            missing = [c for c in _COLUMNS if c not in batch.schema.names]
            if missing:
                raise BenchmarkFormatError(f"{path}: no column {', '.join(missing)}; it is not "
                                 f"{GEDIT_DATASET}'s data (columns: {', '.join(batch.schema.names)})")
            for r, row in enumerate(batch.select(list(_COLUMNS)).to_pylist()):
                where = f"{path} (batch {b}, row {r})"
                lang = normalise_language(str(row["instruction_language"]))
                if lang not in langs:
                    continue
                task = str(row["task_type"])
                if task not in TASK_TYPES:
                    raise BenchmarkFormatError(f"{where}: unknown task_type {task!r} (GEdit-Bench has "
                                     f"{', '.join(TASK_TYPES)})")
                key = str(row["key"])
                ident = item_id(task, lang, key)
                if ident in seen:
                    raise BenchmarkFormatError(f"{where}: item {ident} twice (also {seen[ident]})")
                seen[ident] = where
                source = Path(sources_dir) / task / lang / f"{key}.png"
                if not source.is_file():
                    image = Image.open(io.BytesIO(_image_bytes(row["input_image"], path.parent,
                                                               where)))
                    source.parent.mkdir(parents=True, exist_ok=True)
                    tmp = source.with_suffix(".tmp.png")
                    image.save(tmp, format="PNG")
                    tmp.replace(source)
                items.append(GEditItem(task, lang, key, str(row["instruction"]),
                                       bool(row["Intersection_exist"]), source))
    if not items:
        raise BenchmarkFormatError(f"no GEdit-Bench item in language {' or '.join(sorted(langs))} in the data")
    return items
