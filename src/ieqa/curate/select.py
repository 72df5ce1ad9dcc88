"""``ieqa curate``: keep the best-scored edits of a score file or manifest.

:func:`curate` reads the input twice, streaming (:class:`~ieqa.curate.source.ScoredSource`):

1. **Pass 1** computes each row's reward under the :class:`~ieqa.rewards.rule.RewardRule`
   and stores only numbers per row — reward and sigma (float64), status (int8), task,
   editor and partition codes (int32) and each dimension score (float32): about
   ``29 + 4·D`` bytes per row (``D`` dimensions), ~45 MB for a million rows with four
   dimensions. No row object is held.
2. The kept set is decided on those arrays (exactly; no sketch): ``top-k=N`` sorts by the
   documented order (:func:`~ieqa.curate.source.order_key`: reward high first, then sigma
   low first, then id ascending), ``threshold=X`` keeps ``reward >= X``, ``quantile=Q``
   keeps ``reward >=`` the ``Q``-quantile of the eligible rewards (numpy's default linear
   interpolation), within each ``--per`` partition when one is given; ``--quota N`` then
   keeps at most the best ``N`` per partition. Where the cut falls inside rows of equal
   reward and sigma, the ids of just those tied rows are read (the id column only, for a
   Parquet score file) to apply the id order.
3. **Pass 2** decodes only the kept rows (and the few gallery rows) and writes them, in
   file order, to the kept manifest; with ``images="copy"`` or ``"link"`` their images
   are copied or symlinked into the output folder.

Eligibility: a row whose scoring failed (``error``), or whose scores the rule cannot
combine, is never kept and is counted as an error; with ``drop_flagged`` a row with a
degenerate-output flag is dropped; with ``max_sigma`` a row whose reward sigma is above
it — or unknown — is dropped.

Outputs in the folder ``out``: ``manifest.jsonl`` (or ``.parquet``; the kept edits, each
with ``meta.reward``), ``report.json`` and ``report.html`` (counts before/after per task
and editor, the thresholds used, score distributions before and after, a gallery of the
best and worst kept and dropped edits with thumbnails embedded).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ieqa.curate.columns import Columns, KeepRule
from ieqa.curate.source import CurateError, ScoredRow, ScoredSource
from ieqa.data.manifest import ManifestWriter
from ieqa.progress import progress_bar
from ieqa.rewards.rule import RewardRule

__all__ = ["CurateResult", "KeepRule", "copy_images", "curate", "top_by_order"]

_OK, _ERROR, _FLAGGED, _SIGMA = 0, 1, 2, 3
_STATUS = {_ERROR: "error", _FLAGGED: "flagged", _SIGMA: "sigma"}
Images = Literal["as-is", "copy", "link"]


@dataclass
class CurateResult:
    """What :func:`curate` did.

    Attributes:
        manifest: the kept manifest.
        report_html, report_json: the report files.
        n_rows: rows in the input.
        n_kept: rows kept.
        dropped: rows left out before selection, by reason: ``error`` (failed to score
            or the rule could not combine its scores), ``flagged`` (with
            ``drop_flagged``), ``sigma`` (above ``max_sigma`` or unknown).
        cuts: per partition (``"all"`` without ``per``), the reward of the last kept row
            and, for ``quantile``, the quantile threshold.
        kept_ids: the ids of the kept rows, in file order (``None`` when more than
            100,000 rows were kept, to bound memory).
        report: the JSON report as a dict.
    """

    manifest: Path
    report_html: Path
    report_json: Path
    n_rows: int
    n_kept: int
    dropped: dict[str, int]
    cuts: dict[str, dict[str, float | None]]
    kept_ids: list[str] | None
    report: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- selection


def top_by_order(reward: np.ndarray, sigma: np.ndarray, candidates: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The best ``k`` of ``candidates`` (row positions) by reward (high first) then sigma
    (low first; ``inf`` = unknown).

    Returns ``(sure, tied, m)``: ``sure`` are kept whatever the ids; the rest of the kept
    rows are the ``m`` first *by id* of ``tied`` (rows with exactly the reward and sigma
    of the cut), so the caller resolves the tie with the ids of ``tied`` only.
    """
    if k >= candidates.size:
        return candidates, candidates[:0], 0
    if k <= 0:
        return candidates[:0], candidates[:0], 0
    r, s = reward[candidates], sigma[candidates]
    order = np.lexsort((s, -r))
    cut = order[k - 1]
    r_cut, s_cut = r[cut], s[cut]
    better = (r > r_cut) | ((r == r_cut) & (s < s_cut))
    tied = (r == r_cut) & (s == s_cut)
    sure = candidates[better]
    return sure, candidates[tied], k - sure.size


