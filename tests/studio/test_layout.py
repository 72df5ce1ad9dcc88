"""The studio's pages on a phone (390x844, touch) and a desktop (1440x900), in headless
Chromium: layout facts (no horizontal scroll, slider and image sizes, Submit in view on
the desktop), a tap at 80 % / 30 % of a slider's track stores 80 % / 30 % of the scale,
a rank list reordered by touch (dragging the handle) and by its buttons, the zoom view
(source and edit side by side, one zoom for both).

Every page is photographed at both sizes into ``docs/howto/studio-screens/`` (the how-to
links them; ``$IEQA_STUDIO_SHOTS`` names another folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ieqa.data.shapesedit import ShapesEditConfig, generate

from .helpers import CHROMIUM, REPO, make_study, serve_in_thread

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: run "
                                "make setup (it runs apt-get install -y chromium), or install it yourself")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 1}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}
SHOTS = Path(os.environ.get("IEQA_STUDIO_SHOTS") or REPO / "docs" / "howto" / "studio-screens")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Edits of 320x240 photos (scikit-image's), 12 in groups of 3 and 8 in groups of 4."""
    folder = tmp_path_factory.mktemp("photos")
    three = generate(folder / "k3", ShapesEditConfig(n=12, k=3, seed=5, size=320, photo_fraction=1.0))
    four = generate(folder / "k4", ShapesEditConfig(n=8, k=4, seed=6, size=320, photo_fraction=1.0))
    return three, four


def _until(page, expression: str, timeout_s: float = 15.0) -> None:
    """Poll ``expression`` (JavaScript) until it is true. Not ``page.wait_for_function``:
    its polling evaluates the predicate with ``eval``, which the studio's
    Content-Security-Policy (no 'unsafe-eval') refuses once the first check is false."""
    import time

    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout_s} s: {expression}")
        time.sleep(0.05)


def _open(browser, base: str, token: str, size: dict):
    ctx = browser.new_context(**size)
    ctx.set_default_timeout(15_000)
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    page = ctx.new_page()
    page.goto(f"{base}/invite/{token}")
    page.goto(f"{base}/study/next")
    page.wait_for_selector("body[data-ready]", state="attached")
    _until(page, "Array.from(document.images).every(i => i.complete)")
    return ctx, page, errors


def _shoot(page, name: str, phone: bool, tries: int = 3) -> None:
    """Write the page's screenshot for the docs. On a loaded machine headless Chromium now
    and then answers "Unable to capture screenshot" (seen under a full suite beside other
    CPU-bound processes): the shot is tried ``tries`` times, a second apart, before the
    error stands."""
    import time

    from playwright.sync_api import Error as PlaywrightError

    SHOTS.mkdir(parents=True, exist_ok=True)
    for attempt in range(tries):
        try:
            page.screenshot(path=str(SHOTS / f"{name}-{'phone' if phone else 'desktop'}.jpg"),
                            type="jpeg", quality=70, full_page=phone)
            return
        except PlaywrightError as exc:
            if "Unable to capture screenshot" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(1.0)


def _layout(page) -> dict:
    return page.evaluate("""() => {
      const r = el => el ? el.getBoundingClientRect() : null;
      const imgs = Array.from(document.querySelectorAll('main figure.shot img')).map(i => r(i));
      return {width: innerWidth, height: innerHeight, scroll: document.documentElement.scrollWidth,
              tracks: Array.from(document.querySelectorAll('.slider-track')).map(t => r(t).width),
              imgs: imgs.map(b => [b.left, b.top, b.width, b.height]),
              send: [r(document.getElementById('send')).top, r(document.getElementById('send')).bottom]};
    }""")


def _common(lay: dict, phone: bool) -> None:
    assert lay["scroll"] <= lay["width"], f"horizontal scroll: {lay['scroll']} px in a {lay['width']} px viewport"
    if phone:
        for _, _, w, h in lay["imgs"]:
            assert w >= 0.85 * lay["width"] and h > 0, lay["imgs"]  # full width, its size reserved
    else:
        assert lay["send"][1] <= lay["height"], f"Submit below the fold: {lay['send']} in {lay['height']} px"


