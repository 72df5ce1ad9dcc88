"""``classic``: the weight-free default scorer, region-aware, on a 1-5 scale.

For one (source, edited) pair (the edited image is resized to the source's size when
they differ):

1. **Edit region** — :func:`~ieqa.scorers.classic.region.estimate_edit_region` finds
   what changed; the *edit* is taken to be its largest connected component (its tight box
   is reported as ``region``), grown by ``pad`` (a fraction of the longer side).

2. **content_preservation** (``CP``) — a full-reference comparison outside the edit:
   both images are low-passed (Gaussian, ``sigma`` px, so noise, JPEG and resampling
   barely count), the per-pixel change is ``d = max over RGB |source - edited|`` (0-1),
   and the unintended change is ``u = mean over the image of min(1, max(0, d - floor) / 0.3)``
   counting only pixels outside the edit (inside it counts 0). Then
   ``CP = 1 + 4 / (1 + u / 0.1)``: 5 when nothing outside the edit changed, 3 when a
   tenth of the image changed completely (``u = 0.1``), towards 1 as everything changed.
   This is ShapesEdit's own definition of preservation (:mod:`ieqa.data.shapesedit.truth`)
   with the requested edit replaced by the estimated region. When the whole image is the
   edit (a global restyle), nothing lies outside it and ``CP`` only reflects what the
   estimate left out — a known limit: which change was requested is not knowable without
   reading the instruction (use a VLM scorer for that).

3. **visual_quality** (``VQ``) — no-reference artifact measures
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

4. **instruction_alignment** is reported unavailable: no classical measure reads the
   instruction. Use a VLM scorer (``ieqa list scorers``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import ndimage as ndi

from ieqa.data.schema import BBox, EditSample
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult
from ieqa.scorers.classic.quality import blockiness, detail_energy, grey, noise_sigma
from ieqa.scorers.classic.region import estimate_edit_region

__all__ = ["ALIGNMENT_UNAVAILABLE", "ClassicScorer", "preservation_score", "quality_evidence"]

ALIGNMENT_UNAVAILABLE = ("classical measures cannot read the instruction; use a VLM scorer "
                         "for instruction_alignment (ieqa list scorers)")
CHANGE_SCALE = 0.3
PRESERVATION_HALF = 0.1
NOISE_FULL = 0.05
BLUR_FULL = 2.5
BLOCK_FULL = 1.5
DETAIL_FULL = 3.0
_MIN_CROP = 16
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
    """

    def __init__(self, sigma: float = 2.0, floor: float = 0.04, pad: float = 0.06,
                 niqe: bool = False) -> None:
        if not sigma > 0:
            raise ScorerError(f"sigma must be > 0 pixels, got {sigma}")
        if not 0 <= floor < 1:
            raise ScorerError(f"floor must be in [0, 1), got {floor}")
        if not 0 <= pad <= 0.5:
            raise ScorerError(f"pad must be in [0, 0.5], got {pad}")
        self.sigma, self.floor, self.pad, self.niqe = float(sigma), float(floor), float(pad), niqe
        from ieqa.scorers.catalog import scorer_info

        self.info = scorer_info("classic")

    def config(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "floor": self.floor, "pad": self.pad, "niqe": self.niqe}

    def _edit_box(self, mask: np.ndarray
                  ) -> tuple[np.ndarray, tuple[slice, slice] | None, BBox | None]:
        """The largest changed component: its grown box (bool mask and slices) and its
        tight box (normalised), or an empty mask and ``None`` when nothing changed."""
        labels, n = ndi.label(mask)
        box = np.zeros(mask.shape, dtype=bool)
        if n == 0:
            return box, None, None
        sizes = ndi.sum(mask, labels, range(1, n + 1))
        sl = ndi.find_objects(labels)[int(np.argmax(sizes))]
        h, w = mask.shape
        grow = int(round(self.pad * max(h, w)))
        ys = slice(max(0, sl[0].start - grow), min(h, sl[0].stop + grow))
        xs = slice(max(0, sl[1].start - grow), min(w, sl[1].stop + grow))
        box[ys, xs] = True
        tight = BBox.from_xyxy(sl[1].start, sl[0].start, sl[1].stop, sl[0].stop, w, h)
        return box, (ys, xs), tight

    def score_sample(self, sample: EditSample) -> ScoreResult:
        src, edt, resized = self.load_pair(sample.source, sample.edited)
        h, w = src.shape[:2]
        region = estimate_edit_region(src, edt)
        box, slices, bbox = self._edit_box(region.mask)

        s = ndi.gaussian_filter(src.astype(np.float32) / 255.0, (self.sigma, self.sigma, 0))
        e = ndi.gaussian_filter(edt.astype(np.float32) / 255.0, (self.sigma, self.sigma, 0))
        d = np.abs(s - e).max(axis=2)
        change = np.minimum(1.0, np.maximum(0.0, d - self.floor) / CHANGE_SCALE)
        change[box] = 0.0
        unintended = float(change.mean())

        gs, ge = grey(src), grey(edt)
        evidence = {f"global_{k}": v for k, v in quality_evidence(gs, ge).items()}
        if slices is not None and min(slices[0].stop - slices[0].start,
                                      slices[1].stop - slices[1].start) >= _MIN_CROP:
            local = quality_evidence(gs[slices], ge[slices], (slices[0].start, slices[1].start))
            evidence.update({f"local_{k}": local[k] for k in _LOCAL_TERMS})
        severity = max(evidence.values())
        raw: dict[str, Any] = {
            "unintended_change": round(unintended, 6),
            "changed_fraction": round(region.changed_fraction, 6),
            "is_global": region.is_global,
            "severity": round(severity, 6),
            "evidence": {k: round(v, 6) for k, v in evidence.items()},
        }
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
