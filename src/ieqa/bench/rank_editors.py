"""Editor leaderboards from per-edit scores (EditHF Table 3): :func:`rank_editors` reads the
scores (a manifest, a predictions file, an ``ieqa score`` output or human group rankings),
ranks the editors per dimension and overall, compares with a human side and writes the
outputs. ``ieqa rank-editors`` is its command; the rules are in that command's help and
``docs/howto/rank-editors.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.bench.leaderboard import (
    Leaderboard,
    ScoreTable,
    compare_rankings,
    editor_leaderboard,
    parse_weights,
    score_table,
)
from ieqa.bench.predictions import is_predictions_file, read_predictions
from ieqa.errors import IeqaError, OptionError
from ieqa.human.rankings import RankingWins, ranking_win_counts, read_rankings
from ieqa.metrics import MetricInputError
from ieqa.report import HtmlReport, bar_chart, scatter_plot, write_csv, write_json

__all__ = ["EditorRanking", "EditorRankingError", "leaderboard_display", "load_tables",
           "fmt_number", "overall_formula", "rank_editors", "rankings_table", "summary_line", "write_outputs"]


class EditorRankingError(OptionError):
    """The inputs cannot be ranked as given; ``option`` names the argument to change."""


@dataclass
class EditorRanking:
    """What :func:`rank_editors` found.

    Attributes:
        leaderboard: the editors ranked on the scores.
        human: the editors ranked on the human side (``--human`` or ``--rankings``), if any.
        comparisons: per dimension, SRCC/KRCC and rank displacement between the two.
        notes: what the leaderboard rests on (left-out edits, flags, missing dimensions).
        sources: the input files by role.
    """

    leaderboard: Leaderboard
    human: Leaderboard | None = None
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def rank_editors(scores: str | Path | None = None, *, human: str | Path | None = None,
                 rankings: str | Path | None = None, win_rate: bool = False,
                 weights: str | dict[str, float] | None = None, by_task: bool = False,
                 common_groups_only: bool = False, n_boot: int = 0, scorer: str | None = None,
                 max_mismatch: float = 0.0) -> EditorRanking:
    """Rank editors by their mean scores per dimension and overall (EditHF Table 3).

    Args:
        scores: a manifest with scores, a predictions file or an ``ieqa score`` output;
            optional with ``rankings``.
        human: a manifest with human MOS to compare with.
        rankings: human group rankings (JSONL of :mod:`ieqa.human.rankings`); each edit
            scores its win count in its group (its win rate in [0, 1] with ``win_rate``).
        weights: overall weights (``"visual_quality=0.3,..."`` or a mapping); EditHF's
            0.3/0.4/0.3 by default, normalised to sum 1.
        by_task: also rank per task. common_groups_only: only groups every editor covers.
        n_boot: bootstrap resamples for the CIs (0: normal approximation; else >= 2).
        scorer: read only this scorer's rows of a score file that holds several
            (``NAME@HASH``, ``NAME`` or ``"none"``); without it such a file is refused.
        max_mismatch: with ``human``, the share of edits joined by id whose source, edited
            image or editor may differ between the two files before the join is refused
            (:func:`ieqa.data.scorefile.check_join`).

    Raises :class:`EditorRankingError` (naming the argument) for inputs that cannot be
    ranked, and other :class:`~ieqa.errors.IeqaError` for unreadable files.
    """
    scores, human, rankings = (None if p is None else Path(p) for p in (scores, human, rankings))
    try:
        w = parse_weights(weights) if isinstance(weights, str) and weights else (weights or None)
    except IeqaError as exc:
        raise EditorRankingError(str(exc), option="--weights") from None
    if n_boot == 1:
        raise EditorRankingError("use 0 (normal intervals) or at least 2 resamples",
                                 option="--bootstrap")
    if win_rate and rankings is None:
        raise EditorRankingError("scores win rates of group rankings: add --rankings FILE, or "
                                 "leave --win-rate out", option="--win-rate")
    if scores is None and rankings is None:
        raise EditorRankingError("give a SCORES file, or human group rankings with --rankings "
                                 "FILE", option="SCORES")
    if rankings is not None and human is not None:
        raise EditorRankingError("--rankings and --human are both the human side: give one of "
                                 "them", option="--rankings")
    notes: list[str] = []
    ranked_table = None
    if rankings is not None:
        try:
            ranked_table, _ = rankings_table(rankings, win_rate, notes)
        except EditorRankingError:
            raise
        except IeqaError as exc:
            raise EditorRankingError(str(exc), option="--rankings") from None
    if scores is None:
        pred_table, human_table = ranked_table, None
    else:
        if rankings is not None and is_predictions_file(scores) and not _is_score_file(scores):
            raise EditorRankingError(
                "with --rankings the scores must name each edit's editor: give a manifest with "
                "scores or an ieqa score output of edits with editors (a bare predictions file "
                "joins editors from --human MANIFEST instead)", option="SCORES")
        pred_table, human_table = load_tables(scores, None if rankings else human, notes,
                                              scorer=scorer, max_mismatch=max_mismatch)
        human_table = ranked_table if rankings is not None else human_table
    opts = {"weights": w, "by_task": by_task, "common_groups_only": common_groups_only,
            "n_boot": n_boot}
    lb = editor_leaderboard(pred_table, **opts)
    others = [d for d in pred_table.dimensions if d != "overall"]
    if scores is not None and others and "instruction_alignment" not in pred_table.dimensions:
        notes.append("the scores have no instruction_alignment: the overall column rests on "
                     f"{', '.join(others)} alone, so "
                     "an editor that changes little ranks high; use a VLM scorer for alignment")
    human_lb = None if human_table is None else editor_leaderboard(human_table, **opts)
    comparisons = {} if human_lb is None else _comparisons(lb, human_lb, notes)
    sources = ({"scores": str(scores)} if scores else {}) | ({"human": str(human)} if human else {}) \
        | ({"rankings": str(rankings)} if rankings else {})
    return EditorRanking(lb, human_lb, comparisons, notes, sources)


# --------------------------------------------------------------------------- loading


def _manifest_table(path: Path) -> ScoreTable:
    from ieqa.data.manifest import iter_manifest

    return score_table(iter_manifest(path))


def _shared_ids(pred: ScoreTable, human: ScoreTable, notes: list[str]) -> tuple[ScoreTable, ScoreTable]:
    """Restrict both tables to the edits both score (when they share any)."""
    shared = set(pred.ids.tolist()) & set(human.ids.tolist())
    if not shared:
        notes.append("the two files share no edit id: editors are compared on different edits")
        return pred, human
    if len(shared) < max(len(pred), len(human)):
        notes.append(f"compared on the {len(shared)} edits both files score "
                     f"(scores: {len(pred)}, human: {len(human)})")
        return pred.restrict_ids(shared), human.restrict_ids(shared)
    return pred, human


def _manifest_fields(path: Path) -> dict[str, dict[str, Any]]:
    """``{id: {"source", "edited", "editor"}}`` of a manifest's edits (for :func:`check_join`)."""
    from ieqa.data.manifest import iter_manifest
    from ieqa.data.scorefile import join_fields

    return {s.id: join_fields(s) for s in iter_manifest(path)}


