"""EditReward-Bench (TIGER-Lab): multi-way human rankings of K = 2, 3, 4 candidate edits.

Layouts checked against TIGER-AI-Lab/EditReward:

* the released rows — ``EditReward/evaluate/inference_{2,3,4}pair_hf.py`` and
  ``EditReward/evaluate/README.md``: one row per pairwise comparison with ``id``,
  ``instruction``, ``dataset`` (``"2pair"``, ``"3pair"``, ``"4pair"``), ``source_image``,
  ``candidate_1``, ``candidate_2`` (images), ``ranking`` (``"A>B"``, ``"C>A"``, ``"A=B"``…),
  ``comparison_type`` (``"AvsC"``: candidate_1 is A, candidate_2 is C), ``score_1``,
  ``score_2``, ``model_1``, ``model_2``; the rows of one group share the ``id`` prefix before
  the first ``_``. On the hub (``TIGER-Lab/EditReward-Bench``) they are Parquet files with
  embedded images under ``2pair/``, ``3pair/``, ``4pair/``.
* the group records the evaluation script reads — ``EditReward/evaluate/eval_bench.py``
  (``evaluate_edit_reward_bench``): ``prompt``, ``path_src``, ``paths_generated`` (K paths) and
  ``human_vote.ranking`` (``"C>A>B"``, or ``"A>B"``, ``"B>A"``, ``"A=B=Good"``, ``"A=B=Bad"``).

Each comparison becomes a :class:`~ieqa.data.schema.Preference` (``a`` = candidate_1) with
``meta["group_id"]`` and ``meta["K"]``; a K = 3/4 group is right only if all its pairs are.
``score_1`` / ``score_2`` are kept as ``sample.meta["human_score"]``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    PathLike,
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

NAME = "editreward-bench"
ROW_FIELDS = ("id", "instruction", "candidate_1", "candidate_2", "ranking")
GROUP_FIELDS = ("prompt", "path_src", "paths_generated", "human_vote")
SUBSETS = ("2pair", "3pair", "4pair")
_PAIR = re.compile(r"^([A-Z])([<>=])([A-Z])(?:=(GOOD|BAD))?$")
_COMPARISON = re.compile(r"^([A-Z])VS([A-Z])$")
_HINT = ("Download it with `huggingface-cli download TIGER-Lab/EditReward-Bench --repo-type dataset "
         "--local-dir <root>` (folders 2pair/, 3pair/, 4pair/ of Parquet files).")


def parse_pair_ranking(ranking: str, first: str, second: str, path: PathLike, where: str) -> PreferenceLabel:
    """The label of ``candidate_1`` (letter ``first``) vs ``candidate_2`` (``second``)
    from a ranking like ``"A>C"``, ``"C>A"``, ``"A<C"``, ``"A=C"`` (``"A=B=Good"`` -> tie,
    ``"A=B=Bad"`` -> both-bad)."""
    text = re.sub(r"\s+", "", str(ranking)).upper()
    m = _PAIR.match(text)
    if not m:
        raise row_error(path, where, f"ranking must look like 'A>B', 'B>A' or 'A=B', got {ranking!r}")
    x, op, y, kind = m.groups()
    if {x, y} != {first, second}:
        raise row_error(path, where, f"ranking {ranking!r} does not compare the candidates "
                                     f"{first} (candidate_1) and {second} (candidate_2)")
    if op == "=":
        return PreferenceLabel.BOTH_BAD if kind == "BAD" else PreferenceLabel.TIE
    if kind:
        raise row_error(path, where, f"ranking {ranking!r}: '=Good'/'=Bad' only go with '='")
    winner = x if op == ">" else y
    return PreferenceLabel.A if winner == first else PreferenceLabel.B


def _letters(row: Mapping[str, Any], path: PathLike, where: str) -> tuple[str, str]:
    ct = row.get("comparison_type")
    if ct is None:
        return "A", "B"
    m = _COMPARISON.match(re.sub(r"\s+", "", str(ct)).upper())
    if not m or m.group(1) == m.group(2):
        raise row_error(path, where, f"comparison_type must look like 'AvsC', got {ct!r}")
    return m.group(1), m.group(2)


def _subset_k(subset: Any) -> int | None:
    m = re.match(r"^(\d+)\s*pair$", str(subset or "").strip().lower())
    return int(m.group(1)) if m else None


class _Builder:
    """Collects candidates (deduplicated per group and letter) and preferences."""

    def __init__(self) -> None:
        self.samples: dict[str, EditSample] = {}
        self.prefs: list[Preference] = []
        self.group_k: dict[str, int] = {}
        self.group_letters: dict[str, set[str]] = {}
        self.sources: dict[str, Any] = {}

    def source(self, gid: str, value: Any) -> Any:
        """One source image per group (rows repeat its bytes; keep a single copy)."""
        return self.sources.setdefault(gid, value)

    def candidate(self, gid: str, letter: str, make: Any) -> EditSample:
        sid = f"{gid}_{letter}"
        if sid not in self.samples:
            self.samples[sid] = make(sid)
        self.group_letters.setdefault(gid, set()).add(letter)
        return self.samples[sid]

    def finish(self, name: str, meta: dict[str, Any]) -> BenchmarkData:
        if not self.prefs:
            raise BenchmarkFormatError(f"{meta.get('source')}: no EditReward-Bench comparisons found")
        for p in self.prefs:
            gid = p.meta["group_id"]
            p.meta["K"] = max(self.group_k.get(gid, 0), len(self.group_letters[gid]))
        return BenchmarkData(name=name, protocol="multiway", samples=list(self.samples.values()),
                             preferences=self.prefs, dimensions=["overall"], meta=meta)


def _add_row(b: _Builder, row: Mapping[str, Any], path: Path, where: str,
             subsets: Sequence[str] | None) -> None:
    require(row, ROW_FIELDS, path, where)
    subset = row.get("dataset")
    if subsets is not None and subset is not None and str(subset) not in subsets:
        return
    rid = str(row["id"])
    gid = rid.split("_")[0] if "_" in rid else rid
    first, second = _letters(row, path, where)
    label = parse_pair_ranking(row["ranking"], first, second, path, where)
    source = b.source(gid, image_ref(row.get("source_image"), path.parent, path, where, "source_image"))
    k = _subset_k(subset)
    if k:
        b.group_k[gid] = k
    sides = []
    for i, letter in ((1, first), (2, second)):
        edited = image_ref(row[f"candidate_{i}"], path.parent, path, where, f"candidate_{i}")
        if edited is None:
            raise row_error(path, where, f"candidate_{i} is empty")
        model, score = row.get(f"model_{i}"), row.get(f"score_{i}")

        def make(sid: str, edited: Any = edited, model: Any = model, score: Any = score,
                 letter: str = letter) -> EditSample:
            meta = {"letter": letter, "subset": subset}
            if score is not None:
                meta["human_score"] = score
            return EditSample(id=sid, source=source, edited=edited, instruction=str(row["instruction"]),
                              editor=None if model is None else str(model), group_id=gid, meta=meta)

        sides.append(b.candidate(gid, letter, make))
    b.prefs.append(Preference(a=sides[0], b=sides[1], label=label, dimension="overall",
                              meta={"group_id": gid, "id": rid, "comparison_type": f"{first}vs{second}",
                                    "ranking": str(row["ranking"]), "subset": subset}))


def _add_group(b: _Builder, index: int, row: Mapping[str, Any], path: Path, where: str) -> None:
    require(row, GROUP_FIELDS, path, where)
    paths = row["paths_generated"]
    if not isinstance(paths, list) or not 2 <= len(paths) <= 26:
        raise row_error(path, where, "paths_generated must be a list of 2 or more image paths")
    vote = row["human_vote"]
    ranking = vote.get("ranking", vote.get("preference")) if isinstance(vote, Mapping) else vote
    if ranking is None:
        raise row_error(path, where, "human_vote has no 'ranking'")
    text = re.sub(r"\s+", "", str(ranking)).upper()
    letters = [chr(ord("A") + i) for i in range(len(paths))]
    gid = f"g{index}"
    b.group_k[gid] = len(paths)
    if len(paths) == 2:
        pairs = {("A", "B"): parse_pair_ranking(text, "A", "B", path, where)}
    else:
        order = text.split(">")
        if sorted(order) != letters:
            raise row_error(path, where, f"ranking {ranking!r} must order all of {''.join(letters)} "
                                         "with '>' (e.g. 'C>A>B')")
        pairs = {(x, y): PreferenceLabel.A if order.index(x) < order.index(y) else PreferenceLabel.B
                 for x, y in itertools.combinations(letters, 2)}
    source = image_ref(row["path_src"], path.parent, path, where, "path_src")
    samples = {}
    for letter, p in zip(letters, paths, strict=True):
        edited = image_ref(p, path.parent, path, where, "paths_generated")
        if edited is None:
            raise row_error(path, where, "an entry of paths_generated is empty")
        samples[letter] = b.candidate(gid, letter, lambda sid, e=edited, lt=letter: EditSample(
            id=sid, source=source, edited=e, instruction=str(row["prompt"]), group_id=gid,
            meta={"letter": lt}))
    for (x, y), label in pairs.items():
        b.prefs.append(Preference(a=samples[x], b=samples[y], label=label, dimension="overall",
                                  meta={"group_id": gid, "comparison_type": f"{x}vs{y}",
                                        "ranking": str(ranking)}))


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    if path.suffix in (".parquet", ".arrow"):
        return read_table_rows(path, batch_size=16)
    return read_records(path)


def load_files(paths: Sequence[Path], *, subsets: Sequence[str] | None = None,
               name: str = NAME, source: str | None = None) -> BenchmarkData:
    """Load EditReward-Bench from comparison-row files (Parquet/Arrow/JSON/JSONL) and/or
    group-record JSON files. ``subsets`` keeps only rows whose ``dataset`` is listed."""
    b = _Builder()
    n_groups = 0
    for path in paths:
        for where, row in _rows(path):
            with row_guard(path, where):
                if isinstance(row, Mapping) and "paths_generated" in row:
                    _add_group(b, n_groups, row, path, where)
                    n_groups += 1
                else:
                    _add_row(b, row, path, where, subsets)
    return b.finish(name, {
        "source": source or ", ".join(map(str, paths)), "files": [str(p) for p in paths],
        "subsets": list(subsets) if subsets else None,
        "labels": "a = candidate_1, b = candidate_2; meta group_id and K (2, 3 or 4) per comparison",
        "notes": "score_1/score_2 kept as sample.meta['human_score']; K=3/4 groups are right only "
                 "if all K(K-1)/2 comparisons are right (ieqa.metrics.grouped.multiway_accuracy).",
        "citation": "Wu et al. 2025, EditReward (arXiv:2509.26346)",
    })


def _is_rows_file(path: Path) -> bool:
    if path.suffix in (".parquet", ".arrow"):
        return {"candidate_1", "candidate_2", "ranking"} <= set(table_columns(path))
    if path.suffix in (".json", ".jsonl"):
        rec = first_record(path)
        return rec is not None and ({"candidate_1", "candidate_2", "ranking"} <= set(rec)
                                    or {"paths_generated", "human_vote"} <= set(rec))
    return False


_SUFFIXES = (".parquet", ".arrow", ".json", ".jsonl")


def load_editreward_bench(root: PathLike | None = None, *,
                          subsets: Sequence[str] | None = None) -> BenchmarkData:
    """The registered loader: ``root`` is the dataset download (folders ``2pair/``,
    ``3pair/``, ``4pair/``) or one file; ``subsets`` e.g. ``("3pair", "4pair")``."""
    root = resolve_root(root, NAME, _HINT)
    files = matching_files(root, _SUFFIXES, _is_rows_file)
    if not root.is_file():
        if subsets:
            files = [p for p in files if not any(s in p.parts for s in SUBSETS)
                     or any(s in p.parts for s in subsets)]
        if not files:
            raise BenchmarkFormatError(f"{root}: no EditReward-Bench files found. {_HINT}")
    return load_files(files, subsets=subsets, source=str(root))


def _sniff(path: Path) -> bool:
    return sniff_files(path, _SUFFIXES, _is_rows_file)


register_format(NAME, "EditReward-Bench (TIGER): comparison rows with candidate_1/2, ranking, "
                "comparison_type (Parquet/JSON), or group records with paths_generated",
                _sniff, lambda p, **kw: load_editreward_bench(p, **kw), priority=40,
                summary="EditReward-Bench (TIGER): multi-way rankings of K=2/3/4 candidate edits",
                tags=("multiway", "pairwise", "human", "public"), benchmark=load_editreward_bench)
