"""``ieqa dpo-pairs``: preference pairs for DPO, built as EditHF §5.5 builds them.

EditHF (seed paper 002, §5.5) refines Qwen-Image-Edit with two kinds of pairs:

* **Self-DPO** (``mode="self"``): for each instruction the model generated N edits (20
  seeds); *within each seed group* the highest-scored edit is *chosen* and the lowest
  *rejected*; instructions whose edits all score low are excluded; *within each editing
  task* the pairs are ranked by the chosen edit's score and the lower half is discarded.
  A group here is one (source, instruction, editor): the N candidates of one model.
* **Global-DPO** (``mode="global"``): for each (source, instruction) group of edits by
  different editors, the highest-ranked is chosen and the lowest rejected; instructions
  with low scores across all editors are excluded.

How ieqa applies it (:func:`build_pairs`), in this order, per group:

1. the eligible candidates are the rows with a reward under the
   :class:`~ieqa.rewards.rule.RewardRule` (default ``mean``: EditHF picks by "the
   highest average score across all evaluation dimensions"; rows that failed to score never
   enter a pair; with ``drop_flagged`` flagged rows neither); a group with fewer than two
   is counted as ``single``;
2. chosen = the first, rejected = the last eligible candidate in the documented order
   (:func:`~ieqa.curate.source.order_key`: reward, then sigma, then id);
3. ``threshold``: a group whose *best* reward is below it (so every candidate is) is
   dropped as ``low`` (EditHF gives no value; none by default);
4. the margin ``reward(chosen) - reward(rejected)`` must be > 0 (a group whose candidates
   all tie gives no pair: ``tie``) and >= ``min_margin`` (``margin``);
5. ``P(chosen > rejected)`` = :func:`ieqa.rewards.local.p_better` of the margin with the
   sigma of the difference ``sqrt(σ_c² + σ_r²)`` when both rewards have a sigma
   (``E[sigmoid(z)]``, z ~ N(margin, σ²)), else ``sigmoid(margin)`` (Bradley–Terry, as
   ``ieqa serve`` reports it); with ``min_prob`` a pair below it is dropped
   (``uncertain``);
6. per task, the pairs are ranked by the chosen edit's order key and the best
   ``ceil(keep_fraction · n)`` kept: EditHF keeps the top half for Self-DPO
   (``keep_fraction`` default 0.5 in ``self`` mode). For Global-DPO the paper names only
   the low-score exclusion, so the default there is 1.0 (every pair); pass 0.5 to apply
   the top-half rule too. EditHF ranks and filters by "overall" and picks by the average;
   ieqa uses the one rule for all three (choose it with ``rule``).

Memory: one streaming pass keeps a summary per group (:func:`~ieqa.curate.groups.scan_groups`,
O(groups)); a second pass decodes only the rows of the kept pairs and writes a pair as
soon as both its rows were read (a row waits for its partner at most until the end of
the file: O(pairs) in the worst row order, about one pair with grouped input).

Outputs in the folder ``out``:

* ``dpo.jsonl`` — TRL's standard preference layout, one pair per line:
  ``prompt`` (the instruction), ``images`` (``[source image path]``: the prompt's image,
  as in TRL's vision preference datasets), ``chosen`` and ``rejected`` (the edited
  images' paths: in image-editing DPO — EditHF's Eq. 7, Diffusion-DPO — the responses are
  images), plus ``chosen_id``, ``rejected_id``, ``chosen_reward``, ``rejected_reward``,
  ``margin``, ``p_chosen``, ``task``, ``chosen_editor``, ``rejected_editor``. Load it with
  ``datasets.load_dataset("json", ...)`` and cast ``chosen``/``rejected`` to
  ``datasets.Image()`` and ``images`` to ``Sequence(Image())`` to get decoded images.
* ``preferences.jsonl`` — the same pairs as an ieqa preference file
  (:func:`ieqa.data.manifest.write_preferences`): ``a`` = chosen, ``b`` = rejected,
  ``label`` ``a>b``, ``dimension`` ``overall``, ``rater`` naming the rule.
* ``stats.json`` and ``report.html`` — counts per filter and per task, margins, and with
  a ``reference`` manifest the pairs' agreement with its scores per dimension.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ieqa.curate.groups import Candidate, GroupSummary, parse_group_by, scan_groups
from ieqa.curate.report import summary_stats
from ieqa.curate.source import CurateError, ScoredRow, ScoredSource
from ieqa.data.manifest import write_preferences
from ieqa.data.schema import Preference
from ieqa.data.scorefile import JoinCheck, check_join
from ieqa.errors import IeqaError
from ieqa.report import HtmlReport, histogram_chart, write_json
from ieqa.rewards.local import p_better
from ieqa.rewards.rule import RewardRule

__all__ = ["DEFAULT_GROUP_BY", "DEFAULT_KEEP_FRACTION", "DpoPair", "DpoResult", "build_pairs",
           "dpo_pairs", "pair_agreement"]

Mode = Literal["self", "global"]
#: the group of each mode: one model's N candidates per request, or every editor's
DEFAULT_GROUP_BY: dict[str, tuple[str, ...]] = {"self": ("source", "instruction", "editor"),
                                                "global": ("source", "instruction")}
#: the share of pairs kept per task (EditHF: top half for Self-DPO; see the module docstring)
DEFAULT_KEEP_FRACTION: dict[str, float] = {"self": 0.5, "global": 1.0}
#: the reasons a group gives no pair, in the order they are tested
DROP_REASONS = ("single", "low", "tie", "margin", "uncertain", "lower_fraction")


@dataclass(frozen=True)
class DpoPair:
    """One pair: the group's key, task, chosen and rejected candidates, the reward margin
    (> 0, reward units) and P(chosen > rejected) in [0.5, 1]."""

    group: tuple[Any, ...]
    task: str | None
    chosen: Candidate
    rejected: Candidate
    margin: float
    p_chosen: float


def _check_threshold(threshold: float | None) -> None:
    """A threshold compares with every reward: NaN would keep everything, as none is below
    it, and infinity nothing."""
    if threshold is not None and not math.isfinite(threshold):
        raise CurateError(f"--threshold needs a finite number (a reward), got {threshold}")


def build_pairs(groups: Sequence[GroupSummary], *, threshold: float | None = None,
                min_margin: float = 0.0, min_prob: float | None = None,
                keep_fraction: float = 0.5) -> tuple[list[DpoPair], dict[str, int], dict[str, dict[str, int]]]:
    """Steps 1-6 of the module docstring on scanned groups.

    Returns ``(pairs, dropped, per_task)``: the kept pairs (per task, best chosen first;
    tasks in order of first appearance), the number of groups dropped per reason of
    :data:`DROP_REASONS`, and per task ``{"groups", "pairs", "kept"}`` (pairs before step 6).
    """
    if not 0.0 < keep_fraction <= 1.0:
        raise CurateError(f"keep_fraction must be in (0, 1], got {keep_fraction}")
    _check_threshold(threshold)
    if min_margin < 0 or not math.isfinite(min_margin):
        raise CurateError(f"min_margin must be a finite number >= 0, got {min_margin}")
    if min_prob is not None and not 0.5 <= min_prob <= 1.0:
        raise CurateError(f"min_prob must be in [0.5, 1], got {min_prob}")
    dropped = dict.fromkeys(DROP_REASONS, 0)
    by_task: dict[str | None, list[DpoPair]] = {}
    per_task: dict[str, dict[str, int]] = {}
    for g in groups:
        stats = per_task.setdefault(str(g.task), {"groups": 0, "pairs": 0, "kept": 0})
        stats["groups"] += 1
        if g.n_ok < 2 or g.best is None or g.worst is None:
            dropped["single"] += 1
            continue
        if threshold is not None and g.best.reward < threshold:
            dropped["low"] += 1
            continue
        margin = g.best.reward - g.worst.reward
        if margin <= 0:
            dropped["tie"] += 1
            continue
        if margin < min_margin:
            dropped["margin"] += 1
            continue
        sigma = (math.hypot(g.best.sigma, g.worst.sigma)
                 if g.best.sigma is not None and g.worst.sigma is not None else None)
        p = p_better(margin, sigma)
        if min_prob is not None and p < min_prob:
            dropped["uncertain"] += 1
            continue
        by_task.setdefault(g.task, []).append(DpoPair(g.key, g.task, g.best, g.worst, margin, p))
        stats["pairs"] += 1
    pairs: list[DpoPair] = []
    for task, items in by_task.items():
        items.sort(key=lambda pr: pr.chosen.key)
        k = math.ceil(keep_fraction * len(items))
        dropped["lower_fraction"] += len(items) - k
        per_task[str(task)]["kept"] = k
        pairs.extend(items[:k])
    return pairs, dropped, per_task


def pair_agreement(pairs: Sequence[tuple[str, str]], reference: str | os.PathLike[str] | ScoredSource,
                   dimensions: Sequence[str] | None = None, *,
                   fields: Mapping[str, Mapping[str, Any]] | None = None,
                   max_mismatch: float = 0.0) -> dict[str, dict[str, float | int | None]]:
    """How often ``(chosen id, rejected id)`` pairs agree with a reference's scores.

    ``reference`` is a manifest (e.g. ground truth, human MOS) or a score file. Per
    dimension of the reference (or ``dimensions``): ``agree`` (chosen scored higher),
    ``tie`` (equal), ``disagree``, ``missing`` (an id not in the reference or without that
    score), ``accuracy`` = agree / (agree + tie + disagree) (ties count as wrong) and
    ``accuracy_no_ties`` = agree / (agree + disagree); None when undefined. Streams the
    reference, holding only the scores of the pairs' ids. With ``fields`` (``{id:
    {"source": ..., "edited": ..., "editor": ...}}`` of the pairs' edits), the join by id is
    first checked (:func:`ieqa.data.scorefile.check_join`, :class:`CurateError` above
    ``max_mismatch``).
    """
    scores, _ = _reference_scores(pairs, reference, fields, max_mismatch)
    return _agreement(pairs, scores, dimensions)


def _reference_scores(pairs: Sequence[tuple[str, str]], reference: str | os.PathLike[str] | ScoredSource,
                      fields: Mapping[str, Mapping[str, Any]] | None, max_mismatch: float,
                      name: str = "the pairs' score file"
                      ) -> tuple[dict[str, dict[str, float]], JoinCheck | None]:
    wanted = {i for pr in pairs for i in pr}
    source = reference if isinstance(reference, ScoredSource) else ScoredSource(reference)
    scores: dict[str, dict[str, float]] = {}
    ref_fields: dict[str, dict[str, Any]] = {}
    for row in source.rows():
        if row.id in wanted:
            scores[row.id] = dict(row.result.scores)
            ref_fields[row.id] = row.fields
    join = None
    if fields is not None:
        join = check_join(fields, ref_fields, sides=(name, str(source.path)),
                          max_mismatch=max_mismatch, error=CurateError)
    return scores, join


def _agreement(pairs: Sequence[tuple[str, str]], scores: dict[str, dict[str, float]],
               dimensions: Sequence[str] | None) -> dict[str, dict[str, float | int | None]]:
    dims = list(dimensions) if dimensions is not None else sorted({d for v in scores.values() for d in v})
    out: dict[str, dict[str, float | int | None]] = {}
    for d in dims:
        agree = tie = disagree = missing = 0
        for c, r in pairs:
            sc, sr = scores.get(c, {}).get(d), scores.get(r, {}).get(d)
            if sc is None or sr is None:
                missing += 1
            elif sc > sr:
                agree += 1
            elif sc == sr:
                tie += 1
            else:
                disagree += 1
        n = agree + tie + disagree
        out[d] = {"agree": agree, "tie": tie, "disagree": disagree, "missing": missing,
                  "accuracy": agree / n if n else None,
                  "accuracy_no_ties": agree / (agree + disagree) if agree + disagree else None}
    return out


@dataclass
class DpoResult:
    """What :func:`dpo_pairs` did.

    Attributes:
        dpo: ``dpo.jsonl`` (TRL layout). preferences: ``preferences.jsonl``.
        stats_json, report_html: the stats report.
        pairs: the kept pairs (per task, best chosen first).
        stats: the JSON stats as a dict.
    """

    dpo: Path
    preferences: Path
    stats_json: Path
    report_html: Path
    pairs: list[DpoPair] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def _trl_row(pair: DpoPair, chosen: ScoredRow, rejected: ScoredRow) -> dict[str, Any]:
    fc, fr = chosen.fields, rejected.fields
    source = fc.get("source")
    return {"prompt": fc.get("instruction") or "", "images": [source] if source else [],
            "chosen": fc.get("edited"), "rejected": fr.get("edited"),
            "chosen_id": chosen.id, "rejected_id": rejected.id,
            "chosen_reward": pair.chosen.reward, "rejected_reward": pair.rejected.reward,
            "margin": pair.margin, "p_chosen": pair.p_chosen, "task": pair.task,
            "chosen_editor": fc.get("editor"), "rejected_editor": fr.get("editor")}


def dpo_pairs(
    scores: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    mode: Mode = "global",
    rule: RewardRule | str | None = None,
    group_by: str | tuple[str, ...] | None = None,
    threshold: float | None = None,
    min_margin: float = 0.0,
    min_prob: float | None = None,
    keep_fraction: float | None = None,
    drop_flagged: bool = False,
    reference: str | os.PathLike[str] | None = None,
    progress: bool = False,
    scorer: str | None = None,
    max_mismatch: float = 0.0,
) -> DpoResult:
    """Build DPO pairs from a score file or manifest (see the module docstring).

    Args:
        scores: score file of ``ieqa score`` or manifest with scores.
        out: output folder (created; its files are replaced).
        mode: ``"self"`` (one model's candidates per request) or ``"global"`` (editors).
        rule: the reward rule (default ``"mean"``, EditHF's pick).
        group_by: the group fields (default :data:`DEFAULT_GROUP_BY` of the mode).
        threshold: drop groups whose best reward is below it (reward units).
        min_margin: minimum ``reward(chosen) - reward(rejected)`` (>= 0; pairs need > 0).
        min_prob: minimum P(chosen > rejected), in [0.5, 1].
        keep_fraction: share of pairs kept per task, in (0, 1] (default
            :data:`DEFAULT_KEEP_FRACTION` of the mode).
        drop_flagged: flagged candidates never enter a pair.
        reference: a manifest (e.g. ground truth, human MOS) or score file whose scores
            the pairs are checked against in the stats; joined by id, after checking that
            its edits are the pairs' (:func:`ieqa.data.scorefile.check_join`).
        progress: show progress on stderr.
        scorer: read only this scorer's rows of a score file that holds several
            (``NAME@HASH`` or ``NAME``); the others are counted in the stats.
        max_mismatch: with ``reference``, the share of joined edits whose inputs may differ
            (source, edited image, editor) before the join is refused.

    Raises:
        CurateError: bad options or input.
    """
    if mode not in DEFAULT_GROUP_BY:
        raise CurateError(f"--mode must be self or global, got {mode!r}")
    _check_threshold(threshold)
    rule = rule if isinstance(rule, RewardRule) else RewardRule(rule or "mean")
    fields = parse_group_by(group_by) if group_by is not None else DEFAULT_GROUP_BY[mode]
    fraction = DEFAULT_KEEP_FRACTION[mode] if keep_fraction is None else float(keep_fraction)
    source = ScoredSource(scores, rule, scorer=scorer)
    ref_source = None if reference is None else ScoredSource(reference)
    groups, ungrouped, errors = scan_groups(source, fields, drop_flagged=drop_flagged, progress=progress)
    pairs, dropped, per_task = build_pairs(list(groups.values()), threshold=threshold,
                                           min_margin=min_margin, min_prob=min_prob,
                                           keep_fraction=fraction)
    del groups
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise CurateError(f"{out_dir} is a file; -o names the output folder of the pairs")
    out_dir.mkdir(parents=True, exist_ok=True)
    partner: dict[int, tuple[int, DpoPair]] = {}
    for pr in pairs:
        partner[pr.chosen.index] = (pr.rejected.index, pr)
        partner[pr.rejected.index] = (pr.chosen.index, pr)
    select = np.zeros(source.n_rows, dtype=bool)
    select[list(partner)] = True
    agreement = join = None
    if ref_source is not None:  # checked before anything is written
        id_pairs = [(p.chosen.id, p.rejected.id) for p in pairs]
        ref_scores, join = _reference_scores(
            id_pairs, ref_source, {row.id: row.fields for row in source.rows(select)}, max_mismatch,
            f"the pairs of {source.path}")
        agreement = _agreement(id_pairs, ref_scores, None)
    dpo_path = out_dir / "dpo.jsonl"
    tmp = dpo_path.with_name(f".{dpo_path.name}.tmp")

    def preferences(fh: Any) -> Iterator[Preference]:
        waiting: dict[int, ScoredRow] = {}
        for row in source.rows(select):
            other, pr = partner[row.index]
            mate = waiting.pop(other, None)
            if mate is None:
                waiting[row.index] = row
                continue
            chosen, rejected = (row, mate) if row.index == pr.chosen.index else (mate, row)
            fh.write(json.dumps(_trl_row(pr, chosen, rejected), ensure_ascii=False) + "\n")
            yield Preference(a=chosen.to_sample(), b=rejected.to_sample(), label="a>b",
                             dimension="overall", rater=f"ieqa dpo-pairs {mode}: {rule.formula()}",
                             meta={"mode": mode, "margin": pr.margin, "p_chosen": pr.p_chosen,
                                   "task": pr.task})

    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            prefs_path = write_preferences(preferences(fh), out_dir / "preferences.jsonl")
        os.replace(tmp, dpo_path)
    finally:
        tmp.unlink(missing_ok=True)
    margins = np.array([p.margin for p in pairs], dtype=np.float64)
    stats: dict[str, Any] = {
        "input": str(source.path), "mode": mode, "rule": rule.describe(), "group_by": list(fields),
        "threshold": threshold, "min_margin": min_margin, "min_prob": min_prob,
        "keep_fraction": fraction, "drop_flagged": drop_flagged,
        "rows": source.n_rows, "ungrouped_rows": ungrouped, "error_rows": errors, "groups": sum(v["groups"] for v in per_task.values()),
        "pairs": len(pairs), "dropped_groups": dropped, "per_task": per_task,
        "margin": summary_stats(margins), "p_chosen": summary_stats(np.array([p.p_chosen for p in pairs])),
        "chosen_reward": summary_stats(np.array([p.chosen.reward for p in pairs])),
        "rejected_reward": summary_stats(np.array([p.rejected.reward for p in pairs])),
    }
    if scorer is not None:
        stats["scorer"] = scorer
        stats["other_scorer_rows"] = source.n_other
    if reference is not None:
        stats["reference"] = str(reference)
        stats["reference_agreement"] = agreement
        if join is not None:
            stats["reference_join"] = {"joined": join.n_joined, "compared": join.n_compared,
                                       "mismatched": len(join.mismatched), "note": join.note()}
    stats_path = write_json(out_dir / "stats.json", stats)
    html_path = _dpo_html(out_dir / "report.html", stats, margins)
    return DpoResult(dpo_path, prefs_path, stats_path, html_path, pairs, stats)


def _dpo_html(path: Path, stats: dict[str, Any], margins: np.ndarray) -> Path:
    html = HtmlReport(f"DPO pairs ({stats['mode']}): {stats['pairs']} pairs from {stats['groups']} groups")
    html.add_paragraph(f"Input {stats['input']}; groups by {', '.join(stats['group_by'])}; reward "
                       f"{stats['rule']['formula']}; threshold {stats['threshold']}, minimum margin "
                       f"{stats['min_margin']}, minimum P {stats['min_prob']}, kept share per task "
                       f"{stats['keep_fraction']:g}.")
    html.add_heading("Groups that gave no pair")
    html.add_table([stats["dropped_groups"]], list(DROP_REASONS))
    html.add_heading("Per task")
    html.add_table([{"task": k, **v} for k, v in stats["per_task"].items()], ["task", "groups", "pairs", "kept"])
    html.add_heading("Rewards and margins")
    html.add_table([{"quantity": k, **{s: stats[k][s] for s in ("n", "mean", "std", "min", "max")}}
                    for k in ("chosen_reward", "rejected_reward", "margin", "p_chosen")],
                   ["quantity", "n", "mean", "std", "min", "max"])
    if "reference_agreement" in stats:
        html.add_heading("Agreement with the reference")
        html.add_table([{"dimension": k, **v} for k, v in stats["reference_agreement"].items()],
                       ["dimension", "agree", "tie", "disagree", "missing", "accuracy", "accuracy_no_ties"])
    try:
        if margins.size:
            html.add_figure(histogram_chart({"kept pairs": margins}, "reward margin", xlabel="margin"),
                            "reward(chosen) - reward(rejected)")
    except IeqaError as exc:
        html.add_paragraph(f"No figures: {exc}")
    return html.save(path)
