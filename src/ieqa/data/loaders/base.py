"""What every benchmark loader returns, the shared reading helpers, and the dispatcher.

A loader turns one public benchmark layout into a :class:`BenchmarkData`: the edits
(:class:`~ieqa.data.schema.EditSample`) with their human labels on the benchmark's own
scale, and for pairwise / multi-way benchmarks the human
:class:`~ieqa.data.schema.Preference` judgements between them. Every dimension name goes
through :func:`~ieqa.data.dimensions.canonical_dimension`.

:func:`load_benchmark` accepts either a registered benchmark name plus ``root=`` (the
folder you downloaded it to) or a path whose format is sniffed from its content.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image
from pydantic import ValidationError

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample, Preference, PreferenceLabel
from ieqa.errors import IeqaError, UnknownDimensionError
from ieqa.registry import BENCHMARKS

Protocol = Literal["pointwise", "pairwise", "multiway"]
PathLike = str | os.PathLike


class BenchmarkFormatError(IeqaError, ValueError):
    """A benchmark file is malformed, or its format cannot be recognised."""


class EnglishItem:
    """The part an item of an English-only editor benchmark shares: ``language`` is
    ``"en"`` and ``intersection`` (GEdit-Bench's subset flag) False."""

    @property
    def language(self) -> str:
        return "en"

    @property
    def intersection(self) -> bool:
        return False


def hub_dataset_folder(dataset: str, what: str, *, allow_patterns: Iterable[str] | None = None,
                       after_download: str = "") -> Path:
    """The folder of the hub dataset ``dataset`` in the local Hugging Face cache (fetched
    when the hub can be reached). When it is not available (offline and not cached, no
    access), a :class:`BenchmarkFormatError` names ``what`` and the ``hf download`` command
    to run, ``after_download`` (e.g. ``", unpack its images there,"``) before "and pass
    --data DIR"."""
    try:
        from huggingface_hub import snapshot_download

        kwargs = {"allow_patterns": list(allow_patterns)} if allow_patterns else {}
        return Path(snapshot_download(dataset, repo_type="dataset", **kwargs))
    except Exception as exc:  # offline, not cached, no access: say what to do
        raise BenchmarkFormatError(
            f"{what} ({dataset}) is not available here ({type(exc).__name__}: "
            f"{str(exc)[:200]}). Download it with `hf download {dataset} --repo-type dataset "
            f"--local-dir DIR`{after_download} and pass --data DIR") from None


# --------------------------------------------------------------------------- the result


@dataclass
class BenchmarkData:
    """A loaded benchmark.

    Attributes:
        name: benchmark name (a registered name, e.g. ``"genai-bench"``).
        protocol: ``"pointwise"`` (human scores in ``sample.scores`` on the benchmark's
            native scale, stated in ``meta["score_scale"]``), ``"pairwise"`` or
            ``"multiway"`` (human :attr:`preferences`; a multi-way group is identified by
            ``preference.meta["group_id"]`` and its size by ``preference.meta["K"]``).
        samples: the edits. For pairwise / multi-way benchmarks these are the distinct
            candidates the preferences refer to (score each once, then look results up by
            ``sample.id``).
        preferences: human pairwise judgements (empty for pointwise benchmarks).
        dimensions: canonical dimension names the labels are given on.
        meta: score scale, split names, source/citation and notes.
    """

    name: str
    protocol: Protocol
    samples: list[EditSample] = field(default_factory=list)
    preferences: list[Preference] = field(default_factory=list)
    dimensions: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """A few lines describing what was loaded."""
        lines = [f"{self.name}: {self.protocol}, {len(self.samples)} samples, "
                 f"{len(self.preferences)} preferences"]
        if self.dimensions:
            lines.append(f"  dimensions: {', '.join(self.dimensions)}")
        if self.preferences:
            labels = Counter(p.label.value for p in self.preferences)
            lines.append("  labels: " + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())))
            groups = {(p.meta["group_id"], p.meta["K"]) for p in self.preferences
                      if p.meta.get("K") and p.meta.get("group_id") is not None}
            if groups:
                sizes = Counter(k for _, k in groups)
                lines.append("  groups: " + ", ".join(f"K={k}: {n}" for k, n in sorted(sizes.items())))
        for key in ("score_scale", "splits"):
            if key in self.meta:
                lines.append(f"  {key.replace('_', ' ')}: {self.meta[key]}")
        return "\n".join(lines)

    def sample_by_id(self) -> dict[str, EditSample]:
        """The samples keyed by id."""
        return {s.id: s for s in self.samples}


