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
            store.submit(f"{rater}-{a.item}", rater, a.item, value_of(rater, item))


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
