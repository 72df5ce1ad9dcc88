"""What a task form means: the candidates' slots and labels, the answer parsed and
checked for the protocol, the values a refused form shows again, and the training
feedback. Pure functions of the study's :class:`~ieqa.studio.design.StudyConfig` (the
routes in :mod:`ieqa.studio.routes.tasks` call them)."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Mapping
from typing import Any

from ieqa.studio.analysis import gold_label
from ieqa.studio.design import PAIR_LABELS, StudyConfig
from ieqa.studio.store import SKIP_REASONS, Item, Response, StudioError

__all__ = ["PAIR_KEYS", "PAIR_TEXT", "Answer", "candidate_slots", "current_values", "feedback_rows",
           "parse_answer", "shown_again", "skip_reason"]

#: how each pairwise verdict is written on the page, and its key
PAIR_TEXT: dict[str, str] = {"a>b": "A is better", "b>a": "B is better", "tie": "Tie: both good",
                             "both-bad": "Both bad"}
PAIR_KEYS: dict[str, str] = {"a>b": "a", "b>a": "b", "tie": "t", "both-bad": "x"}
#: one response: (dimension, value for sliders, answer for rankings and verdicts, untouched)
Answer = Response
#: the longest "other" reason of a skip, in characters
MAX_NOTE = 500


def candidate_slots(protocol: str, rater: str, item: Item) -> list[dict[str, Any]]:
    """The item's candidates as ``{"slot": "cI", "sample": ...}``; for ``rank`` in an
    order of the rater's own, labelled *Candidate 1..K* (blind to editors)."""
    slots = [{"slot": f"c{i}", "sample": s} for i, s in enumerate(item.data["samples"])]
    if protocol == "rank":
        random.Random(f"{rater}:{item.key}").shuffle(slots)
        for n, s in enumerate(slots):
            s["label"] = f"Candidate {n + 1}"
    return slots


def _untouched(config: StudyConfig, form: Mapping[str, str]) -> dict[str, bool | None]:
    """Per dimension, whether the rater left its slider or ranking as shown: the page's
    script lists the dimensions the rater moved in the field ``moved``; without it (no
    JavaScript) nobody knows (None). Pairwise verdicts are always chosen (None)."""
    if config.protocol == "pairwise" or "moved" not in form:
        return dict.fromkeys(config.dimensions)
    moved = {m.strip() for m in str(form["moved"]).split(",")}
    return {d: d not in moved for d in config.dimensions}


def parse_answer(config: StudyConfig, form: Mapping[str, str], item: Item) -> list[Answer]:
    """The form's answer to ``item``, one response per dimension, each with whether it
    was left untouched (see :func:`_untouched`); raises :class:`StudioError` saying what
    to fix (a missing answer, a value off the scale, a ranking that is not a permutation
    of the candidates, an unknown verdict; with ``config.untouched == "refuse"`` a slider
    not moved or a ranking not arranged)."""
    out: list[Answer] = []
    lo, hi = config.scale
    k = len(item.data["samples"])
    untouched = _untouched(config, form)
    for d in config.dimensions:
        raw = form.get(f"dim__{d}")
        if raw is None or not str(raw).strip():
            raise StudioError(f"no answer for {d.replace('_', ' ')}; answer every question")
        if config.protocol in ("rate", "critique"):
            try:
                v = float(raw)
            except ValueError:
                raise StudioError(f"{d}: {raw!r} is not a number") from None
            if not (math.isfinite(v) and lo <= v <= hi):
                raise StudioError(f"{d}: {v:g} is outside the scale {lo:g}-{hi:g}")
            out.append((d, v, None, untouched[d]))
        elif config.protocol == "rank":
            order = [s.strip() for s in str(raw).split(",") if s.strip()]
            if sorted(order) != sorted(f"c{i}" for i in range(k)):
                raise StudioError(f"{d}: the ranking must hold each of the {k} candidates once")
            out.append((d, None, json.dumps(order), untouched[d]))
        else:
            if raw not in PAIR_LABELS:
                raise StudioError(f"{d}: choose one of A better, B better, tie or both bad")
            out.append((d, None, str(raw), None))
    if config.untouched == "refuse":
        left = [d.replace("_", " ") for d, *_, u in out if u]
        if left:
            what = "slider" if config.protocol in ("rate", "critique") else "ranking"
            raise StudioError(f"this study asks you to set every {what}: {', '.join(left)} "
                              f"{'is' if len(left) == 1 else 'are'} as shown. "
                              + ("Move each slider to your rating (even near where it started)."
                                 if what == "slider" else
                                 "Arrange the candidates (drag them or use the buttons); if the order "
                                 "shown is your answer, move one and move it back."))
    return out


