"""Progress, agreement and rater flags of a running study (the admin page).

Everything is computed from the answers recorded so far, with :mod:`ieqa.human`:

* **agreement** per dimension on the study and gold items (training excluded):
  ``rate``/``critique``: ICC(2,1) (:func:`ieqa.human.icc`, on the items every rater of
  the panel rated) and Kendall's W (:func:`ieqa.human.kendall_w`) — or, when each item
  has raters of its own (``per_item < raters``), the one-way ICC(1,1) on the items'
  ``per_item`` ratings — and Krippendorff's
  alpha, interval (:func:`ieqa.human.krippendorff_alpha`, any missing pattern); ``rank``: the ranks of each group's
  candidates (1 = best) as items, Krippendorff's alpha (ordinal) over all of them and
  Kendall's W per group, averaged over the groups ranked by 2+ raters; ``pairwise``:
  Krippendorff's alpha (nominal) of the verdicts. A statistic that is not defined yet
  (too few answers, no variance) is reported as such, with the reason. ICC(2,1) and W
  say how many items they rest on, and are computed only when every rater rates every
  item (``per_item == raters``): with fewer raters per item only the gold items have
  the whole panel, and a statistic of two gold items would pass for the study's.
* **gold agreement** per rater, in [0, 1]: ``rate``/``critique``: 1 - mean |answer -
  gold| / (scale range); ``rank``: the share of a gold group's candidate pairs (gold
  values further apart than ``tie_margin``) the rater orders as the gold does;
  ``pairwise``: the share of verdicts equal to the gold one (tie and both-bad count as
  the same). Below ``gold_min``: flagged.
* **low agreement**: :func:`ieqa.human.agreement_screen` (SRCC with the mean of the
  other raters over 10+ shared items below 0.3) on the same matrices, pairwise verdicts
  coded as the preference for A (+1 A better, -1 B better, 0 tie or both bad); a rater
  with too few shared items is "not judged yet".
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ieqa.human import RatingTable, agreement_screen, icc, kendall_w, krippendorff_alpha
from ieqa.metrics.checks import MetricInputError
from ieqa.studio.design import PAIR_LABELS, StudyConfig
from ieqa.studio.store import Item, Store

__all__ = ["AgreementRow", "RaterRow", "StudyReport", "gold_label", "study_report"]


@dataclass
class RaterRow:
    """One rater's progress and flags."""

    rater: str
    done: int
    total: int
    training_done: int
    training_total: int
    last_active: float | None
    gold_score: float | None = None
    gold_n: int = 0
    flags: list[str] = field(default_factory=list)


@dataclass
class AgreementRow:
    """One statistic on one dimension: ``value`` or, when undefined, ``note`` says why."""

    dimension: str
    statistic: str
    value: float | None
    note: str = ""


@dataclass
class StudyReport:
    """What the admin page shows."""

    raters: list[RaterRow]
    items: list[dict[str, Any]]
    agreement: list[AgreementRow]
    n_responses: int


def gold_label(a: float, b: float, margin: float) -> str:
    """The pairwise verdict the gold values of A and B imply."""
    if a - b > margin:
        return "a>b"
    if b - a > margin:
        return "b>a"
    return "tie"


def _numeric(responses: list[dict[str, Any]], items: dict[int, Item], config: StudyConfig,
             ) -> dict[str, RatingTable]:
    """Per dimension, the answers as a long-form table of numbers (see the module docstring)."""
    rows: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for r in responses:
        it = items[r["item"]]
        if it.role == "training":
            continue
        if config.protocol in ("rate", "critique"):
            rows[r["dimension"]].append((it.id, r["rater"], float(r["value"])))
        elif config.protocol == "rank":
            for place, slot in enumerate(json.loads(r["answer"])):
                rows[r["dimension"]].append((f"{it.id}#{slot}", r["rater"], float(place + 1)))
        else:
            rows[r["dimension"]].append((it.id, r["rater"], float(PAIR_LABELS.index(r["answer"]))))
    tables = {}
    for dim, rr in rows.items():
        tables[dim] = RatingTable(np.asarray([x[0] for x in rr], dtype=str), np.asarray([x[1] for x in rr], dtype=str),
                                  np.full(len(rr), dim, dtype=object).astype(str),
                                  np.asarray([x[2] for x in rr], dtype=np.float64))
    return tables


