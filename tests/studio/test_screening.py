"""Rater flags on the admin page (ieqa.studio.analysis.rater_flags): simulated panels of
good and bad raters in every protocol, each rule by hand, and thresholds printed so the
comparison shown is true."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats

from ieqa.human import agreement_screen
from ieqa.human.screening import compared, comparison_text
from ieqa.studio import StudyConfig
from ieqa.studio.analysis import Flag, rater_flags, study_report
from ieqa.studio.simulate import (
    expected_flags,
    fill_store,
    simulate_responses,
    simulate_study,
    simulated_items,
)
from ieqa.studio.store import Item

from .helpers import make_study, shapes_manifest

PANEL = ("good", "good", "always_a", "constant", "reversing", "random", "fast")
#: protocol -> (samples, group size, critique text)
SIZES = {"rate": (20, 4, False), "critique": (20, 4, True), "rank": (24, 4, False), "pairwise": (30, 3, False)}
_NUMBER = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)(%| s)?"
_COMPARISON = re.compile(f"{_NUMBER} ([<>]) {_NUMBER}")


def _check_printed_comparisons(message: str) -> None:
    """Every ``X < Y`` / ``X > Y`` in a message holds for the printed numbers."""
    found = _COMPARISON.findall(message)
    assert found, message
    for v, _, op, t, _ in found:
        assert (float(v) < float(t)) if op == "<" else (float(v) > float(t)), message


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    return {p: shapes_manifest(tmp_path_factory.mktemp(p), n=n, k=k, critique=c) for p, (n, k, c) in SIZES.items()}


@pytest.mark.claim
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("protocol", list(SIZES))
def test_each_bad_rater_is_flagged_where_its_behaviour_applies_and_no_good_rater_is(
        tmp_path, manifests, protocol, seed):
    store = make_study(tmp_path, manifests[protocol], protocol=protocol, raters=7, per_item=7, seed=seed)
    behaviours = {f"rater-{i + 1:02d}": b for i, b in enumerate(PANEL)}
    assert fill_store(store, behaviours, seed=seed) == 7 * len(store.items())
    config = StudyConfig.from_json(store.meta()["config"])
    rows = {r.rater: r for r in study_report(store).raters}
    assert set(rows) == set(behaviours)
    for rater, behaviour in behaviours.items():
        kinds = {f.kind for f in rows[rater].flags}
        want = expected_flags(behaviour, config)
        if want:
            assert want <= kinds, (protocol, behaviour, [str(f) for f in rows[rater].flags])
        else:  # good, or a bad behaviour that does not apply here (it answers like a good rater)
            assert not kinds, (protocol, behaviour, [str(f) for f in rows[rater].flags])
        for f in rows[rater].flags:
            assert isinstance(f, Flag) and str(f) == f.message and f.numbers
            _check_printed_comparisons(f.message)
    # what the bad raters are flagged for, per protocol (the acceptance list of issue 29)
    flagged = {behaviours[r]: {f.kind for f in row.flags} for r, row in rows.items() if row.flags}
    assert set(flagged) == {"rate": {"constant", "reversing", "random", "fast"},
                            "critique": {"constant", "reversing", "random", "fast"},
                            "rank": {"constant", "reversing", "random", "fast"},
                            "pairwise": {"always_a", "reversing", "random", "fast"}}[protocol]


def test_the_admin_page_keeps_printing_flags_as_text(tmp_path, manifests):
    from fastapi.testclient import TestClient

    from ieqa.studio import create_app

    store = make_study(tmp_path, manifests["pairwise"], protocol="pairwise", raters=3, per_item=3)
    fill_store(store, {"rater-01": "good", "rater-02": "good", "rater-03": "always_a"})
    client = TestClient(create_app(store))
    page = client.get("/admin", headers={"Authorization": f"Bearer {store.meta()['admin_token']}"}).text
    assert "position bias: A (left) chosen in 30 of 30 decisive overall verdicts" in page
    assert "constant: one verdict (a&gt;b) on 30 of 30 overall answers (100% &gt; 90%)" in page


@pytest.mark.claim
def test_a_reversing_ranker_among_three_flags_only_the_reverser(tmp_path, shapes):
    # the mean of the two others mixed the reverser into each honest rater's reference:
    # both honest raters were flagged. The worst rater goes first, then the rest are judged
    # again without them
    for seed in range(3):
        store = make_study(tmp_path, shapes, f"rank{seed}", protocol="rank", raters=3, per_item=3, seed=seed)
        fill_store(store, {"rater-01": "good", "rater-02": "good", "rater-03": "reversing"}, seed=seed)
        flags = {r.rater: r.flags for r in study_report(store).raters}
        assert not flags["rater-01"] and not flags["rater-02"], (seed, flags)
        assert [f.kind for f in flags["rater-03"]] == ["low_agreement"], flags
        assert flags["rater-03"][0].numbers["n_others"] == 2 and flags["rater-03"][0].numbers["n_shared"] == 12


def test_flagged_raters_are_left_out_of_the_consensus():
    # two honest raters and two reversers who are also too fast: judged against a
    # consensus that kept the reversers, the honest raters looked reversed too. The
    # flagged raters stay out of it ...
    config = StudyConfig(protocol="rate", raters=4, per_item=4, dimensions=("overall",))
    items = simulated_items("rate", 20, seed=1)
    rows = simulate_responses(config, items, {"h1": "good", "h2": "good", "x1": "reversing", "x2": "reversing"},
                              seed=1)
    for r in rows:
        if r["rater"].startswith("x"):
            r["duration"] = 0.5
    flags = rater_flags(config, {it.key: it for it in items}, rows)
    assert sorted(flags) == ["x1", "x2"]
    # ... and are judged against the median of the others
    for x in ("x1", "x2"):
        assert [f.kind for f in flags[x]] == ["too_fast", "low_agreement"]
        assert flags[x][1].numbers["n_others"] == 2 and flags[x][1].numbers["srcc"] < -0.5


def test_low_agreement_is_against_the_median_of_the_others():
    # three honest raters and one reverser: its SRCC is computed against the per-item
    # median of the three (not their mean)
    config = StudyConfig(protocol="rate", raters=4, per_item=4, dimensions=("overall",))
    items = simulated_items("rate", 15, seed=2)
    behaviours = {"h1": "good", "h2": "good", "h3": "good", "x": "reversing"}
    rows = simulate_responses(config, items, behaviours, seed=2)
    m = np.array([[next(r["value"] for r in rows if r["rater"] == rater and r["item"] == it.key)
                   for rater in behaviours] for it in items])
    want = stats.spearmanr(m[:, 3], np.median(m[:, :3], axis=1)).statistic
    assert want != pytest.approx(stats.spearmanr(m[:, 3], m[:, :3].mean(axis=1)).statistic)
    flags = rater_flags(config, {it.key: it for it in items}, rows)
    assert list(flags) == ["x"]
    (flag,) = flags["x"]
    assert flag.kind == "low_agreement" and flag.numbers["srcc"] == pytest.approx(want)
    assert flag.numbers["n_shared"] == 15 and flag.numbers["n_others"] == 3
    assert flag.message == (f"low agreement on overall: SRCC {want:.2f} < 0.3 with the per-item median of "
                            "3 unflagged other rater(s) over 15 shared items")
    # fewer than 10 shared items: not judged
    few = [r for r in rows if r["item"] <= 9]
    assert rater_flags(config, {it.key: it for it in items}, few) == {}


# ---------------------------------------------------------------- each rule by hand


def _item(key: int, protocol: str = "rate", role: str = "study", gold=None) -> Item:
    k = {"rank": 3, "pairwise": 2}.get(protocol, 1)
    return Item(key, f"i{key}", "sample", role, {"samples": [{"id": f"s{key}-{c}"} for c in range(k)]}, gold)


def _rows(rater: str, answers, *, duration: float | None = 8.0, role: str = "study", untouched=None):
    """Response rows: ``answers`` is one dict dimension -> value (or answer) per item."""
    out = []
    for key, ans in enumerate(answers, start=1):
        for d, v in ans.items():
            num = isinstance(v, float)
            out.append({"rater": rater, "item": key, "item_id": f"i{key}", "role": role, "dimension": d,
                        "value": v if num else None, "answer": None if num else v, "untouched": untouched,
                        "created": 100.0 * key, "shown": None, "duration": duration,
                        "submission": f"{rater}-{key}"})
    return out


def _flags(config, rows, n_items=None, role="study", gold=None):
    n = n_items or max(r["item"] for r in rows)
    items = {k: _item(k, config.protocol, role, gold) for k in range(1, n + 1)}
    return {r: [(f.kind, f.message) for f in fl] for r, fl in rater_flags(config, items, rows).items()}


def test_constant_rule():
    one = StudyConfig(dimensions=("overall",))
    assert _flags(one, _rows("r", [{"overall": 3.0}] * 5)) == {
        "r": [("constant", "constant: one value (3.00) on 5 of 5 overall answers (100% > 90%)")]}
    assert _flags(one, _rows("r", [{"overall": 3.0}] * 4)) == {}  # 4 answers: not judged
    nine = [{"overall": 3.0}] * 9 + [{"overall": 4.0}]
    assert _flags(one, _rows("r", nine)) == {}  # 90% is not above 90%
    assert _flags(StudyConfig(dimensions=("overall",), max_share=0.85), _rows("r", nine))["r"][0][1].endswith(
        "9 of 10 overall answers (90% > 85%)")
    # 19 of 21 = 90.48%: printed with the decimal that keeps "> 90%" true
    msg = _flags(one, _rows("r", [{"overall": 2.5}] * 19 + [{"overall": 1.0}, {"overall": 5.0}]))["r"][0][1]
    assert msg.endswith("19 of 21 overall answers (90.5% > 90%)")
    pw = StudyConfig(protocol="pairwise")
    assert _flags(pw, _rows("r", [{"overall": "tie"}] * 10)) == {
        "r": [("constant", "constant: one verdict (tie) on 10 of 10 overall answers (100% > 90%)")]}
    # training items are never judged
    assert _flags(one, _rows("r", [{"overall": 3.0}] * 10, role="training"), role="training") == {}


def test_straight_lining_rule():
    two = StudyConfig(dimensions=("overall", "visual_quality"))
    same = [{"overall": v, "visual_quality": v} for v in (1.0, 2.0, 3.0, 4.0, 5.0)]
    assert _flags(two, _rows("r", same)) == {"r": [(
        "straight_lining", "straight-lining: the same value on all 2 sliders in 5 of 5 answers (100% > 90%)")]}
    assert _flags(two, _rows("r", same[:4] + [{"overall": 5.0, "visual_quality": 4.5}])) == {}  # 80%
    assert _flags(StudyConfig(dimensions=("overall",)), _rows("r", [{"overall": v} for v in (1.0, 2.0, 3.0, 4.0, 5.0)])) == {}
    rank = StudyConfig(protocol="rank")
    order = [{"overall": '["c0", "c1", "c2"]'}] * 6
    assert _flags(rank, _rows("r", order, untouched=True)) == {"r": [(
        "straight_lining", "straight-lining: 6 of 6 rankings left in the shown order (100% > 90%)")]}
    assert _flags(rank, _rows("r", order, untouched=False)) == {}
    assert _flags(rank, _rows("r", order, untouched=None)) == {}  # not known: not judged


def test_too_fast_rule():
    one = StudyConfig(dimensions=("overall",))
    varied = [{"overall": float(v)} for v in (1, 2, 3, 4, 5)]
    assert _flags(one, _rows("r", varied, duration=1.0)) == {
        "r": [("too_fast", "too fast: median time per answer 1.0 s < 2 s over 5 timed answers")]}
    assert _flags(one, _rows("r", varied[:4], duration=1.0)) == {}  # 4 timed answers
    assert _flags(one, _rows("r", varied, duration=None)) == {}  # times not known
    assert _flags(one, _rows("r", varied, duration=2.0)) == {}  # not below the floor
    # 1.96 s against 2 s prints as 1.96, not "2.0 < 2"
    assert "median time per answer 1.96 s < 2 s" in _flags(one, _rows("r", varied, duration=1.96))["r"][0][1]
    # one time per answer, however many sliders it has
    two = StudyConfig(dimensions=("overall", "visual_quality"))
    four = [{"overall": float(v), "visual_quality": float(6 - v)} for v in (1, 2, 3, 4)]
    assert _flags(two, _rows("r", four, duration=1.0)) == {}


def test_position_bias_rule():
    pw = StudyConfig(protocol="pairwise", max_share=1.0)  # the constant rule off
    flags = _flags(pw, _rows("r", [{"overall": "a>b"}] * 25))
    # two-sided exact binomial test: p = 2 * 0.5**25 = 5.96e-08
    assert flags == {"r": [("position_bias", "position bias: A (left) chosen in 25 of 25 decisive overall "
                            "verdicts (100%; two-sided binomial test p = 6e-08 < 0.001)")]}
    # 10 of 10: p = 2 * 0.5**10 = 0.00195, not below 0.001
    assert _flags(pw, _rows("r", [{"overall": "a>b"}] * 10)) == {}
    # ties and both-bad are not decisive: 12 B of 12 decisive (p = 0.000488) among 20
    mixed = [{"overall": "b>a"}] * 12 + [{"overall": "tie"}] * 4 + [{"overall": "both-bad"}] * 4
    (flag,) = rater_flags(pw, {k: _item(k, "pairwise") for k in range(1, 21)}, _rows("r", mixed))["r"]
    assert flag.numbers == {"dimension": "overall", "side": "B", "count": 12, "n": 12, "share": 1.0,
                            "p": pytest.approx(2 * 0.5**12), "alpha": 0.001}
    assert "B (right) chosen in 12 of 12 decisive overall verdicts" in flag.message
    # a balanced rater is not flagged
    assert _flags(pw, _rows("r", [{"overall": "a>b"}, {"overall": "b>a"}] * 15)) == {}


def test_gold_rule_prints_a_true_comparison():
    # 1 - |2.2016 - 1| / 4 = 0.6996: once printed "0.70 < 0.7"
    one = StudyConfig(dimensions=("overall",))
    flags = _flags(one, _rows("r", [{"overall": 2.2016}], role="gold"), role="gold", gold={"overall": [1.0]})
    assert flags == {"r": [("gold", "gold: agreement 0.6996 < 0.7 over 1 gold answer(s)")]}
    assert _flags(one, _rows("r", [{"overall": 2.0}], role="gold"), role="gold", gold={"overall": [1.0]}) == {}


def test_threshold_formatting():
    assert comparison_text(0.6996, "<", 0.7) == "0.6996 < 0.7"
    assert comparison_text(0.69, "<", 0.7) == "0.69 < 0.7"
    assert comparison_text(0.70049, ">", 0.7) == "0.7005 > 0.7"
    assert comparison_text(0.29996, "<", 0.3, digits=3) == "0.29996 < 0.3"
    assert compared(0.904, ">", 0.9, digits=0, percent=True) == ("90.4%", "90%")
    assert compared(1.0, ">", 0.9, digits=0, percent=True) == ("100%", "90%")
    assert comparison_text(0.0009996, "<", 0.001, style="g") == "0.0009996 < 0.001"
    assert comparison_text(-0.001, "<", 0.3) == "0.00 < 0.3"  # never "-0.00"
    assert comparison_text(0.1, "<", 1 / 3) == "0.10 < 0.3333333333333333"  # the threshold as it is
    for v in np.linspace(0.69, 0.6999999, 997):
        text = comparison_text(float(v), "<", 0.7)
        assert float(text.split()[0]) < 0.7 and text != "0.70 < 0.7", text
    with pytest.raises(ValueError):
        compared(1.0, "=", 1.0)


def test_agreement_screen_reason_never_contradicts_its_threshold():
    # 22 items, two raters, sum of squared rank differences 1240: SRCC = 1 - 6*1240/(22*483)
    # = 0.29983, printed "0.300 < 0.3" before
    perm = list(range(22))
    for i, j in ((0, 21), (1, 14), (2, 5), (6, 7)):
        perm[i], perm[j] = perm[j], perm[i]
    m = np.column_stack([np.asarray(perm, float), np.arange(22.0)])
    s = agreement_screen(m)
    assert s.srcc[0] == pytest.approx(1 - 6 * 1240 / (22 * 483)) and s.rejected.all()
    assert s.reasons[0] == "corr: SRCC 0.2998 with the mean of the other raters over 22 shared items < 0.3"


@pytest.mark.claim
def test_the_in_memory_panels_flag_as_expected(tmp_path, manifests):
    # the benchmark's path (no store): the same kinds of flags as the stored panels above
    config = StudyConfig(protocol="pairwise", raters=7, per_item=7)
    behaviours = {f"r{i}": b for i, b in enumerate(PANEL)}
    items, rows = simulate_study(config, behaviours, 30, 3, seed=0)
    assert len(rows) == 7 * 10 * 3 and {r["role"] for r in rows} == {"study"}
    flags = rater_flags(config, items, rows)
    kinds = {behaviours[r]: {f.kind for f in fl} for r, fl in flags.items()}
    assert kinds == {"always_a": {"constant", "position_bias"}, "reversing": {"low_agreement"},
                     "random": {"low_agreement"}, "fast": {"too_fast"}}
    with pytest.raises(Exception, match="unknown rater behaviour"):
        expected_flags("lazy", config)


@pytest.mark.parametrize("protocol", ["rate", "pairwise"])
def test_two_raters_who_disagree_are_not_blamed_on_either(protocol):
    # with two raters each one's leave-one-out SRCC is the same number: the flag once
    # fell on whichever sorted first (the good rater-01 beside a reverser)
    for behaviours in ({"rater-01": "good", "rater-02": "reversing"}, {"rater-01": "reversing", "rater-02": "good"}):
        config = StudyConfig(protocol=protocol, raters=2, per_item=2, dimensions=("overall",))
        items, rows = simulate_study(config, behaviours, 30, 3, seed=0)
        assert rater_flags(config, items, rows) == {}


# ------------------------------------------- each threshold hit exactly, each protocol's rule


def _timed_rows(durations):
    """One rater's rate answers (varied values: no other rule applies), one time each."""
    rows = _rows("r", [{"overall": float(i % 5 + 1)} for i in range(len(durations))])
    for r, d in zip(rows, durations, strict=True):
        r["duration"] = d
    return rows