def _tap_slider(page, dim: str, share: float) -> float:
    page.locator(f"#dim__{dim}").scroll_into_view_if_needed()
    box = page.locator(f"#dim__{dim}").locator("xpath=..").bounding_box()  # the track
    page.touchscreen.tap(box["x"] + share * box["width"], box["y"] + box["height"] / 2)
    return float(page.input_value(f"#dim__{dim}"))


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_rate_and_critique_pages(browser, tmp_path, photos, phone):
    dims = ("visual_quality", "instruction_alignment", "content_preservation", "overall")
    study = make_study(tmp_path, photos[0], "rate", raters=1, per_item=1, dimensions=dims, title="Rate the edits")
    with serve_in_thread(study) as base:
        ctx, page, errors = _open(browser, base, study.raters()[0][1], PHONE if phone else DESKTOP)
        lay = _layout(page)
        _common(lay, phone)
        assert len(lay["tracks"]) == 4
        for w in lay["tracks"]:
            assert w >= (0.8 * lay["width"] if phone else 280), lay["tracks"]
        if not phone:  # source and edit side by side, large
            (l1, t1, w1, _), (l2, t2, w2, _) = lay["imgs"]
            assert abs(t1 - t2) < 2 and l2 > l1 + w1 - 1 and min(w1, w2) >= 400, lay["imgs"]
        _shoot(page, "rate", phone)
        if phone:
            # a vertical swipe that starts on a slider scrolls the page and sets nothing
            page.locator("#dim__content_preservation").scroll_into_view_if_needed()
            box = page.locator("#dim__content_preservation").locator("xpath=..").bounding_box()
            x, y = box["x"] + 0.85 * box["width"], box["y"] + box["height"] / 2
            cdp = ctx.new_cdp_session(page)
            cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
            for i in range(1, 8):
                cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - 25 * i}]})
            cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            assert page.input_value("#dim__content_preservation") == "3"
            assert page.evaluate("document.querySelector('input[name=moved]').value") == ""
            # a tap at 80 % of the track stores 80 % of the scale (1-5: 4.2), at 30 % 2.2
            assert _tap_slider(page, "overall", 0.8) == pytest.approx(4.2, abs=0.1)
            assert _tap_slider(page, "visual_quality", 0.3) == pytest.approx(2.2, abs=0.1)
            assert page.evaluate("document.querySelector('input[name=moved]').value").split(",") == [
                "overall", "visual_quality"]
            height = page.evaluate("document.getElementById('dim__overall').getBoundingClientRect().height")
            assert height >= 44  # the touch target
        else:
            # zoom: both images side by side, one zoom for both
            page.click("main figure.shot img >> nth=1")
            page.wait_for_selector("#zoom:not([hidden])")
            _until(page, "document.querySelectorAll('#zoom-panes img').length === 2 && "
                         "Array.from(document.querySelectorAll('#zoom-panes img')).every(i => i.style.transform)")
            page.click("#zoom-in")
            transforms = page.evaluate("Array.from(document.querySelectorAll('#zoom-panes img')).map(i => i.style.transform)")
            assert len(set(transforms)) == 1 and "scale" in transforms[0], transforms
            pane = page.locator(".zoom-pane >> nth=0").bounding_box()
            page.mouse.move(pane["x"] + 50, pane["y"] + 50)
            page.mouse.down()
            page.mouse.move(pane["x"] + 120, pane["y"] + 90, steps=4)
            page.mouse.up()
            moved = page.evaluate("Array.from(document.querySelectorAll('#zoom-panes img')).map(i => i.style.transform)")
            assert len(set(moved)) == 1 and moved != transforms
            _shoot(page, "rate-zoom", phone)
            page.keyboard.press("Escape")
            assert page.locator("#zoom").is_hidden()
        assert not errors
        ctx.close()
    manifest = Path(photos[0]).parent / "critique.jsonl"
    if not manifest.exists():
        from ieqa.data.manifest import read_manifest, write_manifest

        write_manifest([s.model_copy(update={"meta": {**s.meta, "critique": (
            f"The instruction asked: {s.instruction}. The result keeps the scene but the change is only "
            "partly visible; the edges of the new object are soft.")}}) for s in read_manifest(photos[0])],
            manifest)
    cq = make_study(tmp_path, manifest, "cq", protocol="critique", raters=1, per_item=1, title="Rate the critiques")
    with serve_in_thread(cq) as base:
        ctx, page, errors = _open(browser, base, cq.raters()[0][1], PHONE if phone else DESKTOP)
        lay = _layout(page)
        _common(lay, phone)
        if phone:
            assert all(w >= 0.8 * lay["width"] for w in lay["tracks"])
            assert _tap_slider(page, "accuracy", 0.8) == pytest.approx(4.2, abs=0.1)
        _shoot(page, "critique", phone)
        assert not errors
        ctx.close()


