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
* **rater flags** (:func:`rater_flags`), each a :class:`Flag` whose message states the
  numbers measured, how many answers they rest on and the rule (thresholds are printed so
  the comparison shown is true: 0.6996 prints as ``0.6996 < 0.7``, never ``0.70 < 0.7``;
  :func:`ieqa.human.screening.compared`). Only study and gold items count, never
  training. ``max_share`` (0.9), ``min_seconds`` (2 s) and ``gold_min`` (0.7) come from
  the :class:`~ieqa.studio.design.StudyConfig`:

  - ``constant``: ``rate``/``critique``, per dimension: the most common slider value in
    more than ``max_share`` of the rater's answers; ``pairwise``, per dimension: one
    verdict in more than ``max_share`` of them (5+ answers, :data:`MIN_ANSWERS`);
  - ``straight_lining``: ``rate``/``critique`` with 2+ dimensions: the same value on
    every slider of an answer in more than ``max_share`` of the answers; ``rank``:
    rankings left in the shown order (``untouched``; answers where that is not known do
    not count) in more than ``max_share`` of them (5+ answers);
  - ``too_fast``: the median time from the page being shown to the answer below
    ``min_seconds``, over 5+ timed answers;
  - ``position_bias`` (``pairwise``, per dimension): of the decisive verdicts (``a>b``,
    ``b>a``), the share for A (or for B) with a two-sided exact binomial test (p = 0.5)
    whose p is below :data:`BIAS_ALPHA` (0.001): 10 of 10 for one side is not enough
    (p = 0.002), 11 of 11 is;
  - ``gold``: gold agreement below ``gold_min``;
  - ``low_agreement``, per dimension: the rater's Spearman correlation with the per-item
    *median* of the other raters (leave-one-out), below
    :data:`ieqa.human.MIN_RATER_SRCC` (0.3) over :data:`ieqa.human.MIN_SHARED_ITEMS`
    (10)+ shared items. The consensus leaves out the raters any rule above flagged; of
    the others, the worst one below 0.3 is flagged and leaves the consensus, and the rest
    are judged again, until nobody is below (so one adversary among three raters cannot
    pull the two honest ones under the threshold); with fewer than three raters in the
    consensus nobody is flagged by this rule (two raters who disagree have the same SRCC
    with each other: the disagreement cannot be pinned on either). Raters flagged by another rule are
    then judged against the median of the raters left. ``rank``: the candidates' ranks as
    items; ``pairwise``: verdicts coded as the preference for A (+1 A better, -1 B
    better, 0 tie or both bad). A rater with too few shared items, or constant answers or
    consensus there, is not judged.

  Measured on simulated panels (``benchmarks/rater_screening.py --studio --panels 500``,
  seed 0, :mod:`ieqa.studio.simulate`; 2 good raters with noise SD 12% of the scale
  range and one random, constant, reversing, always-A and fast rater each, everyone
  answering every item; rate and critique 20 samples, rank 6 groups of 4, pairwise 30
  pairs): precision 100% in every protocol (no good rater, nor a bad one whose behaviour
  does not apply, was flagged); recall 100% (rate, critique), 97.4% (rank: the random
  ranker is caught in 89.4% of panels) and 98.6% (pairwise: random 94.2%); the constant,
  straight-lining, too-fast and position-bias rules caught their raters in every panel.
  With 4 noisier good raters (``--good 4 --noise 0.25``): precision 96.5% / 97.3% /
  95.8% / 96.1% (rate / critique / rank / pairwise), 2.2-3.4% of good raters flagged,
  nearly all for low agreement; recall 100% / 100% / 97.4% / 98.6%.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from ieqa.human import (
    MIN_RATER_SRCC,
    MIN_SHARED_ITEMS,
    RatingTable,
    icc,
    kendall_w,
    krippendorff_alpha,
)
from ieqa.human.screening import compared
from ieqa.metrics.checks import MetricInputError
from ieqa.studio.design import PAIR_LABELS, StudyConfig
from ieqa.studio.store import Item, Store

__all__ = ["BIAS_ALPHA", "FLAG_KINDS", "MIN_ANSWERS", "AgreementRow", "Flag", "RaterRow", "StudyReport",
           "gold_label", "rater_flags", "study_report"]

#: the kinds of :class:`Flag`, in the order a rater's flags are listed
FLAG_KINDS: tuple[str, ...] = ("constant", "straight_lining", "too_fast", "position_bias", "gold",
                               "low_agreement")
#: answers a rater needs before the constant, straight-lining and too-fast rules judge them
MIN_ANSWERS: int = 5
#: the position-bias rule flags a two-sided exact binomial test p below this
BIAS_ALPHA: float = 0.001


@dataclass(frozen=True)
class Flag:
    """Why a rater is flagged: ``kind`` (one of :data:`FLAG_KINDS`), the ``message`` the
    admin page shows (the measured numbers, what they rest on and the rule) and the
    ``numbers`` themselves. ``str(flag)`` is the message."""

    kind: str
    message: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


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
    flags: list[Flag] = field(default_factory=list)


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


