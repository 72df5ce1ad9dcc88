"""ImagenHub human ratings: one TSV per rater, ``[SC, PQ]`` per image.

Layout checked against TIGER-AI-Lab/ImagenHub, ``eval/human_ratings/<Task>/<Task>_rater<N>.tsv``
(e.g. ``Text-Guided_IE/Text-Guided_IE_rater1.tsv``): a header ``uid`` followed by one
column per model; each row an image id (``sample_100081_1.jpg``); each cell ``[SC, PQ]``
with values in {0, 0.5, 1} (spacing varies: ``[0,1]``, ``[1 , 1]``). The rating guideline
is ``docs/Guidelines/humaneval.md`` there. The image folders are not part of that
repository, so where the images lie is up to ``image_root`` (see :func:`load_imagenhub`).

Per rater, overall O = sqrt(SC * PQ); an image's scores are the means over its raters of
SC (``instruction_alignment``), PQ (``visual_quality``) and O (``overall``), on [0, 1].
Every rater's values are kept as :class:`~ieqa.data.schema.Rating` objects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ieqa.data.combine import viescore
from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    data_files,
    read_delimited,
    register_format,
    resolve_root,
    row_error,
    row_guard,
    sniff_files,
)
from ieqa.data.schema import EditSample, Rating

NAME = "imagenhub"
ALLOWED = (0.0, 0.5, 1.0)
_RATER_FILE = re.compile(r"^(?P<task>.+)_rater(?P<rater>\d+)\.tsv$", re.IGNORECASE)
_CELL = re.compile(r"^\[\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\]$")
_MISSING = {"", "nan", "na", "n/a", "none", "-", "null"}
_HINT = ("Point root at ImagenHub's eval/human_ratings folder (or one task folder, or one "
         "<Task>_rater<N>.tsv) from https://github.com/TIGER-AI-Lab/ImagenHub.")


def parse_cell(cell: str, path: PathLike, where: str, column: str) -> tuple[float, float] | None:
    """``"[SC, PQ]"`` -> ``(SC, PQ)``; an empty / ``nan`` cell -> ``None``. Values must be
    0, 0.5 or 1; anything else is a row error naming the column."""
    text = cell.strip()
    if text.lower() in _MISSING:
        return None
    m = _CELL.match(text)
    if not m:
        raise row_error(path, where, f"column {column!r}: expected '[SC, PQ]', got {cell!r}")
    values = (float(m.group(1)), float(m.group(2)))
    for name, v in zip(("SC", "PQ"), values, strict=True):
        if v not in ALLOWED:
            raise row_error(path, where, f"column {column!r}: {name}={v:g} is not one of 0, 0.5, 1")
    return values


def overall(sc: float, pq: float) -> float:
    """ImagenHub's overall score of one rating: sqrt(SC * PQ)."""
    return viescore(sc, pq)


def _rater_files(root: Path, task: str | Sequence[str] | None) -> dict[str, list[tuple[str, Path]]]:
    if root.is_file():
        m = _RATER_FILE.match(root.name)
        if not m:
            raise BenchmarkFormatError(f"{root}: expected a file named <Task>_rater<N>.tsv")
        candidates = sorted(root.parent.glob(f"{m.group('task')}_rater*.tsv"))
    else:
        candidates = data_files(root, (".tsv",), max_depth=2)
    by_task: dict[str, list[tuple[str, Path]]] = {}
    for p in candidates:
        m = _RATER_FILE.match(p.name)
        if m:
            by_task.setdefault(m.group("task"), []).append((f"rater{int(m.group('rater'))}", p))
    if task is not None:
        wanted = [task] if isinstance(task, str) else list(task)
        missing = [t for t in wanted if t not in by_task]
        if missing:
            raise BenchmarkFormatError(f"{root}: no rater files for task(s) {missing}; found {sorted(by_task)}")
        by_task = {t: by_task[t] for t in wanted}
    elif not root.is_file():
        editing = {t: v for t, v in by_task.items() if t.endswith("_IE")}
        by_task = editing or by_task
    if not by_task:
        raise BenchmarkFormatError(f"{root}: no <Task>_rater<N>.tsv files found. {_HINT}")
    return by_task


