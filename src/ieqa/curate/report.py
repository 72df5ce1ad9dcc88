"""The reports of ``ieqa curate`` and ``ieqa dpo-pairs`` (JSON + standalone HTML).

Figures need matplotlib (the ``plot`` extra); without it the HTML report keeps its tables
and gallery and says that figures were left out. Thumbnails are embedded in the HTML as
JPEG data URIs, so the report is one file that opens offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ieqa.errors import IeqaError
from ieqa.report import GalleryItem, HtmlReport, histogram_chart, thumbnail, write_json

if TYPE_CHECKING:
    from ieqa.curate.columns import Columns, KeepRule
    from ieqa.curate.source import ScoredRow, ScoredSource
    from ieqa.rewards.rule import RewardRule

__all__ = ["gallery_rows", "summary_stats", "write_curate_report"]

_BINS = 20


def summary_stats(values: np.ndarray, edges: np.ndarray | None = None) -> dict[str, Any]:
    """``n``, ``mean``, ``std``, ``min``, ``max`` of the finite values (None when there
    are none) and, with ``edges``, the ``histogram`` counts on those bin edges."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    out: dict[str, Any] = {"n": int(v.size)}
    for key, fn in (("mean", np.mean), ("std", np.std), ("min", np.min), ("max", np.max)):
        out[key] = float(fn(v)) if v.size else None
    if edges is not None:
        out["histogram"] = np.histogram(v, bins=edges)[0].tolist()
    return out