def _agreement(tables: dict[str, RatingTable], config: StudyConfig) -> list[AgreementRow]:
    out: list[AgreementRow] = []
    for dim in config.dimensions:
        table = tables.get(dim)
        if table is None or len(table) == 0:
            out.append(AgreementRow(dim, "answers", None, "no answers yet"))
            continue
        items, raters, m = table.to_matrix(dim)
        if config.protocol in ("rate", "critique"):
            complete = int((~np.isnan(m)).all(axis=1).sum())
            if config.per_item >= max(config.raters, m.shape[1]):  # every rater rates every item (added raters widen the panel)
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
    return out


def _gold_scores(responses: list[dict[str, Any]], items: dict[int, Item], config: StudyConfig,
                 ) -> dict[str, tuple[float, int]]:
    """Per rater, (gold agreement in [0, 1], number judged: gold answers, or for rankings
    the pairs of gold candidates more than ``tie_margin`` apart)."""
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


def _share_rule(share: float, config: StudyConfig) -> str:
    """``"(100% > 90%)"``: a share against ``max_share``, printed so the comparison holds."""
    v, t = compared(share, ">", config.max_share, digits=0, percent=True)
    return f"({v} > {t})"


def _behaviour_flags(config: StudyConfig, mine: Sequence[Mapping[str, Any]]) -> list[Flag]:
    """Constant answers, straight-lining, answering too fast and position bias of one
    rater's study and gold responses ``mine`` (see the module docstring)."""
    out: list[Flag] = []
    per_dim: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in mine:
        per_dim[r["dimension"]].append(r)
    sliders = config.protocol in ("rate", "critique")
    for dim in config.dimensions:
        rows = per_dim.get(dim, [])
        if len(rows) < MIN_ANSWERS or config.protocol == "rank":
            continue
        given = [round(float(r["value"]), 6) if sliders else r["answer"] for r in rows]
        top, count = Counter(given).most_common(1)[0]
        share = count / len(given)
        if share > config.max_share:
            what = f"one value ({top:.2f})" if sliders else f"one verdict ({top})"
            out.append(Flag("constant", f"constant: {what} on {count} of {len(given)} {dim} answers "
                            f"{_share_rule(share, config)}",
                            {"dimension": dim, "answer": top, "count": count, "n": len(given), "share": share,
                             "max_share": config.max_share}))
    if sliders and len(config.dimensions) >= 2:
        by_item: dict[Any, dict[str, float]] = defaultdict(dict)
        for r in mine:
            by_item[r["item"]][r["dimension"]] = round(float(r["value"]), 6)
        full = [v for v in by_item.values() if all(d in v for d in config.dimensions)]
        same = sum(len(set(v.values())) == 1 for v in full)
        if len(full) >= MIN_ANSWERS and same / len(full) > config.max_share:
            share = same / len(full)
            out.append(Flag("straight_lining", f"straight-lining: the same value on all {len(config.dimensions)} "
                            f"sliders in {same} of {len(full)} answers {_share_rule(share, config)}",
                            {"count": same, "n": len(full), "share": share, "max_share": config.max_share}))
    if config.protocol == "rank":
        known = [bool(r["untouched"]) for r in mine if r.get("untouched") is not None]
        kept = sum(known)
        if len(known) >= MIN_ANSWERS and kept / len(known) > config.max_share:
            share = kept / len(known)
            out.append(Flag("straight_lining", f"straight-lining: {kept} of {len(known)} rankings left in the "
                            f"shown order {_share_rule(share, config)}",
                            {"count": kept, "n": len(known), "share": share, "max_share": config.max_share}))
    times = [float(d) for d in {r["submission"]: r.get("duration") for r in mine}.values() if d is not None]
    if len(times) >= MIN_ANSWERS:
        median = float(np.median(times))
        if median < config.min_seconds:
            v, t = compared(median, "<", config.min_seconds, digits=1)
            out.append(Flag("too_fast", f"too fast: median time per answer {v} s < {t} s over {len(times)} "
                            "timed answers", {"median_seconds": median, "n": len(times),
                                              "min_seconds": config.min_seconds}))
    if config.protocol == "pairwise":
        for dim in config.dimensions:
            verdicts = [r["answer"] for r in per_dim.get(dim, [])]
            n, k = sum(v in ("a>b", "b>a") for v in verdicts), verdicts.count("a>b")
            if n == 0:
                continue
            p = float(stats.binomtest(k, n, 0.5).pvalue)
            if p < BIAS_ALPHA:
                side, count = ("A (left)", k) if 2 * k > n else ("B (right)", n - k)
                v, t = compared(p, "<", BIAS_ALPHA, digits=2, style="g")
                out.append(Flag("position_bias", f"position bias: {side} chosen in {count} of {n} decisive "
                                f"{dim} verdicts ({count / n:.0%}; two-sided binomial test p = {v} < {t})",
                                {"dimension": dim, "side": side[0], "count": count, "n": n, "share": count / n,
                                 "p": p, "alpha": BIAS_ALPHA}))
    return out


