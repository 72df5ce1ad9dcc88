"""ImgEdit-Bench (PKU-YuanGroup), basic single-turn suite: its data, its output layout and
its edit types.

The benchmark is released on the hub as the archive ``Benchmark.tar`` of the dataset
``sysuyy/ImgEdit``; it unpacks to ``Benchmark/singleturn/``, which holds the annotation
``singleturn.json`` and the source images in folders (``animal/000342021.jpg``, ...). The
annotation (the same as ``Benchmark/Basic/basic_edit.json`` in the GitHub repository) maps
each item's key to ``{"id": source path relative to the folder, "prompt": instruction,
"edit_type": type}``: 737 items of 9 :data:`EDIT_TYPES`. The type ``adjust`` was called
``alter`` until June 2025 and copies of the data still say so: it is read as ``adjust``
(:data:`RENAMED_TYPES`; the released judge has no rubric under ``alter``).

An editor's outputs follow the released script's layout: one flat folder of ``{key}.png``
(:func:`output_path`). The item id is the key.
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ieqa.data.loaders.base import BenchmarkFormatError, EnglishItem, read_json

__all__ = ["IMGEDIT_DATASET", "IMGEDIT_ARCHIVE", "EDIT_TYPES", "TYPE_COUNTS", "RENAMED_TYPES",
           "ANNOTATION_FILES", "ImgEditItem", "output_path", "read_imgedit", "resolve_data",
           "normalise_edit_type"]

IMGEDIT_DATASET = "sysuyy/ImgEdit"
#: the file of :data:`IMGEDIT_DATASET` that holds the benchmark
IMGEDIT_ARCHIVE = "Benchmark.tar"
#: the 9 edit types, in the order of the official leaderboard's columns (``compose`` is
#: its "Hybrid")
EDIT_TYPES: tuple[str, ...] = ("add", "adjust", "extract", "replace", "remove", "background",
                               "style", "compose", "action")
#: items per edit type in the released annotation (737 in all)
TYPE_COUNTS: dict[str, int] = {"add": 95, "adjust": 94, "extract": 117, "replace": 92,
                               "remove": 86, "background": 94, "style": 100, "compose": 23,
                               "action": 36}
#: old type names still found in copies of the data, and the names they are read as
RENAMED_TYPES: dict[str, str] = {"alter": "adjust"}
#: the annotation file's names: in the hub archive, and in the GitHub repository
ANNOTATION_FILES: tuple[str, ...] = ("singleturn.json", "basic_edit.json")


@dataclass(frozen=True)
class ImgEditItem(EnglishItem):
    """One ImgEdit-Bench item.

    Attributes:
        key: the item's key in the annotation (its id, and its output's file name).
        task_type: the edit type, one of :data:`EDIT_TYPES` (``alter`` read as ``adjust``).
        instruction: the edit instruction (``prompt``).
        source: the source image file.
        data_type: the type as the data spells it (``alter`` in old copies).
    """

    key: str
    task_type: str
    instruction: str
    source: Path
    data_type: str

    @property
    def id(self) -> str:
        return self.key


def output_path(outputs: str | os.PathLike[str], item: ImgEditItem) -> Path:
    """Where an editor's output of ``item`` lies: ``{key}.png`` in the output folder."""
    return Path(outputs) / f"{item.key}.png"


def normalise_edit_type(name: str) -> str:
    """The edit type as ieqa (and the released judge's prompt file) names it: ``alter`` is
    read as ``adjust``.

    Raises:
        BenchmarkFormatError: not an ImgEdit edit type.
    """
    t = RENAMED_TYPES.get(str(name).strip().lower(), str(name).strip().lower())
    if t not in EDIT_TYPES:
        raise BenchmarkFormatError(f"unknown ImgEdit edit type {name!r}; the suite has "
                                   f"{', '.join(EDIT_TYPES)} (alter is read as adjust)")
    return t