def _compact(m: np.ndarray, k: int) -> np.ndarray:
    """The items with exactly ``k`` ratings, each row's ratings side by side (rater slots,
    not raters): the one-way layout of ICC(1,1) when each item has raters of its own."""
    rows = [r[~np.isnan(r)] for r in m]
    kept = [r for r in rows if len(r) == k]
    return np.asarray(kept, dtype=np.float64).reshape(len(kept), k)


def _stat(dim: str, name: str, fn, note: str = "") -> AgreementRow:  # noqa: ANN001 - a zero-argument callable
    """``fn()`` as a row; ``note`` says what a value was computed on; an undefined
    statistic (ieqa.human raises :class:`MetricInputError`) becomes ``None`` with the reason."""
    try:
        return AgreementRow(dim, name, float(fn()), note)
    except (MetricInputError, ValueError, ZeroDivisionError) as exc:
        return AgreementRow(dim, name, None, f"not defined yet: {exc}")


#: pairwise verdicts as a preference for A, for the agreement screen (an SRCC): the
#: label indices themselves are nominal (b>a is not "between" a>b and tie)
_PREFER_A = np.array([1.0, -1.0, 0.0, 0.0])
assert PAIR_LABELS == ("a>b", "b>a", "tie", "both-bad")


def _screened(m: np.ndarray, protocol: str) -> np.ndarray:
    """The matrix the agreement screen correlates: pairwise verdicts as +1 (A better),
    -1 (B better), 0 (tie or both bad); other protocols' numbers as they are."""
    if protocol != "pairwise":
        return m
    codes = np.nan_to_num(m, nan=0.0).astype(int)
    return np.where(np.isnan(m), np.nan, _PREFER_A[codes])


def _agreement(tables: dict[str, RatingTable], config: StudyConfig) -> tuple[list[AgreementRow], dict[str, list[str]]]:
    out: list[AgreementRow] = []
    flags: dict[str, list[str]] = defaultdict(list)
    for dim in config.dimensions:
        table = tables.get(dim)
        if table is None or len(table) == 0:
            out.append(AgreementRow(dim, "answers", None, "no answers yet"))
            continue
        items, raters, m = table.to_matrix(dim)
        if config.protocol in ("rate", "critique"):
            complete = int((~np.isnan(m)).all(axis=1).sum())
            if config.per_item >= config.raters:  # every rater rates every item
                used = (f"on the {complete} item(s) every rater has answered so far"
                        + (f" ({len(m) - complete} not yet)" if complete < len(m) else ""))
                out.append(_stat(dim, "ICC(2,1)", lambda m=m: icc(m, "ICC(2,1)"), used))
                out.append(_stat(dim, "Kendall's W", lambda m=m: kendall_w(m).w, used))
            else:  # each item has its own raters (only gold items have all): one-way ICC on the items' k ratings
                k = config.per_item
                slots = _compact(m, k)
                out.append(_stat(dim, f"ICC(1,1) (raters differ per item; {len(slots)} item(s) with {k} ratings)",
                                 lambda s=slots: icc(s, "ICC(1,1)")))
                out.append(AgreementRow(dim, "Kendall's W", None, "not defined: raters differ per "
                                        "item (it needs every rater to rate the same items)"))
            out.append(_stat(dim, "Krippendorff's alpha (interval)",
                             lambda m=m: krippendorff_alpha(m, "interval")))
        elif config.protocol == "rank":
            out.append(_stat(dim, "Krippendorff's alpha (ordinal ranks)",
                             lambda m=m: krippendorff_alpha(m, "ordinal")))
            groups: dict[str, list[int]] = defaultdict(list)
            for i, key in enumerate(items):
                groups[str(key).rsplit("#", 1)[0]].append(i)
            ws = []
            for rows in groups.values():
                sub = m[rows]
                sub = sub[:, ~np.isnan(sub).any(axis=0)]
                if sub.shape[1] >= 2:
                    try:
                        ws.append(kendall_w(sub).w)
                    except MetricInputError:
                        pass
            out.append(AgreementRow(dim, f"Kendall's W (mean over {len(ws)} group(s))",
                                    float(np.mean(ws)) if ws else None,
                                    "" if ws else "not defined yet: no group ranked by 2+ raters"))
        else:
            out.append(_stat(dim, "Krippendorff's alpha (nominal verdicts)",
                             lambda m=m: krippendorff_alpha(m, "nominal")))
        if m.shape[1] >= 2:
            try:
                screen = agreement_screen(_screened(m, config.protocol))
            except MetricInputError:
                continue
            for j, rater in enumerate(raters):
                if screen.rejected[j]:
                    flags[str(rater)].append(f"low agreement on {dim}: {screen.reasons[j]}")
    return out, flags


