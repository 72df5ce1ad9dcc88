"""The admin page's numbers: undefined statistics say why, nothing prints as -0.000,
statistics say what they were computed on, and pairwise raters are screened on what
their verdicts mean."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from ieqa.studio import create_app
from ieqa.studio.analysis import study_report

from .helpers import make_study


def _answer_all(store, value_of):
    for rater, _ in store.raters():
        for a in store.assignments(rater):
            item = store.item(a.item)
            store.submit(f"{rater}-{a.item}", rater, a.item, [(*r, None) for r in value_of(rater, item)])


def _admin_page(store) -> str:
    client = TestClient(create_app(store))
    r = client.get("/admin", headers={"Authorization": f"Bearer {store.meta()['admin_token']}"})
    assert r.status_code == 200
    return r.text


def test_equal_slider_values_are_not_defined_not_a_number(tmp_path, shapes):
    # every rater leaves the slider at 3.2 (3 + one arrow step): no variance at all;
    # 3.2's float mean is not 3.2, which once made ICC(2,1) 0.52 here
    store = make_study(tmp_path, shapes, raters=3, per_item=3, dimensions=("overall",))
    _answer_all(store, lambda r, it: [("overall", 3.2, None)])
    stats = {a.statistic: a for a in study_report(store).agreement}
    assert stats["ICC(2,1)"].value is None and "ratings are equal" in stats["ICC(2,1)"].note
    assert stats["Kendall's W"].value is None
    assert stats["Krippendorff's alpha (interval)"].value is None
    html = _admin_page(store)
    assert "not defined" in html and "ratings are equal" in html


def test_a_zero_statistic_never_shows_as_minus_zero(tmp_path, shapes):
    # one rating of 24 differs: ICC(1,1) and alpha are exactly 0, computed as -2e-16
    store = make_study(tmp_path, shapes, raters=3, per_item=2, dimensions=("overall",))
    odd = (store.raters()[0][0], store.assignments(store.raters()[0][0])[0].item)
    _answer_all(store, lambda r, it: [("overall", 3.2 if (r, it.key) == odd else 3.0, None)])
    values = [a.value for a in study_report(store).agreement if a.value is not None]
    assert values and all(abs(v) < 1e-9 for v in values)
    html = _admin_page(store)
    assert "-0.000" not in html and "0.000" in html


def test_icc_and_w_are_not_computed_on_the_gold_items_alone(tmp_path, shapes):
    # 2 of 3 raters per item: only the 2 gold items have the whole panel; ICC(2,1) and
    # Kendall's W of those 2 items (W = 1.0 here) once passed for the study's agreement
    from ieqa.data.manifest import read_manifest

    truth = {s.id: s.scores["overall"] for s in read_manifest(shapes)}
    store = make_study(tmp_path, shapes, raters=3, per_item=2, dimensions=("overall",), gold=2,
                       gold_from="scores")
    _answer_all(store, lambda r, it: [("overall", truth[it.id] + 0.1 * int(r[-1]), None)])
    stats = {a.statistic.split(" (")[0]: a for a in study_report(store).agreement}
    assert "ICC(2,1)" not in stats and stats["ICC(1,1)"].value is not None
    assert stats["Kendall's W"].value is None and "differ per item" in stats["Kendall's W"].note
    # with the whole panel on every item, the rows say what they rest on
    full = make_study(tmp_path, shapes, "full", raters=3, per_item=3, dimensions=("overall",))
    rater = full.raters()[0][0]
    _answer_all(full, lambda r, it: [("overall", truth[it.id] + (0.5 if r == rater else 0), None)])
    row = next(a for a in study_report(full).agreement if a.statistic == "ICC(2,1)")
    assert row.value is not None and "12 item(s)" in row.note
    assert "12 item(s) every rater has answered" in _admin_page(full)


def test_pairwise_raters_are_screened_on_the_preference_not_the_label_index(tmp_path, shapes):
    # rater-04 reverses every verdict (and says both bad where the others see a tie);
    # coded as label indices (a>b 0, b>a 1, tie 2, both-bad 3) that correlated positively
    store = make_study(tmp_path, shapes, protocol="pairwise", raters=4, per_item=4)
    verdict = {0: "a>b", 1: "b>a", 2: "tie"}
    reverse = {"a>b": "b>a", "b>a": "a>b", "tie": "both-bad"}

    def answer(rater, item):
        v = verdict[item.key % 3]
        return [("overall", None, reverse[v] if rater == "rater-04" else v)]

    _answer_all(store, answer)
    flags = {r.rater: r.flags for r in study_report(store).raters}
    assert any(f.kind == "low_agreement" for f in flags["rater-04"]), flags
    assert not any(flags[r] for r in ("rater-01", "rater-02", "rater-03")), flags


# ---------------------------------------------------- agreement numbers worked out by hand


def _truth(shapes):
    from ieqa.data.manifest import read_manifest

    return {s.id: s.scores["overall"] for s in read_manifest(shapes)}


def _icc_by_hand(x):
    """Shrout & Fleiss ICC(1,1) and ICC(2,1) of an (items, raters) matrix, written out."""
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_total = ((x - grand) ** 2).sum()
    bms, jms = ss_rows / (n - 1), ss_cols / (k - 1)
    wms = (ss_total - ss_rows) / (n * (k - 1))
    ems = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
    icc11 = (bms - wms) / (bms + (k - 1) * wms)
    icc21 = (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
    return icc11, icc21


def test_raters_added_later_widen_the_panel_to_the_one_way_icc(tmp_path, shapes):
    # 3 raters, 3 per item: rater-03 answers 6 items and is revoked, rater-04 is added for
    # the other 6. Each item still has 3 ratings, but not from the same 3 raters: the
    # admin page must report ICC(1,1) on the items' 3 ratings, not ICC(2,1) (fixed in
    # f9e9729: the panel was taken from config.raters, which added raters do not change)
    truth = _truth(shapes)
    store = make_study(tmp_path, shapes, raters=3, per_item=3, dimensions=("overall",))
    offset = {"rater-01": 0.0, "rater-02": 0.5, "rater-03": -0.5, "rater-04": 2.0}
    given: dict[int, list[float]] = {}

    def answer(rater, assignments):
        for a in assignments:
            item = store.item(a.item)
            v = truth[item.id] + offset[rater] + 0.1 * (a.item % 3)
            store.submit(f"{rater}-{a.item}", rater, a.item, [("overall", v, None)])
            given.setdefault(a.item, []).append(v)

    answer("rater-01", store.assignments("rater-01"))
    answer("rater-02", store.assignments("rater-02"))
    answer("rater-03", store.assignments("rater-03")[:6])
    store.revoke("rater-03")
    ((new, _, n_items),) = store.add_raters(1)
    assert (new, n_items) == ("rater-04", 6)
    answer("rater-04", store.assignments("rater-04"))
    assert sorted(len(v) for v in given.values()) == [3] * 12
    want_11, want_21 = _icc_by_hand(np.array([given[k] for k in sorted(given)]))
    assert abs(want_11 - want_21) > 1e-3  # the two forms tell apart here
    rows = {a.statistic: a for a in study_report(store).agreement}
    assert "ICC(2,1)" not in rows
    row = rows["ICC(1,1) (raters differ per item; 12 item(s) with 3 ratings)"]
    assert row.value == pytest.approx(want_11, rel=1e-9)
    assert rows["Kendall's W"].value is None and "differ per item" in rows["Kendall's W"].note


def test_full_panel_icc21_by_hand_without_the_training_items(tmp_path, shapes):
    # every rater rates every item: ICC(2,1) (absolute agreement: the raters' offsets
    # count against it, unlike ICC(3,1)) on the 11 study items; the training item's
    # answers (wild on purpose) are left out
    truth = _truth(shapes)
    store = make_study(tmp_path, shapes, raters=3, per_item=3, dimensions=("overall",), training=1)
    training = {it.key for it in store.items("training")}
    assert len(training) == 1
    offset = {"rater-01": 0.0, "rater-02": 0.5, "rater-03": 1.5}
    study: dict[int, dict[str, float]] = {}
    for rater, _ in store.raters():
        for a in store.assignments(rater):
            item = store.item(a.item)
            if a.item in training:
                v = {"rater-01": 5.0, "rater-02": 1.0, "rater-03": 3.0}[rater]
            else:
                v = truth[item.id] + offset[rater] + 0.1 * ((a.item * int(rater[-1])) % 3)
                study.setdefault(a.item, {})[rater] = v
            store.submit(f"{rater}-{a.item}", rater, a.item, [("overall", v, None)])
    x = np.array([[study[k][r] for r in sorted(offset)] for k in sorted(study)])
    assert x.shape == (11, 3)
    _, want = _icc_by_hand(x)
    rows = {a.statistic: a for a in study_report(store).agreement}
    assert rows["ICC(2,1)"].value == pytest.approx(want, rel=1e-9)
    assert rows["ICC(2,1)"].note == "on the 11 item(s) every rater has answered so far"
    # ICC(3,1) = (BMS - EMS) / (BMS + (k-1) EMS) ignores the offsets: far from ICC(2,1) here
    n, k = x.shape
    grand = x.mean()
    bms = k * ((x.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + grand
    ems = (resid ** 2).sum() / ((n - 1) * (k - 1))
    assert abs((bms - ems) / (bms + (k - 1) * ems) - want) > 0.05


def test_rank_kendall_w_is_the_mean_over_the_groups(tmp_path, shapes):
    # 2 raters, 4 groups of 3: W = 12 S / (m^2 (n^3 - n)) = S / 8 with m = 2, n = 3.
    # rater-01 always c0 c1 c2 (ranks 1 2 3); rater-02 per group:
    #   c0 c1 c2 -> R = 2 4 6, S = 8, W = 1 (twice)
    #   c1 c0 c2 -> ranks 2 1 3, R = 3 3 6, S = 1 + 1 + 4 = 6, W = 0.75
    #   c2 c1 c0 -> ranks 3 2 1, R = 4 4 4, S = 0, W = 0
    # mean (1 + 1 + 0.75 + 0) / 4 = 0.6875 (the median would be 0.875)
    store = make_study(tmp_path, shapes, "rank", protocol="rank", raters=2, per_item=2)
    keys = sorted(it.key for it in store.items())
    assert len(keys) == 4
    second = dict(zip(keys, (["c0", "c1", "c2"], ["c0", "c1", "c2"], ["c1", "c0", "c2"], ["c2", "c1", "c0"]),
                      strict=True))
    _answer_all(store, lambda r, it: [("overall", None, json.dumps(
        ["c0", "c1", "c2"] if r == "rater-01" else second[it.key]))])
    rows = {a.statistic: a for a in study_report(store).agreement}
    assert rows["Kendall's W (mean over 4 group(s))"].value == pytest.approx(0.6875)