# --------------------------------------------------------------------------- errors


def row_error(path: PathLike, where: str, message: str) -> BenchmarkFormatError:
    """An error naming the file and the row (``where``, e.g. ``"line 3"``)."""
    return BenchmarkFormatError(f"{path}, {where}: {message}")


@contextmanager
def row_guard(path: PathLike, where: str) -> Iterator[None]:
    """Report a value error raised while building a row's samples against that row."""
    try:
        yield
    except IeqaError:
        raise
    except ValidationError as e:
        detail = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'value'}: {err['msg']}"
                           for err in e.errors(include_url=False))
        raise row_error(path, where, detail) from e
    except (ValueError, TypeError) as e:
        raise row_error(path, where, f"{type(e).__name__}: {e}") from e


def build_rows(path: PathLike, rows: Iterable[tuple[str, Any]],
               build: Callable[[Any, int, str], Any]) -> list[Any]:
    """``[build(row, index, where) ...]`` over ``(where, row)`` pairs, each under
    :func:`row_guard`."""
    out = []
    for i, (where, row) in enumerate(rows):
        with row_guard(path, where):
            out.append(build(row, i, where))
    return out


def canonical(name: str, path: PathLike, where: str) -> str:
    """:func:`canonical_dimension`, with an unknown name reported against its row."""
    try:
        return canonical_dimension(str(name))
    except UnknownDimensionError as e:
        raise row_error(path, where, str(e)) from e


def require(row: Mapping[str, Any], keys: Iterable[str], path: PathLike, where: str) -> None:
    """Raise a row error when one of ``keys`` is missing (or null) in ``row``."""
    if not isinstance(row, Mapping):
        raise row_error(path, where, f"expected an object, got {type(row).__name__}")
    missing = [k for k in keys if row.get(k) is None]
    if missing:
        raise row_error(path, where, f"missing field(s) {missing}; the row has {sorted(row)}")


def as_float(value: Any, path: PathLike, where: str, what: str) -> float:
    """``value`` as a float, or a row error naming ``what``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise row_error(path, where, f"{what} must be a number, got {value!r}") from None
    return out


# --------------------------------------------------------------------------- images


def image_ref(value: Any, base_dir: PathLike | None, path: PathLike, where: str, what: str) -> Any:
    """An image reference for :class:`EditSample` from what a benchmark row holds.

    Accepts a path string (relative ones are joined to ``base_dir``), encoded ``bytes``,
    a Hugging Face ``Image`` feature cell ``{"bytes": ..., "path": ...}`` (the bytes win),
    or a ``PIL.Image``. ``None`` / ``""`` give ``None``.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, Mapping):
        data = value.get("bytes")
        if data:
            return bytes(data)
        return image_ref(value.get("path"), base_dir, path, where, what)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (str, os.PathLike)):
        p = Path(os.path.expanduser(os.fspath(value)))
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return p
    if isinstance(value, Image.Image):
        return value
    raise row_error(path, where, f"{what} must be an image path, bytes or an image cell, "
                                 f"got {type(value).__name__}")


# --------------------------------------------------------------------------- reading


