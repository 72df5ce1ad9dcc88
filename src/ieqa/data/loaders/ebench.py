"""EBench-18K (LMM4Edit): MOS per edit and dimension, as ms-swift query/response records.

Layout checked against IntMeGroup/LMM4Edit, ``data/test_c.json``, ``data/test_e.json``,
``data/test_v.json`` (JSON lines despite the suffix): ``query`` ("With the image editing
prompt [<instruction>], the source image <image> is edited to generate the target image
<image>. Please rate the <dimension> of the target image on a scale of 0-100 …"),
``response`` ("The quality score is 48.95") and ``images`` ([source, edited], absolute paths
of the authors' machine, e.g. ``/mnt/data/xzt/MM/editing_all/targetimg_h/model00/H_00_04.jpg``).
The three dimension splits: ``_v`` visual quality, ``_e`` "editing correspondence"
(-> ``instruction_alignment``), ``_c`` "attribute preservation" (-> ``content_preservation``).
``test_yn.json`` (yes/no questions) is not a score split and is skipped.

An edit's scores from the split files are merged into one sample (id
``<model folder>/<image stem>``, editor = the model folder). Scores are on 0-100.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    canonical,
    data_files,
    first_record,
    image_ref,
    read_records,
    register_format,
    require,
    resolve_root,
    row_error,
    row_guard,
)
from ieqa.data.schema import EditSample

NAME = "ebench"
FIELDS = ("query", "response", "images")
#: The split suffix of each file and the dimension it scores.
SPLIT_DIMENSIONS = {"v": "visual_quality", "e": "instruction_alignment", "c": "content_preservation"}
_SPLIT_FILE = re.compile(r"^(?:(?P<split>.+)_)?(?P<dim>[vec])\.jsonl?$", re.IGNORECASE)
_INSTRUCTION = re.compile(r"prompt\s*\[(?P<text>.*?)\]\s*,\s*the source image", re.IGNORECASE | re.DOTALL)
_DIMENSION = re.compile(r"\brate the (?P<dim>[^.\[\]<>]+?) of the (?:target|edited) image", re.IGNORECASE)
_SCORE = re.compile(r"score is\s*\[?\s*(?P<v>[-+]?\d+(?:\.\d+)?)", re.IGNORECASE)
_HINT = ("The EBench-18K files come from the LMM4Edit release (https://github.com/IntMeGroup/LMM4Edit, "
         "data/test_{c,e,v}.json plus the images); pass image_remap={'<their prefix>': '<your folder>'} "
         "to point the absolute image paths at your copy.")


def _remap(value: Any, remap: Mapping[str, str] | None) -> Any:
    if not remap or not isinstance(value, str):
        return value
    for old, new in remap.items():
        if value.startswith(old):
            return os.path.join(new, value[len(old):].lstrip("/\\"))
    return value


def _file_dimension(path: Path) -> str | None:
    m = _SPLIT_FILE.match(path.name)
    return SPLIT_DIMENSIONS[m.group("dim").lower()] if m else None


def _dimension(query: str, file_dim: str | None, path: Path, where: str) -> str:
    m = _DIMENSION.search(query)
    if m:
        phrase = " ".join(m.group("dim").lower().split())
        return canonical(phrase, path, where)
    if file_dim is not None:
        return file_dim
    raise row_error(path, where, "cannot tell the dimension: the query has no 'rate the <dimension> of the "
                                 "target image' and the file name no _v/_e/_c suffix")


def load_files(paths: Sequence[Path], *, image_remap: Mapping[str, str] | None = None,
               name: str = NAME, source: str | None = None) -> BenchmarkData:
    """Load and merge EBench split files (JSON lines of query/response/images)."""
    samples: dict[str, EditSample] = {}
    scores: dict[str, dict[str, float]] = {}
    for path in paths:
        file_dim = _file_dimension(path)
        for where, row in read_records(path):
            with row_guard(path, where):
                require(row, FIELDS, path, where)
                query, images = str(row["query"]), row["images"]
                if not isinstance(images, list) or len(images) != 2:
                    raise row_error(path, where, f"images must be [source, edited], got {images!r}")
                score = _SCORE.search(str(row["response"]))
                if not score:
                    raise row_error(path, where, f"response must read 'The quality score is XX.XX', "
                                                 f"got {str(row['response'])[:60]!r}")
                dim = _dimension(query, file_dim, path, where)
                ins = _INSTRUCTION.search(query)
                instruction = ins.group("text").strip() if ins else ""
                src = image_ref(_remap(images[0], image_remap), path.parent, path, where, "images[0]")
                edited = image_ref(_remap(images[1], image_remap), path.parent, path, where, "images[1]")
                if edited is None:
                    raise row_error(path, where, "the edited image path is empty")
                ep = Path(str(images[1]))
                sid = f"{ep.parent.name}/{ep.stem}" if ep.parent.name else ep.stem
                if sid not in samples:
                    group = Path(str(images[0])).stem if images[0] else sid
                    samples[sid] = EditSample(id=sid, source=src, edited=edited, instruction=instruction,
                                              editor=ep.parent.name or None, group_id=f"{group}|{instruction}",
                                              meta={"image_paths": list(map(str, images))})
                    scores[sid] = {}
                if dim in scores[sid]:
                    raise row_error(path, where, f"edit {sid!r} already has a {dim} score")
                scores[sid][dim] = float(score.group("v"))
    if not samples:
        raise BenchmarkFormatError(f"{source or paths}: no EBench records found")
    out = [s.model_copy(update={"scores": scores[s.id]}) for s in samples.values()]
    dims = sorted({d for sc in scores.values() for d in sc})
    return BenchmarkData(
        name=name, protocol="pointwise", samples=out, dimensions=dims,
        meta={"source": source or ", ".join(map(str, paths)), "files": [str(p) for p in paths],
              "score_scale": [0.0, 100.0], "splits": {p.name: _file_dimension(p) or "from the query"
                                                      for p in paths},
              "notes": "one sample per edit, scores merged from the dimension split files",
              "citation": "LMM4Edit: Benchmarking and Evaluating Multimodal Image Editing with LMMs (ACM MM 2025)"},
    )


def _is_score_file(path: Path) -> bool:
    if path.suffix not in (".json", ".jsonl"):
        return False
    rec = first_record(path)
    return (rec is not None and set(FIELDS) <= set(rec)
            and bool(_SCORE.search(str(rec.get("response", "")))))


def load_ebench(root: PathLike | None = None, *, split: str | None = "test",
                image_remap: Mapping[str, str] | None = None) -> BenchmarkData:
    """The registered loader: ``root`` is the folder of split files (``test_c.json``,
    ``test_e.json``, ``test_v.json``…) or one file. ``split`` picks files named
    ``<split>_<v|e|c>.json`` (``None``: all score files). ``image_remap`` maps path
    prefixes of the released absolute image paths to your copy."""
    root = resolve_root(root, NAME, _HINT)
    if root.is_file():
        files = [root]
    else:
        files = [p for p in data_files(root, (".json", ".jsonl"), 2) if _SPLIT_FILE.match(p.name)]
        if split is not None:
            files = [p for p in files if (_SPLIT_FILE.match(p.name).group("split") or "") == split]
        files = [p for p in files if _is_score_file(p)]
        if not files:
            raise BenchmarkFormatError(f"{root}: no EBench score files"
                                       f"{'' if split is None else f' for split {split!r}'} found. {_HINT}")
    return load_files(files, image_remap=image_remap, source=str(root))


def _sniff(path: Path) -> bool:
    if path.is_file():
        return _is_score_file(path)
    return any(_is_score_file(p) for p in data_files(path, (".json", ".jsonl"), 2) if _SPLIT_FILE.match(p.name))


register_format(NAME, "EBench-18K / LMM4Edit: JSON lines of query, response 'The quality score is XX.XX', "
                "images [source, edited]; split files *_v/_e/_c", _sniff, lambda p, **kw: load_ebench(p, **kw), priority=50,
                summary="EBench-18K (LMM4Edit): 0-100 MOS for visual quality, editing alignment and "
                "attribute preservation",
                tags=("pointwise", "human", "public"), benchmark=load_ebench)
