"""Editor leaderboards: rank image-editing models by their mean scores (EditHF Table 3).

:func:`editor_leaderboard` averages per-edit scores (human MOS or an evaluator's
predictions) per editor and dimension, combines the dimension means into an overall
score, and ranks the editors. :func:`compare_rankings` measures how well a predicted
leaderboard reproduces a human one (SRCC/KRCC over editors, as in EditHF Table 3's
"SRCC to human" row).

**Overall score.** ``overall = sum_d w_d * score_d`` with the weights normalised to sum
to 1, so it stays on the scores' scale. It is computed per edit and then averaged (equal
to the weighted sum of the dimension means when every edit has every weighted dimension;
an edit missing a weighted dimension has no overall score). The default,
:data:`EDITHF_WEIGHTS` = 0.3 visual quality + 0.4 instruction alignment + 0.3 content
preservation, is EditHF's Eq. (2) (Sec. 3.4: "An overall score is then derived by
combining the visual quality score, the editing alignment score, and the attribute
preservation score ... The editing alignment score is assigned a higher weight"). The
equation's coefficients were lost from the paper's text extraction; a least-squares fit
of the *Human* columns of Table 3 (23 editors) gives 0.289 / 0.415 / 0.297 (sum 1.000,
max abs residual 0.05 against the printed overall, i.e. rounding), and 0.3 / 0.4 / 0.3
reproduces the printed human overall of every editor within 0.075. The same weights are
ReasonEdit's released ``overall`` and ShapesEdit's ground truth.

When no weights are given and the data lacks one of the three core dimensions, a given
``overall`` score is used as is (``{"overall": 1}``) if present, else the available
dimensions are weighted equally; :attr:`Leaderboard.weights` always says what was used.

**Ranks.** 1 is best. Ties get the *minimum* rank by default ("competition" ranking
1, 2, 2, 4 — what a leaderboard prints); ``tie_method="average"`` gives 1, 2.5, 2.5, 4.
Editors without a score in a column get rank NaN and sort last.

**Uncertainty.** Per editor and column: the standard error of the mean
(``sd(ddof=1) / sqrt(n)``, NaN when n < 2) and a confidence interval at level ``ci``:
normal approximation ``mean ± z * SE`` by default, or, with ``n_boot > 0``, the
percentile bootstrap of :func:`ieqa.metrics.bootstrap_ci` over that editor's edits.

**Different items.** Editors run on different groups (source + instruction) are
compared on different items; ``common_groups_only=True`` keeps only the groups every
editor covers (the counts are in :attr:`Leaderboard.n_groups_total` and
:attr:`Leaderboard.n_groups`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from scipy import stats

from ieqa.bench.errors import BenchError
from ieqa.data.combine import REASONEDIT_WEIGHTS, WeightsError, normalise_weights
from ieqa.data.combine import parse_weights as combine_parse_weights
from ieqa.data.dimensions import CORE_DIMENSIONS, OVERALL, canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import UnknownDimensionError
from ieqa.metrics import MetricInputError, bootstrap_ci, krcc, srcc

__all__ = [
    "EDITHF_WEIGHTS", "Leaderboard", "ScoreTable", "compare_rankings", "editor_leaderboard",
    "parse_weights", "resolve_weights", "score_table",
]

#: EditHF Eq. (2) overall-score weights (see the module docstring for the evidence).
EDITHF_WEIGHTS: dict[str, float] = REASONEDIT_WEIGHTS  # the same 0.3 / 0.4 / 0.3
TieMethod = Literal["min", "average"]
_TIE_METHODS = ("min", "average")
#: Column names of a mapping input that are not dimensions.
_RESERVED = ("id", "editor", "group_id", "task")
_NO_TASK = "(none)"


# --------------------------------------------------------------------------- weights


def parse_weights(text: str) -> dict[str, float]:
    """Parse ``"visual_quality=0.3,instruction_alignment=0.4,..."`` (or the same weights
    as ``"0.3*visual_quality + 0.4*instruction_alignment + ..."``) into a dict: the one
    syntax of :func:`ieqa.data.combine.parse_weights`.

    Dimension names may be any alias (``"PQ=0.3,SC=0.7"``); they are canonicalised.
    Raises :class:`BenchError` for a malformed entry, a duplicate or unknown dimension,
    or a value that is not a finite number >= 0; weights are not normalised here.
    """
    try:
        return _check_weights(combine_parse_weights(text))
    except WeightsError as exc:
        raise BenchError(str(exc)) from None
    except UnknownDimensionError as exc:
        raise BenchError(f"weights: {exc}") from None


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Canonical names, finite non-negative values, not all zero."""
    out: dict[str, float] = {}
    for name, w in weights.items():
        try:
            dim = canonical_dimension(name)
        except UnknownDimensionError as exc:
            raise BenchError(f"weights: {exc}") from None
        if dim in out:
            raise BenchError(f"weights: dimension {dim!r} is given twice (via {name!r})")
        try:
            value = float(w)
        except (TypeError, ValueError):
            raise BenchError(f"weights: {w!r} (for {dim}) is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise BenchError(f"weights: {dim}={value} must be a finite number >= 0")
        out[dim] = value
    if not out or sum(out.values()) <= 0:
        raise BenchError("weights must contain at least one positive weight")
    return out


def resolve_weights(weights: Mapping[str, float] | str | None, available: Iterable[str]) -> dict[str, float]:
    """The overall-score weights to use, normalised to sum to 1.

    ``weights`` (a mapping or a :func:`parse_weights` string) must only name dimensions in
    ``available`` (the dimensions the data has). ``None`` picks the default described in
    the module docstring. Zero weights are dropped.
    """
    avail = list(dict.fromkeys(available))
    if weights is None:
        if all(d in avail for d in EDITHF_WEIGHTS):
            chosen: dict[str, float] = dict(EDITHF_WEIGHTS)
        elif OVERALL in avail:
            chosen = {OVERALL: 1.0}
        elif avail:
            chosen = {d: 1.0 for d in avail}
        else:
            raise BenchError("the data has no scores: cannot compute an overall score")
    else:
        chosen = parse_weights(weights) if isinstance(weights, str) else _check_weights(weights)
        missing = [d for d, w in chosen.items() if w > 0 and d not in avail]
        if missing:
            raise BenchError(
                f"weights name dimension(s) {missing} that the data has no scores for; "
                f"available: {avail}"
            )
    return {d: w for d, w in normalise_weights(chosen).items() if w > 0}


# --------------------------------------------------------------------------- score tables


@dataclass(frozen=True)
class ScoreTable:
    """Per-edit scores in columns: row i is one edit.

    Attributes:
        editor: (N,) editor names (str).
        scores: dimension -> (N,) float64; NaN where an edit has no score.
        group: (N,) group ids (str), or None when no edit has one. An edit without a
            group id forms a group of its own.
        task: (N,) task names (str, ``"(none)"`` when missing), or None when no edit has one.
        ids: (N,) edit ids (str), or None.
    """

    editor: np.ndarray
    scores: dict[str, np.ndarray]
    group: np.ndarray | None = None
    task: np.ndarray | None = None
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.editor)

    @property
    def dimensions(self) -> list[str]:
        """Dimensions with at least one score, in column order."""
        return [d for d, v in self.scores.items() if not np.isnan(v).all()]

    def subset(self, keep: np.ndarray) -> ScoreTable:
        """The rows selected by a boolean mask or an index array."""
        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[keep]

        return ScoreTable(self.editor[keep], {d: v[keep] for d, v in self.scores.items()},
                          take(self.group), take(self.task), take(self.ids))

    def restrict_ids(self, ids: Iterable[str]) -> ScoreTable:
        """The rows whose id is in ``ids`` (needs :attr:`ids`)."""
        if self.ids is None:
            raise BenchError("these scores carry no edit ids")
        return self.subset(np.isin(self.ids, np.asarray(list(ids), dtype=str)))


