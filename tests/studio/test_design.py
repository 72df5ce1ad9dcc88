"""Study design, the store's transactions and the exports, without a browser."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import pytest

from ieqa.data.manifest import read_manifest, read_preferences
from ieqa.human import RatingTable, read_rankings
from ieqa.studio import StudioError, StudyConfig, create_study, export_study, parse_scale
from ieqa.studio.analysis import study_report
from ieqa.studio.design import plan_study

from .helpers import make_study


def test_parse_scale():
    assert parse_scale("1-5") == (1.0, 5.0)
    assert parse_scale("0,100") == (0.0, 100.0)
    assert parse_scale("-3:3") == (-3.0, 3.0)
    with pytest.raises(StudioError, match="LO-HI"):
        parse_scale("five")
    with pytest.raises(StudioError, match="below"):
        parse_scale("5-1")


def test_plan_balances_raters_and_mixes_gold_and_training(shapes):
    samples = read_manifest(shapes)
    cfg = StudyConfig(raters=4, per_item=2, gold=2, training=1, gold_from="scores", seed=7)
    plan = plan_study(samples, cfg)
    roles = Counter(it["role"] for it in plan.items)
    assert roles == {"study": 9, "gold": 2, "training": 1}
    per_item = Counter(iid for _, iid, _ in plan.assignments)
    role = {it["id"]: it["role"] for it in plan.items}
    assert all(per_item[i] == 2 for i in per_item if role[i] == "study")
    assert all(per_item[i] == 4 for i in per_item if role[i] != "study")  # gold, training: everyone
    lists = {r: [iid for rr, iid, _ in sorted(plan.assignments, key=lambda a: a[2]) if rr == r]
             for r, _ in plan.raters}
    assert {len(v) for v in lists.values()} <= {3 + 9 * 2 // 4, 3 + 9 * 2 // 4 + 1}
    assert all(role[v[0]] == "training" for v in lists.values())  # training comes first
    assert len({tuple(v[1:]) for v in lists.values()}) == 4  # each rater has an order of their own
    again = plan_study(samples, cfg)
    assert [a for a in again.assignments] == plan.assignments  # seeded
    assert len({t for _, t in plan.raters}) == 4  # tokens are random and distinct


def test_protocol_items(shapes):
    samples = read_manifest(shapes)
    rank = plan_study(samples, StudyConfig(protocol="rank", raters=2, per_item=2))
    assert [len(it["data"]["samples"]) for it in rank.items] == [3, 3, 3, 3]
    pairs = plan_study(samples, StudyConfig(protocol="pairwise", raters=2, per_item=1))
    assert len(pairs.items) == 4 * 3 and all(len(it["data"]["samples"]) == 2 for it in pairs.items)
    with pytest.raises(StudioError, match="critique"):
        plan_study(samples, StudyConfig(protocol="critique", raters=1, per_item=1))
    with pytest.raises(StudioError, match="known answers"):
        plan_study(samples, StudyConfig(raters=1, per_item=1, gold=2))  # no meta.gold
    with pytest.raises(StudioError, match="--per-item"):
        StudyConfig(raters=2, per_item=3)
    with pytest.raises(StudioError, match="unknown dimension"):
        StudyConfig(dimensions=("sharpness",))


def test_submit_is_one_idempotent_transaction(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=2)
    with sqlite3.connect(store.path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    (rater, _), (other, _) = store.raters()
    first = store.assignments(rater)[0]
    answer = [("overall", 4.0, None), ("visual_quality", 3.0, None),
              ("instruction_alignment", 2.0, None), ("content_preservation", 5.0, None)]
    assert store.submit("form-1", rater, first.item, answer).status == "recorded"
    assert store.submit("form-1", rater, first.item, answer).status == "repeat"
    assert store.submit("form-2", rater, first.item, answer).status == "already"
    with pytest.raises(StudioError, match="another item"):
        store.submit("form-1", rater, store.assignments(rater)[1].item, answer)
    with pytest.raises(sqlite3.IntegrityError):  # a bad row rolls the whole submission back
        store.submit("form-3", rater, store.assignments(rater)[1].item, answer + [("overall", 1.0, None)])
    assert store.assignments(rater)[1].done is None and "form-3" not in store.submission_ids()
    assert len(store.responses()) == 4 and store.assignments(rater)[0].done is not None
    disjoint = make_study(tmp_path, shapes, "disjoint", raters=2, per_item=1)
    (a, _), (b, _) = disjoint.raters()
    theirs = next(x.item for x in disjoint.assignments(b) if x.item not in
                  {y.item for y in disjoint.assignments(a)})
    with pytest.raises(StudioError, match="not on your list"):
        disjoint.submit("form-4", a, theirs, answer)


def _answer_all(store, value_of):
    for rater, _ in store.raters():
        for a in store.assignments(rater):
            item = store.item(a.item)
            store.submit(f"{rater}-{a.item}", rater, a.item, [(*r, None) for r in value_of(rater, item)])


def test_rating_export_reads_as_mos_input(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=3, per_item=2, dimensions=("overall",), gold=1,
                       training=1, gold_from="scores")
    _answer_all(store, lambda r, it: [("overall", 1.0 + len(it.id) % 4, None)])
    what, n = export_study(store, tmp_path / "ratings.csv")
    table = RatingTable.from_csv(tmp_path / "ratings.csv", dimension_col="dimension")
    training = {it.id for it in store.items("training")}
    assert what == "ratings" and n == len(table) and not training & set(table.item)
    assert n == 10 * 2 + 1 * 3  # study items x per_item + the gold item x every rater
    items, raters, m = table.to_matrix("overall")
    assert m.shape == (11, 3)
    _, n_wo = export_study(store, tmp_path / "nogold.csv", include_gold=False)
    assert n_wo == 20
    with pytest.raises(StudioError, match="CSV"):
        export_study(store, tmp_path / "ratings.jsonl")


def test_rankings_and_preferences_export(tmp_path, shapes):
    rank = make_study(tmp_path, shapes, "rank", protocol="rank", raters=2, per_item=2)
    orders = [["c2", "c0", "c1"], ["c1", "c2", "c0"]]  # one order per rater, not the slots' own
    _answer_all(rank, lambda r, it: [("overall", None, json.dumps(orders[int(r[-1]) - 1]))])
    export_study(rank, tmp_path / "rankings.jsonl")
    rankings = read_rankings(tmp_path / "rankings.jsonl")
    assert len(rankings) == 8 and all(len(r.tiers) == 3 for r in rankings)
    groups = {it.data["group_id"]: it.data["samples"] for it in rank.items()}
    for r in rankings:  # each rater's order, slot by slot, as the candidates' editors
        want = [groups[r.group_id][int(slot[1:])]["editor"] for slot in orders[int(r.rater[-1]) - 1]]
        assert [t[0] for t in r.tiers] == want
    pw = make_study(tmp_path, shapes, "pw", protocol="pairwise", raters=2, per_item=1)
    _answer_all(pw, lambda r, it: [("overall", None, "tie" if it.key % 3 == 0 else "a>b")])
    what, n = export_study(pw, tmp_path / "prefs.jsonl")
    prefs = read_preferences(tmp_path / "prefs.jsonl")
    assert what == "preferences" and n == len(prefs) == 12
    by_pair = {(it.data["samples"][0]["id"], it.data["samples"][1]["id"]): it.key for it in pw.items()}
    for p in prefs:  # A and B as shown, with the verdict given on that item
        assert p.label.value == ("tie" if by_pair[(p.a.id, p.b.id)] % 3 == 0 else "a>b")


def test_report_flags_a_rater_who_misses_the_gold(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=3, per_item=3, dimensions=("overall",), gold=3,
                       gold_from="scores")
    truth = {s.id: s.scores["overall"] for s in read_manifest(shapes)}

    def answer(rater, item):
        v = truth[item.id]
        return [("overall", (6.0 - v) if rater == "rater-03" else v, None)]

    _answer_all(store, answer)
    report = study_report(store)
    rows = {r.rater: r for r in report.raters}
    assert rows["rater-01"].gold_score == pytest.approx(1.0) and not rows["rater-01"].flags
    assert rows["rater-03"].gold_score < 0.7 and any(f.kind == "gold" for f in rows["rater-03"].flags)
    assert any(f.kind == "low_agreement" for f in rows["rater-03"].flags)  # 12 shared items, SRCC < 0
    stats = {(a.dimension, a.statistic): a for a in report.agreement}
    assert stats[("overall", "ICC(2,1)")].value is not None
    assert stats[("overall", "Kendall's W")].value is not None
    assert -1 <= stats[("overall", "Krippendorff's alpha (interval)")].value <= 1
    assert all(r.done == r.total == 12 for r in report.raters)


def test_create_refuses_an_existing_file(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=1, per_item=1)
    assert store.path.stat().st_mode & 0o777 == 0o600  # it holds the tokens
    empty = tmp_path / "empty.sqlite"  # an empty file is taken, and made private too
    empty.touch(mode=0o644)
    empty.chmod(0o644)
    assert create_study(shapes, empty, StudyConfig(raters=1, per_item=1)).path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(StudioError, match="already exists"):
        create_study(shapes, tmp_path / "study.sqlite", StudyConfig(raters=1, per_item=1))


def test_report_with_raters_of_their_own_per_item(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=4, per_item=2, dimensions=("overall",))
    truth = {s.id: s.scores["overall"] for s in read_manifest(shapes)}
    _answer_all(store, lambda r, it: [("overall", truth[it.id], None)])
    stats = {a.statistic.split(" (")[0]: a for a in study_report(store).agreement}
    assert stats["ICC(1,1)"].value == pytest.approx(1.0)  # identical ratings
    assert stats["Kendall's W"].value is None and "differ per item" in stats["Kendall's W"].note


def test_rankings_name_candidates_one_way_for_the_whole_study(tmp_path, shapes):
    # one group with two candidates of the same editor: its lines were once named by
    # sample id while the others named editors, and rank-editors mixed the two
    from ieqa.data.manifest import write_manifest

    samples = read_manifest(shapes)
    first = samples[0].group_id
    twin = next(s for s in samples[1:] if s.group_id == first)
    mixed = [s.model_copy(update={"editor": samples[0].editor}) if s.id == twin.id else s for s in samples]
    manifest = tmp_path / "mixed.jsonl"
    write_manifest(mixed, manifest)
    store = create_study(manifest, tmp_path / "rank.sqlite", StudyConfig(protocol="rank", raters=1, per_item=1))
    _answer_all(store, lambda r, it: [("overall", None, json.dumps([f"c{i}" for i in range(3)]))])
    what, n = export_study(store, tmp_path / "rankings.jsonl")
    assert n == 4 and what.startswith("rankings of sample ids") and "rank-editors" in what
    ids = {s.id for s in samples}
    assert all(set(e for t in r.tiers for e in t) <= ids for r in read_rankings(tmp_path / "rankings.jsonl"))
    # distinct editors everywhere: editors, as before
    plain = make_study(tmp_path, shapes, "plain", protocol="rank", raters=1, per_item=1)
    _answer_all(plain, lambda r, it: [("overall", None, json.dumps([f"c{i}" for i in range(3)]))])
    assert export_study(plain, tmp_path / "plain.jsonl")[0] == "rankings"
