"""StructEditBench (Zhuo et al. 2025, "Factuality Matters: When Image Generation and Editing
Meet Structured Visuals", zhuole1025/Structured-Visuals): 1,714 edits of structured visuals
(charts, diagrams, math figures, tables, graphs, puzzles, science), each with a list of
questions about the edited image and their answers (32,031 in all), judged by StructScore.

The data is the hub dataset ``hshjerry0315/StructEditBench`` (Parquet). What the authors'
``qwen_scoring.py`` reads of a row, and ieqa with it: ``qa_list`` (a list, or its JSON text,
of ``{"question", "answer" or "ground_truth_answer", "label"}``; ``label`` is ``editing``
(what the edit should change) or ``maintain`` (what it should keep)) and ``category``
(coarse: ``math``, ``graph``, ``chart``, ``puzzle``, ``science``, ``table``; many chart
rows carry a finer edit tag instead, which the released code groups by as it is). An
item's key is its row number (0-based, across the files in name order), as the released
code numbers items.

To generate, ``ieqa generate`` also needs the source image and the instruction, which the
released scorer does not read: the source from ``source_image`` (or ``input_image``,
``image``), the instruction from ``instruction`` (or ``edit_prompt``, ``prompt``,
``edit_instruction``), the first column present, as the lmms-eval port of the benchmark
reads them. A row without them is skipped by ``generate``, with the reason.

The authors' flow keeps each editor's outputs as a dataset column ``output_image_{model}``;
ieqa reads an editor's outputs from a folder instead, ``DIR/{key}.png`` (:func:`output_path`).
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkFormatError,
    EnglishItem,
    hub_dataset_folder,
    read_table_rows,
    table_columns,
)

__all__ = ["STRUCTEDIT_DATASET", "SOURCE_COLUMNS", "INSTRUCTION_COLUMNS", "StructEditItem",
           "StructQA", "output_path", "read_structeditbench", "resolve_data"]

STRUCTEDIT_DATASET = "hshjerry0315/StructEditBench"
#: where the source image and the instruction may be, in the order they are looked for
SOURCE_COLUMNS = ("source_image", "input_image", "image")
INSTRUCTION_COLUMNS = ("instruction", "edit_prompt", "prompt", "edit_instruction")


@dataclass(frozen=True)
class StructQA:
    """One question of an item: ``question``, ``answer`` (the ground truth) and ``label``
    (``editing`` when the data has no label, as the released code reads it; ``None`` when
    the data holds a null label, which the released tally counts in neither share)."""

    question: str | None
    answer: str | None
    label: str | None


@dataclass(frozen=True)
class StructEditItem(EnglishItem):
    """One StructEditBench item.

    Attributes:
        index: its row number (the released key).
        category: its ``category`` as the data holds it.
        qa: its questions, in order.
        instruction: the edit instruction ("" when the data has none).
        source: its source image written as PNG, or None when the data has none.
    """

    index: str
    category: str
    qa: tuple[StructQA, ...] = field(default_factory=tuple)
    instruction: str = ""
    source: Path | None = None

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
        """What the judge needs (an :class:`~ieqa.data.schema.EditSample`'s ``meta``)."""
        return {"category": self.category,
                "qa": [{"question": q.question, "answer": q.answer, "label": q.label}
                       for q in self.qa]}


def output_path(outputs: str | os.PathLike[str], item: StructEditItem) -> Path:
    """Where an editor's output of ``item`` lies: ``{key}.png``."""
    return Path(outputs) / f"{item.key}.png"


def resolve_data(data: str | os.PathLike[str] | None) -> list[Path]:
    """The Parquet (or Arrow) files: ``data`` (a file or a folder), or the hub dataset's
    when it is in the local Hugging Face cache."""
    if data is None:
        data = hub_dataset_folder(STRUCTEDIT_DATASET, "StructEditBench's data",
                                  allow_patterns=["*.parquet"])
    path = Path(data)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BenchmarkFormatError(f"--data {path}: no such file or folder; it should hold the "
                                   f"Parquet files of {STRUCTEDIT_DATASET}")
    files = sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".arrow"))
    if not files:
        raise BenchmarkFormatError(
            f"--data {path}: no Parquet file; download the data with `hf download "
            f"{STRUCTEDIT_DATASET} --repo-type dataset --local-dir DIR` and pass --data DIR")
    return files