def _check_join(left: dict[str, dict[str, Any]], left_path: Path, right_path: Path,
                max_mismatch: float, notes: list[str]) -> None:
    from ieqa.data.scorefile import check_join

    join = check_join(left, _manifest_fields(right_path), sides=(str(left_path), str(right_path)),
                      max_mismatch=max_mismatch)
    if join.note():
        notes.append(join.note())


def _score_file_table(path: Path, notes: list[str], scorer: str | None = None) -> ScoreTable:
    """The scored edits of an ``ieqa score`` output (editor, group and task from the file),
    read by the one score-file reader (:func:`ieqa.data.scorefile.iter_score_rows`)."""
    from ieqa.data.scorefile import (
        ScoreFileError,
        ScoreRowChecker,
        iter_score_rows,
        other_scorer_note,
    )

    checker = ScoreRowChecker(path, scorer=scorer)
    try:
        rows = list(iter_score_rows(path, checker=checker))
    except ScoreFileError as exc:
        raise IeqaError(str(exc)) from None
    if checker.n_other:
        notes.append(other_scorer_note(checker.n_other, scorer))
    failed = [r for r in rows if r.failed is not None]
    rows = [r for r in rows if r.failed is None]
    if failed:
        notes.append(f"{len(failed)} of {len(rows) + len(failed)} edits failed to score and are "
                     "left out (see the error column of the scores file)")
    no_editor = sum(1 for r in rows if not r.inputs.get("editor"))
    if no_editor == len(rows):
        raise IeqaError(f"{path} has no editor names: score a folder with edited/<editor>/ "
                        "sub-folders or a manifest with an editor field, or pass --human MANIFEST "
                        "to take editors from it")
    if no_editor:
        notes.append(f"{no_editor} edits have no editor name and are left out")
        rows = [r for r in rows if r.inputs.get("editor")]
    flagged: dict[str, int] = {}
    for r in rows:
        for f in r.columns.get("flags") or ():
            flagged[f] = flagged.get(f, 0) + 1
    if flagged:
        notes.append("flagged outputs among the ranked edits: "
                     + ", ".join(f"{n} {f}" for f, n in sorted(flagged.items())))
    dims = list(dict.fromkeys(d for r in rows for d in r.scores))
    columns: dict[str, Any] = {"id": [r.id for r in rows],
                               "editor": [r.inputs["editor"] for r in rows]}
    if all(r.inputs.get("group_id") for r in rows):
        columns["group_id"] = [r.inputs["group_id"] for r in rows]
    if all(r.inputs.get("task") for r in rows):
        columns["task"] = [r.inputs["task"] for r in rows]
    for d in dims:
        columns[d] = [r.scores.get(d, np.nan) for r in rows]
    return score_table(columns)