def _read_rater(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for where, row in read_delimited(path, delimiter="\t"):
        with row_guard(path, where):
            if "uid" not in row:
                raise row_error(path, where, f"the first column must be 'uid', got columns {list(row)}")
            uid = row["uid"].strip()
            if not uid:
                raise row_error(path, where, "empty uid")
            for model, cell in row.items():
                if model == "uid":
                    continue
                if not model:
                    raise row_error(path, where, "a model column has no name in the header")
                value = parse_cell(cell, path, where, model)
                if value is not None:
                    if (uid, model) in out:
                        raise row_error(path, where, f"uid {uid!r} appears twice")
                    out[(uid, model)] = value
    return out


def _image_root(image_root: PathLike | None, task: str) -> Path | None:
    if image_root is None:
        return None
    return Path(str(image_root).replace("{task}", task)).expanduser()


def load_imagenhub(root: PathLike | None = None, *, task: str | Sequence[str] | None = None,
                   image_root: PathLike | None = None) -> BenchmarkData:
    """Load ImagenHub human ratings as a pointwise benchmark.

    ``root``: the ``human_ratings`` folder, a task folder, or one rater TSV (its sibling
    rater files of the same task are read too). ``task``: task name(s) such as
    ``"Text-Guided_IE"``; by default every ``*_IE`` (image editing) task found.
    ``image_root``: the folder of generated images, laid out ``<image_root>/<Model>/<uid>``
    with sources in ``<image_root>/input/<uid>``; a ``{task}`` placeholder is replaced by
    the task name. Without it, ``edited`` is ``<tsv folder>/<Model>/<uid>`` (a placeholder
    that need not exist) and ``source`` is empty.
    """
    root = resolve_root(root, NAME, _HINT)
    samples: list[EditSample] = []
    raters_per_task: dict[str, list[str]] = {}
    for task_name, files in sorted(_rater_files(root, task).items()):
        per_rater = {rater: _read_rater(p) for rater, p in sorted(files)}
        raters_per_task[task_name] = sorted(per_rater)
        keys: dict[tuple[str, str], None] = {}
        for table in per_rater.values():
            keys.update(dict.fromkeys(table))
        img_root = _image_root(image_root, task_name)
        base = img_root if img_root is not None else files[0][1].parent
        for uid, model in sorted(keys, key=lambda k: (k[1], k[0])):
            ratings: list[Rating] = []
            sc, pq, o = [], [], []
            for rater, table in per_rater.items():
                if (uid, model) not in table:
                    continue
                s, q = table[(uid, model)]
                sc.append(s)
                pq.append(q)
                o.append(overall(s, q))
                ratings += [Rating(rater=rater, dimension="instruction_alignment", value=s),
                            Rating(rater=rater, dimension="visual_quality", value=q),
                            Rating(rater=rater, dimension="overall", value=o[-1])]
            samples.append(EditSample(
                id=f"{task_name}/{model}/{uid}", edited=base / model / uid,
                source=None if img_root is None else img_root / "input" / uid,
                task=task_name, editor=model, group_id=f"{task_name}/{uid}",
                scores={"instruction_alignment": sum(sc) / len(sc), "visual_quality": sum(pq) / len(pq),
                        "overall": sum(o) / len(o)},
                ratings=ratings, meta={"uid": uid, "n_raters": len(sc)},
            ))
    meta: dict[str, Any] = {
        "source": str(root), "score_scale": [0.0, 1.0], "tasks": sorted(raters_per_task),
        "raters": raters_per_task,
        "notes": "SC -> instruction_alignment, PQ -> visual_quality, overall = mean over raters of "
                 "sqrt(SC*PQ); each rater's values are in sample.ratings.",
        "citation": "Ku et al. 2024, ImagenHub (ICLR 2024, arXiv:2310.01596)",
    }
    if image_root is None:
        meta["images"] = "not located: pass image_root=<folder with <Model>/<uid> and input/<uid>>"
    return BenchmarkData(name=NAME, protocol="pointwise", samples=samples,
                         dimensions=["instruction_alignment", "overall", "visual_quality"], meta=meta)


def _sniff(path: Path) -> bool:
    return sniff_files(path, (".tsv",), lambda p: bool(_RATER_FILE.match(p.name)))


register_format(NAME, "ImagenHub human ratings: <Task>_rater<N>.tsv files of '[SC, PQ]' cells",
                _sniff, lambda p, **kw: load_imagenhub(p, **kw), priority=20,
                summary="ImagenHub human ratings: [SC, PQ] from 3 raters per edit, overall sqrt(SC*PQ)",
                tags=("pointwise", "human", "public"), benchmark=load_imagenhub)
