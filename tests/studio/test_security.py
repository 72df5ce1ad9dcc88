"""A rater token reaches only its own assignments, never the admin pages; forms need
their CSRF token and an issued form id; instructions are escaped; images come only
from the manifest's files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ieqa.studio import StudioError, create_app

from .helpers import XSS, form_fields, make_study, shapes_manifest


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("security")
    manifest = shapes_manifest(folder, n=12, k=3, xss_first=True)
    store = make_study(folder, manifest, raters=3, per_item=1, dimensions=("overall",))
    return store, create_app(store)


def _login(app, token):
    client = TestClient(app, follow_redirects=False)
    r = client.get(f"/invite/{token}")
    assert r.status_code == 303
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    return client


def test_a_rater_sees_only_their_own_assignments(study):
    store, app = study
    (r1, t1), (r2, t2), _ = store.raters()
    c1 = _login(app, t1)
    mine = {a.item for a in store.assignments(r1)}
    theirs = [a.item for a in store.assignments(r2) if a.item not in mine]
    assert theirs, "per_item=1: the raters' lists are disjoint"
    # positions index the rater's own list: every page c1 can open is one of c1's items
    for a in store.assignments(r1):
        page = c1.get(f"/study/task/{a.position}")
        keys = set(map(int, re.findall(r'src="/media/(\d+)/', page.text)))
        assert keys == {a.item}
    assert c1.get(f"/study/task/{len(mine) + 5}").status_code == 404
    assert c1.get(f"/study/task/{2**64}").status_code == 404  # once a 500 (OverflowError in SQLite)
    assert c1.get(f"/media/{2**64}/c0").status_code == 403
    assert c1.get(f"/media/{theirs[0]}/c0").status_code == 403
    assert c1.get(f"/media/{theirs[0]}/source").status_code == 403
    # writing another rater's item: the position is c1's own, and a form id of r2's is refused
    c2 = _login(app, t2)
    pos2 = next(a.position for a in store.assignments(r2) if a.item == theirs[0])
    f2 = form_fields(c2.get(f"/study/task/{pos2}").text)
    f1 = form_fields(c1.get("/study/task/0").text)
    r = c1.post("/study/task/0", data={"csrf": f1["csrf"], "submission": f2["submission"], "dim__overall": "3"})
    assert r.status_code == 403
    r = c1.post("/study/task/0", data={"csrf": f2["csrf"], "submission": f1["submission"], "dim__overall": "3"})
    assert r.status_code == 403  # r2's CSRF token does not fit r1's session
    assert store.response_of(r2, theirs[0]) == [] and store.response_of(r1, store.assignments(r1)[0].item) == []


def test_rater_tokens_do_not_open_admin_pages(study):
    store, app = study
    (_, t1), *_ = store.raters()
    c1 = _login(app, t1)
    for path in ("/admin", "/admin/export/ratings.csv"):
        assert c1.get(path).status_code == 403
        assert c1.get(path, headers={"Authorization": f"Bearer {t1}"}).status_code == 403
    assert c1.get(f"/admin/login?token={t1}").status_code == 403
    anon = TestClient(app, follow_redirects=False)
    assert anon.get("/study").status_code == 401
    assert anon.get("/study/task/0").status_code == 401
    assert anon.get("/media/1/c0").status_code == 401
    assert anon.get("/invite/not-a-token").status_code == 404
    admin_token = store.meta()["admin_token"]
    assert anon.get("/admin", headers={"Authorization": f"Bearer {admin_token}"}).status_code == 200
    admin = TestClient(app, follow_redirects=False)
    assert admin.get(f"/admin/login?token={admin_token}").status_code == 303
    assert admin.get("/admin").status_code == 200
    assert admin.get("/admin/export/ratings.csv").text.startswith("item,rater,dimension,value")


def test_forms_need_csrf_and_an_issued_form_id(study):
    store, app = study
    (r1, t1), *_ = store.raters()
    c1 = _login(app, t1)
    f = form_fields(c1.get("/study/task/1").text)
    base = {"dim__overall": "3"}
    assert c1.post("/study/task/1", data={**base, "submission": f["submission"]}).status_code == 403
    assert c1.post("/study/task/1", data={**base, "csrf": f["csrf"], "submission": "made.up"}).status_code == 403
    bad = c1.post("/study/task/1", data={**f, "dim__overall": "9"})
    assert bad.status_code == 400 and "outside the scale" in bad.text
    assert c1.post("/study/task/1", data={**f, "dim__overall": "nan"}).status_code == 400
    for junk in ("abc", "", "  "):  # once a 500: the page tried to draw the slider at "abc"
        bad = c1.post("/study/task/1", data={**f, "dim__overall": junk})
        assert bad.status_code == 400 and 'id="form-error"' in bad.text, (junk, bad.status_code)
        assert 'value="3.0"' in bad.text  # the slider starts over in the middle
    ok = c1.post("/study/task/1", data={**f, "dim__overall": "2.5"})
    assert ok.status_code == 303
    again = c1.post("/study/task/1", data={**f, "dim__overall": "4"})  # double click / retry
    assert again.status_code == 303
    item = store.assignments(r1)[1].item
    assert store.response_of(r1, item) == [{"dimension": "overall", "value": 2.5, "answer": None}]


def test_script_instructions_render_as_text(study):
    store, app = study
    xss_items = {it.key for it in store.items() if it.data["samples"][0]["instruction"] == XSS}
    rater, token, position = next((r, t, a.position) for r, t in store.raters()
                                  for a in store.assignments(r) if a.item in xss_items)
    page = _login(app, token).get(f"/study/task/{position}")
    assert "<script>window.__xss" not in page.text and "onerror=\"window" not in page.text
    assert "&lt;script&gt;window.__xss" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"


def test_images_only_from_the_manifest(study):
    store, app = study
    (r1, t1), *_ = store.raters()
    c1 = _login(app, t1)
    key = store.assignments(r1)[0].item
    img = c1.get(f"/media/{key}/c0")
    assert img.status_code == 200 and img.headers["content-type"] == "image/png"
    assert img.content == open(store.item(key).data["samples"][0]["edited"], "rb").read()
    for slot in ("..%2F..%2Fetc%2Fpasswd", "c9", "mask", "%2Fetc%2Fpasswd"):
        assert c1.get(f"/media/{key}/{slot}").status_code == 404
    assert c1.get("/media/../../etc/passwd").status_code == 404


def test_invite_tokens_are_compared_in_constant_time(study, monkeypatch):
    # every stored token is compared with hmac.compare_digest, with no early exit: the
    # time of a lookup does not tell how much of a guessed token matches
    import ieqa.studio.store as store_module

    store, _ = study
    calls: list[tuple[bytes, bytes]] = []
    real = store_module.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(store_module.hmac, "compare_digest", spy)
    (r1, t1), *_ = store.raters()
    assert store.rater_by_token(t1) == r1
    assert {b.decode() for _, b in calls} == {t for _, t in store.raters()}
    calls.clear()
    assert store.rater_by_token(t1[:-1] + ("A" if t1[-1] != "A" else "B")) is None
    assert len(calls) == len(store.raters())


def test_admin_page_invite_links_use_the_public_url(study):
    # behind the HTTPS proxy the docs ask for, the app sees http://127.0.0.1:8000: the
    # admin page's invite links once pointed there instead of at --public-url
    store, _ = study
    app = create_app(store, public_url="https://study.example.org/")
    token = store.meta()["admin_token"]
    page = TestClient(app).get("/admin", headers={"Authorization": f"Bearer {token}"}).text
    for _, t in store.raters():
        assert f'value="https://study.example.org/invite/{t}"' in page
    page = TestClient(create_app(store), base_url="http://10.0.0.5:8123").get(
        "/admin", headers={"Authorization": f"Bearer {token}"}).text
    assert f'value="http://10.0.0.5:8123/invite/{store.raters()[0][1]}"' in page  # default: as requested


def test_manifest_relative_and_symlinked_images(tmp_path, shapes, monkeypatch):
    # a manifest with relative paths, read from another working directory, and an image
    # that is a symlink: the study keeps absolute, resolved paths and serves those files
    import json
    import shutil

    from .helpers import make_study as _make

    data = tmp_path / "data"
    shutil.copytree(shapes.parent / "images", data / "images")
    rows = [json.loads(line) for line in shapes.read_text().splitlines()]
    real = tmp_path / "elsewhere.png"
    shutil.copy(data / "images" / rows[0]["edited"].split("/")[-1], real)
    (data / "images" / "linked.png").symlink_to(real)
    rows[0]["edited"] = "images/linked.png"
    (data / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path.parent)
    store = _make(tmp_path, data / "m.jsonl", "rel", raters=1, per_item=1, dimensions=("overall",))
    first = next(it for it in store.items() if it.id == rows[0]["id"])
    assert first.data["samples"][0]["edited"] == str(real.resolve())
    assert all(Path(it.data["samples"][0]["edited"]).is_absolute() for it in store.items())
    client = _login(create_app(store), store.raters()[0][1])
    assert client.get(f"/media/{first.key}/c0").content == real.read_bytes()
    (data / "images" / "missing.png").symlink_to(tmp_path / "nowhere.png")
    rows[1]["edited"] = "images/missing.png"
    (data / "bad.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(StudioError, match="does not exist; fix the manifest's path"):
        _make(tmp_path, data / "bad.jsonl", "bad", raters=1, per_item=1)