def _is_score_file(path: Path) -> bool:
    """A score file (:func:`ieqa.data.scorefile.looks_like_score_file`) with editor names."""
    from ieqa.data.manifest import first_row_keys
    from ieqa.data.scorefile import looks_like_score_file

    keys = first_row_keys(path)
    return keys is not None and "editor" in keys and looks_like_score_file(keys)


def load_tables(scores: Path, human: Path | None, notes: list[str], *, scorer: str | None = None,
                max_mismatch: float = 0.0) -> tuple[ScoreTable, ScoreTable | None]:
    """The scored edits of ``scores`` and, with ``human``, of the human manifest, restricted
    to the edits both have, after checking that the ids name the same edits in both
    (:func:`ieqa.data.scorefile.check_join`). A predictions file without editor names needs
    ``human``."""
    if human is None and _is_score_file(scores):
        return _score_file_table(scores, notes, scorer), None
    if scorer is not None and not is_predictions_file(scores):
        raise EditorRankingError(f"{scores} is a manifest, which holds one set of scores: "
                                 "--from-scorer chooses among the scorers of a score file; drop "
                                 "it", option="--from-scorer")
    if is_predictions_file(scores):
        if human is None:
            raise EditorRankingError(
                "a predictions file without editor names: pass --human MANIFEST to join on the "
                "edit id (an ieqa score output of a folder or manifest with editors needs none)",
                option="SCORES")
        human_table = _manifest_table(human)
        preds = read_predictions(scores, scorer=scorer)
        if preds.other_scorer_rows:
            from ieqa.data.scorefile import other_scorer_note

            notes.append(other_scorer_note(preds.other_scorer_rows, scorer))
        if preds.inputs:
            _check_join(preds.inputs, scores, human, max_mismatch, notes)
        pred_table = score_table(human_table, predictions=preds, missing="drop")
        if len(pred_table) < len(human_table):
            notes.append(f"{len(human_table) - len(pred_table)} of {len(human_table)} human-rated "
                         "edits have no prediction and are left out")
            human_table = human_table.restrict_ids(pred_table.ids.tolist())
        if not len(pred_table):
            raise IeqaError(f"no id of {scores} matches an edit of {human}")
        unused = len(preds) - len(pred_table)
        if unused:
            notes.append(f"{unused} predictions have no edit in {human.name} and are ignored")
        return pred_table, human_table
    pred_table = _manifest_table(scores)
    if human is None:
        return pred_table, None
    _check_join(_manifest_fields(scores), scores, human, max_mismatch, notes)
    pred_table, human_table = _shared_ids(pred_table, _manifest_table(human), notes)
    return pred_table, human_table


