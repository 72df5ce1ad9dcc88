"""Groups of candidate edits, streamed: the best and worst candidate per group, and
``ieqa best-of-n``.

A group is the set of rows sharing the values of the ``group_by`` fields (e.g.
``("source", "instruction")``: every candidate for one request). :func:`scan_groups`
reads the input once and keeps, per group, only a running summary — row count, scored
count, the best and the worst candidate (position, id, reward, sigma) under the
documented order (:func:`~ieqa.curate.source.order_key`), the first error — never the
group's rows. Memory is O(number of groups), whatever the row order of the file: no
sort and no grouped input is needed. Rows are then fetched by position in a second pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.curate.source import CurateError, ScoredRow, ScoredSource, order_key
from ieqa.data.manifest import ManifestWriter
from ieqa.progress import progress_bar
from ieqa.rewards.rule import RewardRule
from ieqa.scorers.run import INPUT_COLUMNS

__all__ = ["BestOfNResult", "Candidate", "GroupSummary", "best_of_n", "parse_group_by", "scan_groups"]

GROUP_FIELDS = INPUT_COLUMNS  # source, edited, instruction, editor, task, group_id


def parse_group_by(text: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``"source,instruction"`` -> ``("source", "instruction")``; each name must be one of
    ``source, edited, instruction, editor, task, group_id``."""
    names = tuple(n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip())
    bad = [n for n in names if n not in GROUP_FIELDS]
    if not names or bad:
        raise CurateError(f"--group-by {text!r}: give comma-separated fields among "
                          f"{', '.join(GROUP_FIELDS)} (e.g. source,instruction or group_id)")
    return names


@dataclass(frozen=True)
class Candidate:
    """One candidate of a group: its row position, id, reward and reward sigma."""

    index: int
    id: str
    reward: float
    sigma: float | None

    @property
    def key(self) -> tuple[float, float, str]:
        return order_key(self.reward, self.sigma, self.id)


@dataclass
class GroupSummary:
    """What :func:`scan_groups` keeps of one group.

    Attributes:
        key: the group's ``group_by`` values.
        n: rows in the group.
        n_ok: rows with a reward (eligible candidates).
        best, worst: first and last eligible candidate in the documented order.
        task: the task of the group's first row.
        first_error: the error of the first row without a reward (None when all have one).
    """

    key: tuple[Any, ...]
    n: int = 0
    n_ok: int = 0
    best: Candidate | None = None
    worst: Candidate | None = None
    task: str | None = None
    first_error: str | None = None

    def add(self, row: ScoredRow, eligible: bool) -> None:
        if self.n == 0:
            self.task = row.fields.get("task")
        self.n += 1
        if not eligible:
            if self.first_error is None:
                self.first_error = row.reward.error or "left out (flagged)"
            return
        self.n_ok += 1
        cand = Candidate(row.index, row.id, float(row.reward.reward), row.reward.sigma)  # type: ignore[arg-type]
        if self.best is None or cand.key < self.best.key:
            self.best = cand
        if self.worst is None or cand.key > self.worst.key:
            self.worst = cand


def scan_groups(source: ScoredSource, group_by: tuple[str, ...], *, drop_flagged: bool = False,
                progress: bool = False) -> tuple[dict[tuple[Any, ...], GroupSummary], int, int]:
    """One pass over ``source``: ``({group key: summary}, rows without a group key, rows
    without a reward)`` (the last: failed to score, or the rule could not combine them).

    A row is an eligible candidate when it has a reward (and, with ``drop_flagged``, no
    flag). A row with a missing (null or empty) ``group_by`` field belongs to no group and
    is only counted.
    """
    groups: dict[tuple[Any, ...], GroupSummary] = {}
    ungrouped = errors = 0
    total = source.n_rows if source.path.name.endswith(".parquet") else None
    with progress_bar("reading groups", total, enabled=progress, unit="rows") as advance:
        for row in source.rows():
            advance(1)
            errors += not row.ok
            key = tuple(row.fields.get(f) for f in group_by)
            if any(v is None or v == "" for v in key):
                ungrouped += 1
                continue
            g = groups.get(key)
            if g is None:
                g = groups[key] = GroupSummary(key)
            g.add(row, row.ok and not (drop_flagged and row.result.flags))
    return groups, ungrouped, errors


