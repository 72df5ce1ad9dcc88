"""Export a study's answers in the formats ieqa's commands read.

* ``rate`` and ``critique``: raw ratings, one per line, in the long-form CSV
  :meth:`ieqa.human.RatingTable.from_csv` and ``ieqa mos`` read (columns ``item, rater,
  dimension, value``; item = the manifest's sample id) — :func:`write_ratings_csv`;
* ``rank``: group rankings in the JSONL of :mod:`ieqa.human.rankings` that ``ieqa
  rank-editors --rankings`` reads (one line per group, dimension and rater, editors best
  first; sample ids in every group when some group's candidates lack distinct editors,
  as :func:`export_study` then says) — :func:`write_rankings_jsonl`;
* ``pairwise``: preferences in ieqa's preference JSONL
  (:func:`ieqa.data.manifest.write_preferences`; label ``a>b``, ``b>a``, ``tie`` or
  ``both-bad``) — :func:`write_preferences_jsonl`.

Training items are never exported; gold items are (they are rated like any other item)
unless ``include_gold=False``. :func:`export_study` picks the format from the protocol.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from ieqa.data.manifest import write_preferences
from ieqa.data.schema import BBox, EditSample, Preference
from ieqa.studio.design import StudyConfig
from ieqa.studio.store import Store, StudioError

__all__ = ["export_study", "named_by_editor", "ranking_lines", "rating_rows", "write_preferences_jsonl",
           "write_rankings_jsonl", "write_ratings_csv"]

RATING_COLUMNS: tuple[str, ...] = ("item", "rater", "dimension", "value")


def _config(store: Store) -> StudyConfig:
    return StudyConfig.from_json(store.meta()["config"])


def _kept(role: str, include_gold: bool) -> bool:
    return role == "study" or (role == "gold" and include_gold)


def rating_rows(store: Store, *, include_gold: bool = True) -> list[dict[str, Any]]:
    """The ratings of a ``rate`` or ``critique`` study: dicts with item, rater, dimension, value."""
    config = _config(store)
    if config.protocol not in ("rate", "critique"):
        raise StudioError(f"a {config.protocol} study has no ratings; export its "
                          f"{'rankings' if config.protocol == 'rank' else 'preferences'} instead")
    return [{"item": r["item_id"], "rater": r["rater"], "dimension": r["dimension"], "value": r["value"]}
            for r in store.responses() if _kept(r["role"], include_gold)]


def write_ratings_csv(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True) -> int:
    """Write :func:`rating_rows` as CSV (``ieqa mos`` input); returns the number of ratings."""
    rows = rating_rows(store, include_gold=include_gold)
    path = Path(path)
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=RATING_COLUMNS, delimiter=delimiter)
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "value": repr(float(row["value"]))})
    return len(rows)


def _distinct_editors(samples: list[dict[str, Any]]) -> bool:
    """True when every candidate of a group names an editor of its own."""
    editors = [s.get("editor") for s in samples]
    return all(editors) and len(set(editors)) == len(editors)


def named_by_editor(store: Store) -> bool:
    """How a ``rank`` study's candidates are named in its rankings: by editor when every
    group's candidates have distinct editors, else by sample id in every group (one
    naming for the whole file: editors in some groups and sample ids in others would
    pass for a ranking of editors)."""
    return all(_distinct_editors(it.data["samples"]) for it in store.items() if it.kind == "group")


def ranking_lines(store: Store, *, include_gold: bool = True) -> list[dict[str, Any]]:
    """The rankings of a ``rank`` study, one dict per group, dimension and rater, in the
    format of :func:`ieqa.human.read_rankings` (candidates best first, named as
    :func:`named_by_editor` says)."""
    config = _config(store)
    if config.protocol != "rank":
        raise StudioError(f"a {config.protocol} study has no group rankings")
    items = {it.key: it for it in store.items()}
    key = "editor" if named_by_editor(store) else "id"
    lines = []
    for r in store.responses():
        if not _kept(r["role"], include_gold):
            continue
        it = items[r["item"]]
        samples = it.data["samples"]
        names = [str(s[key]) for s in samples]
        order = [names[int(slot[1:])] for slot in json.loads(r["answer"])]
        line: dict[str, Any] = {"group_id": it.data["group_id"], "dimension": r["dimension"],
                                "ranking": order, "rater": r["rater"]}
        tasks = {s.get("task") for s in samples}
        if len(tasks) == 1 and None not in tasks:
            line["task"] = tasks.pop()
        lines.append(line)
    return lines


def write_rankings_jsonl(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True) -> int:
    """Write :func:`ranking_lines` as JSONL (``ieqa rank-editors --rankings`` input)."""
    lines = ranking_lines(store, include_gold=include_gold)
    with Path(path).open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
    return len(lines)


def _sample(rec: dict[str, Any]) -> EditSample:
    return EditSample(id=rec["id"], source=rec.get("source"), edited=rec["edited"],
                      instruction=rec.get("instruction") or "", editor=rec.get("editor"),
                      group_id=rec.get("group_id"), task=rec.get("task"),
                      bbox=None if rec.get("bbox") is None else BBox(**rec["bbox"]))


def preferences(store: Store, *, include_gold: bool = True) -> list[Preference]:
    """The verdicts of a ``pairwise`` study as :class:`~ieqa.data.schema.Preference`."""
    config = _config(store)
    if config.protocol != "pairwise":
        raise StudioError(f"a {config.protocol} study has no pairwise verdicts")
    items = {it.key: it for it in store.items()}
    out = []
    for r in store.responses():
        if not _kept(r["role"], include_gold):
            continue
        a, b = items[r["item"]].data["samples"]
        out.append(Preference(a=_sample(a), b=_sample(b), label=r["answer"], dimension=r["dimension"],
                              rater=r["rater"]))
    return out


def write_preferences_jsonl(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True) -> int:
    """Write :func:`preferences` with :func:`ieqa.data.manifest.write_preferences`."""
    prefs = preferences(store, include_gold=include_gold)
    write_preferences(prefs, path)
    return len(prefs)


def export_study(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True) -> tuple[str, int]:
    """Export in the protocol's format (see the module docstring) to ``path`` (its folder
    is created); returns ``(what, count)``."""
    config = _config(store)
    name = Path(path).name.lower()
    if config.protocol in ("rate", "critique"):
        if not name.endswith((".csv", ".tsv")):
            raise StudioError(f"{Path(path).name}: a {config.protocol} study exports ratings as CSV; "
                              "name the file *.csv")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return "ratings", write_ratings_csv(store, path, include_gold=include_gold)
    if not name.endswith(".jsonl"):
        raise StudioError(f"{Path(path).name}: a {config.protocol} study exports JSONL; name the file *.jsonl")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if config.protocol == "rank":
        what = "rankings" if named_by_editor(store) else (
            "rankings of sample ids (not every group's candidates have editors of their own, so "
            "ieqa rank-editors would rank samples, not editors)")
        return what, write_rankings_jsonl(store, path, include_gold=include_gold)
    return "preferences", write_preferences_jsonl(store, path, include_gold=include_gold)
