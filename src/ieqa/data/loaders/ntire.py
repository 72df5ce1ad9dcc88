"""NTIRE-style MOS tables (NTIRE 2026 X-AIGC Quality Assessment, Track 2: image editing).

Not verified against a public file: no copy of the challenge's label files could be found.
The layout follows DESIGN.md §5 and the track as the DS-IEQA paper describes it (MOS for
visual quality, editing fidelity and content preservation; validation/test edits split
into in-distribution and out-of-distribution subsets, the latter from unseen editors; final
score 0.7·S_in + 0.3·S_out). Columns are matched by name, case- and punctuation-
insensitively, and ``columns=`` maps any of them explicitly:

* ``edited`` — edited image path: ``edited``, ``edited_image``, ``output``, ``target``,
  ``image``, ``image_name``, ``filename``, ``name``, ``dist``;
* ``source`` — ``source``, ``source_image``, ``src``, ``input``, ``original``, ``reference``, ``ref``;
* ``instruction`` — ``instruction``, ``prompt``, ``edit_prompt``, ``edit_instruction``, ``text``;
* ``editor`` — ``model``, ``editor``, ``method``; ``id`` — ``id``, ``uid``;
* ``split`` — ``split``, ``subset``, ``distribution``, ``domain``, ``ood`` (values such as
  ``in`` / ``id`` / ``in-distribution`` and ``out`` / ``ood`` / ``out-of-distribution``,
  or 0/1 in an ``ood`` column);
* MOS — every other column whose name, without a ``mos`` prefix/suffix, is a dimension
  alias (``visual_quality``, ``editing_fidelity``, ``content_preservation``, ``MOS_VQ``…);
  a bare ``mos`` column is ``overall``.

Image paths are relative to the table's folder (or ``image_root``). Samples carry
``meta["split"]`` (``"in"``, ``"out"`` or the raw value); ``meta["splits"]`` counts them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    as_float,
    data_files,
    image_ref,
    read_delimited,
    register_format,
    resolve_root,
    row_error,
    row_guard,
)
from ieqa.data.schema import EditSample
from ieqa.errors import UnknownDimensionError

NAME = "ntire-xaigc"
ROLES: dict[str, tuple[str, ...]] = {
    "edited": ("edited", "edited image", "edited path", "output", "output image", "target", "target image",
               "image", "image name", "image path", "filename", "file name", "name", "dist", "distorted"),
    "source": ("source", "source image", "source path", "src", "input", "input image", "original",
               "reference", "ref"),
    "instruction": ("instruction", "prompt", "edit prompt", "edit instruction", "text"),
    "editor": ("model", "editor", "method", "model name"),
    "id": ("id", "uid", "sample id"),
    "split": ("split", "subset", "distribution", "domain", "ood", "is ood", "set"),
}
_SPLIT_VALUES = {"in": "in", "id": "in", "ind": "in", "in distribution": "in", "indistribution": "in",
                 "0": "in", "false": "in", "out": "out", "ood": "out", "out of distribution": "out",
                 "outofdistribution": "out", "1": "out", "true": "out"}
_HINT = "Point root at the challenge's MOS table (CSV/TSV) or the folder holding it."


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", name.lower()).strip()


def mos_dimension(column: str) -> str | None:
    """The canonical dimension a MOS column name stands for, or ``None``."""
    text = _norm(column)
    if text == "mos":
        return "overall"
    for cand in (text, re.sub(r"^mos ", "", text), re.sub(r" mos$", "", text)):
        if cand and cand != "mos":
            try:
                return canonical_dimension(cand)
            except UnknownDimensionError:
                continue
    return None


def map_columns(header: list[str], columns: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """``(roles, mos)``: the column playing each role, and MOS column -> dimension."""
    columns = dict(columns or {})
    roles: dict[str, str] = {}
    for role, col in columns.items():
        if role in ROLES:
            roles[role] = col
    for role, aliases in ROLES.items():
        if role in roles:
            continue
        for col in header:
            if _norm(col) in aliases and col not in roles.values():
                roles[role] = col
                break
    mos: dict[str, str] = {}
    for col in header:
        if col in roles.values():
            continue
        dim = canonical_dimension(columns[col]) if col in columns else mos_dimension(col)
        if dim is not None:
            mos[col] = dim
    return roles, mos


def load_table(path: PathLike, *, columns: Mapping[str, str] | None = None,
               image_root: PathLike | None = None, name: str = NAME) -> BenchmarkData:
    """Load one MOS table (CSV or TSV). ``columns`` maps a role (``edited``, ``source``,
    ``instruction``, ``editor``, ``id``, ``split``) to a column name, or a column name to a
    dimension, when the automatic matching gets it wrong."""
    path = Path(path)
    base = Path(image_root).expanduser() if image_root is not None else path.parent
    rows = list(read_delimited(path))
    if not rows:
        raise BenchmarkFormatError(f"{path}: no data rows")
    header = list(rows[0][1])
    roles, mos = map_columns(header, columns)
    if "edited" not in roles:
        raise BenchmarkFormatError(f"{path}: no edited-image column among {header}; name it 'edited' "
                                   "or pass columns={'edited': '<column>'}")
    if not mos:
        raise BenchmarkFormatError(f"{path}: no MOS column (a dimension name such as visual_quality, "
                                   f"editing_fidelity, content_preservation) among {header}; "
                                   "pass columns={'<column>': '<dimension>'}")
    samples, splits = [], Counter()
    ids: set[str] = set()
    for i, (where, row) in enumerate(rows):
        with row_guard(path, where):
            edited = image_ref(row[roles["edited"]], base, path, where, roles["edited"])
            if edited is None:
                raise row_error(path, where, f"empty {roles['edited']!r}")
            scores = {}
            for col, dim in mos.items():
                if row[col].strip() == "":
                    continue
                scores[dim] = as_float(row[col], path, where, f"MOS column {col!r}")
            sid = row[roles["id"]].strip() if "id" in roles else ""
            sid = sid or Path(row[roles["edited"]]).stem or str(i)
            if sid in ids:
                raise row_error(path, where, f"id {sid!r} appears twice")
            ids.add(sid)
            meta: dict[str, Any] = {}
            if "split" in roles:
                raw = row[roles["split"]].strip()
                meta["split"] = _SPLIT_VALUES.get(_norm(raw), _SPLIT_VALUES.get(raw.lower(), raw))
                splits[meta["split"]] += 1
            text = row.get(roles.get("instruction", ""), "")
            source = image_ref(row[roles["source"]], base, path, where, roles["source"]) if "source" in roles else None
            samples.append(EditSample(
                id=sid, source=source, edited=edited, instruction=text,
                editor=(row[roles["editor"]].strip() or None) if "editor" in roles else None,
                group_id=f"{row[roles['source']]}::{text}" if "source" in roles else None,
                scores=scores, meta=meta))
    observed = [v for s in samples for v in s.scores.values()]
    meta_out: dict[str, Any] = {
        "source": str(path), "columns": {"roles": roles, "mos": mos},
        "score_scale": f"as in the table (observed {min(observed):g}..{max(observed):g})",
        "notes": "layout follows DESIGN.md §5 (not verified against a public file); "
                 "NTIRE final = 0.7*S_in + 0.3*S_out (ieqa.metrics.challenge.ntire_score)",
    }
    if splits:
        meta_out["splits"] = dict(sorted(splits.items()))
    return BenchmarkData(name=name, protocol="pointwise", samples=samples,
                         dimensions=sorted(set(mos.values())), meta=meta_out)


def _tables(root: Path, columns: Mapping[str, str] | None = None) -> list[Path]:
    return [p for p in data_files(root, (".csv", ".tsv"), 2) if _is_table(p, columns)]


def _is_table(path: Path, columns: Mapping[str, str] | None = None) -> bool:
    if path.suffix.lower() not in (".csv", ".tsv") or re.search(r"_rater\d+\.tsv$", path.name, re.I):
        return False
    try:
        first = next(iter(read_delimited(path)), None)
    except (OSError, UnicodeDecodeError, BenchmarkFormatError):
        return False
    if first is None:
        return False
    try:
        roles, mos = map_columns(list(first[1]), columns)
    except UnknownDimensionError:
        return False
    return "edited" in roles and bool(mos)


def load_ntire(root: PathLike | None = None, *, columns: Mapping[str, str] | None = None,
               image_root: PathLike | None = None, file: str | None = None) -> BenchmarkData:
    """The registered loader: ``root`` is the MOS table or a folder holding exactly one
    (choose with ``file=``)."""
    root = resolve_root(root, NAME, _HINT)
    if root.is_dir():
        if file is not None:
            root = root / file
        else:
            found = _tables(root, columns)
            if len(found) != 1:
                raise BenchmarkFormatError(f"{root}: found {len(found)} MOS tables "
                                           f"({[p.name for p in found][:6]}); pass file=<name>. {_HINT}")
            root = found[0]
    return load_table(root, columns=columns, image_root=image_root)


def _sniff(path: Path) -> bool:
    return _is_table(path) if path.is_file() else bool(_tables(path))


register_format(NAME, "NTIRE-style MOS table (CSV/TSV): edited/source image, instruction, one MOS column "
                "per dimension, optional in/out-of-distribution split column",
                _sniff, lambda p, **kw: load_ntire(p, **kw), priority=60,
                summary="NTIRE X-AIGC track 2 style MOS table: per-dimension MOS, "
                "in/out-of-distribution split",
                tags=("pointwise", "human", "challenge"), benchmark=load_ntire)
