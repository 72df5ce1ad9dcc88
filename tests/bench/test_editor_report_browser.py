"""An editor benchmark's report.html in headless Chromium (Debian's ``chromium`` through
Playwright) at phone and desktop sizes: the widest table (KRIS-Bench's 16 columns)
scrolls inside its own box, never the page, and the text is the result's."""

from __future__ import annotations

import os
import shutil

import pytest

from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, write_editor_outputs
from ieqa.testing.editor_bench import build_kris_fixture, kris_fixture_items, write_kris_outputs

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")
                 if os.path.exists(p)), shutil.which("chromium"))
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: "
                                "run make setup (it runs apt-get install -y chromium)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not "
                                     "installed (pip install -e '.[dev]')")


def test_the_report_fits_a_phone_and_a_desktop(tmp_path):
    items = kris_fixture_items()
    build_kris_fixture(tmp_path / "kris", items)
    outputs = write_kris_outputs(tmp_path / "editor", items, skip=(5,))
    result = bench_editor("kris-bench", {"a-rather-long-editor-name": outputs},
                          create_scorer("classic"), tmp_path / "out", data=tmp_path / "kris",
                          languages=["en"], progress=False, missing="skip", n_boot=20)
    report = write_editor_outputs(result, tmp_path / "out")["report"]
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox",
                                                                    "--disable-gpu"])
        try:
            for width, mobile in ((375, True), (1280, False)):
                ctx = browser.new_context(viewport={"width": width, "height": 800},
                                          is_mobile=mobile, device_scale_factor=2 if mobile
                                          else 1)
                page = ctx.new_page()
                page.goto(report.as_uri())
                page_width = page.evaluate("document.documentElement.scrollWidth")
                assert page_width <= width, (width, page_width)  # the page never scrolls sideways
                wide = page.evaluate("""Array.from(document.querySelectorAll('.table-wrap'))
                    .map(w => [w.scrollWidth > w.clientWidth,
                               getComputedStyle(w).overflowX])""")
                assert wide and all(ov == "auto" for _, ov in wide)
                if mobile:
                    assert any(overflows for overflows, _ in wide)  # it scrolls in its box
                text = page.inner_text("body")
                assert "6 of 7 items (1 without an output)" in text
                assert "ieqa: ieqa:" not in text
                ctx.close()
        finally:
            browser.close()