@dataclass
class BestOfNResult:
    """What :func:`best_of_n` did.

    Attributes:
        manifest: the output manifest (one row per group with an eligible candidate, in
            file order).
        report_json: ``<manifest>.report.json`` (counts and every failed group).
        n_rows, n_groups: input rows and groups.
        n_picked: groups with a pick (rows written).
        failed: groups whose candidates all failed (or were all dropped): ``{"group":
            {field: value}, "n": rows, "error": the first error}``.
        ungrouped: rows with a missing group field (left out).
        picks: ``{id of the pick: number of candidates in its group}``.
        error_rows: input rows that failed to score or hold a NaN/infinite score (never
            picked; counted in the report).
        other_scorer_rows: rows of other scorers left out (``scorer`` given).
    """

    manifest: Path
    report_json: Path
    n_rows: int
    n_groups: int
    n_picked: int
    failed: list[dict[str, Any]]
    ungrouped: int
    picks: dict[str, int] = field(default_factory=dict)
    error_rows: int = 0
    other_scorer_rows: int = 0


def best_of_n(
    scores: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    group_by: str | tuple[str, ...] = ("source", "instruction"),
    rule: RewardRule | str | None = None,
    drop_flagged: bool = False,
    progress: bool = False,
    scorer: str | None = None,
) -> BestOfNResult:
    """The best candidate per group, as a manifest.

    Args:
        scores: score file of ``ieqa score`` or manifest with scores.
        out: the output manifest (``.jsonl``, ``.jsonl.gz`` or ``.parquet``).
        group_by: the fields that make a group (default: one request = source image +
            instruction; ``"group_id"`` uses the input's group ids).
        rule: the reward rule (default ``"overall"``).
        drop_flagged: flagged candidates are not picked.
        progress: show progress on stderr.
        scorer: read only this scorer's rows of a score file that holds several
            (``NAME@HASH`` or ``NAME``); the others are counted in the report.

    The pick is the first candidate of the documented order: highest reward, then
    lowest reward sigma (unknown sigma after any known one), then smallest id — the same
    pick whatever the row order. A group with no candidate that has a reward is listed in
    ``failed`` (and the report), never silently dropped. Each written row carries
    ``meta.reward``, ``meta.reward_sigma`` and ``meta.candidates`` (the group's size).
    """
    rule = rule if isinstance(rule, RewardRule) else RewardRule(rule or "overall")
    fields = parse_group_by(group_by)
    source = ScoredSource(scores, rule, scorer=scorer)
    groups, ungrouped, errors = scan_groups(source, fields, drop_flagged=drop_flagged, progress=progress)
    n = source.n_rows
    picks = {g.best.index: g for g in groups.values() if g.best is not None}
    failed = [{"group": dict(zip(fields, g.key, strict=True)), "n": g.n, "error": g.first_error}
              for g in groups.values() if g.best is None]
    select = np.zeros(n, dtype=bool)
    select[list(picks)] = True
    out = Path(out)
    written: dict[str, int] = {}
    with ManifestWriter(out) as writer:
        for row in source.rows(select):
            g = picks[row.index]
            sample = row.to_sample()
            sample = sample.model_copy(update={"meta": {**sample.meta, "candidates": g.n}})
            writer.write(sample)
            written[row.id] = g.n
    from ieqa.report import write_json

    report = {"input": str(source.path), "rule": rule.describe(), "group_by": list(fields),
              "rows": n, "groups": len(groups), "picked": len(written), "ungrouped_rows": ungrouped,
              "error_rows": errors, "failed_groups": failed,
              **({"scorer": scorer, "other_scorer_rows": source.n_other} if scorer else {}),
              "tie_break": "reward high first, then reward sigma low first (unknown last), then id ascending"}
    report_json = write_json(out.with_name(out.name + ".report.json"), report)
    return BestOfNResult(out, report_json, n, len(groups), len(written), failed, ungrouped, written,
                         errors, source.n_other)