def _str_array(values: Sequence[Any]) -> np.ndarray:
    return np.asarray([str(v) for v in values], dtype=str) if len(values) else np.zeros(0, dtype=str)


def _optional_column(values: Sequence[Any], fill: Sequence[str] | str) -> np.ndarray | None:
    """Str column with missing entries filled (from ``fill``), or None when all missing."""
    if all(v is None for v in values):
        return None
    if isinstance(fill, str):
        return _str_array([fill if v is None else v for v in values])
    return _str_array([f if v is None else v for v, f in zip(values, fill, strict=True)])


def _table_from_samples(samples: Iterable[EditSample]) -> ScoreTable:
    ids: list[str] = []
    editors: list[str] = []
    groups: list[str | None] = []
    tasks: list[str | None] = []
    rows: list[dict[str, float]] = []
    dims: dict[str, None] = {}
    for s in samples:
        if not isinstance(s, EditSample):
            raise BenchError(f"expected EditSample items, got {type(s).__name__}")
        if s.editor is None:
            raise BenchError(f"sample {s.id!r} has no editor: cannot rank editors")
        ids.append(s.id)
        editors.append(s.editor)
        groups.append(s.group_id)
        tasks.append(s.task)
        rows.append(s.scores)
        dims.update(dict.fromkeys(s.scores))
    nan = float("nan")
    scores = {d: np.fromiter((r.get(d, nan) for r in rows), np.float64, len(rows)) for d in dims}
    return ScoreTable(_str_array(editors), scores,
                      _optional_column(groups, [f"<no group>:{i}" for i in ids]),
                      _optional_column(tasks, _NO_TASK), _str_array(ids))