def _loo_median_srcc(m: np.ndarray, j: int, others: Sequence[int], min_items: int) -> tuple[float, int]:
    """Rater ``j``'s SRCC with the per-item median of the raters ``others`` (columns of
    ``m``), over the items ``j`` and at least one of them answered, and how many items
    that is; NaN when fewer than ``min_items`` or either side is constant there."""
    ref_cols = m[:, list(others)]
    use = ~np.isnan(m[:, j]) & (~np.isnan(ref_cols)).any(axis=1)
    n = int(use.sum())
    if n < min_items:
        return float("nan"), n
    mine = m[use, j]
    ref = np.nanmedian(ref_cols[use], axis=1)
    if np.ptp(mine) == 0 or np.ptp(ref) == 0:
        return float("nan"), n
    return float(np.corrcoef(stats.rankdata(mine), stats.rankdata(ref))[0, 1]), n


def _low_agreement(m: np.ndarray, raters: Sequence[str], skip: set[str], dim: str) -> list[tuple[str, Flag]]:
    """Leave-one-out SRCC against the per-item median of the others. The consensus is
    made of the raters no other rule flagged (not ``skip``): the worst of them below
    :data:`MIN_RATER_SRCC` is flagged and leaves the consensus, and the rest are judged
    again, until nobody is below; then each ``skip`` rater is judged against the median
    of the raters that are left. Two raters who disagree have the same SRCC with each
    other: with fewer than three raters in the consensus nobody is flagged by it (the
    disagreement cannot be pinned on either)."""
    active = [j for j, r in enumerate(raters) if r not in skip]
    out: list[tuple[str, Flag]] = []

    def flag(j: int, srcc: float, n: int, others: int) -> None:
        v, t = compared(srcc, "<", MIN_RATER_SRCC, digits=2)
        out.append((raters[j], Flag(
            "low_agreement", f"low agreement on {dim}: SRCC {v} < {t} with the per-item median of "
            f"{others} unflagged other rater(s) over {n} shared items",
            {"dimension": dim, "srcc": srcc, "n_shared": n, "n_others": others, "min_srcc": MIN_RATER_SRCC})))

    while len(active) >= 3:
        scores = {j: _loo_median_srcc(m, j, [k for k in active if k != j], MIN_SHARED_ITEMS) for j in active}
        below = [(s, j) for j, (s, _) in scores.items() if s < MIN_RATER_SRCC]  # NaN: not judged
        if not below:
            break
        srcc, j = min(below)
        flag(j, srcc, scores[j][1], len(active) - 1)
        active.remove(j)
    for j, rater in enumerate(raters):
        if rater in skip and active:
            srcc, n = _loo_median_srcc(m, j, active, MIN_SHARED_ITEMS)
            if srcc < MIN_RATER_SRCC:
                flag(j, srcc, n, len(active))
    return out


def rater_flags(config: StudyConfig, items: Mapping[int, Item],
                responses: Sequence[Mapping[str, Any]]) -> dict[str, list[Flag]]:
    """Every flagged rater's :class:`Flag` s, from their study and gold ``responses``
    (:meth:`Store.responses` rows; ``items`` by key): constant answers, straight-lining,
    too fast, position bias, gold agreement below ``gold_min`` and, last, low agreement
    with the median of the raters no other rule flagged (see the module docstring)."""
    judged = [r for r in responses if items[r["item"]].role != "training"]
    by_rater: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in judged:
        by_rater[r["rater"]].append(r)
    flags: dict[str, list[Flag]] = {}
    for rater, mine in by_rater.items():
        fl = _behaviour_flags(config, mine)
        if fl:
            flags[rater] = fl
    for rater, (score, n) in _gold_scores(judged, items, config).items():
        if score < config.gold_min:
            v, t = compared(score, "<", config.gold_min, digits=2)
            unit = "pair(s) of gold candidates" if config.protocol == "rank" else "gold answer(s)"
            flags.setdefault(rater, []).append(Flag(
                "gold", f"gold: agreement {v} < {t} over {n} {unit}",
                {"score": score, "n": n, "gold_min": config.gold_min}))
    skip = set(flags)
    tables = _numeric(judged, items, config)
    for dim in config.dimensions:
        if dim not in tables or len(tables[dim]) == 0:
            continue
        _, raters, m = tables[dim].to_matrix(dim)
        for rater, flag in _low_agreement(_screened(m, config.protocol), [str(r) for r in raters], skip, dim):
            flags.setdefault(rater, []).append(flag)
    return {r: flags[r] for r in sorted(flags)}


def study_report(store: Store) -> StudyReport:
    """Progress per rater and item, gold agreement, agreement so far and the raters'
    flags (:func:`rater_flags`)."""
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
    agreement = _agreement(_numeric(responses, items, config), config)
    for rater, (score, n) in _gold_scores(responses, items, config).items():
        by_rater[rater].gold_score, by_rater[rater].gold_n = score, n
    for rater, fl in rater_flags(config, items, responses).items():
        by_rater[rater].flags += fl
    item_rows = [{"key": k, "id": items[k].id, "role": items[k].role, "done": d, "assigned": n}
                 for k, (d, n) in sorted(per_item.items())]
    return StudyReport(sorted(by_rater.values(), key=lambda r: r.rater), item_rows, agreement, len(responses))
