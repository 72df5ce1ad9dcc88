"""What an input argument names: a folder of edits, a manifest, a benchmark download or a
registered benchmark name (:func:`resolve_input`), as ``ieqa score`` and ``ieqa explain``
read it; :func:`open_benchmark` loads a benchmark from a name or a path."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.data.inputs import BadRow, InputItem, is_edit_folder, iter_folder
from ieqa.data.loaders import BenchmarkData, load_benchmark
from ieqa.data.loaders.base import sniff_format
from ieqa.data.manifest import first_row_keys, iter_manifest_items
from ieqa.data.textfile import json_lines, text_lines
from ieqa.errors import IeqaError, OptionError
from ieqa.registry import BENCHMARKS

__all__ = ["InputError", "is_manifest_file", "open_benchmark", "resolve_input", "strict_check"]

_MANIFEST_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet", ".csv")
_MAX_LISTED = 20


class InputError(OptionError):
    """An input argument names nothing ieqa can read as given; ``option`` names the argument
    to change (``INPUT...``, ``--root``, ``--view``)."""


def open_benchmark(benchmark: str, root: Path | None, view: str | None = None) -> BenchmarkData:
    """The benchmark from a registered name + ``root`` (the folder or file of its download), or
    from a path; :class:`InputError` names the option to change."""
    kw: dict[str, Any] = {} if view is None else {"view": view}
    if benchmark in BENCHMARKS.names():
        if root is None:
            raise InputError(
                f"{benchmark!r} is a registered benchmark: pass --root <the folder or file of your "
                "download> (or give its path to --benchmark)", option="--root")
        kw["root"] = root
        target: str | Path = benchmark
    else:
        if root is not None:
            raise InputError("--root goes with a registered benchmark name; --benchmark "
                                     "is already a path", option="--root")
        target = benchmark
    try:
        return load_benchmark(target, **kw)
    except TypeError as exc:
        if view is not None:
            raise InputError(f"this benchmark's loader takes no view ({exc}); --view "
                                     "is for ShapesEdit folders", option="--view") from None
        raise


def _count_rows(path: Path) -> int:
    if path.name.endswith(".parquet"):
        return pq.ParquetFile(path).metadata.num_rows
    n = sum(1 for _, line in text_lines(path, error=IeqaError) if line.strip())
    return n - 1 if path.name.endswith(".csv") else n


def is_manifest_file(path: Path) -> bool:
    """An existing file with a manifest suffix (.jsonl, .jsonl.gz, .parquet, .csv)."""
    return path.is_file() and path.name.lower().endswith(_MANIFEST_SUFFIXES)


def _manifest_or_none(path: Path) -> tuple[Iterator[InputItem], int, str] | None:
    """The rows of a manifest file, None when the file is a benchmark's own format; an
    empty or unreadable file is an error of its own."""
    if path.name.endswith(".parquet"):
        try:
            pq.read_schema(path)
        except (OSError, pa.ArrowException) as exc:
            raise IeqaError(f"{path} is not a readable Parquet file ({exc}); re-export it, or "
                            "give a .jsonl or .csv manifest") from None
    keys = first_row_keys(path)
    if keys is None and _count_rows(path) <= 0:
        raise IeqaError(f"{path} is empty: a manifest needs one row per edit (see the manifest "
                        "spec in the docs, or write one with ieqa manifest FOLDER -o ...)")
    if keys is None and path.name.endswith((".jsonl", ".jsonl.gz")):
        _first_line_problem(path)
    if keys is None and not path.name.endswith(".csv"):
        return None
    if keys is not None and "input_key" in keys:
        raise IeqaError(f"{path} is a score file written by ieqa score, not a manifest: give it to "
                        "ieqa bench --predictions or ieqa rank-editors (or write a manifest with "
                        "ieqa manifest FOLDER -o ...)")
    if keys is not None and "edited" not in keys:
        return None
    return iter_manifest_items(path), _count_rows(path), f"manifest:{path.resolve()}"


def _first_line_problem(path: Path) -> None:
    """Raise what is wrong with the first row of a JSONL file whose first row gave no keys
    (as a later line's problem is named), if anything is."""
    for _ in json_lines(path, error=IeqaError, hint="write one JSON object per line (see "
                                                    "the manifest spec in the docs)"):
        return


def resolve_input(target: str, root: Path | None) -> tuple[Iterable[InputItem], int, str]:
    """``(items, total, description)`` of a FOLDER, MANIFEST or benchmark argument."""
    path = Path(target)
    if root is None and is_edit_folder(path):
        items = list(iter_folder(path))
        return items, len(items), f"folder:{path.resolve()}"
    if root is None and is_manifest_file(path):
        found = _manifest_or_none(path)
        if found is not None:
            return found
    if root is None and not path.exists() and target not in BENCHMARKS.names():
        raise InputError(
            f"{target} does not exist; give a folder of edits, a manifest, a benchmark path or a "
            "registered benchmark name (ieqa list benchmarks)", option="INPUT...")
    if root is None and path.is_dir() and not any(path.iterdir()):
        raise IeqaError(f"{path} is an empty folder; a folder of edits has source/, edited/ and "
                        "instructions.csv (see ieqa manifest --help)")
    if root is None and sniff_format(path) is None:
        raise IeqaError(
            f"{path} is not an input ieqa score reads: give a folder of edits (source/, "
            "edited/[<editor>/], instructions.csv), a manifest (.jsonl, .jsonl.gz, .parquet or "
            ".csv rows with an 'edited' image), a benchmark download ieqa recognises (ieqa list "
            "benchmarks; or its registered name with --root), or SOURCE EDITED \"instruction\"")
    bench = open_benchmark(target, root)
    return bench.samples, len(bench.samples), f"benchmark:{bench.name}:{target}"


def strict_check(items: Iterable[InputItem]) -> list[InputItem]:
    """All items, or :class:`IeqaError` listing every bad row when there is any."""
    items = list(items)
    bad = [i for i in items if isinstance(i, BadRow)]
    if bad:
        lines = "\n".join(f"  {b.error}" for b in bad[:_MAX_LISTED])
        more = f"\n  ... and {len(bad) - _MAX_LISTED} more" if len(bad) > _MAX_LISTED else ""
        raise IeqaError(f"--strict: {len(bad)} of {len(items)} input rows are malformed; nothing "
                        f"was scored:\n{lines}{more}\nfix them, or drop --strict to score the "
                        "others and record these as error rows")
    return items