def _edges(values: np.ndarray) -> np.ndarray:
    v = values[np.isfinite(values)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    return np.linspace(lo, hi if hi > lo else lo + 1.0, _BINS + 1)


def gallery_rows(cols: Columns, kept: np.ndarray, k: int) -> dict[str, list[int]]:
    """Row positions of the ``k`` best and worst kept rows and of the ``k`` best and
    worst rows left out that have a reward (ordered by reward, then sigma, then file
    position; the gallery only illustrates)."""
    if k <= 0:
        return {}
    reward = np.frombuffer(cols.reward, dtype=np.float64)
    sigma = np.frombuffer(cols.sigma, dtype=np.float64)
    scored = np.isfinite(reward)
    out: dict[str, list[int]] = {}
    for name, mask in (("kept", kept & scored), ("dropped", ~kept & scored)):
        idx = np.flatnonzero(mask)
        order = idx[np.lexsort((idx, sigma[idx], -reward[idx]))]
        out[f"best {name}"] = order[:k].tolist()
        out[f"worst {name}"] = order[::-1][:k].tolist() if order.size > k else []
    return out


def _counts(cols: Columns, kind: str, kept: np.ndarray, eligible: np.ndarray) -> list[dict[str, Any]]:
    codes = np.frombuffer(getattr(cols, kind), dtype=np.int32)
    names = cols.names(kind)
    m = len(names)
    rows = np.bincount(codes, minlength=m)
    elig = np.bincount(codes[eligible], minlength=m)
    keep = np.bincount(codes[kept], minlength=m)
    return [{kind: names[i], "rows": int(rows[i]), "eligible": int(elig[i]), "kept": int(keep[i]),
             "kept_share": float(keep[i] / elig[i]) if elig[i] else None} for i in range(m)]


def _card(row: ScoredRow) -> GalleryItem:
    f = row.fields
    lines = [f"reward {row.reward.reward:.3f}" if row.reward.reward is not None else "no reward"]
    lines += [f"{d} {v:.3f}" for d, v in sorted(row.result.scores.items())]
    lines.append(" / ".join(str(x) for x in (f.get("task"), f.get("editor")) if x))
    if row.result.flags:
        lines.append("flags: " + ", ".join(row.result.flags))
    if f.get("instruction"):
        lines.append(str(f["instruction"])[:120])
    images = [("source", thumbnail(f["source"]) if f.get("source") else None),
              ("edited", thumbnail(f["edited"]) if f.get("edited") else None)]
    return GalleryItem(title=row.id, images=images, lines=lines)


def write_curate_report(
    out_dir: Path, *, source: ScoredSource, rule: RewardRule, keep: KeepRule, per: str | None,
    quota: int | None, max_sigma: float | None, drop_flagged: bool, cols: Columns,
    kept: np.ndarray, cuts: dict[str, Any], dropped: dict[str, int],
    gallery: dict[str, list[ScoredRow]], manifest: Path, images: str,
) -> tuple[Path, Path, dict[str, Any]]:
    """``report.json`` and ``report.html`` of a :func:`~ieqa.curate.select.curate` run."""
    reward = np.frombuffer(cols.reward, dtype=np.float64)
    status = np.frombuffer(cols.status, dtype=np.int8)
    eligible = status == 0
    scored = np.isfinite(reward)
    series = {"reward": reward, **{d: np.frombuffer(c, dtype=np.float32).astype(np.float64)
                                   for d, c in cols.dims.items()}}
    distributions = {}
    for name, values in series.items():
        edges = _edges(values[scored])
        distributions[name] = {"bin_edges": edges.tolist(),
                               "before": summary_stats(values[scored], edges),
                               "kept": summary_stats(values[kept], edges)}
    n = int(reward.size)
    report: dict[str, Any] = {
        "input": str(source.path), "input_kind": source.kind, "manifest": str(manifest),
        "images": images, "rule": rule.describe(), "keep": str(keep), "per": per, "quota": quota,
        "max_sigma": max_sigma, "drop_flagged": drop_flagged,
        "counts": {"rows": n, "kept": int(kept.sum()), "errors": dropped["error"],
                   "dropped_flagged": dropped["flagged"], "dropped_sigma": dropped["sigma"],
                   "eligible": int(eligible.sum()), "not_selected": int((eligible & ~kept).sum()),
                   **({"other_scorer_rows": source.n_other} if source.scorer else {})},
        **({"scorer": source.scorer} if source.scorer else {}),
        "cuts": cuts,
        "by_task": _counts(cols, "task", kept, eligible),
        "by_editor": _counts(cols, "editor", kept, eligible),
        "distributions": distributions,
        "gallery": {k: [r.id for r in v] for k, v in gallery.items()},
    }
    json_path = write_json(out_dir / "report.json", report)

    html = HtmlReport(f"Curated subset: {report['counts']['kept']} of {n} edits")
    html.add_paragraph(f"Input {source.path} ({source.kind}); kept {keep}"
                       f"{f' per {per}' if per else ''}{f', at most {quota} each' if quota else ''} "
                       f"by the reward {rule.formula()}; manifest {manifest.name} (images {images})."
                       + (f" Only the rows of scorer {source.scorer} were read; {source.n_other} "
                          "rows of other scorers were left out." if source.scorer else ""))
    c = report["counts"]
    html.add_table([[c["rows"], c["errors"], c["dropped_flagged"], c["dropped_sigma"], c["eligible"],
                     c["kept"]]], ["rows", "errors (never kept)", "dropped: flagged",
                                   "dropped: sigma", "eligible", "kept"])
    html.add_heading("Thresholds")
    html.add_table([{"partition": k, **v} for k, v in cuts.items()],
                   ["partition", "eligible", "threshold", "kept", "lowest_kept_reward"])
    for kind in ("task", "editor"):
        html.add_heading(f"Counts per {kind}")
        html.add_table(report[f"by_{kind}"], [kind, "rows", "eligible", "kept", "kept_share"])
    html.add_heading("Score distributions")
    html.add_table([{"score": k, "n before": v["before"]["n"], "mean before": v["before"]["mean"],
                     "n kept": v["kept"]["n"], "mean kept": v["kept"]["mean"]}
                    for k, v in distributions.items()],
                   ["score", "n before", "mean before", "n kept", "mean kept"])
    try:
        for name, values in series.items():
            html.add_figure(histogram_chart({"scored": values[scored], "kept": values[kept]},
                                            name, xlabel=name),
                            f"{name}: every scored edit and the kept ones")
    except IeqaError as exc:  # matplotlib missing: tables and gallery stay
        html.add_paragraph(f"No figures: {exc}")
    for title, rows in gallery.items():
        if rows:
            html.add_heading(f"Gallery: {title}", 3)
            html.add_gallery([_card(r) for r in rows])
    html_path = html.save(out_dir / "report.html")
    return html_path, json_path, report