def test_too_fast_is_the_median_time_not_the_mean():
    one = StudyConfig(dimensions=("overall",))
    # sorted 0.5 0.5 0.5 3 9: median 0.5 < 2 s, while the mean (0.5 * 3 + 3 + 9) / 5 = 2.7 is not
    (flag,) = rater_flags(one, {k: _item(k) for k in range(1, 6)}, _timed_rows([0.5, 9.0, 0.5, 3.0, 0.5]))["r"]
    assert flag.kind == "too_fast" and flag.numbers["median_seconds"] == 0.5 and flag.numbers["n"] == 5
    assert flag.message == "too fast: median time per answer 0.5 s < 2 s over 5 timed answers"
    # sorted 0.1 0.2 3 3 3: median 3 s is not below 2 s, the mean (9 + 0.3) / 5 = 1.86 would be
    assert _flags(one, _timed_rows([3.0, 0.1, 3.0, 0.2, 3.0])) == {}
    # an even count: sorted 0.2 1 1.5 1.9 2.5 9 -> median (1.5 + 1.9) / 2 = 1.7; mean 16.1 / 6 = 2.68
    assert _flags(one, _timed_rows([1.0, 9.0, 1.5, 0.2, 2.5, 1.9])) == {
        "r": [("too_fast", "too fast: median time per answer 1.7 s < 2 s over 6 timed answers")]}
    # exactly at the floor: 2 s is not below 2 s
    assert _flags(one, _timed_rows([2.0, 2.0, 2.0, 0.5, 9.0])) == {}