def _table_from_mapping(columns: Mapping[str, Any]) -> ScoreTable:
    if "editor" not in columns:
        raise BenchError(f"a column mapping needs an 'editor' column; got {sorted(columns)}")
    editor = _str_array(list(columns["editor"]))
    n = len(editor)
    scores: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        if name in _RESERVED:
            continue
        try:
            dim = canonical_dimension(name)
        except UnknownDimensionError as exc:
            raise BenchError(f"column {name!r}: {exc}") from None
        arr = np.asarray(values, dtype=np.float64)
        if arr.shape != (n,):
            raise BenchError(f"column {name!r} has shape {arr.shape}, expected ({n},)")
        if np.isinf(arr).any():
            raise BenchError(f"column {name!r} has infinite values")
        scores[dim] = arr

    def optional(name: str) -> np.ndarray | None:
        if columns.get(name) is None:
            return None
        arr = _str_array(list(columns[name]))
        if arr.shape != (n,):
            raise BenchError(f"column {name!r} has {len(arr)} rows, expected {n}")
        return arr

    return ScoreTable(editor, scores, optional("group_id"), optional("task"), optional("id"))


def _join_predictions(table: ScoreTable, predictions: Mapping[str, Mapping[str, float]],
                      missing: Literal["raise", "drop"]) -> ScoreTable:
    if table.ids is None:
        raise BenchError("joining predictions needs edit ids in the samples")
    found = np.fromiter((i in predictions for i in table.ids), bool, len(table.ids))
    if not found.all():
        lost = table.ids[~found]
        if missing == "raise":
            raise BenchError(
                f"{len(lost)} of {len(table)} samples have no prediction "
                f"(first: {', '.join(map(repr, lost[:5].tolist()))}); pass missing='drop' to skip them"
            )
        table = table.subset(found)
    rows = [predictions[i] for i in table.ids]
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    by_dim: dict[str, list[str]] = {}
    for k in keys:
        by_dim.setdefault(canonical_dimension(k), []).append(k)
    nan = float("nan")

    def value(r: Mapping[str, float], names: list[str]) -> float:
        for k in names:
            if k in r and r[k] is not None:
                return float(r[k])
        return nan

    scores = {d: np.fromiter((value(r, names) for r in rows), np.float64, len(rows))
              for d, names in by_dim.items()}
    return replace(table, scores=scores)