def is_structedit(path: Path) -> bool:
    """Whether ``path`` (a file or folder) holds StructEditBench rows (``qa_list`` and
    ``category`` columns)."""
    try:
        files = resolve_data(path)
        return {"qa_list", "category"} <= set(table_columns(files[0]))
    except Exception:  # noqa: BLE001 - a detector answers no, it does not raise
        return False


def _qa(value: Any, where: str) -> tuple[StructQA, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(f"{where}: qa_list is text that is not JSON ({exc})") \
                from None
    if not isinstance(value, list):
        raise BenchmarkFormatError(f"{where}: qa_list must be a list of questions, got "
                                   f"{type(value).__name__}")
    out = []
    for k, qa in enumerate(value):
        if not isinstance(qa, dict):
            raise BenchmarkFormatError(f"{where}: qa_list[{k}] must be an object")
        answer = qa.get("ground_truth_answer", qa.get("answer"))
        label = qa.get("label", "editing")  # as released: absent is editing, null is neither
        out.append(StructQA(None if qa.get("question") is None else str(qa["question"]),
                            None if answer is None else str(answer),
                            None if label is None else str(label)))
    return tuple(out)


def _first(row: dict[str, Any], columns: tuple[str, ...]) -> Any:
    return next((row[c] for c in columns if row.get(c) not in (None, "")), None)


def read_structeditbench(data: str | os.PathLike[str] | None,
                         sources_dir: str | os.PathLike[str]) -> list[StructEditItem]:
    """The items in row order (see the module docstring), each source written as PNG under
    ``sources_dir`` (kept when already there).

    Raises:
        BenchmarkFormatError: no data, no ``qa_list``/``category`` column, or a malformed
            ``qa_list``.
    """
    from PIL import Image

    items: list[StructEditItem] = []
    for path in resolve_data(data):
        columns = table_columns(path)
        missing = [c for c in ("qa_list", "category") if c not in columns]
        if missing:
            raise BenchmarkFormatError(f"{path}: no column {', '.join(missing)}; it is not "
                                       f"{STRUCTEDIT_DATASET}'s data (columns: "
                                       f"{', '.join(columns)})")
        wanted = ["qa_list", "category", *SOURCE_COLUMNS, *INSTRUCTION_COLUMNS]
        for where, row in read_table_rows(path, [c for c in wanted if c in columns]):
            index = str(len(items))
            source = None
            cell = _first(row, SOURCE_COLUMNS)
            if cell is not None:
                source = Path(sources_dir) / f"{index}.png"
                if not source.is_file():
                    data_bytes = cell.get("bytes") if isinstance(cell, dict) else cell
                    if not data_bytes:
                        raise BenchmarkFormatError(f"{path}, {where}: the source image holds no "
                                                   "bytes")
                    source.parent.mkdir(parents=True, exist_ok=True)
                    with Image.open(io.BytesIO(bytes(data_bytes))) as image:
                        image.save(source.with_suffix(".tmp.png"), format="PNG")
                    source.with_suffix(".tmp.png").replace(source)
            items.append(StructEditItem(
                index=index, category=str(row.get("category") or "unknown"),
                qa=_qa(row.get("qa_list") or [], f"{path}, {where}"),
                instruction=str(_first(row, INSTRUCTION_COLUMNS) or ""), source=source))
    if not items:
        raise BenchmarkFormatError("no StructEditBench row in the data")
    return items
