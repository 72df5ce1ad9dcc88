"""GenAI-Bench (image editing): human pairwise votes, and judge result files.

Layouts checked against TIGER-AI-Lab/GenAI-Bench:

* items — ``inference_configs.json`` (the ``image_edition`` input keys) and
  ``inference.py`` (``vote_type``; the item index is the row number), plus the Hugging Face
  dataset card of ``TIGER-Lab/GenAI-Bench`` (config ``image_edition``: ``source_prompt``,
  ``target_prompt``, ``instruct_prompt``, ``source_image``, ``left_model``,
  ``left_output_image``, ``right_model``, ``right_output_image``, ``vote_type``; splits
  ``test_v1`` = 919 votes, the paper's, and ``test``; Parquet with embedded images).
* judge results — ``results/image_edition/<model>/pairwise.jsonl`` (one JSON object per
  line: ``idx``, the text inputs, ``response``, ``model_vote`` — the official parser's
  bracketed match or ``null`` — ``human_vote`` and ``correct``; ``pairwise.json`` holds the
  same records as one array).

Votes map to :class:`~ieqa.data.schema.PreferenceLabel`: ``leftvote`` -> ``a>b``,
``rightvote`` -> ``b>a``, ``tievote`` -> ``tie``, ``bothbad_vote`` -> ``both-bad``; ``a`` is
the left output. Verdicts are normalised and scored with :mod:`ieqa.metrics.preference`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
    build_rows,
    data_files,
    distinct_samples,
    first_record,
    image_ref,
    read_records,
    read_table_rows,
    register_format,
    require,
    resolve_root,
    row_error,
    table_columns,
)
from ieqa.data.schema import EditSample, Preference, PreferenceLabel

NAME = "genai-bench"
VOTE_LABELS = {
    "leftvote": PreferenceLabel.A,
    "rightvote": PreferenceLabel.B,
    "tievote": PreferenceLabel.TIE,
    "bothbad_vote": PreferenceLabel.BOTH_BAD,
}
ITEM_FIELDS = ("instruct_prompt", "source_image", "left_output_image", "right_output_image", "vote_type")
JUDGE_FIELDS = ("idx", "human_vote", "model_vote")
_HINT = ("Download it with `huggingface-cli download TIGER-Lab/GenAI-Bench --repo-type dataset "
         "--local-dir <root>` (the image_edition Parquet files), or pass a JSON/JSONL/Parquet file of items.")


# --------------------------------------------------------------------------- items


def _item_preference(row: Mapping[str, Any], idx: int, path: Path, where: str) -> Preference:
    require(row, ITEM_FIELDS, path, where)
    vote = str(row["vote_type"]).strip()
    if vote not in VOTE_LABELS:
        raise row_error(path, where, f"vote_type must be one of {list(VOTE_LABELS)}, got {vote!r}")
    base = path.parent
    source = image_ref(row["source_image"], base, path, where, "source_image")
    common = {
        "source": source, "instruction": str(row["instruct_prompt"]), "group_id": str(idx),
        "meta": {k: row[k] for k in ("source_prompt", "target_prompt") if row.get(k) is not None},
    }
    sides = []
    for side in ("left", "right"):
        edited = image_ref(row[f"{side}_output_image"], base, path, where, f"{side}_output_image")
        if edited is None:
            raise row_error(path, where, f"{side}_output_image is empty")
        model = row.get(f"{side}_model")
        sides.append(EditSample(id=f"{idx}_{side}", edited=edited,
                                editor=None if model is None else str(model), **common))
    return Preference(a=sides[0], b=sides[1], label=VOTE_LABELS[vote], dimension="overall",
                      meta={"idx": idx, "vote_type": vote})


def _iter_item_rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if path.suffix in (".parquet", ".arrow"):
        yield from read_table_rows(path)
    else:
        yield from read_records(path)


def load_items(path: PathLike, *, name: str = NAME) -> BenchmarkData:
    """Load GenAI-Bench image-editing items from one Parquet/Arrow/JSON/JSONL file.

    The item index (``preference.meta["idx"]``, also ``group_id``) is the 0-based row
    number, as the official ``inference.py`` numbers items (the ``idx`` of judge results).
    """
    path = Path(path)
    prefs = build_rows(path, _iter_item_rows(path), lambda row, i, where: _item_preference(row, i, path, where))
    if not prefs:
        raise BenchmarkFormatError(f"{path}: no GenAI-Bench items found")
    return BenchmarkData(
        name=name, protocol="pairwise", samples=distinct_samples(prefs), preferences=prefs,
        dimensions=["overall"],
        meta={"source": str(path), "labels": "a = left output, b = right output; "
              "leftvote->a>b, rightvote->b>a, tievote->tie, bothbad_vote->both-bad",
              "citation": "Jiang et al. 2024, GenAI Arena (arXiv:2406.04485)",
              "metric": "ieqa.metrics.preference.pairwise_accuracy_genai"},
    )


def _find_split_file(root: Path, split: str) -> Path:
    if root.is_file():
        return root
    patterns = [f"image_edition/{split}-*.parquet", f"image_edition/{split}/*.parquet",
                f"{split}-*.parquet", f"{split}/*.parquet"]
    for pattern in patterns:
        hits = sorted(root.glob(pattern))
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise BenchmarkFormatError(f"{root}: several files match {pattern}: {[h.name for h in hits]}; "
                                       "pass the file itself")
    items = [p for p in data_files(root, (".parquet", ".json", ".jsonl")) if _is_items(p)]
    if len(items) == 1:
        return items[0]
    raise BenchmarkFormatError(f"{root}: found no single GenAI-Bench image_edition file for split {split!r} "
                               f"(candidates: {[str(p) for p in items][:5]}). {_HINT}")


def load_genai_bench(root: PathLike | None = None, *, split: str = "test_v1") -> BenchmarkData:
    """The registered loader: ``root`` is the dataset download (or one items file);
    ``split`` is ``"test_v1"`` (919 votes, the paper's) or ``"test"``."""
    path = resolve_root(root, NAME, _HINT)
    data = load_items(_find_split_file(path, split))
    if path.is_dir():
        data.meta["split"] = split
    return data


def _is_items(path: Path) -> bool:
    if path.is_dir() or path.suffix not in (".parquet", ".arrow", ".json", ".jsonl"):
        return False
    if path.suffix in (".parquet", ".arrow"):
        keys = set(table_columns(path))
    else:
        rec = first_record(path)
        keys = set(rec) if rec else set()
    return {"vote_type", "left_output_image", "right_output_image"} <= keys


def _sniff_items(path: Path) -> bool:
    if path.is_dir():
        return any(path.glob("image_edition/*.parquet")) or any(path.glob("image_edition/*/*.parquet"))
    return _is_items(path)


# --------------------------------------------------------------------------- judge results


def is_judge_results(path: Path) -> bool:
    """Whether ``path`` looks like a GenAI-Bench judge result file."""
    if path.is_dir() or path.suffix not in (".json", ".jsonl"):
        return False
    rec = first_record(path)
    return rec is not None and all(k in rec for k in JUDGE_FIELDS)


def _refuse_judge_results(path: Path, **_: Any) -> BenchmarkData:
    raise BenchmarkFormatError(
        f"{path} is a GenAI-Bench judge result file (idx/human_vote/model_vote), not a benchmark: "
        "read it with ieqa.bench.genai_judge.load_judge_results(path) and score it with its .accuracy()")


register_format(NAME, "GenAI-Bench image-editing votes (vote_type, left/right_output_image); "
                "JSON, JSONL or Parquet", _sniff_items, lambda p, **kw: load_genai_bench(p, **kw), priority=31,
                summary="GenAI-Bench image editing: 919 human pairwise votes (A>B, B>A, tie, both bad) "
                "between two editors' outputs",
                tags=("pairwise", "human", "public"), benchmark=load_genai_bench)
register_format("genai-bench-judge-results", "GenAI-Bench judge results (idx, human_vote, model_vote); "
                "use load_judge_results", is_judge_results, _refuse_judge_results, priority=30)