def score_table(
    data: ScoreTable | Mapping[str, Any] | Iterable[EditSample],
    *,
    predictions: Mapping[str, Mapping[str, float]] | None = None,
    missing: Literal["raise", "drop"] = "raise",
) -> ScoreTable:
    """Build a :class:`ScoreTable` from samples, a column mapping or another table.

    ``data`` is an iterable of :class:`~ieqa.data.schema.EditSample` (scores from
    ``sample.scores``; every sample needs an ``editor``), a mapping of equal-length
    columns (``editor`` required; ``id``, ``group_id``, ``task`` optional; every other key
    is a dimension name, canonicalised, NaN = no score), or a :class:`ScoreTable`.

    With ``predictions`` (edit id -> {dimension: score}, e.g. from
    :func:`ieqa.bench.predictions.read_predictions`) the scores come from the predictions,
    joined on the id, and ``data`` supplies editor, group and task. A sample without a
    prediction raises (``missing="raise"``) or is dropped (``missing="drop"``).
    Predictions for ids not in ``data`` are ignored.
    """
    if missing not in ("raise", "drop"):
        raise BenchError(f"missing must be 'raise' or 'drop', got {missing!r}")
    if isinstance(data, ScoreTable):
        table = data
    elif isinstance(data, Mapping):
        table = _table_from_mapping(data)
    else:
        table = _table_from_samples(data)
    if predictions is not None:
        table = _join_predictions(table, predictions, missing)
    return table


# --------------------------------------------------------------------------- leaderboard


