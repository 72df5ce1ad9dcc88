"""EditScore's EditReward-Bench: preferred-first pairs per task type and dimension.

Layout checked against VectorSpaceLab/EditScore, ``evaluation.py`` (``load_pairs_dataset``
and the result writer): each row has ``key`` (two ids, one per output), ``instruction``,
``input_image``, ``output_images`` (two images, the human-preferred one first),
``task_type`` and ``dimension`` (``prompt_following``, ``consistency`` or ``overall``); a
pair is right only if ``score[0] > score[1]``. The 13 task types and their macro-average
are those listed in ``calculate_statistics.py`` (copy checked in bxhsort/RM_Bench). On the
hub (``EditScore/EditReward-Bench``) the rows are stored as Arrow files with embedded
images; JSON/JSONL rows with image paths are read too.

Dimensions are canonicalised: ``prompt_following`` -> ``instruction_alignment``,
``consistency`` -> ``content_preservation``. Every row becomes a
:class:`~ieqa.data.schema.Preference` with label ``a>b`` (``a`` = the preferred output) and
``meta["task_type"]``; samples are the distinct outputs by ``key``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    canonical,
    first_record,
    image_ref,
    matching_files,
    read_records,
    read_table_rows,
    register_format,
    require,
    resolve_root,
    row_error,
    row_guard,
    sniff_files,
    table_columns,
)
from ieqa.data.schema import EditSample, Preference, PreferenceLabel

NAME = "editscore-bench"
FIELDS = ("key", "instruction", "input_image", "output_images", "task_type", "dimension")
TASK_TYPES = (
    "background_change", "color_alter", "style_change", "subject-add", "subject-remove",
    "subject-replace", "material_alter", "motion_change", "ps_human", "text_change",
    "tone_transfer", "extract", "compose",
)
_HINT = ("Download it with `huggingface-cli download EditScore/EditReward-Bench --repo-type dataset "
         "--local-dir <root>`, or pass a JSON/JSONL file of rows with image paths.")


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    if path.suffix in (".parquet", ".arrow"):
        return read_table_rows(path, batch_size=16)
    return read_records(path)


def load_files(paths: Sequence[Path], *, dimensions: Sequence[str] | None = None,
               name: str = NAME, source: str | None = None) -> BenchmarkData:
    """Load rows from Arrow/Parquet/JSON/JSONL files; ``dimensions`` keeps only those
    (any alias, e.g. ``"prompt_following"``)."""
    keep = None
    samples: dict[str, EditSample] = {}
    prefs: list[Preference] = []
    for path in paths:
        for where, row in _rows(path):
            with row_guard(path, where):
                require(row, FIELDS, path, where)
                dim = canonical(row["dimension"], path, where)
                if dimensions is not None:
                    keep = keep or {canonical(d, path, where) for d in dimensions}
                    if dim not in keep:
                        continue
                keys, outputs = row["key"], row["output_images"]
                if not isinstance(keys, (list, tuple)) or len(keys) != 2:
                    raise row_error(path, where, f"key must hold two ids (preferred first), got {keys!r}")
                if not isinstance(outputs, (list, tuple)) or len(outputs) != 2:
                    raise row_error(path, where, "output_images must hold two images (preferred first)")
                source = image_ref(row["input_image"], path.parent, path, where, "input_image")
                pair = []
                for key, out in zip(keys, outputs, strict=True):
                    sid = str(key)
                    if sid not in samples:
                        edited = image_ref(out, path.parent, path, where, "output_images")
                        if edited is None:
                            raise row_error(path, where, "an output image is empty")
                        samples[sid] = EditSample(id=sid, source=source, edited=edited,
                                                  instruction=str(row["instruction"]), task=str(row["task_type"]))
                    pair.append(samples[sid])
                prefs.append(Preference(a=pair[0], b=pair[1], label=PreferenceLabel.A, dimension=dim,
                                        meta={"task_type": str(row["task_type"]), "key": [str(k) for k in keys],
                                              "dimension_name": str(row["dimension"])}))
    if not prefs:
        raise BenchmarkFormatError(f"{source or paths}: no EditScore EditReward-Bench pairs found")
    tasks = Counter(p.meta["task_type"] for p in prefs)
    return BenchmarkData(
        name=name, protocol="pairwise", samples=list(samples.values()), preferences=prefs,
        dimensions=sorted({p.dimension for p in prefs}),
        meta={"source": source or ", ".join(map(str, paths)), "task_types": dict(sorted(tasks.items())),
              "labels": "a = the human-preferred output (always a>b)",
              "metric": "ieqa.metrics.preference.strict_accuracy(score_a, score_b, task=task_type): "
                        "right only if score_a > score_b, macro-averaged over task types, per dimension",
              "citation": "EditScore (arXiv:2509.23909)"},
    )


def _is_rows_file(path: Path) -> bool:
    if path.suffix in (".parquet", ".arrow"):
        names = set(table_columns(path))
    elif path.suffix in (".json", ".jsonl"):
        rec = first_record(path)
        names = set(rec) if rec else set()
    else:
        return False
    return {"output_images", "task_type", "dimension"} <= names


_SUFFIXES = (".arrow", ".parquet", ".json", ".jsonl")


def load_editscore_bench(root: PathLike | None = None, *,
                         dimensions: Sequence[str] | None = None) -> BenchmarkData:
    """The registered loader: ``root`` is the dataset download (a folder of ``*.arrow`` /
    ``*.parquet`` files) or one file; ``dimensions`` selects some of the three."""
    root = resolve_root(root, NAME, _HINT)
    files = matching_files(root, _SUFFIXES, _is_rows_file)
    if not files:
        raise BenchmarkFormatError(f"{root}: no EditScore EditReward-Bench files found. {_HINT}")
    return load_files(files, dimensions=dimensions, source=str(root))


def _sniff(path: Path) -> bool:
    return sniff_files(path, _SUFFIXES, _is_rows_file)


register_format(NAME, "EditScore's EditReward-Bench: key, input_image, output_images (preferred "
                "first), task_type, dimension (Arrow/Parquet/JSON)",
                _sniff, lambda p, **kw: load_editscore_bench(p, **kw), priority=41,
                summary="EditScore's EditReward-Bench: preferred-first pairs, 13 task types, "
                "3 dimensions",
                tags=("pairwise", "human", "public"), benchmark=load_editscore_bench)
