"""AURORA / AURORA-Bench: ground-truth edit triplets, and human ratings (pointwise, pairwise).

Layouts:

* triplets — checked against McGill-NLP/AURORA, ``test.json``: a JSON array of
  ``{"input", "output", "prompt", "task"}`` (magicbrush rows add ``mask``, some action
  rows ``pos``), image paths relative to the file. The shared development subset
  (``aurora_subset/pairs.json``) uses ``instruction`` instead of ``prompt``; both are read.
  These carry no human ratings: the protocol is pointwise with empty ``scores`` and the
  edited image is the dataset's ground truth (``editor="ground_truth"``).
* human ratings — the AURORA repository keeps them off git (Google Drive), so these follow
  how TIGER-AI-Lab/EditReward's ``EditReward/evaluate/eval_bench.py`` reads them, and
  DESIGN.md §5: pointwise ``{"prompt", "input" | "path_src", "gen" | "path" | "output",
  "score", "model"}``; pairwise ``{"prompt", "path_src", "path1", "path2",
  "model1_dim1_score", "model2_dim1_score"}`` (or ``"scores": [s1, s2]``; ``model1`` /
  ``model2`` name the editors). A pairwise label is the larger score (equal -> tie).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    as_float,
    build_rows,
    data_files,
    distinct_samples,
    first_record,
    image_ref,
    label_from_scores,
    read_records,
    register_format,
    resolve_root,
    row_error,
)
from ieqa.data.schema import EditSample, Preference

NAME = "aurora"
_SOURCE_KEYS = ("input", "path_src")
_EDITED_KEYS = ("gen", "path", "output")
_TEXT_KEYS = ("prompt", "instruction")
_HINT = ("Point root at a folder holding AURORA's test.json (https://github.com/McGill-NLP/AURORA) "
         "or a file of AURORA-Bench human ratings.")


def _first(row: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if row.get(k) not in (None, "")), None)


def kind_of(rec: Mapping[str, Any] | None) -> str | None:
    """``"pairwise"``, ``"pointwise"``, ``"triplets"`` or ``None`` for a first record."""
    if not isinstance(rec, Mapping) or _first(rec, _TEXT_KEYS) is None:
        return None
    if {"path1", "path2"} <= set(rec):
        return "pairwise"
    if "score" in rec and _first(rec, _SOURCE_KEYS) is not None and _first(rec, _EDITED_KEYS) is not None:
        return "pointwise"
    if {"input", "output"} <= set(rec):
        return "triplets"
    return None


def _text(row: Mapping[str, Any], path: Path, where: str) -> str:
    text = _first(row, _TEXT_KEYS)
    if text is None:
        raise row_error(path, where, "missing the instruction ('prompt' or 'instruction')")
    return str(text)


def _image(row: Mapping[str, Any], keys: tuple[str, ...], path: Path, where: str) -> Any:
    value = _first(row, keys)
    if value is None:
        raise row_error(path, where, f"missing the image path (one of {list(keys)})")
    return image_ref(value, path.parent, path, where, keys[0])


def _triplet(row: Mapping[str, Any], i: int, ids: set[str], path: Path, where: str) -> EditSample:
    if not isinstance(row, Mapping):
        raise row_error(path, where, f"expected an object, got {type(row).__name__}")
    text = _text(row, path, where)
    source, edited = _image(row, ("input",), path, where), _image(row, ("output",), path, where)
    task = None if row.get("task") is None else str(row["task"])
    sid = f"{task or 'aurora'}/{Path(str(row['output'])).stem}"
    if sid in ids:
        sid = f"{sid}#{i}"
    ids.add(sid)
    meta = {k: row[k] for k in ("mask", "pos") if row.get(k) is not None}
    return EditSample(id=sid, source=source, edited=edited, instruction=text, task=task,
                      editor="ground_truth", group_id=f"{row['input']}::{text}", meta=meta)


def _pointwise(row: Mapping[str, Any], i: int, path: Path, where: str) -> EditSample:
    text = _text(row, path, where)
    score = as_float(row.get("score"), path, where, "score")
    model = row.get("model")
    src_key = _first(row, _SOURCE_KEYS)
    return EditSample(
        id=str(row.get("filename") or row.get("id") or f"{i}"), instruction=text,
        source=_image(row, _SOURCE_KEYS, path, where), edited=_image(row, _EDITED_KEYS, path, where),
        editor=None if model is None else str(model), group_id=f"{src_key}::{text}",
        scores={"overall": score}, task=None if row.get("task") is None else str(row["task"]))


def _pairwise(row: Mapping[str, Any], i: int, path: Path, where: str) -> Preference:
    text = _text(row, path, where)
    if isinstance(row.get("scores"), (list, tuple)):
        if len(row["scores"]) != 2:
            raise row_error(path, where, f"scores must hold two numbers, got {row['scores']!r}")
        raw = row["scores"]
    elif "model1_dim1_score" in row and "model2_dim1_score" in row:
        raw = (row["model1_dim1_score"], row["model2_dim1_score"])
    else:
        raise row_error(path, where, "a pairwise rating needs 'scores': [s1, s2] or "
                                     "'model1_dim1_score' and 'model2_dim1_score'")
    s = [as_float(v, path, where, f"score {k + 1}") for k, v in enumerate(raw)]
    source = _image(row, ("path_src", "input"), path, where)
    gid = f"{row.get('path_src') or row.get('input')}::{text}"
    sides = []
    for k in (1, 2):
        model = row.get(f"model{k}")
        sides.append(EditSample(id=f"{i}_{k}", source=source, edited=_image(row, (f"path{k}",), path, where),
                                instruction=text, editor=None if model is None else str(model),
                                group_id=gid, scores={"overall": s[k - 1]}))
    return Preference(a=sides[0], b=sides[1], label=label_from_scores(s[0], s[1]), dimension="overall",
                      meta={"index": i, "group_id": gid})


def load_file(path: PathLike, *, name: str = NAME) -> BenchmarkData:
    """Load one AURORA JSON/JSONL file (triplets, pointwise or pairwise ratings; the kind
    is read from the first record). Relative image paths are resolved against the file's
    folder."""
    path = Path(path)
    kind = kind_of(first_record(path))
    if kind is None:
        raise BenchmarkFormatError(
            f"{path}: not an AURORA file: expected records with prompt/instruction and either "
            "input+output (triplets), score (pointwise) or path1+path2 (pairwise)")
    meta: dict[str, Any] = {"source": str(path), "kind": kind,
                            "citation": "Krojer et al. 2024, AURORA (arXiv:2407.03471)"}
    if kind == "triplets":
        ids: set[str] = set()
        samples = build_rows(path, read_records(path), lambda row, i, where: _triplet(row, i, ids, path, where))
        meta["notes"] = "ground-truth edit triplets without human ratings (editor='ground_truth')"
        return BenchmarkData(name=name, protocol="pointwise", samples=samples, dimensions=[], meta=meta)
    if kind == "pointwise":
        samples = build_rows(path, read_records(path), lambda row, i, where: _pointwise(row, i, path, where))
        meta["score_scale"] = "as rated in AURORA-Bench (native human scores)"
        return BenchmarkData(name=name, protocol="pointwise", samples=samples, dimensions=["overall"],
                             meta=meta)
    prefs = build_rows(path, read_records(path), lambda row, i, where: _pairwise(row, i, path, where))
    meta["labels"] = "a = path1, b = path2, by the larger human score (equal scores: tie)"
    return BenchmarkData(name=name, protocol="pairwise", samples=distinct_samples(prefs),
                         preferences=prefs, dimensions=["overall"], meta=meta)


def _candidates(root: Path) -> list[Path]:
    return [p for p in data_files(root, (".json", ".jsonl"), 1) if kind_of(first_record(p))]


def load_aurora(root: PathLike | None = None, *, file: str | None = None) -> BenchmarkData:
    """The registered loader: ``root`` is one AURORA file, or a folder holding
    ``pairs.json`` / ``test.json`` (or exactly one other AURORA file; choose with ``file=``)."""
    root = resolve_root(root, NAME, _HINT)
    if root.is_file():
        return load_file(root)
    if file is not None:
        return load_file(root / file)
    for preferred in ("pairs.json", "test.json"):
        if (root / preferred).is_file() and kind_of(first_record(root / preferred)):
            return load_file(root / preferred)
    found = _candidates(root)
    if len(found) == 1:
        return load_file(found[0])
    raise BenchmarkFormatError(f"{root}: found {len(found)} AURORA files ({[p.name for p in found][:6]}); "
                               f"pass one with file=<name>. {_HINT}")


def _sniff(path: Path) -> bool:
    if path.is_file():
        return path.suffix in (".json", ".jsonl") and kind_of(first_record(path)) is not None
    return bool(_candidates(path))


register_format(NAME, "AURORA: edit triplets (input, output, prompt/instruction, task) or AURORA-Bench "
                "ratings (pointwise: score; pairwise: path1/path2 with scores)",
                _sniff, lambda p, **kw: load_aurora(p, **kw), priority=70,
                summary="AURORA: ground-truth edit triplets, or AURORA-Bench pointwise/pairwise human "
                "ratings",
                tags=("pointwise", "pairwise", "public"), benchmark=load_aurora)