def _gold_scores(responses: list[dict[str, Any]], items: dict[int, Item], config: StudyConfig,
                 ) -> dict[str, tuple[float, int]]:
    """Per rater, (gold agreement in [0, 1], number of gold answers judged)."""
    lo, hi = config.scale
    per: dict[str, list[float]] = defaultdict(list)
    for r in responses:
        it = items[r["item"]]
        if it.role != "gold" or it.gold is None or r["dimension"] not in it.gold:
            continue
        g = it.gold[r["dimension"]]
        if config.protocol in ("rate", "critique"):
            per[r["rater"]].append(1.0 - abs(float(r["value"]) - g[0]) / (hi - lo))
        elif config.protocol == "rank":
            order = [int(s[1:]) for s in json.loads(r["answer"])]
            place = {c: p for p, c in enumerate(order)}
            for i in range(len(g)):
                for j in range(i + 1, len(g)):
                    if abs(g[i] - g[j]) > config.tie_margin:
                        per[r["rater"]].append(float((g[i] > g[j]) == (place[i] < place[j])))
        else:
            want = gold_label(g[0], g[1], config.tie_margin)
            got = "tie" if r["answer"] == "both-bad" else r["answer"]
            per[r["rater"]].append(float(got == want))
    return {k: (float(np.mean(v)), len(v)) for k, v in per.items()}


def study_report(store: Store) -> StudyReport:
    """Progress per rater and item, agreement so far and flagged raters."""
    config = StudyConfig.from_json(store.meta()["config"])
    items = {it.key: it for it in store.items()}
    responses = store.responses()
    by_rater: dict[str, RaterRow] = {}
    per_item: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for a in store.assignments():
        row = by_rater.setdefault(a.rater, RaterRow(a.rater, 0, 0, 0, 0, None))
        training = items[a.item].role == "training"
        if training:
            row.training_total += 1
            row.training_done += a.done is not None
        else:
            row.total += 1
            row.done += a.done is not None
            per_item[a.item][1] += 1
            per_item[a.item][0] += a.done is not None
        if a.done is not None:
            row.last_active = max(row.last_active or 0.0, a.done)
    tables = _numeric(responses, items, config)
    agreement, flags = _agreement(tables, config)
    for rater, (score, n) in _gold_scores(responses, items, config).items():
        row = by_rater[rater]
        row.gold_score, row.gold_n = score, n
        if score < config.gold_min:
            row.flags.append(f"gold: agreement {score:.2f} < {config.gold_min:g} over {n} gold answer(s)")
    for rater, fl in flags.items():
        by_rater[rater].flags += fl
    item_rows = [{"key": k, "id": items[k].id, "role": items[k].role, "done": d, "assigned": n}
                 for k, (d, n) in sorted(per_item.items())]
    return StudyReport(sorted(by_rater.values(), key=lambda r: r.rater), item_rows, agreement, len(responses))