def _order(page) -> list[str]:
    return page.evaluate("Array.from(document.querySelectorAll('#rank__overall .rank-item')).map(li => li.dataset.slot)")


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_rank_page(browser, tmp_path, photos, phone):
    study = make_study(tmp_path, photos[1], "rank", protocol="rank", raters=1, per_item=1, title="Rank the edits")
    rater, token = study.raters()[0]
    with serve_in_thread(study) as base:
        ctx, page, errors = _open(browser, base, token, PHONE if phone else DESKTOP)
        lay = _layout(page)
        _common(lay, phone)
        cards = page.evaluate("Array.from(document.querySelectorAll('.rank-item')).map(li => "
                              "{const b = li.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]})")
        assert len(cards) == 4
        if phone:  # one column, each card as wide as the screen allows
            assert len({round(c[0]) for c in cards}) == 1 and all(c[2] >= 0.9 * lay["width"] for c in cards), cards
            assert all(b[1] < a[1] for a, b in zip(cards[1:], cards[:-1], strict=True))
        else:  # side by side, all four in view with their images, best on the left
            assert len({round(c[1]) for c in cards}) == 1, cards
            assert all(c[0] + c[2] <= lay["width"] and c[1] + c[3] <= lay["height"] for c in cards), cards
            assert min(c[2] for c in cards) >= 220, cards
        _shoot(page, "rank", phone)
        before = _order(page)
        if phone:
            # the buttons, tapped: card 3 up
            page.locator("#rank__overall .rank-item:nth-child(3) button.up").tap()
            before = [before[0], before[2], before[1], before[3]]
            assert _order(page) == before
            # touch: scroll until card 2's handle is low on the screen with card 1 above it, then
            # drag card 2 by its handle above card 1's middle
            page.evaluate("window.scrollBy(0, document.querySelector('#rank__overall .rank-item:nth-child(2)')"
                          ".getBoundingClientRect().top - 600)")
            handle = page.locator("#rank__overall .rank-item:nth-child(2) .handle").bounding_box()
            first = page.locator("#rank__overall .rank-item:nth-child(1)").bounding_box()
            assert first["y"] + first["height"] / 2 > 40, first  # in view
            cdp = ctx.new_cdp_session(page)
            x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
            cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
            target = first["y"] + first["height"] / 2 - 40
            for i in range(1, 9):
                cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
                    {"x": x, "y": y + (target - y) * i / 8}]})
            cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            after = _order(page)
            assert after == [before[1], before[0], *before[2:]], (before, after)
            # headless Chromium's emulated touch swallows the first tap after a synthetic
            # (CDP) drag, whatever the page does: a tap on the instruction absorbs it
            page.locator("#instruction").tap()
        else:
            page.drag_and_drop("#rank__overall .rank-item:nth-child(4)", "#rank__overall .rank-item:nth-child(1)",
                               target_position={"x": 10, "y": 40})
            after = _order(page)
            assert after == [before[3], *before[:3]], (before, after)
            page.click("#rank__overall .rank-item:nth-child(1) button.down")
            after = [after[1], after[0], *after[2:]]
        assert _order(page) == after and page.input_value("#dim__overall") == ",".join(after)
        if phone:
            page.locator("#send").tap()
            page.locator("#confirm-ok").tap()
        else:
            page.click("#send")
            page.click("#confirm-ok")
        page.wait_for_url(lambda u: "/task/0" not in u)
        import json

        key = study.assignment(rater, 0).item
        assert json.loads(study.response_of(rater, key)[0]["answer"]) == after
        assert study.untouched_of(rater, key) == {"overall": False}
        assert not errors
        ctx.close()


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_pairwise_page(browser, tmp_path, photos, phone):
    study = make_study(tmp_path, photos[0], "pw", protocol="pairwise", raters=1, per_item=1,
                       dimensions=("overall", "instruction_alignment"), title="Compare the edits")
    rater, token = study.raters()[0]
    with serve_in_thread(study) as base:
        ctx, page, errors = _open(browser, base, token, PHONE if phone else DESKTOP)
        lay = _layout(page)
        _common(lay, phone)
        assert len(lay["imgs"]) == 3
        _shoot(page, "pairwise", phone)
        choose = page.locator("fieldset.verdict >> nth=0").locator("label.choice >> nth=1")
        if phone:
            choose.tap()
            page.locator("fieldset.verdict >> nth=1").locator("label.choice >> nth=2").tap()
            page.locator("#send").tap()
            _shoot(page, "pairwise-confirm", phone)
            page.locator("#confirm-ok").tap()
        else:
            choose.click()
            page.locator("fieldset.verdict >> nth=1").locator("label.choice >> nth=2").click()
            page.click("#send")
            page.click("#confirm-ok")
        page.wait_for_url(lambda u: "/task/0" not in u)
        got = {r["dimension"]: r["answer"] for r in study.response_of(rater, study.assignment(rater, 0).item)}
        assert got == {"overall": "b>a", "instruction_alignment": "tie"}
        assert not errors
        ctx.close()


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_every_other_page_fits(browser, tmp_path, photos, phone):
    # home, guidelines, training feedback (with its images), the guidelines over a task,
    # "cannot judge", "already saved", the invite switch and the admin page: no
    # horizontal scroll at either size
    guide = tmp_path / "guidelines.md"
    (tmp_path / "example.png").write_bytes((Path(photos[0]).parent / "images").glob("*.png").__next__().read_bytes())
    guide.write_text("# How to rate\n\n1. Read the instruction.\n2. Compare the **edit region** with the source.\n\n"
                     "![an example](example.png)\n\n| score | meaning |\n|---|---|\n| 5 | perfect |\n| 1 | useless |\n")
    study = make_study(tmp_path, photos[0], "pages", raters=2, per_item=1, training=1, gold_from="scores",
                       dimensions=("overall", "visual_quality"), guidelines=guide, title="A study with guidelines")
    (r1, t1), (_, t2) = study.raters()
    size = PHONE if phone else DESKTOP

    def fits(page, name: str) -> None:
        _until(page, "Array.from(document.images).every(i => i.complete)")
        width = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        assert width[0] <= width[1], (name, width)
        _shoot(page, name, phone)

    with serve_in_thread(study) as base:
        ctx = browser.new_context(**size)
        ctx.set_default_timeout(15_000)
        errors: list[str] = []
        ctx.on("weberror", lambda e: errors.append(str(e.error)))
        page = ctx.new_page()
        page.goto(f"{base}/invite/{t1}")
        fits(page, "home")
        page.click("#continue")
        page.wait_for_url("**/guidelines?first=1")
        fits(page, "guidelines")
        page.click("#continue")
        page.wait_for_selector("body[data-ready]", state="attached")
        page.keyboard.press("g")
        assert page.locator("#guide").is_visible() and "How to rate" in page.inner_text("#guide")
        fits(page, "task-guidelines")
        page.keyboard.press("Escape")
        page.click("#skip summary")
        fits(page, "cannot-judge")
        page.fill("#dim__overall", "4")
        page.click("#send")
        page.click("#confirm-ok")
        page.wait_for_url("**/feedback")
        assert page.locator("#feedback-images img").count() == 2
        fits(page, "training-feedback")
        page.goto(f"{base}/study/task/0")
        assert "Already saved" in page.inner_text("h1")
        fits(page, "already-saved")
        page.goto(f"{base}/invite/{t2}")
        assert "Switch rater?" in page.inner_text("h1")
        fits(page, "switch-rater")
        page.goto(f"{base}/admin/login?token={study.meta()['admin_token']}")
        fits(page, "admin")
        assert not errors
        ctx.close()