def test_straight_lining_exactly_at_max_share_is_not_flagged():
    two = StudyConfig(dimensions=("overall", "visual_quality"))
    vals = [1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0, 4.0]
    nine = [{"overall": v, "visual_quality": v} for v in vals] + [{"overall": 5.0, "visual_quality": 1.0}]
    assert _flags(two, _rows("r", nine)) == {}  # 9 of 10 = 90% is not above 90%
    lower = StudyConfig(dimensions=("overall", "visual_quality"), max_share=0.85)
    assert _flags(lower, _rows("r", nine)) == {"r": [(
        "straight_lining", "straight-lining: the same value on all 2 sliders in 9 of 10 answers (90% > 85%)")]}
    # rankings: 9 of 10 left in the shown order is not above 90% either
    rank = StudyConfig(protocol="rank")
    rows = _rows("r", [{"overall": '["c0", "c1", "c2"]'}] * 10)
    for i, r in enumerate(rows):
        r["untouched"] = i != 4
    assert _flags(rank, rows) == {}


def test_rank_straight_lining_share_counts_only_rankings_whose_state_is_known():
    # 6 untouched and 4 of unknown state: 6 of 6 known (100%), not 6 of 10 (60%)
    rank = StudyConfig(protocol="rank")
    rows = _rows("r", [{"overall": '["c0", "c1", "c2"]'}] * 10)
    for i, r in enumerate(rows):
        r["untouched"] = True if i < 6 else None
    (flag,) = rater_flags(rank, {k: _item(k, "rank") for k in range(1, 11)}, rows)["r"]
    assert flag.numbers == {"count": 6, "n": 6, "share": 1.0, "max_share": 0.9}
    assert flag.message == "straight-lining: 6 of 6 rankings left in the shown order (100% > 90%)"