def rankings_table(path: Path, win_rate: bool, notes: list[str]) -> tuple[ScoreTable, RankingWins]:
    """Win-count scores of the ranked edits of a rankings file, with notes on what the
    leaderboard rests on (groups of different sizes, dimensions not ranked everywhere)."""
    rankings = read_rankings(path)
    wins = ranking_win_counts(rankings, normalize=win_rate)
    n_raters = {r.rater for r in rankings}
    groups = dict.fromkeys(wins.group.tolist())
    notes.append(f"{len(rankings)} rankings of {len(groups)} groups ({len(n_raters - {None})} named raters) on "
                 f"{', '.join(wins.wins)}: each edit scores its "
                 + ("win rate (wins + 0.5 per tie, over its pairs)" if win_rate else "win count (1 per win, 0.5 per tie)")
                 + " in its group; pairs per dimension: "
                 + ", ".join(f"{d} {n}" for d, n in wins.n_pairs.items()))
    for dim, w in wins.wins.items():
        ranked = ~np.isnan(w)
        sizes = {int(ranked[wins.group == g].sum()) for g in groups if ranked[wins.group == g].any()}
        if len(sizes) > 1 and not win_rate:
            notes.append(f"{dim}: groups rank {min(sizes)} to {max(sizes)} editors, so win counts range over "
                         "different maxima (K-1); --win-rate compares groups of different sizes on one scale")
        if not ranked.all():
            notes.append(f"{dim}: {int((~ranked).sum())} of {len(w)} ranked edits have no {dim} ranking; their "
                         "overall is undefined and they are left out of the overall column")
    return score_table(wins.columns()), wins


# --------------------------------------------------------------------------- display


def overall_formula(weights: dict[str, float]) -> str:
    """``"0.3·visual_quality + 0.4·instruction_alignment + ..."``."""
    return " + ".join(f"{w:.3g}·{d}" for d, w in weights.items())


