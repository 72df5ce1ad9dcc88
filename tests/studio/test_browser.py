"""The studio's pages driven in headless Chromium (Debian's ``chromium`` through
Playwright): a rater rates (keyboard, sliders, confirm step), reloads and resumes, gets
training feedback; a group is ranked by drag and drop; pairwise and critique pages are
answered with the keyboard; a script in an instruction stays text; the admin page's
export feeds ``ieqa mos``.

One browser for the module (the ``browser`` fixture of conftest.py). Screenshots of every page type go to ``$IEQA_STUDIO_SHOTS``
(a folder) when it is set.
"""

from __future__ import annotations

import csv
import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ieqa.cli import app as cli
from ieqa.human import read_rankings

from .helpers import (
    CHROMIUM,
    XSS,
    form_fields,
    make_study,
    open_next,
    rater_client,
    serve_in_thread,
    shapes_manifest,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: run "
                                "make setup (it runs apt-get install -y chromium), or install it yourself")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                                     "(pip install -e '.[dev]')")


@pytest.fixture
def shots(tmp_path):
    folder = Path(os.environ.get("IEQA_STUDIO_SHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)

    def shoot(page, name: str) -> None:
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)

    return shoot


def _context(browser, height: int = 900):
    ctx = browser.new_context(viewport={"width": 1280, "height": height})
    ctx.set_default_timeout(15_000)
    errors: list[str] = []
    dialogs: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    ctx.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return ctx, errors, dialogs


def _ready(page) -> None:
    """Wait until the page's script has set up its handlers."""
    page.wait_for_selector("body[data-ready]", state="attached")


def _fill_rest_over_http(base, store, skip_rater, value_of):
    """The other raters answer every item over HTTP (to give the admin page a panel)."""
    for rater, token in store.raters():
        if rater == skip_rater:
            continue
        client = rater_client(base, token)
        while (nxt := open_next(client)) is not None:
            path, html = nxt
            position = int(path.rsplit("/", 1)[1])
            item = store.item(store.assignment(rater, position).item)
            data = {**form_fields(html), **value_of(rater, item)}
            assert client.post(path, data=data).status_code == 303


def test_a_rater_rates_reloads_resumes_and_the_export_feeds_mos(browser, tmp_path, shapes, shots):
    store = make_study(tmp_path, shapes, raters=3, per_item=2, dimensions=("overall", "visual_quality"),
                       training=1, gold=1, gold_from="scores", title="ShapesEdit rating study")
    rater, token = store.raters()[0]
    with serve_in_thread(store) as base:
        ctx, errors, _ = _context(browser)
        page = ctx.new_page()
        page.goto(f"{base}/invite/{token}")
        assert page.url.endswith("/study")
        shots(page, "home")
        page.click("#continue")
        _ready(page)
        assert page.locator("#training-badge").is_visible()
        # keyboard: 1 picks the first slider, arrows move it; Enter opens the confirm step
        page.keyboard.press("1")
        for _ in range(5):
            page.keyboard.press("ArrowRight")  # 3.0 + 5 x 0.2
        page.keyboard.press("2")
        page.keyboard.press("ArrowLeft")
        assert page.input_value("#dim__overall") == "4"
        page.keyboard.press("Enter")
        assert page.locator("#confirm").is_visible()
        assert "Overall: 4.00" in page.inner_text("#confirm-summary")
        shots(page, "rate-confirm")
        page.keyboard.press("Enter")
        page.wait_for_url("**/feedback")
        assert "Reference" in page.inner_text("#feedback-table")
        shots(page, "training-feedback")
        page.click("#continue")
        # a study item: sliders by mouse/fill, Submit then Confirm
        seen_bbox = False
        page.wait_for_selector("#task-form")
        position = int(page.url.rsplit("/", 1)[1])
        item = store.item(store.assignment(rater, position).item)
        has_box = item.data["samples"][0]["bbox"] is not None
        assert (page.locator("svg.bbox rect").count() > 0) == has_box
        seen_bbox |= has_box
        shots(page, "rate")
        page.fill("#dim__overall", "2.5")
        page.fill("#dim__visual_quality", "3.75")
        page.click("#send")
        page.click("#confirm-ok")
        page.wait_for_url(lambda u: not u.endswith(f"/task/{position}"))
        assert store.response_of(rater, item.key) == [
            {"dimension": "overall", "value": 2.5, "answer": None},
            {"dimension": "visual_quality", "value": 3.75, "answer": None}]
        # reload: the same unanswered item comes back, nothing new is saved
        current = page.url
        page.fill("#dim__overall", "1.5")
        page.reload()
        assert page.url == current and page.input_value("#dim__overall") == "3"
        assert len(store.response_of(rater, store.assignment(rater, position + 1).item)) == 0
        # pause, leave, come back with the invite link in a fresh browser: resume there
        page.click("#pause")
        assert "2 answer(s) are saved" in page.inner_text("#paused-note")
        shots(page, "paused")
        ctx.close()
        ctx, errors2, _ = _context(browser)
        page = ctx.new_page()
        page.goto(f"{base}/invite/{token}")
        assert page.inner_text("#done-count") == "2" and page.inner_text("#continue") == "Resume"
        page.click("#continue")
        _ready(page)
        assert page.url == current
        # answer the rest with the keyboard only
        while "/task/" in page.url:
            position = int(page.url.rsplit("/", 1)[1])
            item = store.item(store.assignment(rater, position).item)
            has_box = item.data["samples"][0]["bbox"] is not None
            assert (page.locator("svg.bbox rect").count() > 0) == has_box
            seen_bbox |= has_box
            _ready(page)
            page.keyboard.press("1")
            page.keyboard.press("ArrowRight")
            page.keyboard.press("Enter")
            page.keyboard.press("Enter")
            page.wait_for_url(lambda u, p=position: not u.endswith(f"/task/{p}"))
        assert "Thank you" in page.inner_text("h1")
        assert not errors and not errors2
        ctx.close()
        assert seen_bbox, "no sample with an edit region was shown"

        truth = {it.id: it for it in store.items()}
        _fill_rest_over_http(base, store, rater, lambda r, it: {
            "dim__overall": str(1 + len(it.id) % 5), "dim__visual_quality": "3"})
        admin, _, _ = _context(browser)
        page = admin.new_page()
        page.goto(f"{base}/admin/login?token={store.meta()['admin_token']}")
        assert "Agreement so far" in page.content()
        assert page.locator("#raters tbody tr").count() == 3
        assert "ICC(1,1)" in page.inner_text("#agreement")  # 2 of 3 raters per item
        shots(page, "admin")
        with page.expect_download() as dl:
            page.click("#export-1")
        ratings = tmp_path / "ratings.csv"
        dl.value.save_as(ratings)
        admin.close()
    rows = list(csv.DictReader(ratings.open()))
    assert {r["rater"] for r in rows} == {"rater-01", "rater-02", "rater-03"}
    assert not {r["item"] for r in rows} & {i for i, it in truth.items() if it.role == "training"}
    out = tmp_path / "mos.csv"
    res = CliRunner().invoke(cli, ["mos", str(ratings), "--scale", "1,5", "--method", "mean",
                                   "--screen", "none", "--out", str(out)])
    assert res.exit_code == 0, res.output
    want = defaultdict(list)
    for r in rows:
        want[(r["item"], r["dimension"])].append(float(r["value"]))
    mos = {(r["item"], r["dimension"]): float(r["mos"]) for r in csv.DictReader(out.open())}
    assert set(mos) == set(want)
    for key, values in want.items():
        assert mos[key] == pytest.approx(sum(values) / len(values))


def test_a_group_is_ranked_by_drag_and_drop(browser, tmp_path, shapes, shots):
    store = make_study(tmp_path, shapes, "rank", protocol="rank", raters=2, per_item=2)
    rater, token = store.raters()[0]
    with serve_in_thread(store) as base:
        ctx, errors, _ = _context(browser, height=1000)
        page = ctx.new_page()
        page.goto(f"{base}/invite/{token}")
        page.click("#continue")
        _ready(page)
        position = int(page.url.rsplit("/", 1)[1])
        items = page.locator("#rank__overall .rank-item")
        before = [items.nth(i).get_attribute("data-slot") for i in range(3)]
        page.drag_and_drop("#rank__overall .rank-item:nth-child(3)", "#rank__overall .rank-item:nth-child(1)",
                           target_position={"x": 20, "y": 5})
        after = [items.nth(i).get_attribute("data-slot") for i in range(3)]
        assert after == [before[2], before[0], before[1]], (before, after)
        assert page.input_value("#dim__overall") == ",".join(after)
        page.click("#rank__overall .rank-item:nth-child(3) button.up")  # keyboard-friendly buttons
        after = [after[0], after[2], after[1]]
        assert page.input_value("#dim__overall") == ",".join(after)
        shots(page, "rank")
        page.click("#send")
        assert "Candidate" in page.inner_text("#confirm-summary")
        page.click("#confirm-ok")
        page.wait_for_url(lambda u: not u.endswith(f"/task/{position}"))
        key = store.assignment(rater, position).item
        assert json.loads(store.response_of(rater, key)[0]["answer"]) == after
        while "/task/" in page.url:  # the remaining groups as displayed
            p = int(page.url.rsplit("/", 1)[1])
            page.click("#send")
            page.click("#confirm-ok")
            page.wait_for_url(lambda u, p=p: not u.endswith(f"/task/{p}"))
        assert not errors
        ctx.close()
        _fill_rest_over_http(base, store, rater, lambda r, it: {"dim__overall": "c0,c1,c2"})
    from ieqa.studio import export_study

    export_study(store, tmp_path / "rankings.jsonl")
    rankings = read_rankings(tmp_path / "rankings.jsonl")
    assert len(rankings) == 8
    res = CliRunner().invoke(cli, ["rank-editors", "--rankings", str(tmp_path / "rankings.jsonl")])
    assert res.exit_code == 0, res.output


def test_pairwise_and_critique_pages(browser, tmp_path, shots):
    manifest = shapes_manifest(tmp_path / "data", n=6, k=3, critique=True, xss_first=True)
    pw = make_study(tmp_path, manifest, "pw", protocol="pairwise", raters=1, per_item=1,
                    dimensions=("overall", "instruction_alignment"))
    cq = make_study(tmp_path, manifest, "cq", protocol="critique", raters=1, per_item=1)
    with serve_in_thread(pw) as base:
        ctx, errors, dialogs = _context(browser)
        page = ctx.new_page()
        page.goto(f"{base}/invite/{pw.raters()[0][1]}")
        page.click("#continue")
        _ready(page)
        position = int(page.url.rsplit("/", 1)[1])
        page.keyboard.press("a")  # first question: A is better
        page.keyboard.press("t")  # second: tie
        shots(page, "pairwise")
        page.keyboard.press("Enter")
        assert "A is better" in page.inner_text("#confirm-summary")
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u: not u.endswith(f"/task/{position}"))
        got = {r["dimension"]: r["answer"] for r in pw.response_of("rater-01", pw.assignment("rater-01", position).item)}
        assert got == {"overall": "a>b", "instruction_alignment": "tie"}
        assert not errors and not dialogs
        ctx.close()
    with serve_in_thread(cq) as base:
        ctx, errors, dialogs = _context(browser)
        page = ctx.new_page()
        page.goto(f"{base}/invite/{cq.raters()[0][1]}")
        xss_pos = next(a.position for a in cq.assignments("rater-01")
                       if cq.item(a.item).data["samples"][0]["instruction"] == XSS)
        page.goto(f"{base}/study/task/{xss_pos}")
        _ready(page)
        assert page.inner_text("#instruction") == XSS  # shown as text
        assert page.evaluate("window.__xss") is None and not dialogs
        assert "The edit asked" in page.inner_text("#critique")
        shots(page, "critique")
        page.keyboard.press("3")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        # Enter on the focused Back button goes back; it once confirmed and sent the answer
        page.focus("#confirm-back")
        page.keyboard.press("Enter")
        assert page.locator("#confirm").is_hidden() and page.url.endswith(f"/task/{xss_pos}")
        assert cq.response_of("rater-01", cq.assignment("rater-01", xss_pos).item) == []
        page.keyboard.press("3")
        page.keyboard.press("Enter")
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u: not u.endswith(f"/task/{xss_pos}"))
        got = {r["dimension"]: r["value"] for r in cq.response_of("rater-01", cq.assignment("rater-01", xss_pos).item)}
        assert got == {"logicality": 3.0, "accuracy": 3.0, "usefulness": 3.2}
        assert not errors and not dialogs
        ctx.close()