def _status(row: ScoredRow, drop_flagged: bool, max_sigma: float | None) -> int:
    if not row.ok:
        return _ERROR
    if drop_flagged and row.result.flags:
        return _FLAGGED
    if max_sigma is not None and (row.reward.sigma is None or row.reward.sigma > max_sigma):
        return _SIGMA
    return _OK


def _select(cols: Columns, source: ScoredSource, keep: KeepRule, part: np.ndarray | None,
            part_names: list[str], quota: int | None) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """The kept mask and the cut per partition."""
    reward = np.frombuffer(cols.reward, dtype=np.float64)
    sigma = np.frombuffer(cols.sigma, dtype=np.float64)
    eligible = np.frombuffer(cols.status, dtype=np.int8) == _OK
    n = reward.size
    keep_mask = np.zeros(n, dtype=bool)
    partitions = [("all", np.flatnonzero(eligible))] if part is None else [
        (name, np.flatnonzero(eligible & (part == code))) for code, name in enumerate(part_names)]
    pending: list[tuple[np.ndarray, int]] = []
    cuts: dict[str, dict[str, Any]] = {}
    for name, idx in partitions:
        cut: dict[str, Any] = {"eligible": int(idx.size)}
        if keep.kind == "threshold":
            chosen = idx[reward[idx] >= keep.value]
            cut["threshold"] = keep.value
        elif keep.kind == "quantile":
            thr = float(np.quantile(reward[idx], keep.value)) if idx.size else None
            chosen = idx[reward[idx] >= thr] if thr is not None else idx
            cut["threshold"] = thr
        else:
            chosen = idx
        limit = int(keep.value) if keep.kind == "top-k" else None
        if quota is not None:
            limit = quota if limit is None else min(limit, quota)
        if limit is not None and chosen.size > limit:
            sure, tied, m = top_by_order(reward, sigma, chosen, limit)
            keep_mask[sure] = True
            pending.append((tied, m))
        else:
            keep_mask[chosen] = True
        cuts[name] = cut
    if any(m for _, m in pending):
        want = np.zeros(n, dtype=bool)
        for tied, m in pending:
            if m:
                want[tied] = True
        ids = source.ids(want)
        for tied, m in pending:
            if m:
                by_id = sorted(tied.tolist(), key=lambda i: ids[i])
                keep_mask[by_id[:m]] = True
    for name, idx in partitions:
        kept = idx[keep_mask[idx]]
        cuts[name]["kept"] = int(kept.size)
        cuts[name]["lowest_kept_reward"] = float(reward[kept].min()) if kept.size else None
    return keep_mask, cuts


# --------------------------------------------------------------------------- images


def copy_images(sample: Any, out_dir: Path, mode: Images, done: dict[str, str]) -> Any:
    """``sample`` with its image paths (source, edited, mask) copied or symlinked into
    ``out_dir/images`` as ``<12 hex of the path's SHA-1>_<file name>`` (unique per original
    path; each image copied once, ``done`` remembers them)."""
    if mode == "as-is":
        return sample
    update: dict[str, Any] = {}
    for key in ("source", "edited", "mask"):
        ref = getattr(sample, key)
        if not isinstance(ref, (str, os.PathLike)):
            continue
        src = os.path.abspath(ref)
        dest = done.get(src)
        if dest is None:
            name = f"{hashlib.sha1(src.encode()).hexdigest()[:12]}_{os.path.basename(src)}"
            target = out_dir / "images" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() or target.is_symlink():
                target.unlink()
            if not os.path.exists(src):
                raise CurateError(f"cannot {mode} {src} (edit {sample.id!r}): the file does not exist")
            if mode == "copy":
                shutil.copy2(src, target)
            else:
                os.symlink(src, target)
            dest = done[src] = str(target)
        update[key] = Path(dest)
    return sample.model_copy(update=update)


# --------------------------------------------------------------------------- curate