def fmt_number(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, or ``–`` when it is not finite."""
    return "–" if not np.isfinite(x) else f"{x:.{digits}f}"


def _rank_text(r: Any) -> str:
    return "–" if r is None else str(r)


def leaderboard_display(lb: Leaderboard, human_lb: Leaderboard | None = None) -> tuple[list[str], list[list[str]]]:
    """Column names and text rows of a leaderboard (plus human overall and rank)."""
    pct = round(lb.ci * 100)
    columns = ["rank", "editor", "n", *lb.columns, f"{pct}% CI (overall)"]
    h_scores = h_ranks = {}
    if human_lb is not None:
        columns += ["human overall", "human rank"]
        h_scores, h_ranks = human_lb.scores(), human_lb.ranks()
    rows = []
    for row in lb.to_rows():
        e = row["editor"]
        line = [_rank_text(row["rank"]), e, str(row["n"]), *(fmt_number(row[c]) for c in lb.columns),
                f"[{fmt_number(row['overall_ci_low'])}, {fmt_number(row['overall_ci_high'])}]"]
        if human_lb is not None:
            line += [fmt_number(h_scores.get(e, float("nan"))), _rank_text(h_ranks.get(e))]
        rows.append(line)
    return columns, rows


def summary_line(lb: Leaderboard) -> str:
    """One line on what a leaderboard rests on: edits, editors, groups, the overall weights,
    the confidence intervals and the tie rule."""
    parts = [f"{lb.n_samples} edits", f"{len(lb)} editors"]
    if lb.n_groups is not None:
        if lb.common_groups_only:
            parts.append(f"{lb.n_groups} of {lb.n_groups_total} groups (only groups every editor covers)")
        else:
            parts.append(f"{lb.n_groups} groups")
    ci = "bootstrap" if lb.ci_method == "bootstrap" else "normal approximation"
    return (", ".join(parts) + f"; overall = {overall_formula(lb.weights)}; "
            f"{round(lb.ci * 100)}% CI by {ci}; ties share the {lb.tie_method} rank")


# --------------------------------------------------------------------------- outputs


def _comparisons(lb: Leaderboard, human_lb: Leaderboard, notes: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for col in lb.columns:
        if col not in human_lb.columns:
            continue
        try:
            out[col] = compare_rankings(lb, human_lb, col)
        except MetricInputError as exc:
            notes.append(f"no ranking comparison for {col}: {exc}")
    return out


def _csv_rows(lb: Leaderboard, human_lb: Leaderboard | None) -> list[dict[str, Any]]:
    boards = [("all", lb, human_lb)]
    boards += [(t, b, None if human_lb is None else human_lb.by_task.get(t)) for t, b in lb.by_task.items()]
    rows = []
    for task, board, human_board in boards:
        h_scores = human_board.scores() if human_board is not None else {}
        h_ranks = human_board.ranks() if human_board is not None else {}
        for row in board.to_rows():
            row = {"task": task, **row}
            if human_lb is not None:
                row["human_overall"] = h_scores.get(row["editor"])
                row["human_rank"] = h_ranks.get(row["editor"])
            rows.append(row)
    return rows


def _figures(report: HtmlReport, lb: Leaderboard, human_lb: Leaderboard | None,
             comparisons: dict[str, dict[str, Any]], notes: list[str]) -> None:
    j = lb.columns.index("overall")
    mean = lb.mean[:, j]
    errors = np.vstack([mean - lb.ci_low[:, j], lb.ci_high[:, j] - mean])
    try:
        report.add_figure(bar_chart(lb.editors, mean, errors, title="overall score by editor",
                                    ylabel="mean overall"),
                          f"Mean overall score per editor; error bars: {round(lb.ci * 100)}% CI.")
        if human_lb is not None and "overall" in comparisons:
            cmp = comparisons["overall"]
            editors = cmp["editors"]
            report.add_figure(
                scatter_plot([cmp["pred_score"][e] for e in editors], [cmp["human_score"][e] for e in editors],
                             "editor overall: predicted vs human", "predicted (scores)", "human",
                             labels=editors),
                "One point per editor: mean overall score from the scores file against the human one.",
            )
    except IeqaError as exc:  # matplotlib missing: the report keeps its tables
        notes.append(f"no figures: {exc}")
        report.add_paragraph(f"No figures: {exc}")


def write_outputs(out: str | Path, lb: Leaderboard, human_lb: Leaderboard | None,
                  comparisons: dict[str, dict[str, Any]], sources: dict[str, str],
                  notes: list[str]) -> None:
    """leaderboard.json, leaderboard.csv and report.html in ``out`` (created)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = _csv_rows(lb, human_lb)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(out / "leaderboard.csv", rows, columns)
    report = HtmlReport("Editor leaderboard")
    report.add_paragraph(" · ".join(f"{k}: {v}" for k, v in sources.items()))
    report.add_paragraph(summary_line(lb))
    cols, text_rows = leaderboard_display(lb, human_lb)
    report.add_table(text_rows, cols)
    if comparisons:
        report.add_heading("Predicted vs human editor ranking")
        report.add_table(
            [[d, c["n_editors"], c["srcc"], c["krcc"], c["mean_abs_displacement"], c["max_abs_displacement"]]
             for d, c in comparisons.items()],
            ["dimension", "editors", "SRCC", "KRCC", "mean |Δrank|", "max |Δrank|"],
        )
    _figures(report, lb, human_lb, comparisons, notes)
    for task, board in lb.by_task.items():
        report.add_heading(f"Task: {task}", 3)
        human_board = None if human_lb is None else human_lb.by_task.get(task)
        cols, text_rows = leaderboard_display(board, human_board)
        report.add_table(text_rows, cols)
    if notes:
        report.add_heading("Notes")
        for note in notes:
            report.add_paragraph(note)
    report.save(out / "report.html")
    write_json(out / "leaderboard.json", {
        **sources, "leaderboard": lb.to_dict(),
        "human_leaderboard": None if human_lb is None else human_lb.to_dict(),
        "comparison": comparisons, "notes": notes,
    })