def skip_reason(form: Mapping[str, str]) -> str:
    """The reason of a "cannot judge" form: a key of :data:`SKIP_REASONS`, or ``other:
    NOTE`` (the note is required for ``other``); raises :class:`StudioError`."""
    reason = str(form.get("reason", "")).strip()
    if reason not in SKIP_REASONS:
        raise StudioError("say why you cannot judge this item: " + "; ".join(SKIP_REASONS.values()))
    if reason != "other":
        return reason
    note = " ".join(str(form.get("note", "")).split())
    if not note:
        raise StudioError("you chose 'other': write in a few words why you cannot judge this item")
    if len(note) > MAX_NOTE:
        raise StudioError(f"the reason is {len(note)} characters long; keep it under {MAX_NOTE}")
    return f"other: {note}"


def current_values(config: StudyConfig, current: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The form values that show a stored answer again (``current``: dimension ->
    response), for revising it."""
    out: dict[str, Any] = {}
    for d, r in current.items():
        if config.protocol in ("rate", "critique"):
            if r.get("value") is not None:
                out[f"dim__{d}"] = float(r["value"])
        elif config.protocol == "rank":
            out[f"dim__{d}"] = ",".join(json.loads(r.get("answer") or "[]"))
        else:
            out[f"dim__{d}"] = r.get("answer")
    return out


def shown_again(config: StudyConfig, form: Mapping[str, Any]) -> dict[str, Any]:
    """The answers of a refused form that the page can show again: on sliders only
    numbers on the scale (a slider set to "abc" cannot be drawn; it starts over), and
    the ``moved`` field (which sliders or rankings the rater had set)."""
    if config.protocol not in ("rate", "critique"):
        return {k: v for k, v in form.items() if k.startswith("dim__") or k == "moved"}
    lo, hi = config.scale
    kept: dict[str, Any] = {"moved": form["moved"]} if "moved" in form else {}
    for key, raw in form.items():
        if not key.startswith("dim__"):
            continue
        try:
            value = float(raw)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and lo <= value <= hi:
            kept[key] = value
    return kept


def feedback_rows(config: StudyConfig, rater: str, item: Item,
                  mine: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """The training feedback of a gold ``item``: per dimension the rater's answer
    (``mine``: dimension -> response) beside the reference answer."""
    assert item.gold is not None
    label = {s["slot"]: s.get("label", s["slot"]) for s in candidate_slots(config.protocol, rater, item)}
    rows = []
    for d in config.dimensions:
        gold = item.gold[d]
        r = mine.get(d, {})
        if config.protocol in ("rate", "critique"):
            yours = "" if r.get("value") is None else f"{r['value']:.2f}"
            ref = f"{gold[0]:.2f}"
        elif config.protocol == "rank":
            yours = " > ".join(label[s] for s in json.loads(r.get("answer") or "[]"))
            ref = _gold_order(gold, [label[f"c{i}"] for i in range(len(gold))], config.tie_margin)
        else:
            yours = PAIR_TEXT.get(r.get("answer") or "", "?")
            ref = PAIR_TEXT[gold_label(gold[0], gold[1], config.tie_margin)]
        rows.append({"dimension": d.replace("_", " "), "yours": yours, "reference": ref})
    return rows


def _gold_order(gold: list[float], labels: list[str], margin: float) -> str:
    """The candidates best first by their gold values; neighbours no more than ``margin``
    apart are written as a tie (``=``), as the gold scores count them."""
    order = sorted(range(len(gold)), key=lambda i: -gold[i])
    text = labels[order[0]]
    for prev, i in itertools.pairwise(order):
        text += (" = " if gold[prev] - gold[i] <= margin else " > ") + labels[i]
    return text