def curate(
    scores: str | os.PathLike[str],
    out: str | os.PathLike[str],
    keep: KeepRule | str,
    *,
    rule: RewardRule | str | None = None,
    per: Literal["task", "editor"] | None = None,
    quota: int | None = None,
    max_sigma: float | None = None,
    drop_flagged: bool = False,
    images: Images = "as-is",
    format: Literal["jsonl", "parquet"] = "jsonl",
    gallery: int = 4,
    progress: bool = False,
    scorer: str | None = None,
) -> CurateResult:
    """Keep the best-scored edits of a score file or manifest (see the module docstring).

    Args:
        scores: score file of ``ieqa score`` or manifest with scores.
        out: output folder (created; its manifest and reports are replaced).
        keep: a :class:`KeepRule` or its text (``"top-k=20000"``, ``"threshold=3.5"``,
            ``"quantile=0.9"``).
        rule: the reward rule (a :class:`RewardRule` or its name/expression; default
            ``"overall"``).
        per: apply ``keep`` (and ``quota``) within each ``task`` or each ``editor``.
        quota: with ``per``, keep at most this many (>= 1) per partition, best first.
        max_sigma: drop rows whose reward sigma (the rule's units) is above it or unknown.
        drop_flagged: drop rows with a degenerate-output flag (blank, no_op, ...).
        images: ``"as-is"`` (the manifest points at the original files), ``"copy"`` or
            ``"link"`` (symlink) the kept images into ``out/images``.
        format: the kept manifest's format.
        gallery: edits shown per gallery row (best/worst kept and dropped), >= 0.
        progress: show progress on stderr.
        scorer: read only this scorer's rows of a score file that holds several
            (``NAME@HASH`` or ``NAME``); the others are counted in the report.

    Raises:
        CurateError: bad options, an unreadable input, ``max_sigma`` with a scorer that
            reports no sigma, or an input with no row that could be kept.
    """
    keep = KeepRule.parse(keep) if isinstance(keep, str) else keep
    keep.check()
    rule = rule if isinstance(rule, RewardRule) else RewardRule(rule or "overall")
    if quota is not None and (per is None or quota < 1):
        raise CurateError("--quota needs --per task|editor and a whole number >= 1")
    if per not in (None, "task", "editor"):
        raise CurateError(f"--per must be task or editor, got {per!r}")
    if max_sigma is not None and not (math.isfinite(max_sigma) and max_sigma >= 0):
        raise CurateError(f"--max-sigma must be a finite number >= 0, got {max_sigma}")
    if format not in ("jsonl", "parquet"):
        raise CurateError(f"format must be jsonl or parquet, got {format!r}")
    source = ScoredSource(scores, rule, scorer=scorer)
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise CurateError(f"{out_dir} is a file; -o names the output folder of the subset")

    cols = Columns()
    total = source.n_rows if source.path.name.endswith(".parquet") else None
    with progress_bar("curate: reading", total, enabled=progress, unit="rows") as advance:
        for row in source.rows():
            cols.add(row, _status(row, drop_flagged, max_sigma))
            advance(1)
    n = len(cols.reward)
    status = np.frombuffer(cols.status, dtype=np.int8)
    if max_sigma is not None and not np.isfinite(np.frombuffer(cols.sigma, dtype=np.float64)).any():
        raise CurateError("--max-sigma needs scores with sigma (e.g. from vlm-gaussian); this "
                          f"input has none under the rule {rule.formula()!r}")
    if not (status == _OK).any():
        raise CurateError(f"{source.path}: none of its {n} rows can be kept (errors: "
                          f"{int((status == _ERROR).sum())}, flagged: {int((status == _FLAGGED).sum())}, "
                          f"sigma: {int((status == _SIGMA).sum())}); the first error: "
                          f"{cols.first_error}")
    part = None if per is None else np.frombuffer(getattr(cols, per), dtype=np.int32)
    part_names = [] if per is None else cols.names(per)
    kept, cuts = _select(cols, source, keep, part, part_names, quota)

    from ieqa.curate.report import gallery_rows, write_curate_report

    wanted = gallery_rows(cols, kept, gallery)
    shown_idx = {i for v in wanted.values() for i in v}
    select = kept.copy()
    select[list(shown_idx)] = True
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / f"manifest.{format}"
    shown: dict[int, ScoredRow] = {}
    kept_ids: list[str] | None = [] if int(kept.sum()) <= 100_000 else None
    copied: dict[str, str] = {}
    with ManifestWriter(manifest) as writer, \
            progress_bar("curate: writing", int(kept.sum()), enabled=progress, unit="edits") as advance:
        for row in source.rows(select):
            if row.index in shown_idx:
                shown[row.index] = row
            if kept[row.index]:
                writer.write(copy_images(row.to_sample(), out_dir, images, copied))
                if kept_ids is not None:
                    kept_ids.append(row.id)
                advance(1)
    dropped = {name: int((status == code).sum()) for code, name in _STATUS.items()}
    html_path, json_path, report = write_curate_report(
        out_dir, source=source, rule=rule, keep=keep, per=per, quota=quota, max_sigma=max_sigma,
        drop_flagged=drop_flagged, cols=cols, kept=kept, cuts=cuts, dropped=dropped,
        gallery={k: [shown[i] for i in v if i in shown] for k, v in wanted.items()},
        manifest=manifest, images=images)
    return CurateResult(manifest, html_path, json_path, n, int(kept.sum()), dropped, cuts,
                        kept_ids, report)
