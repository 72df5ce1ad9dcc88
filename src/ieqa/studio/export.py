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

Every answer carries when it was given (``answered_at``, UTC ISO 8601), how long it took
from the page being shown (``duration_s``) and ``untouched`` (``true``: a slider the rater
never moved, or a ranking left in the order shown; empty / null: not known): extra
columns in the CSV, a ``meta`` object in each JSONL line (both readers ignore them). Only
each rater's *latest* answer to an item is exported (a revision replaces the earlier
one); "cannot judge" skips are not ratings and never appear in these files.

``part="study"`` (default) exports the study and gold items (gold left out with
``include_gold=False``); ``part="training"`` exports the training answers alone, in the
same format. :func:`write_answers_jsonl` writes the full log: every answer, skip (with
its reason) and replaced answer, with its times. :func:`export_study` picks the format
from the protocol.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path
from typing import Any

from ieqa.data.manifest import write_preferences
from ieqa.data.schema import BBox, EditSample, Preference
from ieqa.studio.design import StudyConfig
from ieqa.studio.store import Store, StudioError

__all__ = ["PARTS", "export_names", "export_study", "named_by_editor", "ranking_lines", "rating_rows",
           "write_answers_jsonl", "write_preferences_jsonl", "write_rankings_jsonl", "write_ratings_csv"]

RATING_COLUMNS: tuple[str, ...] = ("item", "rater", "dimension", "value", "answered_at", "duration_s", "untouched")
#: which answers an export holds: the study (and gold) items, or the training items
PARTS: tuple[str, ...] = ("study", "training")
#: the full log of a study's answers (every protocol)
LOG_NAME = "answers.jsonl"


def export_names(protocol: str) -> list[str]:
    """The files a study of ``protocol`` exports: its answers' format, then the log."""
    main = ("ratings.csv" if protocol in ("rate", "critique") else
            "rankings.jsonl" if protocol == "rank" else "preferences.jsonl")
    return [main, LOG_NAME]


def _config(store: Store) -> StudyConfig:
    return StudyConfig.from_json(store.meta()["config"])


def _kept(role: str, include_gold: bool, part: str = "study") -> bool:
    if part not in PARTS:
        raise StudioError(f"part={part!r}: export one of {', '.join(PARTS)}")
    if part == "training":
        return role == "training"
    return role == "study" or (role == "gold" and include_gold)


def iso_utc(t: float | None) -> str | None:
    """Seconds since the epoch as UTC ISO 8601 with milliseconds (None stays None)."""
    if t is None:
        return None
    ms = int(round(t * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def _times(r: dict[str, Any]) -> dict[str, Any]:
    """``answered_at``, ``duration_s`` (3 decimals) and ``untouched`` of a response or submission."""
    d = r.get("duration")
    out = {"answered_at": iso_utc(r["created"]), "duration_s": None if d is None else round(float(d), 3)}
    if "untouched" in r:
        out["untouched"] = r["untouched"]
    return out


def rating_rows(store: Store, *, include_gold: bool = True, part: str = "study") -> list[dict[str, Any]]:
    """The ratings of a ``rate`` or ``critique`` study: dicts with item, rater, dimension,
    value, answered_at, duration_s, untouched."""
    config = _config(store)
    if config.protocol not in ("rate", "critique"):
        raise StudioError(f"a {config.protocol} study has no ratings; export its "
                          f"{'rankings' if config.protocol == 'rank' else 'preferences'} instead")
    return [{"item": r["item_id"], "rater": r["rater"], "dimension": r["dimension"], "value": r["value"],
             **_times(r)} for r in store.responses() if _kept(r["role"], include_gold, part)]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(float(value)) if isinstance(value, float) else str(value)


def write_ratings_csv(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True,
                      part: str = "study") -> int:
    """Write :func:`rating_rows` as CSV (``ieqa mos`` input); returns the number of ratings."""
    rows = rating_rows(store, include_gold=include_gold, part=part)
    path = Path(path)
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=RATING_COLUMNS, delimiter=delimiter)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(float(v) if k == "value" else v) for k, v in row.items()})
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


def ranking_lines(store: Store, *, include_gold: bool = True, part: str = "study") -> list[dict[str, Any]]:
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
        if not _kept(r["role"], include_gold, part):
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
        line["meta"] = _times(r)
        lines.append(line)
    return lines


def write_rankings_jsonl(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True,
                         part: str = "study") -> int:
    """Write :func:`ranking_lines` as JSONL (``ieqa rank-editors --rankings`` input)."""
    lines = ranking_lines(store, include_gold=include_gold, part=part)
    with Path(path).open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
    return len(lines)


def _sample(rec: dict[str, Any]) -> EditSample:
    return EditSample(id=rec["id"], source=rec.get("source"), edited=rec["edited"],
                      instruction=rec.get("instruction") or "", editor=rec.get("editor"),
                      group_id=rec.get("group_id"), task=rec.get("task"),
                      bbox=None if rec.get("bbox") is None else BBox(**rec["bbox"]))