def read_records(path: PathLike) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` for every record of a JSON array file or a JSONL file.

    ``where`` is ``"item N"`` (JSON array, 1-based) or ``"line N"`` (JSONL). A JSON file
    holding an object with a single list value (e.g. ``{"results": [...]}``) yields
    that list's items. Blank JSONL lines are skipped.
    """
    path = Path(path)
    first = ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                first = line.strip()
                break
    if not first:
        return
    if first.startswith("["):
        yield from _json_items(path)
        return
    if first.startswith("{"):
        try:
            json.loads(first)
        except json.JSONDecodeError:  # one JSON object spread over several lines
            yield from _json_items(path)
            return
        yield from _jsonl_lines(path)
        return
    raise BenchmarkFormatError(f"{path}: neither a JSON array nor JSON lines (starts with {first[:20]!r})")


def read_json(path: PathLike, expected: type | tuple[type, ...], what: str, *,
              nonempty: bool = False) -> Any:
    """The JSON value of the file ``path``: one of ``expected`` (``what``: it in words, for
    the error), not empty with ``nonempty``. A file that cannot be read or parsed, or that
    holds something else, raises :class:`BenchmarkFormatError` naming it."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchmarkFormatError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(value, expected) or (nonempty and not value):
        raise BenchmarkFormatError(f"{path}: expected {what}")
    return value


def _json_items(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise BenchmarkFormatError(f"{path}: not valid JSON ({e})") from e
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise BenchmarkFormatError(f"{path}: expected a JSON array of records (or an object "
                                       f"holding one), got an object with keys {sorted(data)[:10]}")
        data = lists[0]
    if not isinstance(data, list):
        raise BenchmarkFormatError(f"{path}: expected a JSON array of records, got {type(data).__name__}")
    for i, item in enumerate(data, 1):
        yield f"item {i}", item


def _jsonl_lines(path: Path) -> Iterator[tuple[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield f"line {lineno}", json.loads(line)
            except json.JSONDecodeError as e:
                raise row_error(path, f"line {lineno}", f"not valid JSON ({e})") from e


def read_delimited(path: PathLike, delimiter: str | None = None) -> Iterator[tuple[str, dict[str, str]]]:
    """``(where, row)`` for each data row of a CSV/TSV file with a header line.

    ``where`` is ``"line N"`` (the line number in the file, header = line 1). The
    delimiter is a tab for ``.tsv`` files and sniffed among ``,;\\t`` otherwise.
    """
    path = Path(path)
    with open(path, encoding="utf-8-sig", newline="") as f:
        if delimiter is None:
            if path.suffix.lower() == ".tsv":
                delimiter = "\t"
            else:
                sample = f.read(8192)
                f.seek(0)
                try:
                    delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
                except csv.Error:
                    delimiter = ","
        reader = csv.DictReader(f, delimiter=delimiter)
        if not reader.fieldnames:
            raise BenchmarkFormatError(f"{path}: empty file (expected a header line)")
        for row in reader:
            if None in row:
                raise row_error(path, f"line {reader.line_num}",
                                f"more cells than the {len(reader.fieldnames)} header columns")
            if not any((v or "").strip() for v in row.values()):
                continue
            yield f"line {reader.line_num}", {k.strip(): (v if v is not None else "") for k, v in row.items()}


def table_columns(path: PathLike) -> list[str]:
    """Column names of a Parquet or Arrow file (without reading its rows)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    return list(_open_arrow(path).schema.names)


def read_table_rows(path: PathLike, columns: list[str] | None = None,
                    batch_size: int = 64) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` for each row of a Parquet file or an Arrow IPC file (the
    ``*.arrow`` files ``datasets.save_to_disk`` writes), streamed in small batches.
    ``where`` is ``"row N"`` (1-based)."""
    import pyarrow as pa

    path = Path(path)
    n = 0
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(path) as pf:
                names = [c for c in columns if c in pf.schema_arrow.names] if columns else None
                for batch in pf.iter_batches(batch_size=batch_size, columns=names):
                    for row in batch.to_pylist():
                        n += 1
                        yield f"row {n}", row
            return
        reader = _open_arrow(path)
        for batch in reader:
            if columns:
                batch = batch.select([c for c in columns if c in batch.schema.names])
            for row in batch.to_pylist():
                n += 1
                yield f"row {n}", row
    except pa.ArrowException as e:
        raise BenchmarkFormatError(f"{path}: cannot read as Parquet/Arrow ({e})") from e


def _open_arrow(path: Path) -> Any:
    import pyarrow as pa

    try:
        return pa.ipc.open_stream(pa.memory_map(str(path)))
    except pa.ArrowInvalid:
        file_reader = pa.ipc.open_file(pa.memory_map(str(path)))
        return (file_reader.get_batch(i) for i in range(file_reader.num_record_batches))


def first_record(path: PathLike, chunk: int = 1 << 20) -> Mapping[str, Any] | None:
    """The first record of a JSON array or JSONL file, or ``None`` when it has none (or
    cannot be read). Only the first ``chunk`` characters are parsed when the record fits
    in them, so sniffing a large JSON array stays cheap."""
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(chunk)
        text = head.lstrip()
        rec: Any = None
        if text.startswith("["):
            try:
                rec, _ = json.JSONDecoder().raw_decode(text[1:].lstrip())
            except json.JSONDecodeError:
                rec = None
        elif text.startswith("{"):
            line = text.split("\n", 1)[0]
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                rec = None
        if rec is None and (len(head) >= chunk or text.startswith("{")):
            # the first record is longer than the chunk, or one JSON object spans lines
            rec = next((r for _, r in read_records(path)), None)
        return rec if isinstance(rec, Mapping) else None
    except (OSError, UnicodeDecodeError, IeqaError):
        return None


def data_files(root: Path, suffixes: tuple[str, ...], max_depth: int = 3) -> list[Path]:
    """Files under ``root`` (a folder) with one of ``suffixes``, sorted, at most
    ``max_depth`` folders deep, hidden folders skipped."""
    out = []
    base_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if len(Path(dirpath).parts) - base_depth >= max_depth:
            dirnames[:] = []
        out.extend(Path(dirpath) / f for f in filenames if f.lower().endswith(suffixes))
    return sorted(out)


def matching_files(root: Path, suffixes: tuple[str, ...], accept: Callable[[Path], bool],
                   max_depth: int = 3) -> list[Path]:
    """``[root]`` when ``root`` is a file (taken as given), else the files under it with
    one of ``suffixes`` that ``accept`` recognises (see :func:`data_files`)."""
    if root.is_file():
        return [root]
    return [p for p in data_files(root, suffixes, max_depth) if accept(p)]


def sniff_files(path: Path, suffixes: tuple[str, ...], accept: Callable[[Path], bool],
                max_depth: int = 2) -> bool:
    """Whether ``path`` (a file, or a folder searched ``max_depth`` deep) holds a file
    that ``accept`` recognises: the usual format sniffer of a loader."""
    if path.is_file():
        return accept(path)
    return any(accept(p) for p in data_files(path, suffixes, max_depth))


# --------------------------------------------------------------------------- preferences


def label_from_scores(a: float, b: float, tol: float = 0.0) -> PreferenceLabel:
    """``a>b`` / ``b>a`` by the larger score, ``tie`` when ``|a - b| <= tol``."""
    if abs(a - b) <= tol:
        return PreferenceLabel.TIE
    return PreferenceLabel.A if a > b else PreferenceLabel.B


def preferences_from_groups(
    samples: Iterable[EditSample], dimension: str = "overall", *, multiway: bool = False,
    tol: float = 1e-9,
) -> list[Preference]:
    """All within-group pairs (i < j, in sample order) labelled by ``sample.scores[dimension]``.

    Samples without a ``group_id`` or without that score are left out. With ``multiway``
    each preference carries ``meta["group_id"]`` and ``meta["K"]`` (the group's size);
    ``meta["group_id"]`` is always set.
    """
    dim = canonical_dimension(dimension)
    groups: dict[str, list[EditSample]] = {}
    for s in samples:
        if s.group_id is not None and dim in s.scores:
            groups.setdefault(s.group_id, []).append(s)
    out = []
    for gid, members in groups.items():
        for a, b in itertools.combinations(members, 2):
            meta: dict[str, Any] = {"group_id": gid}
            if multiway:
                meta["K"] = len(members)
            out.append(Preference(a=a, b=b, label=label_from_scores(a.scores[dim], b.scores[dim], tol),
                                  dimension=dim, meta=meta))
    return out


def distinct_samples(preferences: Iterable[Preference]) -> list[EditSample]:
    """The distinct samples (by id, first occurrence) the preferences refer to."""
    seen: dict[str, EditSample] = {}
    for p in preferences:
        for s in (p.a, p.b):
            seen.setdefault(s.id, s)
    return list(seen.values())


def dimensions_of(samples: Iterable[EditSample], preferences: Iterable[Preference] = ()) -> list[str]:
    """Canonical dimensions present in the samples' scores and the preferences, sorted."""
    dims = {d for s in samples for d in s.scores}
    dims.update(p.dimension for p in preferences)
    return sorted(dims)


# --------------------------------------------------------------------------- dispatch


@dataclass(frozen=True)
class _Format:
    priority: int
    name: str
    description: str
    sniff: Callable[[Path], bool]
    load: Callable[..., BenchmarkData]


_FORMATS: list[_Format] = []


def register_format(name: str, description: str, sniff: Callable[[Path], bool],
                    load: Callable[..., BenchmarkData], *, priority: int = 50,
                    summary: str | None = None, tags: tuple[str, ...] = (),
                    benchmark: Callable[..., BenchmarkData] | None = None) -> None:
    """Add a sniffable format; ``sniff(path)`` should be cheap (an exception counts as "not
    this format"). Formats are tried by ascending ``priority``: specific layouts low,
    generic ones (the ieqa manifest) high. ``description`` says what its files look like.

    A format that is a benchmark also passes ``benchmark`` (its loader, called with
    ``root=``), ``summary`` (its line in ``ieqa list benchmarks``) and ``tags``: the one call
    registers the benchmark in :data:`ieqa.registry.BENCHMARKS`, with its format detector
    as the entry's ``info``."""
    fmt = _Format(priority, name, description, sniff, load)
    _FORMATS.append(fmt)
    _FORMATS.sort(key=lambda f: f.priority)
    if benchmark is not None:
        BENCHMARKS.add(name, summary or description, factory=benchmark, tags=tags, info=fmt)


def remove_format(name: str) -> None:
    """Take back a format registered with :func:`register_format` (and its benchmark entry,
    if it registered one); no error when there is none."""
    _FORMATS[:] = [f for f in _FORMATS if f.name != name]
    if name in BENCHMARKS and BENCHMARKS.get(name).info is not None:
        BENCHMARKS.remove(name)


def supported_formats() -> dict[str, str]:
    """Format names that :func:`load_benchmark` can recognise, with descriptions."""
    _ensure_loaded()
    return {f.name: f.description for f in _FORMATS}


def sniff_format(path: PathLike) -> str | None:
    """The name of the first registered format that recognises ``path``, or ``None``."""
    _ensure_loaded()
    p = Path(os.path.expanduser(os.fspath(path)))
    for fmt in _FORMATS:
        try:
            if fmt.sniff(p):
                return fmt.name
        except Exception:  # a sniffer must not decide the outcome by crashing
            continue
    return None


def _ensure_loaded() -> None:
    import ieqa.data.loaders  # noqa: F401  (registers the formats and benchmarks)


def load_benchmark(name_or_path: PathLike, **kw: Any) -> BenchmarkData:
    """Load a benchmark.

    ``name_or_path`` is either a registered benchmark name (see
    ``ieqa.registry.BENCHMARKS.names()``), with ``root=`` the folder holding your download
    of it, or a path to a file/folder whose format is recognised from its content. Other
    keyword arguments go to the format's loader (e.g. ``split=``, ``view=``).
    """
    _ensure_loaded()
    text = os.fspath(name_or_path)
    if text in BENCHMARKS.names():
        factory = BENCHMARKS.get(text).factory
        if factory is None:  # pragma: no cover - every loader entry has one
            raise BenchmarkFormatError(f"benchmark {text!r} has no loader")
        return factory(**kw)
    path = Path(os.path.expanduser(text))
    if not path.exists():
        raise BenchmarkFormatError(
            f"{text!r} is neither a registered benchmark ({', '.join(BENCHMARKS.names())}) "
            "nor an existing file or folder")
    fmt = sniff_format(path)
    if fmt is None:
        listing = "\n".join(f"  {f.name}: {f.description}" for f in _FORMATS)
        raise BenchmarkFormatError(
            f"{path}: cannot tell which benchmark format this is. Supported formats:\n{listing}\n"
            "Pass a registered name with root=<folder> to choose the loader yourself, "
            "e.g. load_benchmark('aurora', root=...).")
    loader = next(f.load for f in _FORMATS if f.name == fmt)
    return loader(path, **kw)


def resolve_root(root: PathLike | None, name: str, hint: str) -> Path:
    """``root`` as an existing path, or an error telling how to get the benchmark."""
    if root is None:
        raise BenchmarkFormatError(f"load_benchmark({name!r}) needs root=<the folder or file of your "
                                   f"download>. {hint}")
    p = Path(os.path.expanduser(os.fspath(root)))
    if not p.exists():
        raise BenchmarkFormatError(f"{name}: {p} does not exist. {hint}")
    return p
