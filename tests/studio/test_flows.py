"""What a real study needs beyond answering: "cannot judge" with a reason, revising an
answer (history kept, the export takes the latest), a second tab told "already answered",
untouched sliders flagged or refused, per-answer times in every export, training answers
exported on their own, organiser guidelines, the organiser's actions (add raters, revoke,
re-issue, close), studies on one host that keep their own sessions, and an invite that
asks before switching raters. Over HTTP (Starlette's test client, and two real servers
for the cookie test)."""

from __future__ import annotations

import csv
import json
import re

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ieqa.cli import app as cli
from ieqa.human import read_rankings
from ieqa.studio import StudioError, create_app, export_study
from ieqa.studio.export import answer_log

from .helpers import form_fields, make_study, serve_in_thread


def _login(app, token: str) -> TestClient:
    client = TestClient(app, follow_redirects=False)
    assert client.get(f"/invite/{token}").status_code == 303
    return client


def _task(client: TestClient) -> tuple[str, str]:
    path = client.get("/study/next?read=1").headers["location"]
    return path, client.get(path).text


def test_skip_revise_second_tab_and_exports(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=2, dimensions=("overall", "visual_quality"),
                       training=1, gold_from="scores")
    app = create_app(store)
    (r1, t1), (r2, t2) = store.raters()
    c1 = _login(app, t1)
    # training item first: answered, exported apart from the study's answers
    path, html = _task(c1)
    assert c1.post(path, data={**form_fields(html), "dim__overall": "4", "dim__visual_quality": "4",
                               "moved": "overall,visual_quality"}).status_code == 303
    # 1: "cannot judge" needs a reason; then it is recorded as a skip, not a rating
    path, html = _task(c1)
    skip_pos = int(path.rsplit("/", 1)[1])
    bad = c1.post(f"{path}/skip", data={**form_fields(html), "reason": "other"})
    assert bad.status_code == 400 and "write in a few words" in bad.text
    assert c1.post(f"{path}/skip", data={**form_fields(html), "reason": "image"}).status_code == 303
    skipped_item = store.assignment(r1, skip_pos).item
    assert store.response_of(r1, skipped_item) == []
    assert store.submission_of(r1, skipped_item)["status"] == "skip"
    # 2: an answer with one slider left untouched, then a second tab posts the same item
    path, html = _task(c1)
    pos = int(path.rsplit("/", 1)[1])
    item = store.assignment(r1, pos).item
    tab2 = form_fields(c1.get(path).text)
    assert c1.post(path, data={**form_fields(html), "dim__overall": "2", "dim__visual_quality": "3",
                               "moved": "overall"}).status_code == 303
    second = c1.post(path, data={**tab2, "dim__overall": "5", "dim__visual_quality": "5", "moved": "overall"})
    assert second.status_code == 409 and "Already answered" in second.text and "revise" in second.text.lower()
    assert f'href="/study/task/{pos}/revise"' in second.text
    assert store.response_of(r1, item)[0]["value"] == 2.0  # the second tab changed nothing
    # 3: revise the last answer: the export takes the latest, the history keeps both
    form = c1.get(f"/study/task/{pos}/revise").text
    assert 'name="revise" value="1"' in form and 'value="2.0"' in form  # filled with the saved answer
    assert c1.post(path, data={**form_fields(form), "dim__overall": "1.5", "dim__visual_quality": "3",
                               "moved": "overall,visual_quality", "revise": "1"}).status_code == 303
    assert store.response_of(r1, item)[0]["value"] == 1.5
    # an earlier answer cannot be revised (revise_any is off), the last one can
    assert c1.get(f"/study/task/{skip_pos}/revise").status_code == 403
    assert "Revise it" in c1.get(f"/study/task/{pos}").text
    # r2 answers everything, a little later
    c2 = _login(app, t2)
    while (nxt := c2.get("/study/next?read=1").headers["location"]) != "/study/done":
        f = form_fields(c2.get(nxt).text)
        assert c2.post(nxt, data={**f, "dim__overall": "3", "dim__visual_quality": "2",
                                  "moved": "overall,visual_quality"}).status_code == 303

    export_study(store, tmp_path / "ratings.csv")
    rows = list(csv.DictReader((tmp_path / "ratings.csv").open()))
    assert set(rows[0]) == {"item", "rater", "dimension", "value", "answered_at", "duration_s", "untouched"}
    mine = {(r["item"], r["dimension"]): r for r in rows if r["rater"] == r1}
    item_id = store.item(item).id
    assert mine[(item_id, "overall")]["value"] == "1.5"  # the latest answer only
    assert len([r for r in rows if r["rater"] == r1 and r["item"] == item_id]) == 2
    assert not any(r["item"] == store.item(skipped_item).id and r["rater"] == r1 for r in rows)  # skip: no rating
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["answered_at"]) for r in rows)
    assert all(float(r["duration_s"]) >= 0 for r in rows)
    assert {r["untouched"] for r in rows} == {"false"}  # the revision set both sliders
    training = {it.id for it in store.items("training")}
    assert not {r["item"] for r in rows} & training
    what, n = export_study(store, tmp_path / "training.csv", part="training")
    assert what == "training ratings" and n == 4
    assert {r["item"] for r in csv.DictReader((tmp_path / "training.csv").open())} == training
    # the full log: the skip with its reason, the replaced answer with what replaced it
    log = answer_log(store)
    skip = next(x for x in log if x["status"] == "skip")
    assert skip["reason"] == "image" and skip["responses"] == [] and skip["current"]
    old = next(x for x in log if not x["current"])
    assert old["responses"][0]["value"] == 2.0 and old["responses"][1]["untouched"] is True
    assert old["replaced_by"] in {x["submission"] for x in log if x["current"]}
    # ieqa mos reads the export as before
    res = CliRunner().invoke(cli, ["mos", str(tmp_path / "ratings.csv"), "--scale", "1,5", "--method", "mean",
                                   "--screen", "none", "--out", str(tmp_path / "mos.csv")])
    assert res.exit_code == 0, res.output