def preferences(store: Store, *, include_gold: bool = True, part: str = "study") -> list[Preference]:
    """The verdicts of a ``pairwise`` study as :class:`~ieqa.data.schema.Preference`."""
    config = _config(store)
    if config.protocol != "pairwise":
        raise StudioError(f"a {config.protocol} study has no pairwise verdicts")
    items = {it.key: it for it in store.items()}
    out = []
    for r in store.responses():
        if not _kept(r["role"], include_gold, part):
            continue
        a, b = items[r["item"]].data["samples"]
        out.append(Preference(a=_sample(a), b=_sample(b), label=r["answer"], dimension=r["dimension"],
                              rater=r["rater"], meta=_times(r)))
    return out


def write_preferences_jsonl(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True,
                            part: str = "study") -> int:
    """Write :func:`preferences` with :func:`ieqa.data.manifest.write_preferences`."""
    prefs = preferences(store, include_gold=include_gold, part=part)
    write_preferences(prefs, path)
    return len(prefs)


def answer_log(store: Store) -> list[dict[str, Any]]:
    """Every answer, skip and replaced answer of the study (training included), oldest
    first: dicts with submission, rater, item, role, status (``answer`` | ``skip``),
    reason, responses (dimension, value, answer, untouched), answered_at, shown_at,
    duration_s, current (False: a revision replaced it), replaced_at, replaced_by."""
    per: dict[str, list[dict[str, Any]]] = {}
    for r in store.responses():
        per.setdefault(r["submission"], []).append(
            {"dimension": r["dimension"], "value": r["value"], "answer": r["answer"], "untouched": r["untouched"]})
    rows = []
    for s in store.submissions():
        rows.append({"submission": s["submission"], "rater": s["rater"], "item": s["item_id"], "role": s["role"],
                     "status": s["status"], "reason": s["reason"], "responses": per.get(s["submission"], []),
                     **_times(s), "shown_at": iso_utc(s["shown"]), "current": True, "replaced_at": None,
                     "replaced_by": None, "_t": s["created"]})
    for v in store.revisions():
        rows.append({"submission": v["submission"], "rater": v["rater"], "item": v["item_id"], "role": v["role"],
                     "status": v["status"], "reason": v["reason"], "responses": v["responses"], **_times(v),
                     "shown_at": iso_utc(v["shown"]), "current": False, "replaced_at": iso_utc(v["replaced"]),
                     "replaced_by": v["replaced_by"], "_t": v["created"]})
    rows.sort(key=lambda r: (r["_t"], r["rater"], r["item"]))
    for r in rows:
        del r["_t"]
    return rows


def write_answers_jsonl(store: Store, path: str | os.PathLike[str]) -> int:
    """Write :func:`answer_log` as JSONL; returns the number of lines."""
    rows = answer_log(store)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return len(rows)


def export_study(store: Store, path: str | os.PathLike[str], *, include_gold: bool = True,
                 part: str = "study") -> tuple[str, int]:
    """Export in the protocol's format (see the module docstring) to ``path`` (its folder
    is created); a file named ``answers.jsonl`` gets the full log (:func:`write_answers_jsonl`).
    Returns ``(what, count)``."""
    config = _config(store)
    name = Path(path).name.lower()
    _kept("study", include_gold, part)  # an unknown part fails before anything is written
    if name == LOG_NAME:
        if part != "study" or not include_gold:
            raise StudioError(f"{LOG_NAME} is the full log of every answer (training and gold included); "
                              "export it without --export-training / --no-gold-export, or name the file "
                              "for the protocol's format")
        return "answers, skips and replaced answers (the full log)", write_answers_jsonl(store, path)
    what = "training " if part == "training" else ""
    if config.protocol in ("rate", "critique"):
        if not name.endswith((".csv", ".tsv")):
            raise StudioError(f"{Path(path).name}: a {config.protocol} study exports ratings as CSV; "
                              f"name the file *.csv (or {LOG_NAME} for the full log)")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return what + "ratings", write_ratings_csv(store, path, include_gold=include_gold, part=part)
    if not name.endswith(".jsonl"):
        raise StudioError(f"{Path(path).name}: a {config.protocol} study exports JSONL; name the file *.jsonl")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if config.protocol == "rank":
        what += "rankings" if named_by_editor(store) else (
            "rankings of sample ids (not every group's candidates have editors of their own, so "
            "ieqa rank-editors would rank samples, not editors)")
        return what, write_rankings_jsonl(store, path, include_gold=include_gold, part=part)
    return what + "preferences", write_preferences_jsonl(store, path, include_gold=include_gold, part=part)


def skipped(store: Store, part: str = "study", *, include_gold: bool = True) -> int:
    """How many current answers of ``part`` are "cannot judge" skips (never in the exports)."""
    return sum(1 for s in store.submissions() if s["status"] == "skip" and _kept(s["role"], include_gold, part))