def test_gold_agreement_exactly_at_gold_min_is_not_flagged():
    # 1 - |2 - 1| / (5 - 1) = 0.75 exactly
    at = StudyConfig(dimensions=("overall",), gold_min=0.75)
    rows = _rows("r", [{"overall": 2.0}], role="gold")
    assert _flags(at, rows, role="gold", gold={"overall": [1.0]}) == {}
    above = StudyConfig(dimensions=("overall",), gold_min=0.76)
    assert _flags(above, rows, role="gold", gold={"overall": [1.0]}) == {
        "r": [("gold", "gold: agreement 0.75 < 0.76 over 1 gold answer(s)")]}


def test_rank_gold_counts_the_pairs_ordered_as_the_gold():
    # gold values of c0, c1, c2: 3, 2, 2 -> judged pairs (c0, c1) and (c0, c2); c1 = c2 is a tie
    rank = StudyConfig(protocol="rank")
    gold = {"overall": [3.0, 2.0, 2.0]}
    rows = (_rows("best-first", [{"overall": '["c0", "c2", "c1"]'}], role="gold")  # c0 above both: 2 of 2
            + _rows("worst-first", [{"overall": '["c1", "c2", "c0"]'}], role="gold")  # c0 below both: 0 of 2
            + _rows("half", [{"overall": '["c1", "c0", "c2"]'}], role="gold"))  # c0 above c2 only: 1 of 2
    assert _flags(rank, rows, role="gold", gold=gold) == {
        "half": [("gold", "gold: agreement 0.50 < 0.7 over 2 pair(s) of gold candidates")],
        "worst-first": [("gold", "gold: agreement 0.00 < 0.7 over 2 pair(s) of gold candidates")]}
    # tie_margin 1: gold 3, 2, 1 -> only c0 vs c2 (2 apart) is judged; 1 apart is a tie
    margin = StudyConfig(protocol="rank", tie_margin=1.0)
    rows = _rows("r", [{"overall": '["c2", "c1", "c0"]'}], role="gold")
    assert _flags(margin, rows, role="gold", gold={"overall": [3.0, 2.0, 1.0]}) == {
        "r": [("gold", "gold: agreement 0.00 < 0.7 over 1 pair(s) of gold candidates")]}


