"""The admin page's numbers: undefined statistics say why, nothing prints as -0.000,
statistics say what they were computed on, and pairwise raters are screened on what
their verdicts mean."""

from __future__ import annotations

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