def test_untouched_refused_when_the_organiser_asks(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=1, per_item=1, dimensions=("overall",), untouched="refuse")
    c = _login(create_app(store), store.raters()[0][1])
    path, html = _task(c)
    refused = c.post(path, data={**form_fields(html), "dim__overall": "3", "moved": ""})
    assert refused.status_code == 400 and "set every slider" in refused.text
    assert c.post(path, data={**form_fields(html), "dim__overall": "3", "moved": "overall"}).status_code == 303


def test_rank_export_with_times_feeds_rank_editors(tmp_path, shapes):
    store = make_study(tmp_path, shapes, "rank", protocol="rank", raters=2, per_item=2, revise_any=True)
    app = create_app(store)
    for _, token in store.raters():
        c = _login(app, token)
        while (nxt := c.get("/study/next").headers["location"]) != "/study/done":
            f = form_fields(c.get(nxt).text)
            assert c.post(nxt, data={**f, "dim__overall": "c0,c2,c1"}).status_code == 303  # no script: unknown
    c = _login(app, store.raters()[0][1])
    assert c.get("/study/task/0/revise").status_code == 200  # revise_any: an earlier answer too
    export_study(store, tmp_path / "rankings.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "rankings.jsonl").read_text().splitlines()]
    assert set(lines[0]["meta"]) == {"answered_at", "duration_s", "untouched"} and lines[0]["meta"]["untouched"] is None
    assert len(read_rankings(tmp_path / "rankings.jsonl")) == 8
    res = CliRunner().invoke(cli, ["rank-editors", "--rankings", str(tmp_path / "rankings.jsonl")])
    assert res.exit_code == 0, res.output
    assert "rests on" not in res.output  # once "the overall column rests on  alone"


def test_guidelines_before_the_first_item_and_on_every_task_page(tmp_path, shapes):
    folder = tmp_path / "study"
    (folder / "img").mkdir(parents=True)
    from PIL import Image

    Image.new("RGB", (8, 8), "red").save(folder / "img" / "good.png")
    text = ("# How to rate\n\nLook at the **edit region** first.\n\n![a good edit](img/good.png)\n\n"
            "<script>window.__x = 1</script>\n\n[more](javascript:alert(1))\n")
    (folder / "guidelines.md").write_text(text)
    store = make_study(tmp_path, shapes, raters=1, per_item=1, dimensions=("overall",),
                       guidelines=folder / "guidelines.md")
    c = _login(create_app(store), store.raters()[0][1])
    assert c.get("/study/next").headers["location"] == "/study/guidelines?first=1"
    page = c.get("/study/guidelines?first=1").text
    assert "<h1>How to rate</h1>" in page and "<strong>edit region</strong>" in page
    assert "<script>window.__x" not in page and "&lt;script&gt;" in page
    assert "href=\"javascript:" not in page  # left as text, never a link
    assert 'src="/guidelines/img/0"' in page
    assert c.get("/guidelines/img/0").content == (folder / "img" / "good.png").read_bytes()
    assert c.get("/guidelines/img/1").status_code == 404
    path, html = _task(c)
    assert 'id="guide"' in html and "How to rate" in html and 'data-open-guide' in html
    assert TestClient(create_app(store)).get("/guidelines/img/0").status_code == 401  # signed-in raters only
    # images from outside the guidelines' folder are refused when the study is made
    (folder / "bad.md").write_text("![x](../outside.png)\n")
    Image.new("RGB", (8, 8)).save(tmp_path / "outside.png")
    with pytest.raises(StudioError, match="lies outside"):
        make_study(tmp_path, shapes, "bad", raters=1, per_item=1, guidelines=folder / "bad.md")
    (folder / "url.md").write_text("![x](https://example.org/a.png)\n")
    with pytest.raises(StudioError, match="only images in the guidelines' folder"):
        make_study(tmp_path, shapes, "url", raters=1, per_item=1, guidelines=folder / "url.md")


def test_organiser_adds_revokes_reissues_and_closes(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=2, dimensions=("overall",), gold=1, gold_from="scores")
    app = create_app(store)
    admin = TestClient(app, follow_redirects=False)
    admin.get(f"/admin/login?token={store.meta()['admin_token']}")
    page = admin.get("/admin").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    (r1, t1), (r2, t2) = store.raters()
    c1 = _login(app, t1)
    path, html = _task(c1)
    assert c1.post(path, data={**form_fields(html), "dim__overall": "3"}).status_code == 303
    # revoke r2: the link opens nothing; their items need ratings again
    assert admin.post(f"/admin/raters/{r2}/revoke", data={}).status_code == 403  # no CSRF token
    assert admin.post(f"/admin/raters/{r2}/revoke", data={"csrf": csrf}).status_code == 303
    assert TestClient(app, follow_redirects=False).get(f"/invite/{t2}").status_code == 404
    n_study = len(store.items("study"))
    assert sum(store.needed().values()) == n_study
    # add a rater: they get exactly the items that still need ratings, plus the gold item
    assert admin.post("/admin/raters/add", data={"csrf": csrf, "n": "1"}).status_code == 303
    (new, token, _), = [(r, t, 0) for r, t in store.raters() if r not in (r1, r2)]
    assert new == "rater-03"
    assert {a.item for a in store.assignments(new)} == {it.key for it in store.items() if it.role != "training"}
    assert store.needed() == {}
    assert f"/invite/{token}" in admin.get("/admin").text
    # re-issue r1's link: the old one stops working, the new one resumes r1's list
    assert admin.post(f"/admin/raters/{r1}/reissue", data={"csrf": csrf}).status_code == 303
    t1_new = dict(store.raters())[r1]
    assert t1_new != t1 and TestClient(app, follow_redirects=False).get(f"/invite/{t1}").status_code == 404
    assert "You have answered <strong id=\"done-count\">1</strong>" in _login(app, t1_new).get("/study").text
    # close: answers are refused with a message, the admin page says so
    c3 = _login(app, token)
    path, html = _task(c3)
    assert admin.post("/admin/close", data={"csrf": csrf}).status_code == 303
    closed = c3.post(path, data={**form_fields(html), "dim__overall": "3"})
    assert closed.status_code == 409 and "closed" in closed.text
    assert 'id="closed"' in admin.get("/admin").text
    with pytest.raises(StudioError, match="closed"):
        store.submit("x", new, store.assignments(new)[0].item, [("overall", 3.0, None, None)])


def test_two_studies_on_one_host_keep_their_sessions(tmp_path, shapes):
    # cookies do not tell ports apart: studies on 127.0.0.1:A and :B once signed each
    # other's raters (and admins) out, both using ieqa_studio_rater
    one = make_study(tmp_path, shapes, "one", raters=1, per_item=1, dimensions=("overall",))
    two = make_study(tmp_path, shapes, "two", raters=1, per_item=1, dimensions=("overall",))
    with serve_in_thread(one) as base1, serve_in_thread(two) as base2:
        browser = httpx.Client(follow_redirects=False)  # one cookie jar, as a browser has for the host
        assert browser.get(f"{base1}/invite/{one.raters()[0][1]}").status_code == 303
        assert browser.get(f"{base2}/invite/{two.raters()[0][1]}").status_code == 303
        assert browser.get(f"{base1}/study").status_code == 200 and browser.get(f"{base2}/study").status_code == 200
        for store, base in ((one, base1), (two, base2)):
            browser.get(f"{base}/admin/login?token={store.meta()['admin_token']}")
        assert browser.get(f"{base1}/admin").status_code == 200 and browser.get(f"{base2}/admin").status_code == 200
        assert len({c.name for c in browser.cookies.jar}) == 4


def test_an_invite_for_another_rater_asks_before_switching(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=1, dimensions=("overall",))
    app = create_app(store)
    (r1, t1), (r2, t2) = store.raters()
    c = _login(app, t1)
    ask = c.get(f"/invite/{t2}")
    assert ask.status_code == 200 and "Switch rater?" in ask.text and r1 in ask.text and r2 in ask.text
    assert "Welcome, rater-01" in c.get("/study").text  # nothing switched yet
    # a page elsewhere cannot post the switch: it has no token for this session
    assert c.post(f"/invite/{t2}/switch", data={"csrf": "forged"}).status_code == 403
    fresh = TestClient(app, follow_redirects=False)  # no session (a cross-site POST carries no cookie)
    assert fresh.post(f"/invite/{t2}/switch", data={"csrf": "x"}).status_code == 403
    csrf = re.search(r'name="csrf" value="([^"]+)"', ask.text).group(1)
    assert c.post(f"/invite/{t2}/switch", data={"csrf": csrf}).status_code == 303
    assert "Welcome, rater-02" in c.get("/study").text
    assert c.get(f"/invite/{t2}").status_code == 303  # the same rater's link: no question


def test_training_feedback_shows_the_images(tmp_path, shapes):
    store = make_study(tmp_path, shapes, "fb", protocol="pairwise", raters=1, per_item=1, training=1,
                       gold_from="scores")
    c = _login(create_app(store), store.raters()[0][1])
    path, html = _task(c)
    r = c.post(path, data={**form_fields(html), "dim__overall": "a>b"})
    assert r.headers["location"].endswith("/feedback")
    page = c.get(r.headers["location"]).text
    key = store.assignment("rater-01", 0).item
    assert {f"/media/{key}/source", f"/media/{key}/c0", f"/media/{key}/c1"} <= set(re.findall(r'src="([^"]+)"', page))
    assert "favicon" in page and c.get("/favicon.ico").status_code == 200


def test_skips_are_not_ratings_for_needed_and_one_page_cannot_skip_then_answer(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=2, dimensions=("overall",))
    app = create_app(store)
    (r1, t1), _ = store.raters()
    c = _login(app, t1)
    path, html = _task(c)
    skip_form = re.search(r'id="skip-form">.*?name="submission" value="([^"]+)"', html, re.S).group(1)
    assert skip_form != form_fields(html)["submission"]  # a form id of its own
    assert c.post(f"{path}/skip", data={"csrf": form_fields(html)["csrf"], "submission": skip_form,
                                        "reason": "instruction"}).status_code == 303
    # the answer form of the same page (Back button) is not taken for the skip's repeat
    later = c.post(path, data={**form_fields(html), "dim__overall": "4"})
    assert later.status_code == 409 and "Already answered" in later.text
    key = store.assignment(r1, int(path.rsplit("/", 1)[1])).item
    assert store.submission_of(r1, key)["status"] == "skip"
    assert store.needed() == {key: 1}  # the skip is no rating: the item needs one more
    # a revise=1 post for an answer that is not the rater's last is refused
    path2, html2 = _task(c)
    assert c.post(path2, data={**form_fields(html2), "dim__overall": "2"}).status_code == 303
    f = form_fields(c.get(f"{path2}/revise").text)
    assert c.post(path, data={**f, "dim__overall": "3", "revise": "1"}).status_code == 403  # f is path2's
    f_old = form_fields(c.get(f"{path}").text)  # an "already saved" page has no form
    assert f_old == {}
    # closed: skips and revisions are refused too; a revoked rater reaches nothing
    store.close()
    assert c.post(f"{path2}/skip", data={**f, "reason": "image"}).status_code == 409
    assert c.post(path2, data={**f, "dim__overall": "5", "revise": "1"}).status_code == 409
    assert c.post(path2, data={**f, "dim__overall": "99", "revise": "1"}).status_code == 409  # not a form error
    store.revoke(r1)
    assert c.get("/study").status_code == 401 and c.get(f"/media/{key}/c0").status_code == 401


def test_a_reissued_rater_keeps_only_the_items_nobody_took_over(tmp_path, shapes):
    store = make_study(tmp_path, shapes, raters=2, per_item=2, dimensions=("overall",))
    (r1, _), (r2, _) = store.raters()
    first = store.assignments(r2)[0].item
    store.submit("a", r2, first, [("overall", 3.0, None, False)])
    store.revoke(r2)
    store.add_raters(1)
    store.reissue(r2, "new-token-of-rater-02")
    mine = store.assignments(r2)
    assert [a.item for a in mine] == [first]  # the answered item stays; the rest went to rater-03
    per_item = {}
    for a in store.assignments():
        per_item[a.item] = per_item.get(a.item, 0) + 1
    assert max(per_item.values()) == 2


def test_a_schema_1_file_is_upgraded_and_a_newer_one_refused(tmp_path, shapes):
    import sqlite3

    from ieqa.studio import open_study

    store = make_study(tmp_path, shapes, raters=1, per_item=1, dimensions=("overall",))
    rater, _ = store.raters()[0]
    con = sqlite3.connect(store.path)
    for table, column in (("raters", "revoked"), ("submissions", "shown"), ("submissions", "status"),
                          ("submissions", "reason"), ("responses", "untouched")):
        con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    con.execute("DROP TABLE revisions")
    con.execute("DELETE FROM meta WHERE key = 'study_id'")
    con.execute("UPDATE meta SET value = '\"1\"' WHERE key = 'schema'")
    con.commit()
    con.close()
    again = open_study(store.path)
    assert again.meta()["schema"] == "2" and len(again.meta()["study_id"]) == 10
    key = again.assignments(rater)[0].item
    again.submit("s", rater, key, [("overall", 4.0, None, True)], shown=1.0, now=2.0)
    assert again.responses()[0]["untouched"] is True and again.responses()[0]["duration"] == 1.0
    again.set_meta("schema", "3")
    with pytest.raises(StudioError, match="schema 3, newer than this ieqa reads"):
        open_study(store.path)