def _extract(archive: Path, into: Path) -> Path:
    """``singleturn/`` of the hub archive, unpacked under ``into`` once (members outside it
    and unsafe paths are refused by tarfile's ``data`` filter)."""
    done = into / ".extracted"
    if not done.is_file():
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if "singleturn" in Path(m.name).parts]
            if not members:
                raise BenchmarkFormatError(f"{archive} has no singleturn/ folder; is it "
                                           f"{IMGEDIT_DATASET}'s {IMGEDIT_ARCHIVE}?")
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
                tar.extractall(into, members=members, filter="data")
            else:
                unsafe = [m.name for m in members if m.issym() or m.islnk()
                          or Path(m.name).is_absolute() or ".." in Path(m.name).parts]
                if unsafe:
                    raise BenchmarkFormatError(f"{archive}: unsafe member {unsafe[0]!r}; "
                                               "unpack it yourself and pass the folder")
                tar.extractall(into, members=members)  # noqa: S202 - checked above
        done.write_text(str(archive) + "\n")
    return into


def resolve_data(data: str | os.PathLike[str] | None,
                 unpack_dir: str | os.PathLike[str]) -> Path:
    """The annotation file: under ``data`` (the unpacked ``Benchmark/singleturn`` folder, a
    folder above it, the annotation file itself, or the ``Benchmark.tar`` archive, which is
    unpacked into ``unpack_dir``), or the hub dataset's archive when it is in the local
    Hugging Face cache. The source images lie relative to the annotation's folder."""
    if data is None:
        try:
            from huggingface_hub import hf_hub_download

            data = hf_hub_download(IMGEDIT_DATASET, IMGEDIT_ARCHIVE, repo_type="dataset")
        except Exception as exc:  # offline, not cached, no access: say what to do
            raise BenchmarkFormatError(
                f"ImgEdit-Bench's data ({IMGEDIT_DATASET}, {IMGEDIT_ARCHIVE}) is not available "
                f"here ({type(exc).__name__}: {str(exc)[:200]}). Download it with `hf download "
                f"{IMGEDIT_DATASET} {IMGEDIT_ARCHIVE} --repo-type dataset --local-dir DIR` and "
                f"pass --data DIR/{IMGEDIT_ARCHIVE} (or the folder it unpacks to)") from None
    path = Path(data)
    if path.is_file() and tarfile.is_tarfile(path):
        path = _extract(path, Path(unpack_dir))
    if path.is_file():
        return path
    if not path.is_dir():
        raise BenchmarkFormatError(f"--data {path}: no such file or folder; it should be "
                                   f"{IMGEDIT_DATASET}'s {IMGEDIT_ARCHIVE} or the "
                                   "Benchmark/singleturn folder it unpacks to")
    for folder in (path, path / "singleturn", path / "Benchmark" / "singleturn"):
        for name in ANNOTATION_FILES:
            if (folder / name).is_file():
                return folder / name
    raise BenchmarkFormatError(
        f"--data {path}: no {' or '.join(ANNOTATION_FILES)} in it, in singleturn/ or in "
        f"Benchmark/singleturn/; unpack {IMGEDIT_DATASET}'s {IMGEDIT_ARCHIVE} and pass the "
        "folder (or pass the archive itself)")


def read_imgedit(data: str | os.PathLike[str] | None,
                 unpack_dir: str | os.PathLike[str]) -> list[ImgEditItem]:
    """The items in the annotation's order (see the module docstring).

    Raises:
        BenchmarkFormatError: no annotation, a malformed entry, an unknown edit type, or
            source images that are not there (listed).
    """
    annotation = resolve_data(data, unpack_dir)
    root = annotation.parent
    entries = read_json(annotation, dict, "a JSON object of items by key", nonempty=True)
    items: list[ImgEditItem] = []
    absent: list[str] = []
    for key, entry in entries.items():
        if not isinstance(entry, dict) or not all(
                isinstance(entry.get(f), str) for f in ("id", "prompt", "edit_type")):
            raise BenchmarkFormatError(f"{annotation}: item {key!r} lacks the string fields "
                                       "id, prompt and edit_type")
        source = root / entry["id"]
        if not source.is_file():
            absent.append(str(source))
        items.append(ImgEditItem(str(key), normalise_edit_type(entry["edit_type"]),
                                 entry["prompt"], source, entry["edit_type"]))
    if absent:
        raise BenchmarkFormatError(
            f"{len(absent)} of {len(items)} source images of {annotation} are missing, e.g. "
            + ", ".join(absent[:3]) + f"; unpack all of {IMGEDIT_ARCHIVE} next to the annotation")
    return items
