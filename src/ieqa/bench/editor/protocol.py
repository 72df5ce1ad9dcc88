"""What an editor benchmark is to ``bench-editor``: :class:`EditorProtocol`.

A protocol says where the benchmark's items come from and where an editor's output of each
lies, which judge is the benchmark's own, how one judged row becomes the item's numbers,
and how items become the published table. :func:`ieqa.bench.editor.run.bench_editor` does
the rest the same way for every benchmark (outputs present or missing, resumable scoring,
repeats, coverage, the judge's record), and :mod:`ieqa.bench.editor.report` writes what the
protocol's table says.

Each item a protocol reads has ``id``, ``task_type``, ``language``, ``key``,
``instruction``, ``source`` (a path) and ``intersection``.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.registry import EDITOR_BENCHMARKS
from ieqa.scorers.base import Scorer

__all__ = ["EditorProtocol", "ci_text", "first_file"]


def first_file(path: Path, suffix: str) -> Path | None:
    """``path`` itself when it is a ``suffix`` file, else the first ``suffix`` file under the
    folder ``path`` (in sorted order), else ``None``: what the detectors look at."""
    if path.is_file():
        return path if path.suffix == suffix else None
    return next(iter(sorted(path.rglob(f"*{suffix}"))), None) if path.is_dir() else None


def ci_text(ci: Sequence[float] | None, digits: int = 3) -> str:
    """``[low, high]`` of an interval, ``–`` when there is none."""
    if not ci or any(not math.isfinite(v) for v in ci):
        return "–"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def register_editor_benchmark(cls: type[EditorProtocol]) -> type[EditorProtocol]:
    """Class decorator: register an :class:`EditorProtocol` under its ``name`` in
    :data:`ieqa.registry.EDITOR_BENCHMARKS` (its description: the docstring's first line),
    so that ``ieqa bench-editor NAME``, :func:`ieqa.bench.editor.bench_editor` and ``ieqa
    list benchmarks`` know it. A benchmark of one's own registers the same way from its own
    module; nothing shared is edited (docs: "Add a benchmark or an evaluator")."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    title = (cls.__doc__ or cls.name).strip().splitlines()[0]
    title = title.replace(" (see the module docstring)", "").rstrip(".")
    parts = [title]
    if cls.task_types:
        parts.append(f"{len(cls.task_types)} task types")
    if cls.languages != ("en",):
        parts.append("languages " + "/".join(cls.languages))
    parts.append(f"judge {cls.official_judge}" if cls.official_judge else "metrics, no judge")
    if cls.dataset:
        parts.append(f"data {cls.dataset}")
    EDITOR_BENCHMARKS.add(cls.name, "; ".join(parts), factory=cls, tags=("editor",))
    return cls


class EditorProtocol(ABC):
    """One editor benchmark (see the module docstring)."""

    #: the benchmark's name on the command line
    name: str = ""
    #: the hub dataset its data comes from
    dataset: str = ""
    #: the catalog name of the benchmark's own judge
    official_judge: str = ""
    #: how its judge is called in tables (``"ImgEdit-Bench's official judge"``)
    official_label: str = ""
    #: other judges its authors released, by catalog name, with their labels; their rows
    #: carry the released reading as the official judge's do (ImgEdit-Judge)
    released_judges: Mapping[str, str] = {}
    #: the output layout, as the missing-output message states it
    layout: str = ""
    #: how ``--data`` gives the benchmark's data (``bench-editor`` and ``generate`` help)
    data_help: str = ""
    #: the task types, in the published tables' order
    task_types: tuple[str, ...] = ()
    #: the languages it has, in order
    languages: tuple[str, ...] = ("en",)
    #: the parts of a language's result that hold numbers (averaged over repeats)
    parts: tuple[str, ...] = ()
    #: the headline numbers of each part (their std over repeats is reported)
    metrics: tuple[str, ...] = ()
    #: the metric the per-type bars and the worst-items gallery use
    main_metric: str = ""
    #: the item field of :attr:`main_metric` (the gallery sorts on it)
    main_field: str = ""
    #: the table's columns (:meth:`table_row`)
    columns: tuple[str, ...] = ()
    #: options the official judge is built with unless given (``ieqa bench-editor``)
    official_options: dict[str, str] = {}
    #: what the table's 95 % interval is, in words (the report states it); empty: none
    interval: str = ""

    @classmethod
    def detect(cls, path: Path) -> bool:
        """Whether ``path`` (a file or folder) holds this benchmark's data: ``ieqa generate
        --data PATH`` finds the benchmark with it. The detectors of the registered
        benchmarks exclude each other (a path two of them claim is refused as ambiguous);
        the default claims nothing (then the benchmark is generated for by its name)."""
        return False

    def generation_skip(self, item: Any) -> str | None:
        """Why ``ieqa generate``, which calls a pipeline with one source image, cannot make
        the output of ``item`` (``None``: it can); a skipped item is listed in the run
        record, never generated as a guess."""
        return None

    @staticmethod
    def require_english(languages: Sequence[str], what: str) -> None:
        """Refuse ``languages`` without English (``what``: "X's instructions are", said
        before "English: --language en")."""
        if "en" not in {str(lang).strip().lower() for lang in languages}:
            from ieqa.bench.errors import BenchError

            raise BenchError(f"{what} English: --language en")

    def is_released_judge(self, judge: Scorer) -> bool:
        """Whether ``judge`` is the benchmark's official judge or another its authors
        released (:attr:`released_judges`)."""
        return judge.name == self.official_judge or judge.name in self.released_judges

    def judge_label(self, judge: Scorer) -> str:
        """How the report names ``judge``."""
        if judge.name == self.official_judge:
            return self.official_label
        return self.released_judges.get(
            judge.name, f"stand-in judge {judge.name} (not the benchmark's protocol; its own "
                        "scale)")

    def check_judge(self, judge: Scorer) -> None:  # noqa: B027 - most benchmarks take any judge
        """Raise :class:`~ieqa.bench.errors.BenchError` when ``judge`` cannot run this
        benchmark as it is configured (before anything is scored)."""

    @abstractmethod
    def read_items(self, data: str | os.PathLike[str] | None, languages: Sequence[str],
                   work_dir: Path) -> list[Any]:
        """The benchmark's items of ``languages`` (``work_dir``: where sources may be
        written or the data unpacked)."""

    @abstractmethod
    def output_path(self, folder: str | os.PathLike[str], item: Any) -> Path:
        """Where an editor's output of ``item`` lies under ``folder``."""

    @abstractmethod
    def item_values(self, row: Mapping[str, Any], judge: Scorer, item: Any) -> dict[str, Any]:
        """The item's numbers from its judged row (``None`` values when there are none)
        and ``error`` (``None``, or why the item has no number)."""

    def sample_meta(self, item: Any) -> dict[str, Any]:
        """What the judge needs of an item beyond source, output, instruction and task
        (the sample's ``meta``): the item's own ``meta()`` where its loader gives one."""
        meta = getattr(item, "meta", None)
        return meta() if callable(meta) else {}

    @abstractmethod
    def aggregate(self, entries: Sequence[Mapping[str, Any]], n_boot: int) -> dict[str, Any]:
        """One language and repeat: the parts (:attr:`parts`) and ``ci`` of these items."""

    @abstractmethod
    def aggregation(self) -> dict[str, str]:
        """What each part is, in words (recorded in ``results.json`` and the report)."""

    @abstractmethod
    def table_row(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """The table's numbers of one editor and language (:attr:`columns` without
        ``editor``, ``language`` and ``coverage``)."""

    @abstractmethod
    def per_type_rows(self, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                 list[str]]:
        """The per-type table of one editor and language: rows and columns."""

    @abstractmethod
    def type_values(self, result: Mapping[str, Any]) -> list[float]:
        """The main metric per task type (in :attr:`task_types`' order), for the bars."""

    @abstractmethod
    def card_line(self, entry: Mapping[str, Any]) -> str:
        """One judged item's numbers, as the report's gallery shows them."""

    def coverage(self, entries: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], str]:
        """What the coverage of one editor and language adds for these entries (all
        repeats): counts, and words for the coverage text (empty: nothing to add)."""
        return {}, ""

    def item_title(self, entry: Mapping[str, Any]) -> str:
        """How the report names an item."""
        return f"{entry['task_type']}/{entry['key']}"

    def generation_extra(self) -> dict[str, Any]:
        """What ``results.json`` records of the benchmark beyond the common fields."""
        return {}
