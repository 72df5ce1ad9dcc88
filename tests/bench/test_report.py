from __future__ import annotations

import base64
import csv
import io
import json
import re
import sys

import numpy as np
import pytest

from ieqa.bench import HtmlReport, bar_chart, scatter_plot, write_csv, write_json
from ieqa.errors import IeqaError

pytest.importorskip("matplotlib")

_DATA_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _png_bytes() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buf, format="PNG")
    return buf.getvalue()


def test_report_is_standalone_and_escaped(tmp_path):
    r = HtmlReport("Leaderboard <test>")
    r.add_heading("Results & more")
    r.add_paragraph("a < b")
    r.add_table([{"editor": "<b>x</b>", "overall": 4.25, "n": 3}, ["y", float("nan"), 2]],
                ["editor", "overall", "n"], float_format="{:.2f}")
    r.add_figure(_png_bytes(), "raw png")
    r.add_figure(bar_chart(["a", "b"], [2.0, 3.0], [0.1, 0.2], "scores"), "bars")
    path = r.save(tmp_path / "sub" / "report.html")
    text = path.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    assert "Leaderboard &lt;test&gt;" in text and "Results &amp; more" in text
    assert '<td class="num">4.25</td>' in text and "<td>y</td>" in text and "–" in text
    images = _DATA_PNG.findall(text)
    assert len(images) == 2
    assert all(base64.b64decode(b).startswith(b"\x89PNG") for b in images)


def test_add_figure_and_table_reject_bad_input():
    r = HtmlReport("t")
    with pytest.raises(ValueError, match="PNG"):
        r.add_figure(b"GIF89a...")
    with pytest.raises(TypeError, match="Figure or PNG"):
        r.add_figure("plot.png")
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        r.add_table([[1, 2]], ["a", "b", "c"])
    with pytest.raises(ValueError, match="level"):
        r.add_heading("x", 7)


def test_plot_helpers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    fig = scatter_plot(x, x + rng.normal(0, 0.5, 50), "demo", colors=["red"] * 50)
    assert "SRCC=" in fig.axes[0].get_title() and "PLCC=" in fig.axes[0].get_title()
    fig = scatter_plot([1.0, 1.0], [1.0, 2.0], "constant", labels=["a", "b"])
    assert fig.axes[0].get_title() == "constant"  # undefined correlation: no numbers
    fig = bar_chart(list("abcdefgh"), np.arange(8.0), np.vstack([np.ones(8), np.full(8, np.nan)]))
    assert len(fig.axes[0].patches) == 8
    with pytest.raises(ValueError, match="one entry per name"):
        bar_chart(["a"], [1.0, 2.0])
    with pytest.raises(ValueError, match="errors must have shape"):
        bar_chart(["a", "b"], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="equal length"):
        scatter_plot([1.0, 2.0], [1.0])


def test_missing_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(IeqaError, match=r'pip install "ieqa\[plot\]"'):
        bar_chart(["a"], [1.0])


def test_write_json_and_csv(tmp_path):
    p = write_json(tmp_path / "o" / "x.json", {"a": np.float32(1.5), "b": [np.int64(2), float("nan")],
                                               "c": np.arange(2), "d": np.bool_(True)})
    assert json.loads(p.read_text()) == {"a": 1.5, "b": [2, None], "c": [0, 1], "d": True}
    p = write_csv(tmp_path / "x.csv", [{"a": 0.1, "b": None}, {"a": float("nan"), "b": "q,r"}], ["a", "b"])
    assert list(csv.reader(p.open())) == [["a", "b"], ["0.1", ""], ["", "q,r"]]
