"""Group rankings of editors, and EditHF's win-count scores (its editor benchmark, Table 3).

EditHF (seed paper 002, Sec. 3.3-3.4) shows annotators a *group*: the edits several
editors made of one source image with one instruction, and each annotator ranks them on
each dimension independently. A group's final ranking is the average rank over its
annotators; every pair inside the group then becomes a preference, and "each image is
assigned a ranking score based on its win count across these pairwise comparisons". An
editor's score on a dimension is the mean of its images' win counts; the overall score
combines the dimensions with EditHF's weights (0.3 / 0.4 / 0.3, see
:mod:`ieqa.bench.leaderboard`).

**The rankings file** (JSONL, one ranking per line; :func:`read_rankings`)::

    {"group_id": "g1", "dimension": "visual_quality", "ranking": ["A", ["B", "C"], "D"], "rater": "ann"}

* ``group_id`` (string or integer): the group (one source + instruction);
* ``dimension``: what was ranked (any alias of a dimension, e.g. ``"PQ"``);
* ``ranking``: the editors, **best first**; a list inside the list is a tie (B and C
  share second place above). Every editor appears once; at least two editors;
* ``rater`` (optional): who ranked. Several raters' rankings of one group on one
  dimension are averaged (average rank of each editor); they must rank the same editors,
  and one rater ranks a group once per dimension (one line without ``rater`` at most);
* ``task`` (optional): the group's task (same on every line of a group), for
  ``ieqa rank-editors --by-task``;
* ``meta`` (optional): an object of anything else about the ranking (``ieqa studio``
  writes when it was given, how long it took and whether it was left as shown); not read.

**From rankings to scores** (:func:`ranking_win_counts`): a tie inside one ranking gives
the tied editors the average of the places they share (B and C above: 2.5 each); the
group's ranking is each editor's mean rank over its raters; every pair of the group's
editors is a preference (:func:`~ieqa.human.ranking_to_pairs`; equal mean ranks are a
tie); an editor's win count (:func:`~ieqa.human.win_count_scores`) is 1 per pair it wins
and ``tie_credit`` (0.5) per tie, so a group of K editors hands out K(K-1)/2 points and
an editor's count lies in [0, K-1]. EditHF reports the raw counts (its groups hold 23
editors); ``normalize=True`` divides by K-1 (a win rate in [0, 1]), which keeps groups of
different sizes comparable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.textfile import json_lines
from ieqa.errors import UnknownDimensionError
from ieqa.human.pairs import ranking_to_pairs, win_count_scores
from ieqa.metrics.checks import MetricInputError

__all__ = ["RANKING_KEYS", "GroupRanking", "RankingWins", "parse_ranking", "ranking_win_counts",
           "read_rankings"]

#: The keys a ranking line may have (the first three are required).
RANKING_KEYS: tuple[str, ...] = ("group_id", "dimension", "ranking", "rater", "task", "meta")
_EXAMPLE = '{"group_id": "g1", "dimension": "visual_quality", "ranking": ["A", ["B", "C"], "D"]}'


@dataclass(frozen=True)
class GroupRanking:
    """One rater's ranking of one group's editors on one dimension.

    Attributes:
        group_id: the group (source image + instruction).
        dimension: canonical dimension name.
        tiers: the editors best first, one tuple per place; a tuple of several editors
            is a tie.
        rater: who ranked (``None`` when the file does not say).
        task: the group's task, or ``None``.
        where: where the ranking came from (``"path:line"``), for error messages.
    """

    group_id: str
    dimension: str
    tiers: tuple[tuple[str, ...], ...]
    rater: str | None = None
    task: str | None = None
    where: str = "ranking"

    @property
    def editors(self) -> list[str]:
        """The ranked editors, best first (tied ones in the order written)."""
        return [e for tier in self.tiers for e in tier]

    def doubled_ranks(self) -> dict[str, int]:
        """Editor -> twice its rank (1 = best; tied editors share the average of their
        places, so twice the rank is a whole number)."""
        out: dict[str, int] = {}
        start = 1
        for tier in self.tiers:
            for e in tier:
                out[e] = 2 * start + len(tier) - 1
            start += len(tier)
        return out


def _name(value: object, what: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise MetricInputError(f"{where}: {what} must be a non-empty string, got {value!r}")
    return str(value).strip()


def parse_ranking(obj: object, where: str = "ranking") -> GroupRanking:
    """A :class:`GroupRanking` from one decoded JSON line (see the module docstring).

    Raises :class:`MetricInputError` naming ``where`` and saying how to write the line.
    """
    if not isinstance(obj, Mapping):
        raise MetricInputError(f"{where}: a ranking line must be a JSON object, e.g. {_EXAMPLE}")
    unknown = sorted(set(obj) - set(RANKING_KEYS))
    if unknown:
        raise MetricInputError(f"{where}: unknown key(s) {unknown}; a ranking line has group_id, dimension and "
                               f"ranking, optionally rater, task and meta (an object), e.g. {_EXAMPLE}")
    if obj.get("meta") is not None and not isinstance(obj["meta"], Mapping):
        raise MetricInputError(f"{where}: meta must be a JSON object, got {obj['meta']!r}")
    missing = [k for k in RANKING_KEYS[:3] if obj.get(k) is None]
    if missing:
        raise MetricInputError(f"{where}: missing {', '.join(missing)}; write e.g. {_EXAMPLE}")
    try:
        dimension = canonical_dimension(_name(obj["dimension"], "dimension", where))
    except UnknownDimensionError as exc:
        raise MetricInputError(f"{where}: {exc}") from None
    ranking = obj["ranking"]
    if not isinstance(ranking, list):
        raise MetricInputError(f"{where}: ranking must be a list of editors, best first (a list inside it is a "
                               f"tie), got {ranking!r}")
    tiers: list[tuple[str, ...]] = []
    for entry in ranking:
        members = entry if isinstance(entry, list) else [entry]
        if not members:
            raise MetricInputError(f"{where}: ranking has an empty tie []; list the tied editors in it, or "
                                   "remove it")
        if any(isinstance(m, list) for m in members):
            raise MetricInputError(f"{where}: a tie inside a tie in {ranking!r}; write a tie as one flat list of "
                                   "editors, e.g. [\"B\", \"C\"]")
        tiers.append(tuple(_name(m, "an editor", where) for m in members))
    editors = [e for t in tiers for e in t]
    repeated = sorted({e for e in editors if editors.count(e) > 1})
    if repeated:
        raise MetricInputError(f"{where}: editor(s) {repeated} appear more than once in the ranking; list each "
                               "editor once (tied editors together in one inner list)")
    if len(editors) < 2:
        raise MetricInputError(f"{where}: a ranking needs at least two editors, got {editors}; remove the line "
                               "or add the other editors of the group")
    rater = None if obj.get("rater") is None else _name(obj["rater"], "rater", where)
    task = None if obj.get("task") is None else _name(obj["task"], "task", where)
    return GroupRanking(_name(obj["group_id"], "group_id", where), dimension, tuple(tiers), rater, task, where)


def read_rankings(path: str | os.PathLike[str]) -> list[GroupRanking]:
    """The rankings of a JSONL file (one JSON object per line; blank lines are skipped).

    Raises :class:`MetricInputError` naming the file and line for a line that is not a
    valid ranking, and for a file with no ranking.
    """
    path = Path(path)
    if not path.is_file():
        raise MetricInputError(f"rankings file {path} does not exist; give the path of a JSONL file of group "
                               f"rankings, e.g. a line {_EXAMPLE}")
    out = []
    for n, obj in json_lines(path, error=MetricInputError, objects=False,
                             hint=f"write one JSON object per line, e.g. {_EXAMPLE}"):
        out.append(parse_ranking(obj, f"{path}: line {n}"))
    if not out:
        raise MetricInputError(f"{path} holds no ranking; write one JSON object per line, e.g. {_EXAMPLE}")
    return out


@dataclass(frozen=True)
class RankingWins:
    """Win-count scores of every ranked (group, editor), one row each.

    Attributes:
        group: ``(N,)`` group ids, in order of first appearance.
        editor: ``(N,)`` editor names.
        task: ``(N,)`` the group's task, or ``None`` when no line gives one (``"(none)"``
            for a group without one when others have one).
        wins: dimension -> ``(N,)`` win count in [0, K-1] (K = editors in the group), or
            the win rate in [0, 1] with ``normalize``; NaN where the editor was not
            ranked in that group on that dimension.
        mean_rank: dimension -> ``(N,)`` the editor's mean rank over the group's raters
            (1 = best; NaN where not ranked).
        n_raters: dimension -> ``(N,)`` rankings averaged for the row (0 = not ranked).
        n_pairs: dimension -> preference pairs made from the rankings.
        tie_credit: points per tied pair (0.5).
        normalize: whether ``wins`` are win rates.
    """

    group: np.ndarray
    editor: np.ndarray
    task: np.ndarray | None
    wins: dict[str, np.ndarray]
    mean_rank: dict[str, np.ndarray]
    n_raters: dict[str, np.ndarray]
    n_pairs: dict[str, int]
    tie_credit: float
    normalize: bool

    def __len__(self) -> int:
        return len(self.editor)

    @property
    def ids(self) -> np.ndarray:
        """``(N,)`` row ids ``"group_id/editor"``."""
        return np.asarray([f"{g}/{e}" for g, e in zip(self.group, self.editor, strict=True)], dtype=str)

    def columns(self) -> dict[str, Any]:
        """The rows as columns (``id``, ``editor``, ``group_id``, ``task`` and one per
        dimension), the input of :func:`ieqa.bench.leaderboard.score_table`."""
        out: dict[str, Any] = {"id": self.ids, "editor": self.editor, "group_id": self.group}
        if self.task is not None:
            out["task"] = self.task
        return out | self.wins


def _check_consistent(rankings: list[GroupRanking]) -> None:
    seen: dict[tuple[str, str, str | None], str] = {}
    editors: dict[tuple[str, str], tuple[list[str], str]] = {}
    tasks: dict[str, tuple[str | None, str]] = {}
    for r in rankings:
        key = (r.group_id, r.dimension, r.rater)
        if key in seen:
            who = f"rater {r.rater!r}" if r.rater is not None else "a ranking without a rater"
            raise MetricInputError(
                f"{r.where}: {who} ranks group {r.group_id!r} on {r.dimension} a second time (first at "
                f"{seen[key]}); keep one line, or give each rater's line its own \"rater\"")
        seen[key] = r.where
        first = editors.setdefault((r.group_id, r.dimension), (sorted(r.editors), r.where))
        if first[0] != sorted(r.editors):
            raise MetricInputError(
                f"{r.where}: group {r.group_id!r} on {r.dimension} ranks editors {sorted(r.editors)}, but "
                f"{first[1]} ranks {first[0]}; every rater of a group ranks the same editors")
        task = tasks.setdefault(r.group_id, (r.task, r.where))
        if r.task != task[0]:
            raise MetricInputError(f"{r.where}: group {r.group_id!r} has task {r.task!r} here but {task[0]!r} at "
                                   f"{task[1]}; give a group one task on every line (or none)")


def ranking_win_counts(rankings: Iterable[GroupRanking], *, tie_credit: float = 0.5,
                       normalize: bool = False) -> RankingWins:
    """EditHF's ranking scores: group rankings -> mean rank per group -> pairs -> each
    edit's win count in its group (see the module docstring).

    ``tie_credit`` in [0, 1] is what each side of a tied pair gets; ``normalize`` turns
    counts into win rates. Raises :class:`MetricInputError` for a rater who ranks a group
    twice on one dimension, raters of one group ranking different editors, or a group
    given two tasks.
    """
    rankings = list(rankings)
    if not rankings:
        raise MetricInputError("no rankings given; pass GroupRanking records (read_rankings(path) reads a file)")
    _check_consistent(rankings)
    row_of: dict[tuple[str, str], int] = {}
    for r in rankings:
        for e in r.editors:
            row_of.setdefault((r.group_id, e), len(row_of))
    n = len(row_of)
    group = np.asarray([g for g, _ in row_of], dtype=str)
    editor = np.asarray([e for _, e in row_of], dtype=str)
    task_of = {r.group_id: r.task for r in rankings}
    task = None
    if any(t is not None for t in task_of.values()):
        task = np.asarray([task_of[g] or "(none)" for g in group.tolist()], dtype=str)
    wins, mean_rank, n_raters, n_pairs = {}, {}, {}, {}
    for dim in dict.fromkeys(r.dimension for r in rankings):
        doubled = np.zeros(n, dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        for r in (r for r in rankings if r.dimension == dim):
            for e, d2 in r.doubled_ranks().items():
                doubled[row_of[r.group_id, e]] += d2
                count[row_of[r.group_id, e]] += 1
        rows = np.flatnonzero(count > 0)
        # Within a group every editor has the same number of raters, so the summed
        # (doubled, whole-number) ranks order and tie the editors exactly as their means.
        pairs = ranking_to_pairs(group[rows], doubled[rows])
        w = np.full(n, np.nan)
        w[rows] = win_count_scores(group[rows], pairs.a, pairs.b, pairs.label, tie_credit=tie_credit,
                                   normalize=normalize)
        mr = np.full(n, np.nan)
        mr[rows] = doubled[rows] / (2.0 * count[rows])
        wins[dim], mean_rank[dim], n_raters[dim], n_pairs[dim] = w, mr, count, len(pairs.a)
    return RankingWins(group, editor, task, wins, mean_rank, n_raters, n_pairs, float(tie_credit), bool(normalize))
