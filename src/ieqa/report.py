"""Standalone HTML reports, plots and small JSON/CSV writers for ``ieqa`` commands.

:class:`HtmlReport` collects headings, paragraphs, tables and figures and writes one
self-contained HTML file: inline CSS, figures embedded as base64 PNG, no JavaScript
and no external URL, so it opens offline and can be mailed as is.

The plot helpers return :class:`matplotlib.figure.Figure` objects drawn on the Agg
canvas (no pyplot state, no display needed). matplotlib is the ``plot`` extra: it is
imported on first use, and :class:`~ieqa.errors.IeqaError` says how to install it when
missing.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ieqa.errors import IeqaError
from ieqa.metrics import MetricInputError, plcc, srcc

__all__ = ["GalleryItem", "HtmlReport", "bar_chart", "histogram_chart", "scatter_plot", "thumbnail",
           "write_csv", "write_json"]

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto;
       max-width: 72em; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2, h3 { margin-top: 1.6em; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 1em 0; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #555; }
.gallery { display: flex; flex-wrap: wrap; gap: .8em; margin: 1em 0; }
.card { border: 1px solid #ccc; padding: .4em; font-size: .8em; max-width: 18em; }
.card img { height: 8em; margin-right: .2em; }
.card .missing { display: inline-block; height: 8em; width: 8em; background: #eee; color: #888; }
footer { margin-top: 3em; font-size: .8em; color: #888; }
"""