def test_pairwise_gold_both_bad_is_the_tie_and_the_margin_is_strict():
    # gold A 3, B 2 with tie_margin 1: 1 apart is not more than the margin -> the gold is "tie"
    pw = StudyConfig(protocol="pairwise", tie_margin=1.0)
    rows = [r for rater, verdict in (("tie", "tie"), ("both-bad", "both-bad"), ("a", "a>b"), ("b", "b>a"))
            for r in _rows(rater, [{"overall": verdict}], role="gold")]
    want = "gold: agreement 0.00 < 0.7 over 1 gold answer(s)"
    assert _flags(pw, rows, role="gold", gold={"overall": [3.0, 2.0]}) == {
        "a": [("gold", want)], "b": [("gold", want)]}
    # without the margin the gold is "a>b": tie and both-bad are both wrong
    assert _flags(StudyConfig(protocol="pairwise"), rows, role="gold", gold={"overall": [3.0, 2.0]}) == {
        "tie": [("gold", want)], "both-bad": [("gold", want)], "b": [("gold", want)]}


def test_pairwise_screen_reads_both_bad_as_no_preference():
    # h1, h2: A better on items 1-6, B better on 7-12. x says B on 1-6 and both bad on 7-12:
    # as preferences x = -1 x6, 0 x6 against the median of h1, h2 = +1 x6, -1 x6: SRCC -1
    pw = StudyConfig(protocol="pairwise", dimensions=("overall",))
    honest = [{"overall": "a>b"}] * 6 + [{"overall": "b>a"}] * 6
    rows = (_rows("h1", honest) + _rows("h2", honest)
            + _rows("x", [{"overall": "b>a"}] * 6 + [{"overall": "both-bad"}] * 6))
    flags = rater_flags(pw, {k: _item(k, "pairwise") for k in range(1, 13)}, rows)
    assert list(flags) == ["x"]
    (flag,) = flags["x"]
    assert flag.kind == "low_agreement" and flag.numbers["srcc"] == pytest.approx(-1.0)
    assert flag.numbers["n_shared"] == 12 and flag.numbers["n_others"] == 2