@dataclass
class Leaderboard:
    """Editors ranked by their mean scores.

    Row ``i`` of every array is ``editors[i]``; ``editors`` is in rank order of the
    ``overall`` column (best first; ties and NaN broken by name). Column ``j`` is
    ``columns[j]``: the reported dimensions then ``"overall"``.

    Attributes:
        editors: editor names, best first.
        columns: dimension names, ending with ``"overall"``.
        mean: (E, C) mean score per editor and column (the data's scale; NaN = no score).
        se: (E, C) standard error of the mean (NaN when fewer than 2 scores).
        ci_low, ci_high: (E, C) bounds of the ``ci``-level confidence interval.
        count: (E, C) number of edits with a score in the column.
        rank: (E, C) rank per column, 1 = best (float; NaN = no score).
        n: (E,) number of edits per editor.
        weights: the normalised overall-score weights used.
        ci: confidence level in (0, 1).
        ci_method: ``"normal"`` or ``"bootstrap"``.
        tie_method: ``"min"`` or ``"average"``.
        n_samples: edits used.
        n_groups: groups used (None without group ids).
        n_groups_total: groups in the input before ``common_groups_only``.
        common_groups_only: whether only groups covered by every editor were used.
        by_task: task -> leaderboard on that task's edits (empty unless ``by_task=True``).
    """

    editors: list[str]
    columns: list[str]
    mean: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    count: np.ndarray
    rank: np.ndarray
    n: np.ndarray
    weights: dict[str, float]
    ci: float = 0.95
    ci_method: str = "normal"
    tie_method: str = "min"
    n_samples: int = 0
    n_groups: int | None = None
    n_groups_total: int | None = None
    common_groups_only: bool = False
    by_task: dict[str, Leaderboard] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.editors)

    def _col(self, column: str) -> int:
        name = column if column == OVERALL else canonical_dimension(column)
        if name not in self.columns:
            raise BenchError(f"no column {column!r} in this leaderboard; columns: {self.columns}")
        return self.columns.index(name)

    def scores(self, column: str = OVERALL) -> dict[str, float]:
        """Editor -> mean score in ``column``, in rank order."""
        j = self._col(column)
        return {e: float(v) for e, v in zip(self.editors, self.mean[:, j], strict=True)}

    def ranks(self, column: str = OVERALL) -> dict[str, float | int | None]:
        """Editor -> rank (1 = best) in ``column``: int, float for averaged ties, None
        without a score."""
        j = self._col(column)
        return {e: _rank_value(v) for e, v in zip(self.editors, self.rank[:, j], strict=True)}

    def to_rows(self) -> list[dict[str, Any]]:
        """One flat dict per editor (rank order): ``rank``, ``editor``, ``n``, then per
        column ``<col>``, ``<col>_se``, ``<col>_ci_low``, ``<col>_ci_high``, ``<col>_rank``
        (``n_<col>`` too when some edits lack that column). NaN stays NaN."""
        rows = []
        j_all = len(self.columns) - 1
        for i, e in enumerate(self.editors):
            row: dict[str, Any] = {"rank": _rank_value(self.rank[i, j_all]), "editor": e, "n": int(self.n[i])}
            for j, c in enumerate(self.columns):
                row[c] = float(self.mean[i, j])
                row[f"{c}_se"] = float(self.se[i, j])
                row[f"{c}_ci_low"] = float(self.ci_low[i, j])
                row[f"{c}_ci_high"] = float(self.ci_high[i, j])
                row[f"{c}_rank"] = _rank_value(self.rank[i, j])
                if int(self.count[i, j]) != int(self.n[i]):
                    row[f"n_{c}"] = int(self.count[i, j])
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (NaN as ``None``), per-task boards nested."""
        return _json_safe({
            "editors": self.editors, "columns": self.columns, "weights": self.weights,
            "ci": self.ci, "ci_method": self.ci_method, "tie_method": self.tie_method,
            "n_samples": self.n_samples, "n_groups": self.n_groups,
            "n_groups_total": self.n_groups_total, "common_groups_only": self.common_groups_only,
            "rows": self.to_rows(),
            "by_task": {t: lb.to_dict() for t, lb in self.by_task.items()},
        })


def _rank_value(r: float) -> float | int | None:
    if not np.isfinite(r):
        return None
    return int(r) if float(r).is_integer() else float(r)


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _column_stats(codes: np.ndarray, values: np.ndarray, n_editors: int):
    """Per-editor (count, mean, se) of ``values`` ignoring NaN, by bincount."""
    ok = ~np.isnan(values)
    c, v = codes[ok], values[ok]
    count = np.bincount(c, minlength=n_editors)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(c, weights=v, minlength=n_editors) / count
        ss = np.bincount(c, weights=(v - mean[c]) ** 2, minlength=n_editors)
        se = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1, 1) / count), np.nan)
    return count, mean, se


def _rank_column(values: np.ndarray, tie_method: str) -> np.ndarray:
    """Rank 1 = highest value; NaN values get rank NaN."""
    out = np.full(len(values), np.nan)
    ok = ~np.isnan(values)
    if ok.any():
        out[ok] = stats.rankdata(-values[ok], method=tie_method)
    return out


def _mean_metric(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean(pred))


def _bootstrap_bounds(codes, values, n_editors, n_boot, ci, seed) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.full(n_editors, np.nan), np.full(n_editors, np.nan)
    ok = ~np.isnan(values)
    order = np.argsort(codes[ok], kind="stable")
    c, v = codes[ok][order], values[ok][order]
    bounds = np.searchsorted(c, np.arange(n_editors + 1))
    for e in range(n_editors):
        x = v[bounds[e]:bounds[e + 1]]
        if len(x):
            _, low[e], high[e] = bootstrap_ci(_mean_metric, x, x, n_boot=n_boot, ci=ci, seed=seed)
    return low, high


def _overall_values(table: ScoreTable, weights: Mapping[str, float]) -> np.ndarray:
    total = np.zeros(len(table))
    for d, w in weights.items():
        total = total + w * table.scores[d]  # NaN propagates: an edit missing a dimension
    return total


def _common_groups(table: ScoreTable) -> tuple[ScoreTable, int, int]:
    """Rows of the groups every editor covers; (table, groups kept, groups before)."""
    if table.group is None:
        raise BenchError("common_groups_only needs group ids (EditSample.group_id)")
    e_names, e_codes = np.unique(table.editor, return_inverse=True)
    g_names, g_codes = np.unique(table.group, return_inverse=True)
    pairs = np.unique(g_codes.astype(np.int64) * len(e_names) + e_codes)
    covered = np.bincount(pairs // len(e_names), minlength=len(g_names))
    full = covered == len(e_names)
    if not full.any():
        raise BenchError(
            f"no group is covered by all {len(e_names)} editors ({len(g_names)} groups); "
            "drop common_groups_only or the editors with few edits"
        )
    return table.subset(full[g_codes]), int(full.sum()), len(g_names)


def _board(table: ScoreTable, dims: list[str], weights: dict[str, float], *, ci: float,
           n_boot: int, seed: int | None, tie_method: str) -> Leaderboard:
    names, codes = np.unique(table.editor, return_inverse=True)
    n_e = len(names)
    columns = [*dims, OVERALL]
    nan = np.full(len(table), np.nan)
    values = [table.scores.get(d, nan) for d in dims] + [_overall_values(table, weights)]
    shape = (n_e, len(columns))
    mean, se, low, high = (np.full(shape, np.nan) for _ in range(4))
    count = np.zeros(shape, dtype=np.int64)
    z = float(stats.norm.ppf(0.5 + ci / 2))
    for j, v in enumerate(values):
        count[:, j], mean[:, j], se[:, j] = _column_stats(codes, v, n_e)
        if n_boot:
            low[:, j], high[:, j] = _bootstrap_bounds(codes, v, n_e, n_boot, ci, seed)
        else:
            low[:, j], high[:, j] = mean[:, j] - z * se[:, j], mean[:, j] + z * se[:, j]
    rank = np.column_stack([_rank_column(mean[:, j], tie_method) for j in range(len(columns))])
    overall = mean[:, -1]
    order = np.lexsort((names, np.where(np.isnan(overall), np.inf, -overall)))
    n = np.bincount(codes, minlength=n_e)
    n_groups = None if table.group is None else len(np.unique(table.group))
    return Leaderboard(
        editors=[str(e) for e in names[order]], columns=columns, mean=mean[order], se=se[order],
        ci_low=low[order], ci_high=high[order], count=count[order], rank=rank[order], n=n[order],
        weights=dict(weights), ci=ci, ci_method="bootstrap" if n_boot else "normal",
        tie_method=tie_method, n_samples=len(table), n_groups=n_groups, n_groups_total=n_groups,
    )


def _default_dimensions(table: ScoreTable) -> list[str]:
    present = table.dimensions
    core = [d for d in CORE_DIMENSIONS if d in present]
    return core + [d for d in present if d not in core and d != OVERALL]


def editor_leaderboard(
    samples_or_arrays: ScoreTable | Mapping[str, Any] | Iterable[EditSample],
    *,
    dimensions: Sequence[str] | None = None,
    weights: Mapping[str, float] | str | None = None,
    by_task: bool = False,
    common_groups_only: bool = False,
    predictions: Mapping[str, Mapping[str, float]] | None = None,
    ci: float = 0.95,
    n_boot: int = 0,
    seed: int | None = 0,
    tie_method: TieMethod = "min",
) -> Leaderboard:
    """Rank editors by mean per-dimension and overall scores (EditHF Table 3).

    Args:
        samples_or_arrays: EditSamples, a column mapping or a :class:`ScoreTable` (see
            :func:`score_table`).
        dimensions: dimensions to report (aliases allowed); default: every dimension the
            data scores except ``overall``, the core three first.
        weights: overall-score weights per dimension (mapping or ``"dim=w,..."``), any
            non-negative scale, normalised to sum 1; default :data:`EDITHF_WEIGHTS`
            (see the module docstring for the fallbacks).
        by_task: also build one leaderboard per task (:attr:`Leaderboard.by_task`).
        common_groups_only: keep only groups that every editor has an edit in.
        predictions: edit id -> {dimension: score}; scores come from here, joined on id.
        ci: confidence level in (0, 1).
        n_boot: 0 for normal-approximation intervals, else the number of bootstrap
            resamples (>= 2) per editor and column.
        seed: bootstrap seed.
        tie_method: ``"min"`` (1, 2, 2, 4) or ``"average"`` (1, 2.5, 2.5, 4).

    Vectorised: cost O(N log N) in the number of edits N (bootstrap adds
    O(n_boot * N) per column).
    """
    if tie_method not in _TIE_METHODS:
        raise BenchError(f"tie_method must be one of {_TIE_METHODS}, got {tie_method!r}")
    if not 0.0 < ci < 1.0:
        raise BenchError(f"ci must lie in (0, 1), got {ci!r}")
    if n_boot and (not isinstance(n_boot, int) or n_boot < 2):
        raise BenchError(f"n_boot must be 0 (normal intervals) or an integer >= 2, got {n_boot!r}")
    table = score_table(samples_or_arrays, predictions=predictions)
    if len(table) == 0:
        raise BenchError("no edits to rank")
    w = resolve_weights(weights, table.dimensions)
    if dimensions is None:
        dims = _default_dimensions(table)
    else:
        dims = list(dict.fromkeys(canonical_dimension(d) for d in dimensions if canonical_dimension(d) != OVERALL))
        unknown = [d for d in dims if d not in table.scores]
        if unknown:
            raise BenchError(f"dimensions {unknown} have no scores; available: {table.dimensions}")
    n_groups_total = None if table.group is None else len(np.unique(table.group))
    if common_groups_only:
        table, _, n_groups_total = _common_groups(table)
    opts = {"ci": ci, "n_boot": n_boot, "seed": seed, "tie_method": tie_method}
    board = _board(table, dims, w, **opts)
    board.n_groups_total = n_groups_total
    board.common_groups_only = common_groups_only
    if by_task:
        board.by_task = _task_boards(table, dims, w, common_groups_only, opts)
    return board


def _task_boards(table: ScoreTable, dims: list[str], w: dict[str, float],
                 common: bool, opts: dict[str, Any]) -> dict[str, Leaderboard]:
    if table.task is None:
        raise BenchError("by_task needs task names (EditSample.task)")
    boards = {}
    for task in np.unique(table.task):
        board = _board(table.subset(table.task == task), dims, w, **opts)
        board.common_groups_only = common
        boards[str(task)] = board
    return boards


# --------------------------------------------------------------------------- comparison


def compare_rankings(pred_lb: Leaderboard, human_lb: Leaderboard, dimension: str = OVERALL) -> dict[str, Any]:
    """How well a predicted editor ranking matches the human one in ``dimension``.

    Uses the editors present (with a score) in both boards. Returns a dict with
    ``srcc`` and ``krcc`` (tau-b) in [-1, 1] between the two boards' editor means (via
    :func:`ieqa.metrics.srcc` / :func:`~ieqa.metrics.krcc`, average ranks for ties),
    ``n_editors``, ``editors`` (human order), ``pred_rank`` / ``human_rank`` (re-ranked
    among the shared editors, the human board's tie method), ``displacement``
    (pred rank - human rank; > 0 means the evaluator ranks the editor lower than
    people do), ``mean_abs_displacement``, ``max_abs_displacement``, ``top1_agree``,
    and ``only_in_pred`` / ``only_in_human``. Raises :class:`~ieqa.metrics.MetricInputError`
    with fewer than 2 shared editors or constant scores.
    """
    p_scores, h_scores = pred_lb.scores(dimension), human_lb.scores(dimension)
    shared = [e for e in human_lb.editors
              if e in p_scores and np.isfinite(h_scores[e]) and np.isfinite(p_scores[e])]
    if len(shared) < 2:
        raise MetricInputError(
            f"comparing editor rankings needs at least 2 editors scored in both boards, got {len(shared)}"
        )
    p = np.array([p_scores[e] for e in shared])
    h = np.array([h_scores[e] for e in shared])
    pr, hr = _rank_column(p, human_lb.tie_method), _rank_column(h, human_lb.tie_method)
    disp = pr - hr
    return {
        "dimension": dimension if dimension == OVERALL else canonical_dimension(dimension),
        "n_editors": len(shared),
        "srcc": srcc(p, h),
        "krcc": krcc(p, h),
        "editors": shared,
        "pred_score": dict(zip(shared, p.tolist(), strict=True)),
        "human_score": dict(zip(shared, h.tolist(), strict=True)),
        "pred_rank": {e: _rank_value(r) for e, r in zip(shared, pr, strict=True)},
        "human_rank": {e: _rank_value(r) for e, r in zip(shared, hr, strict=True)},
        "displacement": {e: _rank_value(d) for e, d in zip(shared, disp, strict=True)},
        "mean_abs_displacement": float(np.mean(np.abs(disp))),
        "max_abs_displacement": _rank_value(np.max(np.abs(disp))),
        "top1_agree": bool(set(np.flatnonzero(pr == 1)) & set(np.flatnonzero(hr == 1))),
        "only_in_pred": sorted(set(pred_lb.editors) - set(shared)),
        "only_in_human": sorted(set(human_lb.editors) - set(shared)),
    }