def new_figure(figsize: tuple[float, float]):
    """A matplotlib ``Figure`` on an Agg canvas, or a clear error when matplotlib is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise IeqaError('plots need matplotlib: pip install "ieqa[plot]"') from None
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _fmt(value: Any, float_format: str) -> tuple[str, bool]:
    """Cell text and whether it is numeric (right-aligned)."""
    if value is None:
        return "", False
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)), False
    if isinstance(value, (int, np.integer)):
        return str(int(value)), True
    if isinstance(value, (float, np.floating)):
        return ("–" if math.isnan(value) else float_format.format(float(value))), True
    return str(value), False


@dataclass
class GalleryItem:
    """One card of :meth:`HtmlReport.add_gallery`: ``images`` are ``(label, bytes or
    None)``, ``lines`` short texts under the title."""

    title: str
    images: list[tuple[str, bytes | None]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def thumbnail(ref: Any, size: int = 160, quality: int = 80) -> bytes | None:
    """A JPEG thumbnail (longest side ``size`` pixels) of an image path or in-memory
    image, or ``None`` when it cannot be read (a report never fails on one image)."""
    from ieqa.data.images import load_image
    from ieqa.errors import ImageLoadError

    try:
        img = load_image(ref)
    except (ImageLoadError, TypeError, ValueError):
        return None
    img.thumbnail((size, size))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


class HtmlReport:
    """A standalone HTML document built piece by piece.

    Examples:
        >>> r = HtmlReport("Editor leaderboard")
        >>> r.add_table([{"editor": "a", "overall": 4.2}], ["editor", "overall"])
        >>> path = r.save("report.html")
        >>> '<td class="num">4.200</td>' in path.read_text(encoding="utf-8")
        True
    """

    def __init__(self, title: str) -> None:
        self.title = title
        self._parts: list[str] = []

    def add_heading(self, text: str, level: int = 2) -> None:
        """A section heading; ``level`` 1..6 (the title is level 1)."""
        if not 1 <= level <= 6:
            raise ValueError(f"level must be in 1..6, got {level}")
        self._parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def add_paragraph(self, text: str) -> None:
        """A paragraph of plain text (escaped)."""
        self._parts.append(f"<p>{html.escape(text)}</p>")

    def add_table(
        self,
        rows: Sequence[Mapping[str, Any] | Sequence[Any]],
        columns: Sequence[str],
        *,
        float_format: str = "{:.3f}",
        caption: str | None = None,
    ) -> None:
        """A table: ``rows`` are mappings (read by column name; missing keys blank) or
        sequences in ``columns`` order. Floats use ``float_format``, NaN shows as "–";
        every cell is HTML-escaped."""
        out = ['<div class="table-wrap"><table>']
        if caption:
            out.append(f"<caption>{html.escape(caption)}</caption>")
        out.append("<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in columns) + "</tr>")
        for row in rows:
            values = [row.get(c) for c in columns] if isinstance(row, Mapping) else list(row)
            if len(values) != len(columns):
                raise ValueError(f"a table row has {len(values)} cells for {len(columns)} columns")
            cells = []
            for v in values:
                text, numeric = _fmt(v, float_format)
                cls = ' class="num"' if numeric else ""
                cells.append(f"<td{cls}>{html.escape(text)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table></div>")
        self._parts.append("\n".join(out))

    def add_figure(self, figure: Any, caption: str = "", *, dpi: int = 110) -> None:
        """A figure: a matplotlib ``Figure`` (rendered to PNG at ``dpi``) or PNG bytes,
        embedded as a base64 data URI."""
        if isinstance(figure, (bytes, bytearray)):
            png = bytes(figure)
            if not png.startswith(_PNG_MAGIC):
                raise ValueError("add_figure takes PNG bytes (or a matplotlib Figure)")
        elif hasattr(figure, "savefig"):
            buf = io.BytesIO()
            figure.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
            png = buf.getvalue()
        else:
            raise TypeError(f"add_figure takes a matplotlib Figure or PNG bytes, got {type(figure).__name__}")
        data = base64.b64encode(png).decode("ascii")
        alt = html.escape(caption or "figure", quote=True)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self._parts.append(f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">{cap}</figure>')

    def add_gallery(self, items: Sequence[GalleryItem], caption: str = "") -> None:
        """A row of cards, each with its images (JPEG/PNG bytes from :func:`thumbnail`,
        embedded as data URIs; ``None`` draws a grey box for an image that could not be
        read), a title and lines of text (all escaped)."""
        cards = []
        for item in items:
            imgs = []
            for label, data in item.images:
                alt = html.escape(label, quote=True)
                if data is None:
                    imgs.append(f'<span class="missing" title="{alt}">{alt}: not readable</span>')
                else:
                    mime = "image/png" if data.startswith(_PNG_MAGIC) else "image/jpeg"
                    b64 = base64.b64encode(data).decode("ascii")
                    imgs.append(f'<img alt="{alt}" title="{alt}" src="data:{mime};base64,{b64}">')
            lines = "".join(f"<br>{html.escape(t)}" for t in item.lines)
            cards.append(f'<div class="card">{"".join(imgs)}<br><b>{html.escape(item.title)}</b>{lines}</div>')
        cap = f"<p>{html.escape(caption)}</p>" if caption else ""
        self._parts.append(f'{cap}<div class="gallery">{"".join(cards)}</div>')

    def render(self) -> str:
        """The whole document as a string."""
        from ieqa.version import __version__

        title = html.escape(self.title)
        body = "\n".join(self._parts)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<h1>{title}</h1>\n{body}\n<footer>written by ieqa {html.escape(__version__)}</footer>\n"
            "</body>\n</html>\n"
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the document (UTF-8), creating parent folders; returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.render(), encoding="utf-8")
        return p


# --------------------------------------------------------------------------- plots


def _stat_title(title: str, pred: np.ndarray, target: np.ndarray) -> str:
    try:
        stats = f"SRCC={srcc(pred, target):.3f}  PLCC={plcc(pred, target):.3f}"
    except MetricInputError:
        return title
    return f"{title}\n{stats}" if title else stats


def scatter_plot(
    pred: Sequence[float] | np.ndarray,
    target: Sequence[float] | np.ndarray,
    title: str = "",
    xlabel: str = "predicted",
    ylabel: str = "human",
    *,
    colors: Sequence[Any] | None = None,
    labels: Sequence[str] | None = None,
):
    """Predicted (x) vs human (y) scores; the title gets SRCC and raw PLCC (no logistic
    fit) when they are defined. ``colors``: one matplotlib colour per point; ``labels``:
    text written next to each point (e.g. editor names). Returns a ``Figure``."""
    x = np.asarray(pred, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"pred and target must be 1-D of equal length, got {x.shape} and {y.shape}")
    fig = new_figure((5.5, 4.5))
    ax = fig.add_subplot()
    ax.scatter(x, y, c=None if colors is None else list(colors), s=28 if len(x) < 200 else 6,
               alpha=0.85 if len(x) < 200 else 0.4, edgecolors="none")
    if labels is not None:
        for xi, yi, text in zip(x, y, labels, strict=True):
            ax.annotate(str(text), (xi, yi), xytext=(4, 3), textcoords="offset points", fontsize=8)
    ax.set_title(_stat_title(title, x, y), fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def bar_chart(
    names: Sequence[str],
    values: Sequence[float] | np.ndarray,
    errors: Sequence[float] | np.ndarray | None = None,
    title: str = "",
    *,
    ylabel: str = "",
):
    """Vertical bars, one per name, with optional error bars: ``errors`` is (n,) for
    symmetric half-widths or (2, n) for (below, above) distances, like matplotlib's
    ``yerr``; NaN errors draw no bar. Returns a ``Figure``."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (len(names),):
        raise ValueError(f"values must have one entry per name ({len(names)}), got shape {v.shape}")
    yerr = None
    if errors is not None:
        yerr = np.nan_to_num(np.asarray(errors, dtype=np.float64), nan=0.0)
        if yerr.shape not in ((len(names),), (2, len(names))):
            raise ValueError(f"errors must have shape ({len(names)},) or (2, {len(names)}), got {yerr.shape}")
    fig = new_figure((max(4.0, 0.55 * len(names) + 1.5), 4.0))
    ax = fig.add_subplot()
    ax.bar(range(len(names)), v, yerr=yerr, capsize=3, color="#4c72b0")
    ax.set_xticks(range(len(names)), [str(n) for n in names], rotation=45 if len(names) > 6 else 0,
                  ha="right" if len(names) > 6 else "center")
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def histogram_chart(
    series: Mapping[str, Sequence[float] | np.ndarray],
    title: str = "",
    *,
    xlabel: str = "",
    bins: int = 30,
):
    """Overlaid step histograms of several series (e.g. ``{"all": ..., "kept": ...}``)
    on shared bins spanning every finite value; NaNs are left out. Returns a ``Figure``."""
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in series.items()}
    arrays = {k: v[np.isfinite(v)] for k, v in arrays.items()}
    finite = [v for v in arrays.values() if v.size]
    lo = min((float(v.min()) for v in finite), default=0.0)
    hi = max((float(v.max()) for v in finite), default=1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    fig = new_figure((5.5, 3.6))
    ax = fig.add_subplot()
    for name, v in arrays.items():
        ax.hist(v, bins=edges, histtype="step", linewidth=1.6, label=f"{name} (n={v.size})")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("edits")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- writers


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented, strict JSON (numpy scalars/arrays converted, NaN and
    infinities as ``null``), creating parent folders; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return p


def write_csv(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Path:
    """Write ``rows`` (mappings) as CSV with the header ``columns``; missing keys and
    None/NaN become empty cells, floats keep full precision (``repr``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_cell(row.get(c)) for c in columns])
    return p


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else repr(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value
