"""best_of_n() and dpo_pairs(): hand-worked groups."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ieqa.curate import CurateError, best_of_n, build_pairs, dpo_pairs
from ieqa.curate.groups import Candidate, GroupSummary
from ieqa.data.manifest import read_manifest, read_preferences

from .conftest import score_row, with_images, write_jsonl, write_parquet


def group_rows(gid: str, rewards: dict[str, float | None], task: str = "recolor", **kw) -> list[dict]:
    return [score_row(f"{gid}_{c}", r, group=gid, task=task, editor=c, instruction=f"do {gid}",
                      error="boom" if r is None else None, **kw) for c, r in rewards.items()]


def test_best_of_n_ties_and_failed_groups(tmp_path):
    rows = (group_rows("g1", {"x": 3.0, "b": 4.0, "a": 4.0})     # tie 4.0 -> smallest id g1_a
            + group_rows("g2", {"a": None, "b": None})            # all failed
            + [score_row("g3_a", 2.0, group="g3", sigma=0.9, instruction="do g3"),
               score_row("g3_b", 2.0, group="g3", sigma=0.1, instruction="do g3")])  # lower sigma
    for order in (rows, rows[::-1]):
        path = write_parquet(tmp_path / "s.parquet", order)
        res = best_of_n(path, tmp_path / "best.jsonl")
        assert sorted(res.picks) == ["g1_a", "g3_b"]
        assert res.n_groups == 3 and res.n_picked == 2
        assert res.failed == [{"group": {"source": "/data/g2_src.png", "instruction": "do g2"},
                               "n": 2, "error": "boom"}]
        report = json.loads(res.report_json.read_text())
        assert report["failed_groups"] == res.failed and report["error_rows"] == 2
    samples = read_manifest(tmp_path / "best.jsonl")
    assert {s.id: s.meta["candidates"] for s in samples} == {"g1_a": 3, "g3_b": 2}
    res = best_of_n(path, tmp_path / "b2.jsonl", group_by="group_id")
    assert sorted(res.picks) == ["g1_a", "g3_b"]
    with pytest.raises(CurateError, match="--group-by"):
        best_of_n(path, tmp_path / "b3.jsonl", group_by="colour")


def summary(key: str, task: str, *rewards: float, sigma: float | None = None) -> GroupSummary:
    g = GroupSummary((key,), task=task)
    cands = [Candidate(i, f"{key}_{i}", r, sigma) for i, r in enumerate(rewards)]
    g.n = g.n_ok = len(cands)
    if cands:
        g.best = min(cands, key=lambda c: c.key)
        g.worst = max(cands, key=lambda c: c.key)
    return g


def test_build_pairs_follows_edithf_steps():
    groups = [summary("s", "t1", 4.0),                      # one candidate: single
              summary("low", "t1", 1.5, 1.0, 1.2),           # best 1.5 < threshold 2: low
              summary("tie", "t1", 3.0, 3.0),                # tie
              summary("thin", "t1", 3.0, 2.9),               # margin .1 < .2
              summary("p1", "t1", 5.0, 2.0), summary("p2", "t1", 4.0, 3.0), summary("p3", "t1", 4.5, 2.5),
              summary("q1", "t2", 3.0, 2.0)]
    pairs, dropped, per_task = build_pairs(groups, threshold=2.0, min_margin=0.2, keep_fraction=0.5)
    # t1 has 3 pairs ranked by chosen reward p1 (5) > p3 (4.5) > p2 (4): ceil(1.5) = 2 kept
    assert [p.group for p in pairs] == [("p1",), ("p3",), ("q1",)]
    assert dropped == {"single": 1, "low": 1, "tie": 1, "margin": 1, "uncertain": 0, "lower_fraction": 1}
    assert per_task == {"t1": {"groups": 7, "pairs": 3, "kept": 2}, "t2": {"groups": 1, "pairs": 1, "kept": 1}}
    p1 = pairs[0]
    assert (p1.chosen.id, p1.rejected.id, p1.margin) == ("p1_0", "p1_1", 3.0)
    assert p1.p_chosen == pytest.approx(1 / (1 + math.exp(-3.0)))  # no sigma: sigmoid(margin)


def test_min_prob_uses_the_sigma_of_the_difference():
    # margin 1, sigma .3 and .4 -> sigma of the difference .5: P = E[sigmoid(1 + .5 z)]
    x, w = np.polynomial.hermite_e.hermegauss(80)
    expected = float(np.sum(w / (1 + np.exp(-(1.0 + 0.5 * x)))) / math.sqrt(2 * math.pi))
    g = GroupSummary(("g",), task="t", n=2, n_ok=2, best=Candidate(0, "a", 3.0, 0.3),
                     worst=Candidate(1, "b", 2.0, 0.4))
    pairs, _, _ = build_pairs([g], keep_fraction=1.0)
    assert pairs[0].p_chosen == pytest.approx(expected, abs=1e-9)
    assert expected < 1 / (1 + math.exp(-1.0))  # uncertainty pulls P towards 1/2
    _, dropped, _ = build_pairs([g], keep_fraction=1.0, min_prob=0.75)
    assert dropped["uncertain"] == int(expected < 0.75) == 1


def test_dpo_pairs_outputs_trl_layout_and_preferences(tmp_path, images):
    rows = with_images(group_rows("g1", {"a": 4.0, "b": 2.0, "c": 3.0})
                       + group_rows("g2", {"a": 1.0, "b": 5.0}, task="remove")
                       + group_rows("g3", {"a": 1.0, "b": None, "c": 1.5}), images)
    # interleave so a pair's rows are far apart in the file
    rows = rows[::2] + rows[1::2]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    res = dpo_pairs(path, tmp_path / "dpo", mode="global", rule="overall", threshold=2.0)
    trl = [json.loads(line) for line in (tmp_path / "dpo" / "dpo.jsonl").read_text().splitlines()]
    assert sorted((t["chosen_id"], t["rejected_id"]) for t in trl) == [("g1_a", "g1_b"), ("g2_b", "g2_a")]
    t = next(t for t in trl if t["chosen_id"] == "g1_a")
    assert t["prompt"] == "do g1" and t["images"] == [str(images / "g1_src.png")]
    assert t["chosen"] == str(images / "g1_a.png") and t["rejected"] == str(images / "g1_b.png")
    assert t["margin"] == 2.0 and t["task"] == "recolor"
    prefs = read_preferences(res.preferences)
    assert sorted((p.a.id, p.b.id, p.label.value) for p in prefs) == [("g1_a", "g1_b", "a>b"),
                                                                      ("g2_b", "g2_a", "a>b")]
    assert res.stats["dropped_groups"]["low"] == 1 and res.stats["error_rows"] == 1
    assert "DPO pairs (global): 2 pairs from 3 groups" in res.report_html.read_text()


def test_dpo_pairs_self_groups_one_models_seeds(tmp_path):
    # model m made 3 seeds for two requests; a second model's edits are separate groups
    rows = [score_row(f"r{r}_m_s{s}", v, group=f"r{r}", editor="m", instruction=f"req {r}")
            for r, vals in ((1, (2.0, 4.0, 3.0)), (2, (1.0, 1.5, 2.5))) for s, v in enumerate(vals)]
    rows += [score_row("r1_n_s0", 5.0, group="r1", editor="n", instruction="req 1"),
             score_row("r1_n_s1", 1.0, group="r1", editor="n", instruction="req 1")]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    res = dpo_pairs(path, tmp_path / "self", mode="self", rule="overall")
    # 3 groups, one task: ranked by chosen n_s0 (5) > m r1 (4) > m r2 (2.5); top half = ceil(1.5) = 2
    assert [(p.chosen.id, p.rejected.id) for p in res.pairs] == [("r1_n_s0", "r1_n_s1"),
                                                                   ("r1_m_s1", "r1_m_s0")]
    assert res.stats["keep_fraction"] == 0.5 and res.stats["dropped_groups"]["lower_fraction"] == 1
    res = dpo_pairs(path, tmp_path / "global", mode="global", rule="overall")
    assert [(p.chosen.id, p.rejected.id) for p in res.pairs] == [("r1_n_s0", "r1_n_s1"),
                                                                   ("r2_m_s2", "r2_m_s0")]


def test_trl_file_loads_with_datasets_images(tmp_path, images):
    datasets = pytest.importorskip("datasets")
    rows = with_images(group_rows("g1", {"a": 4.0, "b": 2.0}), images)
    res = dpo_pairs(write_jsonl(tmp_path / "s.jsonl", rows), tmp_path / "dpo", mode="global", rule="overall")
    ds = datasets.load_dataset("json", data_files=str(res.dpo), split="train")
    ds = ds.cast_column("chosen", datasets.Image()).cast_column("rejected", datasets.Image())
    ds = ds.cast_column("images", datasets.Sequence(datasets.Image()))
    row = ds[0]
    assert row["prompt"] == "do g1" and row["chosen"].size == (8, 8) and row["images"][0].size == (8, 8)


# ------------------------------------------------------- each option's edge, worked by hand


def test_build_pairs_keeps_a_best_reward_equal_to_the_threshold_and_a_margin_equal_to_the_minimum():
    groups = [summary("edge", "t", 2.0, 1.0),      # best 2.0 = threshold: not low
              summary("below", "t", 1.75, 1.0),    # best 1.75 < 2.0: low
              summary("m", "t", 3.0, 2.75),        # margin 0.25 = min_margin: kept
              summary("thin", "t", 3.0, 2.875)]    # margin 0.125 < 0.25
    pairs, dropped, per_task = build_pairs(groups, threshold=2.0, min_margin=0.25, keep_fraction=1.0)
    # best chosen first: m (3.0), then edge (2.0, margin 1.0)
    assert [(p.group, p.margin) for p in pairs] == [(("m",), 0.25), (("edge",), 1.0)]
    assert dropped == {"single": 0, "low": 1, "tie": 0, "margin": 1, "uncertain": 0, "lower_fraction": 0}
    assert per_task == {"t": {"groups": 4, "pairs": 2, "kept": 2}}


def test_build_pairs_ranks_by_the_chosen_edit_not_by_the_margin():
    # one task, three pairs: chosen 5 (margin .5), 4 (margin 3), 3 (margin 1).
    # Top half = ceil(1.5) = 2 by the chosen edit: c1 and c2 (by margin it would be c2, c3)
    groups = [summary("c3", "t", 3.0, 2.0), summary("c1", "t", 5.0, 4.5), summary("c2", "t", 4.0, 1.0)]
    pairs, dropped, per_task = build_pairs(groups, keep_fraction=0.5)
    assert [(p.group, p.margin) for p in pairs] == [(("c1",), 0.5), (("c2",), 3.0)]
    assert dropped["lower_fraction"] == 1 and per_task == {"t": {"groups": 3, "pairs": 3, "kept": 2}}
    # 5 pairs, half -> ceil(2.5) = 3
    five = [summary(f"g{i}", "t", 5.0 - i, 0.0) for i in range(5)]
    assert [p.group for p in build_pairs(five, keep_fraction=0.5)[0]] == [("g0",), ("g1",), ("g2",)]


def test_pair_agreement_counts_ties_as_wrong(tmp_path):
    from ieqa.curate import pair_agreement

    ref = write_jsonl(tmp_path / "ref.jsonl", [score_row(i, v) for i, v in
                                               (("a", 3.0), ("b", 1.0), ("c", 2.0), ("d", 2.0), ("e", 1.0),
                                                ("f", 2.0))])
    # a > b agrees, c = d ties, e < f disagrees, (a, zz) has no reference score
    out = pair_agreement([("a", "b"), ("c", "d"), ("e", "f"), ("a", "zz")], ref)
    assert out == {"overall": {"agree": 1, "tie": 1, "disagree": 1, "missing": 1,
                               "accuracy": 1 / 3, "accuracy_no_ties": 1 / 2}}


def test_flagged_candidates_are_left_out_with_drop_flagged(tmp_path):
    rows = [score_row("g1_a", 5.0, group="g1", instruction="do g1", flags=["no_op"]),
            score_row("g1_b", 4.0, group="g1", instruction="do g1"),
            score_row("g1_c", 1.0, group="g1", instruction="do g1")]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    assert sorted(best_of_n(path, tmp_path / "all.jsonl").picks) == ["g1_a"]
    assert sorted(best_of_n(path, tmp_path / "clean.jsonl", drop_flagged=True).picks) == ["g1_b"]
    res = dpo_pairs(path, tmp_path / "dpo", mode="global", rule="overall", drop_flagged=True)
    assert [(p.chosen.id, p.rejected.id, p.margin) for p in res.pairs] == [("g1_b", "g1_c", 3.0)]


def test_best_of_n_counts_every_candidate_of_the_group(tmp_path):
    # g1: three rows, one failed -> the pick says 3 candidates (the group's size)
    rows = group_rows("g1", {"a": 3.0, "b": None, "c": 2.0})
    res = best_of_n(write_jsonl(tmp_path / "s.jsonl", rows), tmp_path / "best.jsonl")
    assert res.picks == {"g1_a": 3}
    assert {s.id: s.meta["candidates"] for s in read_manifest(tmp_path / "best.jsonl")} == {"g1_a": 3}


def test_rows_with_an_empty_group_field_belong_to_no_group(tmp_path):
    from ieqa.data.manifest import write_manifest
    from ieqa.data.schema import EditSample

    samples = [EditSample(id=i, source="/d/s.png", edited=f"/d/{i}.png", instruction="x", group_id=g,
                          scores={"overall": v})
               for i, g, v in (("a", "g1", 3.0), ("b", "g1", 2.0), ("c", "", 5.0), ("d", "", 1.0))]
    path = tmp_path / "m.jsonl"
    write_manifest(samples, path)
    res = best_of_n(path, tmp_path / "best.jsonl", group_by="group_id")
    assert res.picks == {"a": 2} and res.n_groups == 1 and res.ungrouped == 2
