"""curate(): hand-worked selections on small score files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ieqa.curate import CurateError, KeepRule, ScoredSource, curate
from ieqa.curate.select import top_by_order
from ieqa.data.manifest import read_manifest
from ieqa.data.scorefile import ScoreFileError
from ieqa.rewards.rule import RewardRule
from ieqa.scorers.run import row_to_result

from .conftest import score_row, with_images, write_jsonl, write_parquet

# rewards (overall): a 5, b 4 (sigma .5), c 4 (sigma .2), d 3, e 2, f error
ROWS = [score_row("a", 5.0, sigma=0.1), score_row("b", 4.0, sigma=0.5, task="remove"),
        score_row("c", 4.0, sigma=0.2, editor="e2"), score_row("d", 3.0, sigma=0.1, task="remove"),
        score_row("e", 2.0, sigma=0.1, editor="e2", flags=["no_op"]),
        score_row("f", error="HTTP 500")]


def kept(result):
    return sorted(result.kept_ids)


@pytest.mark.parametrize("writer", [write_jsonl, write_parquet])
def test_top_k_breaks_ties_by_sigma(tmp_path, writer):
    path = writer(tmp_path / f"s{writer.__name__[-5:]}.{'jsonl' if writer is write_jsonl else 'parquet'}", ROWS)
    res = curate(path, tmp_path / "out", "top-k=2")
    assert kept(res) == ["a", "c"]  # b and c tie at 4: c has the lower sigma
    assert res.dropped == {"error": 1, "flagged": 0, "sigma": 0}
    assert res.report["counts"]["errors"] == 1 and res.report["counts"]["kept"] == 2
    assert res.cuts["all"]["lowest_kept_reward"] == 4.0
    assert [s.id for s in read_manifest(res.manifest)] == ["a", "c"]


def test_top_k_ties_without_sigma_go_by_id_whatever_the_row_order(tmp_path):
    rows = [score_row(i, r) for i, r in (("z", 4.0), ("m", 5.0), ("b", 4.0), ("q", 4.0), ("a", 1.0))]
    for order in (rows, rows[::-1], rows[2:] + rows[:2]):
        res = curate(write_jsonl(tmp_path / "s.jsonl", order), tmp_path / "out", "top-k=3")
        assert kept(res) == ["b", "m", "q"]  # 5, then the 4s by id: b, q (z left out)


# Three-way ties in reward, decided by sigma (low first; unknown last). Ids and file order
# are chosen so that neither decides it: the lowest sigma has the largest id and comes last.
TIED = [score_row("r_a", 4.0, sigma=0.5), score_row("m_a", 2.0, task="remove"),
        score_row("r_b", 4.0, sigma=0.3), score_row("m_b", 2.0, sigma=0.4, task="remove"),
        score_row("r_0", 3.0, sigma=0.0), score_row("m_0", 1.0, sigma=0.0, task="remove"),
        score_row("m_c", 2.0, sigma=0.2, task="remove"), score_row("r_c", 4.0, sigma=0.1)]


@pytest.mark.parametrize("writer", [write_jsonl, write_parquet])
@pytest.mark.parametrize("order", ["file", "reversed"])
def test_top_k_per_partition_keeps_k_rows_lowest_sigma_first(tmp_path, writer, order):
    rows = TIED if order == "file" else TIED[::-1]
    path = writer(tmp_path / f"s.{'jsonl' if writer is write_jsonl else 'parquet'}", rows)
    # worked by hand: recolor r_c (.1) < r_b (.3) < r_a (.5) at 4, then r_0 at 3;
    # remove m_c (.2) < m_b (.4) < m_a (no sigma) at 2, then m_0 at 1
    expected = {1: {"recolor": ["r_c"], "remove": ["m_c"]},
                2: {"recolor": ["r_b", "r_c"], "remove": ["m_b", "m_c"]},
                3: {"recolor": ["r_a", "r_b", "r_c"], "remove": ["m_a", "m_b", "m_c"]}}
    for k, want in expected.items():
        res = curate(path, tmp_path / f"per{k}", f"top-k={k}", per="task")
        by_task: dict[str, list[str]] = {}
        for s in read_manifest(res.manifest):
            by_task.setdefault(s.task, []).append(s.id)
        assert {t: sorted(v) for t, v in by_task.items()} == want
        assert res.n_kept == 2 * k and {c["kept"] for c in res.cuts.values()} == {k}
    # the same without partitions: the 4s first, by sigma
    for k, want in ((1, ["r_c"]), (2, ["r_b", "r_c"]), (3, ["r_a", "r_b", "r_c"]),
                    (5, ["m_c", "r_0", "r_a", "r_b", "r_c"])):
        res = curate(path, tmp_path / f"all{k}", f"top-k={k}")
        assert kept(res) == want and res.n_kept == k


def test_threshold_and_quantile(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    assert kept(curate(path, tmp_path / "o1", "threshold=3")) == ["a", "b", "c", "d"]
    # eligible rewards 5, 4, 4, 3, 2: the 0.5-quantile (linear) is 4 -> keep >= 4
    res = curate(path, tmp_path / "o2", "quantile=0.5")
    assert kept(res) == ["a", "b", "c"] and res.cuts["all"]["threshold"] == 4.0
    # 0.3-quantile: position 0.3*4 = 1.2 between 3 and 4 -> 3.2
    res = curate(path, tmp_path / "o3", "quantile=0.3")
    assert res.cuts["all"]["threshold"] == pytest.approx(3.2) and kept(res) == ["a", "b", "c"]


def test_filters_flags_and_sigma(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    res = curate(path, tmp_path / "o1", "threshold=0", drop_flagged=True)
    assert kept(res) == ["a", "b", "c", "d"] and res.dropped["flagged"] == 1
    res = curate(path, tmp_path / "o2", "threshold=0", max_sigma=0.3)
    assert kept(res) == ["a", "c", "d", "e"] and res.dropped["sigma"] == 1
    no_sigma = write_jsonl(tmp_path / "n.jsonl", [score_row("a", 1.0), score_row("b", 2.0)])
    with pytest.raises(CurateError, match="needs scores with sigma"):
        curate(no_sigma, tmp_path / "o3", "top-k=1", max_sigma=1.0)


def test_per_task_and_quota(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    res = curate(path, tmp_path / "o1", "top-k=1", per="task")  # recolor: a c e; remove: b d
    assert kept(res) == ["a", "b"]
    assert set(res.cuts) == {"recolor", "remove"}
    res = curate(path, tmp_path / "o2", "threshold=0", per="editor", quota=1)  # e1: a b d; e2: c e
    assert kept(res) == ["a", "c"]
    by_editor = {r["editor"]: r for r in res.report["by_editor"]}
    assert by_editor["e1"] == {"editor": "e1", "rows": 4, "eligible": 3, "kept": 1, "kept_share": 1 / 3}
    with pytest.raises(CurateError, match="--quota needs --per"):
        curate(path, tmp_path / "o3", "top-k=1", quota=2)


def test_rule_and_report(tmp_path):
    rows = [score_row("a", visual_quality=5.0, content_preservation=1.0),
            score_row("b", visual_quality=2.0, content_preservation=3.0)]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    # mean: a 3.0, b 2.5; a preservation-only rule flips it
    assert kept(curate(path, tmp_path / "o1", "top-k=1", rule="mean")) == ["a"]
    res = curate(path, tmp_path / "o2", "top-k=1", rule="content_preservation")
    assert kept(res) == ["b"]
    report = json.loads(res.report_json.read_text())
    assert report["rule"]["formula"] == "1*content_preservation"
    assert report["distributions"]["content_preservation"]["before"]["mean"] == 2.0
    assert report["distributions"]["content_preservation"]["kept"]["mean"] == 3.0
    assert sum(report["distributions"]["reward"]["before"]["histogram"]) == 2
    # a score-file row becomes a manifest row with the predicted scores and the reward
    sample = read_manifest(res.manifest)[0]
    assert sample.scores == {"visual_quality": 2.0, "content_preservation": 3.0}
    assert sample.meta["reward"] == 3.0
    assert "Curated subset: 1 of 2 edits" in res.report_html.read_text()


def test_nothing_keepable_names_the_first_error(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [score_row("a", visual_quality=3.0)])
    with pytest.raises(CurateError, match="a: reward rule: the scorer reports no 'overall'"):
        curate(path, tmp_path / "o", "top-k=1")


def test_copy_and_link_images_and_gallery(tmp_path, images):
    rows = with_images(ROWS[:4], images)
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    res = curate(path, tmp_path / "copy", "top-k=2", images="copy", gallery=1)
    samples = read_manifest(res.manifest)
    for s in samples:
        assert s.edited.parent == (tmp_path / "copy" / "images").resolve() or \
            s.edited.parent == tmp_path / "copy" / "images"
        assert s.edited.is_file() and not s.edited.is_symlink()
    assert (tmp_path / "copy" / "manifest.jsonl").read_text().count('"images/') == 4  # relative paths
    res = curate(path, tmp_path / "link", "top-k=2", images="link")
    assert all(s.edited.is_symlink() and os.readlink(s.edited) == str(images / f"{s.id}.png")
               for s in read_manifest(res.manifest))
    html = (tmp_path / "copy" / "report.html").read_text()
    assert html.count("data:image/jpeg;base64,") >= 4  # source + edited of best kept and best dropped
    assert res.report["gallery"]["best kept"][0] == "a"


def test_keep_rule_parsing():
    assert KeepRule.parse("top-k=20000") == KeepRule("top-k", 20000)
    assert str(KeepRule.parse(" quantile = 0.9 ")) == "quantile=0.9"
    for bad in ("top-k=0", "top-k=1.5", "quantile=1", "threshold=nan", "best=3", "top-k=x"):
        with pytest.raises(CurateError):
            KeepRule.parse(bad)


def test_top_by_order_reports_the_tie_at_the_cut():
    reward = np.array([5.0, 4.0, 4.0, 4.0, 1.0])
    sigma = np.array([np.inf, 0.1, np.inf, np.inf, 0.0])
    sure, tied, m = top_by_order(reward, sigma, np.arange(5), 3)
    assert sure.tolist() == [0, 1] and tied.tolist() == [2, 3] and m == 1


def test_source_reads_selected_rows_only_and_converts_rows(tmp_path):
    path = write_parquet(tmp_path / "s.parquet", ROWS)
    src = ScoredSource(path, RewardRule("overall"))
    assert src.kind == "scores" and src.n_rows == 6
    select = np.zeros(6, dtype=bool)
    select[[1, 5]] = True
    rows = list(src.rows(select))
    assert [(r.index, r.id) for r in rows] == [(1, "b"), (5, "f")]
    assert rows[0].result.sigma == {"overall": 0.5} and rows[0].reward.reward == 4.0
    assert rows[1].reward.reward is None and rows[1].result.error == "HTTP 500"
    assert src.ids(select) == {1: "b", 5: "f"}
    res = row_to_result({"id": "x", "overall": float("nan"), "error": None})
    assert res.error == "score 'overall' is nan in the score file"
    res = row_to_result({"id": "x", "SC": 2.0, "sigma": '{"SC": 0.5}', "error": None})
    assert res.scores == {"instruction_alignment": 2.0} and res.sigma == {"instruction_alignment": 0.5}
    # a column that is no dimension is refused, as `ieqa bench` always did (one reader's
    # rules: ieqa.data.scorefile); curation used to drop it silently
    with pytest.raises(ScoreFileError, match="unknown dimension 'note'"):
        row_to_result({"id": "x", "SC": 2.0, "note": 3.0, "error": None})


def test_bad_inputs(tmp_path):
    with pytest.raises(CurateError, match="does not exist"):
        ScoredSource(tmp_path / "none.parquet")
    preds = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "overall": 3.0}])
    with pytest.raises(CurateError, match="no edited image column"):
        ScoredSource(preds)


# ------------------------------------------------------- each option's edge, worked by hand


def test_quota_caps_top_k_per_partition(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    # per task: recolor a 5, c 4, e 2; remove b 4, d 3. top-k=2 with quota 1 -> min(2, 1) = 1 each
    res = curate(path, tmp_path / "o1", "top-k=2", per="task", quota=1)
    assert kept(res) == ["a", "b"] and {n: c["kept"] for n, c in res.cuts.items()} == {"recolor": 1, "remove": 1}
    # the quota above k changes nothing: k = 1 each
    assert kept(curate(path, tmp_path / "o2", "top-k=1", per="task", quota=3)) == ["a", "b"]


def test_max_sigma_keeps_a_sigma_equal_to_it_and_drops_unknown_sigma(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    # sigmas a .1, b .5, c .2, d .1, e .1: --max-sigma 0.2 drops only b (c's .2 is not above)
    res = curate(path, tmp_path / "o1", "threshold=0", max_sigma=0.2)
    assert kept(res) == ["a", "c", "d", "e"] and res.dropped == {"error": 1, "flagged": 0, "sigma": 1}
    # u has no sigma: with --max-sigma it is dropped, however good its reward
    rows = [score_row("u", 4.5), score_row("k", 3.0, sigma=0.5), score_row("x", 2.0, sigma=3.0)]
    res = curate(write_jsonl(tmp_path / "u.jsonl", rows), tmp_path / "o2", "threshold=0", max_sigma=1.0)
    assert kept(res) == ["k"] and res.dropped["sigma"] == 2
    assert res.report["counts"]["dropped_sigma"] == 2 and res.report["counts"]["eligible"] == 1


def test_quantile_is_taken_within_each_partition(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    # recolor 2, 4, 5: 0.25-quantile at position 0.5 -> 3.0 (keeps a, c);
    # remove 3, 4: at position 0.25 -> 3.25 (keeps b, not d). Over all five rows it would be 3.
    res = curate(path, tmp_path / "o", "quantile=0.25", per="task")
    assert kept(res) == ["a", "b", "c"]
    assert res.cuts["recolor"]["threshold"] == pytest.approx(3.0)
    assert res.cuts["remove"]["threshold"] == pytest.approx(3.25)
    assert res.cuts["remove"]["lowest_kept_reward"] == 4.0


def test_counts_and_spread_in_the_report(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", ROWS)
    res = curate(path, tmp_path / "o", "top-k=2")
    # six rows: f errored, a..e eligible, a and c kept -> b, d, e not selected
    assert res.report["counts"] == {"rows": 6, "kept": 2, "errors": 1, "dropped_flagged": 0, "dropped_sigma": 0,
                                    "eligible": 5, "not_selected": 3}
    before = res.report["distributions"]["reward"]["before"]
    # rewards 5 4 4 3 2: mean 3.6, population std sqrt((1.96 + .16 + .16 + .36 + 2.56) / 5) = sqrt(1.04)
    assert before["n"] == 5 and before["mean"] == pytest.approx(3.6)
    assert before["std"] == pytest.approx(np.sqrt(1.04)) and (before["min"], before["max"]) == (2.0, 5.0)
    assert res.report["distributions"]["reward"]["kept"]["std"] == pytest.approx(0.5)  # 5 and 4


def test_a_dimension_first_seen_later_stays_on_its_rows(tmp_path):
    # visual_quality appears from row b on: its column is padded for a, so b keeps its 2.0
    rows = [score_row("a", 3.0), score_row("b", 5.0, visual_quality=2.0), score_row("c", 4.0, visual_quality=4.0)]
    res = curate(write_jsonl(tmp_path / "s.jsonl", rows), tmp_path / "o", "top-k=1")
    assert kept(res) == ["b"]
    vq = res.report["distributions"]["visual_quality"]
    assert vq["before"]["n"] == 2 and vq["before"]["mean"] == 3.0
    assert vq["kept"]["n"] == 1 and vq["kept"]["mean"] == 2.0


def test_parquet_rows_of_later_batches_keep_their_positions(tmp_path, monkeypatch):
    import ieqa.curate.source as source

    monkeypatch.setattr(source, "BATCH_ROWS", 2)
    # batches (d, e) (a, b) (c, f): the best row, a, is the first of the second batch
    rows = [ROWS[3], ROWS[4], ROWS[0], ROWS[1], ROWS[2], ROWS[5]]
    path = write_parquet(tmp_path / "s.parquet", rows)
    res = curate(path, tmp_path / "o", "top-k=1", gallery=0)
    assert kept(res) == ["a"] and [s.id for s in read_manifest(res.manifest)] == ["a"]
    # b and c tie at 4 in the second and third batches: the lower sigma (c) is kept
    res = curate(path, tmp_path / "o2", "top-k=2", gallery=0)
    assert [s.id for s in read_manifest(res.manifest)] == ["a", "c"]
