"""``classic``: the weight-free default scorer, region-aware, on a 1-5 scale.

For one (source, edited) pair (the edited image is resized to the source's size when
they differ):

1. **Scope of the request** — :func:`~ieqa.scorers.classic.scope.parse_scope` reads the
   instruction with a small English lexicon (no model): ``global`` (a photometric
   operation on the whole image: brighter/darker, contrast, black and white, sepia,
   posterize, blur), ``background`` (such an operation on the background), ``move`` (an
   object relocated) or ``local`` (anything else). ``instruction_aware=False`` treats
   every instruction as ``local`` (an instruction-blind measure).

2. **Edit region** — :func:`~ieqa.scorers.classic.region.estimate_edit_region` finds
   what changed; the *edit* is taken to be its largest connected component (the two
   largest for a ``move``: the place the object left and the place it went), grown by
   ``pad`` (a fraction of the longer side). The largest component's tight box is
   reported as ``region``.

3. **content_preservation** (``CP``) — a full-reference comparison against what was
   asked: both images are low-passed (Gaussian, ``sigma`` px, so noise, JPEG and
   resampling barely count) and the per-pixel change is ``d = max over RGB |source -
   edited|`` (0-1). For ``local`` and ``move`` scopes, changes inside the edit count 0.
   For ``global`` and ``background`` scopes, ``d`` is instead measured against the
   requested operation fitted to the pair in the requested direction
   (:func:`~ieqa.scorers.classic.operations.explain`): a requested brightening is not an
   unintended change, a darkening when brightening was asked is. The unintended change
   is ``u = mean over the image of min(1, max(0, d - floor) / 0.3)`` and
   ``CP = 1 + 4 / (1 + u / 0.1)``: 5 when nothing unrequested changed, 3 when a tenth of
   the image changed completely (``u = 0.1``), towards 1 as everything changed. This is
   ShapesEdit's own definition of preservation (:mod:`ieqa.data.shapesedit.truth`) with
   the requested edit replaced by the estimated region or the fitted operation. Known
   limits: an edit of the wrong object ("recolour the cup", the plate was recoloured)
   looks like a correct edit without grounding the object named (use a VLM scorer), and
   a global instruction outside the lexicon ("make it look like winter") is treated as
   ``local``.

4. **visual_quality** (``VQ``) — no-reference artifact measures
   (:mod:`ieqa.scorers.classic.quality`) on the edited image, each compared with the same
   measure on the source, the natural baseline of the scene, over the whole image and
   (noise and blocking only, which do not depend on the content) over the edit's crop:
   local naturalness. Evidence of each artifact, clipped to [0, 1]:

   * noise: rise of the noise level, ``(sigma_e - sigma_s) / 0.05``;
   * blur: loss of fine detail, ``-ln(E_e / E_s) / 2.5``;
   * blocking: rise of JPEG blockiness, ``(B_e - B_s) / 1.5``;
   * halos and seams: excess fine detail not explained by noise, ``ln(E_e / E_s) / 3``.

   ``severity`` is the largest evidence and ``VQ = 1 + 4 * (1 - severity)``.
   ``raw`` lists every evidence term (and, with ``niqe=True``, NIQE of both images, lower
   is better, for reference; NIQE is not part of ``VQ``: it judges the scene's content as
   much as the edit's artifacts, and penalises flat synthetic content).

5. **Degenerate outputs** — a ``blank``, ``transparent``, ``tiny`` or ``unrelated``
   edited image (:mod:`ieqa.scorers.flags`) is not an edit: both scores are 1, the floor
   of the scale, with ``raw["floored"]`` naming the flags. A ``no_op`` keeps its scores
   (nothing was lost, so preservation is high) and carries the flag: an editor that
   returns its input must be judged on instruction_alignment, which ``classic`` cannot
   measure.

6. **instruction_alignment** is reported unavailable: the scope lexicon says where a
   request applies, not whether the right thing was done to the right object. Use a VLM
   scorer (``ieqa list scorers``).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage as ndi

from ieqa.data.images import channel_max
from ieqa.data.schema import BBox, EditSample
from ieqa.scorers.base import MAX_SAMPLE_THREADS, Scorer, ScorerError, ScoreResult
from ieqa.scorers.classic._filters import lowpass
from ieqa.scorers.classic.operations import explain
from ieqa.scorers.classic.patches import pasted_patches, undo_patches
from ieqa.scorers.classic.quality import blockiness, detail_energy, grey, noise_sigma
from ieqa.scorers.classic.region import estimate_edit_region
from ieqa.scorers.classic.scope import EditScope, parse_scope
from ieqa.scorers.flags import FLOOR_FLAGS
from ieqa.threads import thread_count

__all__ = ["ALIGNMENT_UNAVAILABLE", "ClassicScorer", "SourceLowpass", "preservation_score",
           "quality_evidence"]

ALIGNMENT_UNAVAILABLE = ("classical measures cannot judge whether the instruction was followed; "
                         "use a VLM scorer for instruction_alignment (ieqa list scorers)")
CHANGE_SCALE = 0.3
PRESERVATION_HALF = 0.1
NOISE_FULL = 0.05
BLUR_FULL = 2.5
BLOCK_FULL = 1.5
DETAIL_FULL = 3.0
_MIN_CROP = 16
#: Gaussian blurs (px) of the reference tried before measuring preservation (blur of the
#: whole edited image is a quality defect, not a change of content).
ARTIFACT_BLUR_SIGMAS = (1.0, 2.0, 3.0, 4.0)
# Inside the edit the content itself changed, so detail energy there says nothing about
# blur or halos; noise level and JPEG blocking do not depend on the content.
_LOCAL_TERMS = ("noise", "blocking")


def _clip01(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def quality_evidence(src_grey: np.ndarray, edt_grey: np.ndarray,
                     origin: tuple[int, int] = (0, 0)) -> dict[str, float]:
    """Artifact evidence in [0, 1] of the edited (crop) against the source (same crop).

    Keys: ``noise``, ``blur``, ``blocking``, ``detail`` (see the module docstring).
    ``origin`` is the crop's top-left ``(row, column)`` in the full image.
    """
    eps = 1e-7
    ratio = math.log((detail_energy(edt_grey) + eps) / (detail_energy(src_grey) + eps))
    noise_rise = noise_sigma(edt_grey) - noise_sigma(src_grey)
    ev = {"noise": _clip01(noise_rise / NOISE_FULL), "blur": _clip01(-ratio / BLUR_FULL),
          "detail": _clip01(ratio / DETAIL_FULL), "blocking": 0.0}
    if min(edt_grey.shape) >= 16:
        ev["blocking"] = _clip01((blockiness(edt_grey, origin) - blockiness(src_grey, origin))
                                 / BLOCK_FULL)
    return ev


def _rounded_box(ys: slice, xs: slice, w: int, h: int) -> list[float]:
    """EPAIQA ``[x, y, w, h]`` (normalised centre and size) of a pixel box, 4 decimals."""
    b = BBox.from_xyxy(xs.start, ys.start, xs.stop, ys.stop, w, h)
    return [round(v, 4) for v in (b.x, b.y, b.w, b.h)]


class SourceLowpass:
    """Low-passed copies of the sources scored last, so the candidates of one source
    (best-of-n, several editors, a benchmark's mismatched pairs) filter it once.

    The Gaussian low-passes of the source are much of what ``classic`` computes on a large
    image: the preservation comparison filters the source and the edited image once each,
    and when the edited image lost detail the blur-tolerant references of
    :func:`_tolerate_blur` filter the source up to five more times; none of these depends
    on the edited image. (An operation's fitted reference and the edit-region estimate
    filter what they compare themselves, uncached.) A source is known by its pixels
    (BLAKE2b of the ``uint8`` array and its shape), so equal pixels from two files share an
    entry; the arrays are the ones :func:`lowpass` returns (read-only here), so every score
    is the one computed without the cache, bit for bit. The arrays kept never exceed
    ``max_mib``: least recently used sources leave first, and a source whose filters alone
    exceed it is not kept; ``max_mib=0`` keeps nothing. Thread-safe: a source two threads
    filter at once is filtered twice, never mixed. ``hits``/``misses`` count filters taken
    from / added to it.
    """

    def __init__(self, max_mib: float) -> None:
        if not (max_mib >= 0 and math.isfinite(max_mib)):
            raise ScorerError(f"source_cache_mib must be a finite number >= 0 (MiB), got {max_mib}")
        self.max_bytes = int(max_mib * 2**20)
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[bytes, dict[float, np.ndarray]] = OrderedDict()
        self._bytes = 0  # of the arrays in _items

    @staticmethod
    def key(source: np.ndarray) -> bytes:
        """The cache key of a ``uint8`` source array: its shape and pixels."""
        h = hashlib.blake2b(repr((source.shape, source.dtype.str)).encode(), digest_size=16)
        h.update(np.ascontiguousarray(source).data)
        return h.digest()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def lowpass(self, key: bytes | None, image: np.ndarray, sigma: float) -> np.ndarray:
        """:func:`lowpass` of ``image`` (the source known by ``key``; ``None``: not cached)."""
        if key is None or sigma <= 0 or self.max_bytes == 0:
            return lowpass(image, sigma)
        with self._lock:
            entry = self._items.get(key)
            if entry is not None and sigma in entry:
                self._items.move_to_end(key)
                self.hits += 1
                return entry[sigma]
        out = lowpass(image, sigma)
        out.setflags(write=False)  # shared between samples: nobody writes into it
        with self._lock:
            self.misses += 1
            self._items.setdefault(key, {})[sigma] = out
            self._items.move_to_end(key)
            self._bytes += out.nbytes
            while self._bytes > self.max_bytes:  # the oldest first, this source last
                _, dropped = self._items.popitem(last=False)
                self._bytes -= sum(a.nbytes for a in dropped.values())
        return out


def _tolerate_blur(reference: np.ndarray, edited_lp: np.ndarray, d: np.ndarray, sigma: float,
                   smooth: Callable[[np.ndarray, float], np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray, float]:
    """Blur is a visual-quality defect, not a change of content: compare with the
    reference blurred as much as the edited image looks blurred (Gaussian sigma from
    :data:`ARTIFACT_BLUR_SIGMAS` px, the one with the smallest mean change; 0 keeps it).
    Only tried when the edited image lost fine detail (blur evidence above 0).
    ``smooth(image, sigma)`` low-passes the reference (:func:`lowpass`, or the source
    cache's)."""
    best = (float(d.mean()), d, 0.0)
    for b in ARTIFACT_BLUR_SIGMAS:  # blur then low-pass = one Gaussian of sigma hypot(b, sigma)
        s = float(np.hypot(b, sigma))
        cand = channel_max(np.abs(edited_lp - smooth(reference, s)))
        if float(cand.mean()) < best[0]:
            best = (float(cand.mean()), cand, b)
    _, d, b = best
    return d, smooth(reference, b), b


def preservation_score(unintended: float) -> float:
    """``CP = 1 + 4 / (1 + u / 0.1)`` for an unintended change ``u`` in [0, 1]."""
    return 1.0 + 4.0 / (1.0 + unintended / PRESERVATION_HALF)


class ClassicScorer(Scorer):
    """The ``classic`` composite (see the module docstring for every formula).

    Args:
        sigma: low-pass sigma in pixels before the preservation comparison, > 0.
        floor: per-pixel change (0-1 grey levels) below which a pixel counts as unchanged,
            in [0, 1).
        pad: growth of the edit region on every side, as a fraction of the longer side, in
            [0, 0.5].
        niqe: also compute NIQE of both images into ``raw`` (off by default: it costs about
            50 ms per 512x384 image and is not part of the scores).
        instruction_aware: read the instruction's scope (global / background / move /
            local) to decide which change was requested; ``False`` treats every edit as
            local (instruction-blind).
        source_cache_mib: memory for the low-passed copies of recent sources
            (:class:`SourceLowpass`; 0 turns it off). Changes no score, only how often a
            source shared by several edits is filtered, so it is not part of
            :meth:`config`.
    """

    def __init__(self, sigma: float = 2.0, floor: float = 0.04, pad: float = 0.06,
                 niqe: bool = False, instruction_aware: bool = True,
                 source_cache_mib: float = 256) -> None:
        if not sigma > 0:
            raise ScorerError(f"sigma must be > 0 pixels, got {sigma}")
        if not 0 <= floor < 1:
            raise ScorerError(f"floor must be in [0, 1), got {floor}")
        if not 0 <= pad <= 0.5:
            raise ScorerError(f"pad must be in [0, 0.5], got {pad}")
        self.sigma, self.floor, self.pad, self.niqe = float(sigma), float(floor), float(pad), niqe
        self.instruction_aware = bool(instruction_aware)
        self.source_cache = SourceLowpass(source_cache_mib)
        from ieqa.scorers.table import scorer_info

        self.info = scorer_info("classic")
        self.sample_threads = min(MAX_SAMPLE_THREADS, thread_count())

    def config(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "floor": self.floor, "pad": self.pad, "niqe": self.niqe,
                "instruction_aware": self.instruction_aware}

    def _edit_box(self, mask: np.ndarray, parts: int = 1
                  ) -> tuple[np.ndarray, tuple[slice, slice] | None, BBox | None]:
        """The ``parts`` largest changed components: their grown boxes (one bool mask),
        the slices of the largest one's grown box and its tight box (normalised), or an
        empty mask and ``None`` when nothing changed."""
        labels, n = ndi.label(mask)
        box = np.zeros(mask.shape, dtype=bool)
        if n == 0:
            return box, None, None
        sizes = ndi.sum(mask, labels, range(1, n + 1))
        objects = ndi.find_objects(labels)
        h, w = mask.shape
        grow = int(round(self.pad * max(h, w)))
        grown = []
        for i in np.argsort(sizes)[::-1][:parts]:
            sl = objects[int(i)]
            ys = slice(max(0, sl[0].start - grow), min(h, sl[0].stop + grow))
            xs = slice(max(0, sl[1].start - grow), min(w, sl[1].stop + grow))
            box[ys, xs] = True
            grown.append((sl, (ys, xs)))
        sl, slices = grown[0]
        tight = BBox.from_xyxy(sl[1].start, sl[0].start, sl[1].stop, sl[0].stop, w, h)
        return box, slices, tight

    def _unintended(self, scope: EditScope, raw_src: np.ndarray, raw_edt: np.ndarray,
                    region_mask: np.ndarray, detail_lost: bool,
                    source_key: bytes | None = None) -> dict[str, Any]:
        """Content preservation's ``u`` and what it rests on (module docstring, step 3):
        ``unintended``, the edit ``box``/``slices``/``bbox`` (``_edit_box``), ``patches``,
        the operation ``fit`` and the reference ``blur_sigma``. ``source_key``: the
        source's key in :attr:`source_cache` (``None``: filter it here)."""

        def smooth(image: np.ndarray, sigma: float) -> np.ndarray:
            # only the source itself is cached: an operation's fitted reference is not
            return self.source_cache.lowpass(source_key if image is raw_src else None,
                                             image, sigma)

        s, e = smooth(raw_src, self.sigma), lowpass(raw_edt, self.sigma)
        d = channel_max(np.abs(s - e))
        fit: dict[str, Any] | None = None
        reference = raw_src
        if scope.operation is not None:
            d, reference, fit = explain(raw_src, raw_edt, scope.operation, sigma=self.sigma,
                                        background=scope.kind == "background",
                                        changed=d > self.floor, lowpassed=(s, e))
        blur_sigma = 0.0
        if scope.operation != "blur" and detail_lost:
            d, reference, blur_sigma = _tolerate_blur(reference, e, d, self.sigma, smooth)
        patches = pasted_patches(reference, raw_edt, d > self.floor)
        mask = region_mask
        if patches:  # inside a patch, only what changed beyond its colour offset is an edit
            undone, covered = undo_patches(reference, e, d, patches, sigma=self.sigma)
            if scope.operation is None and not (mask & ~covered).any():
                patches = []  # nothing changed outside: the box is the edit (an added box)
            else:
                d, mask = undone, mask & ~(covered & (undone <= self.floor))
        box, slices, bbox = self._edit_box(mask, parts=2 if scope.kind == "move" else 1)
        change = np.minimum(1.0, np.maximum(0.0, d - self.floor) / CHANGE_SCALE)
        if scope.operation is None:
            change[box] = 0.0
        return {"unintended": float(change.mean()), "slices": slices, "bbox": bbox,
                "patches": patches, "fit": fit, "blur_sigma": blur_sigma}

    floor_flags = FLOOR_FLAGS

    def floor_result(self, sample: EditSample, floored: list[str]) -> ScoreResult:
        """Not an edit at all: the floor of the scale, with no measurement."""
        return ScoreResult(
            sample.id, scores={"visual_quality": 1.0, "content_preservation": 1.0},
            unavailable={"instruction_alignment": ALIGNMENT_UNAVAILABLE},
            raw={"floored": floored})

    def score_sample(self, sample: EditSample) -> ScoreResult:
        src, edt, resized = self.load_pair(sample.source, sample.edited)
        h, w = src.shape[:2]
        scope = parse_scope(sample.instruction) if self.instruction_aware else EditScope("local")
        gs, ge = grey(src), grey(edt)
        global_evidence = quality_evidence(gs, ge)
        region = estimate_edit_region(src, edt)
        cp = self._unintended(scope, src.astype(np.float32) / 255.0,
                              edt.astype(np.float32) / 255.0, region.mask,
                              detail_lost=global_evidence["blur"] > 0,
                              source_key=SourceLowpass.key(src) if self.source_cache.max_bytes
                              else None)
        unintended, slices, bbox = cp["unintended"], cp["slices"], cp["bbox"]
        patches, fit, blur_sigma = cp["patches"], cp["fit"], cp["blur_sigma"]

        evidence = {f"global_{k}": v for k, v in global_evidence.items()}
        if slices is not None and min(slices[0].stop - slices[0].start,
                                      slices[1].stop - slices[1].start) >= _MIN_CROP:
            local = quality_evidence(gs[slices], ge[slices], (slices[0].start, slices[1].start))
            evidence.update({f"local_{k}": local[k] for k in _LOCAL_TERMS})
        severity = max(evidence.values())
        raw: dict[str, Any] = {
            "unintended_change": round(unintended, 6),
            "scope": scope.as_dict(),
            "patch_artifacts": [_rounded_box(ys, xs, w, h) for (ys, xs), _ in patches],
            "changed_fraction": round(region.changed_fraction, 6),
            "is_global": region.is_global,
            "severity": round(severity, 6),
            "evidence": {k: round(v, 6) for k, v in evidence.items()},
        }
        if fit is not None:
            raw["operation_fit"] = fit
        if blur_sigma:
            raw["reference_blur_sigma"] = blur_sigma
        if resized:
            raw["resized"] = True
        if self.niqe and min(h, w) >= 96:
            from ieqa.scorers.classic.niqe import niqe

            raw["niqe_source"] = round(niqe(src), 4)
            raw["niqe_edited"] = round(niqe(edt), 4)
        return ScoreResult(
            sample.id,
            scores={"visual_quality": 1.0 + 4.0 * (1.0 - severity),
                    "content_preservation": preservation_score(unintended)},
            unavailable={"instruction_alignment": ALIGNMENT_UNAVAILABLE},
            region=bbox, raw=raw)
