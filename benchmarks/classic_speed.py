"""Throughput of ieqa's PSNR / SSIM / MS-SSIM against scikit-image on large RGB pairs.

Builds deterministic synthetic pairs (Gaussian-blurred noise at three scales with a checkerboard of
edges as the reference; the distorted image adds a 3x3 box blur, Gaussian noise and a brightness shift), then
times in the same process, best of ``--repeat`` runs over all pairs:

* PSNR: ``ieqa.scorers.classic.fr.psnr`` (RGB, its default) vs
  ``skimage.metrics.peak_signal_noise_ratio`` on the same RGB arrays (same definition, the
  values must agree);
* SSIM: ``fr.ssim`` on the RGB input (grey conversion included in its time) vs
  ``skimage.metrics.structural_similarity`` on the pre-converted grey images with Wang's
  settings (Gaussian sigma 1.5, population covariance, data_range 255; same value
  expected), and the 3-channel variants (``channel="rgb"`` vs ``channel_axis=-1``);
* MS-SSIM: scikit-image has none, so the reference is built from skimage's SSIM at 5
  dyadic scales (``downscale_local_mean`` by 2 in between, weighted product of the
  per-scale SSIM). It uses the full SSIM at every scale (skimage does not expose the
  contrast-structure term), so only its time is comparable, not its value.

Prints images/s (pairs per second) for each and the speed ratio ieqa / skimage.

    .venv/bin/python benchmarks/classic_speed.py [--size 1024] [--pairs 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import numpy as np
from scipy import ndimage

from ieqa.scorers.classic import _filters, fr

MS_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def synthetic_pair(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(reference, distorted) uint8 RGB images of ``size x size``, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    fy = np.fft.fftfreq(size)[:, None]
    fx = np.fft.rfftfreq(size)[None, :]
    ref = np.zeros((size, size, 3))
    for sigma, weight in ((size / 16, 1.0), (size / 64, 0.5), (1.5, 0.25)):  # smooth noise, 3 scales
        spectrum = np.fft.rfft2(rng.normal(size=(size, size, 3)), axes=(0, 1))
        spectrum *= np.exp(-2 * np.pi**2 * sigma**2 * (fx**2 + fy**2))[..., None]  # Gaussian blur
        layer = np.fft.irfft2(spectrum, s=(size, size), axes=(0, 1))
        ref += weight * layer / layer.std()
    ref = (ref - ref.min()) / np.ptp(ref) * 200 + 25
    yy, xx = np.mgrid[:size, :size]
    ref[((xx // max(size // 8, 1) + yy // max(size // 8, 1)) % 2) == 0] += 20  # sharp edges
    dist = ndimage.uniform_filter(ref, (3, 3, 1)) + rng.normal(0, 6, ref.shape) + 5
    to_u8 = lambda x: np.clip(np.round(x), 0, 255).astype(np.uint8)  # noqa: E731
    return to_u8(ref), to_u8(dist)


def best_time(fn: Callable[[], list[float]], repeat: int) -> tuple[float, list[float]]:
    best, values = np.inf, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        values = fn()
        best = min(best, time.perf_counter() - t0)
    return best, values


def skimage_ms_ssim(metrics, transform, a: np.ndarray, b: np.ndarray) -> float:
    value = 1.0
    for i, w in enumerate(MS_WEIGHTS):
        s = metrics.structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
                                          use_sample_covariance=False, data_range=255)
        value *= max(s, 0.0) ** w
        if i < len(MS_WEIGHTS) - 1:
            a, b = transform.downscale_local_mean(a, (2, 2)), transform.downscale_local_mean(b, (2, 2))
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="image side in pixels (default 1024)")
    ap.add_argument("--pairs", type=int, default=4, help="number of image pairs (default 4)")
    ap.add_argument("--repeat", type=int, default=3, help="best-of-N timing (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        from skimage import metrics, transform
    except ImportError as exc:  # scikit-image is the optional "synth" extra
        raise SystemExit("scikit-image is needed for the reference: pip install 'ieqa[synth]'") from exc
    import skimage

    t0 = time.perf_counter()
    pairs = [synthetic_pair(args.size, args.seed + k) for k in range(args.pairs)]
    greys = [tuple(_filters.rgb_to_grey(x.astype(np.float64), integer=True) for x in p) for p in pairs]
    print(f"{args.pairs} synthetic {args.size}x{args.size} RGB pairs (seed {args.seed}) built in "
          f"{time.perf_counter() - t0:.1f} s; best of {args.repeat}; numpy {np.__version__}, "
          f"scikit-image {skimage.__version__}, {platform.processor() or platform.machine()}")

    wang = dict(gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255)
    cases = [
        ("PSNR (RGB)",
         lambda: [fr.psnr(r, d) for r, d in pairs],
         lambda: [metrics.peak_signal_noise_ratio(r, d, data_range=255) for r, d in pairs], True),
        ("SSIM (grey; ieqa converts RGB in its time)",
         lambda: [fr.ssim(r, d) for r, d in pairs],
         lambda: [metrics.structural_similarity(r, d, **wang) for r, d in greys], True),
        ("SSIM (3 channels)",
         lambda: [fr.ssim(r, d, channel="rgb") for r, d in pairs],
         lambda: [metrics.structural_similarity(r.astype(np.float64), d.astype(np.float64),
                                                channel_axis=-1, **wang) for r, d in pairs], True),
        ("MS-SSIM (grey; reference = skimage SSIM x 5 scales)",
         lambda: [fr.ms_ssim(r, d) for r, d in pairs],
         lambda: [skimage_ms_ssim(metrics, transform, r, d) for r, d in greys], False),
    ]
    print(f"{'metric':52s} {'ieqa img/s':>11s} {'skimage img/s':>14s} {'ieqa/skimage':>13s}  values (pair 0)")
    mismatch = False
    for name, ours, theirs, same_value in cases:
        t_ours, v_ours = best_time(ours, args.repeat)
        t_ref, v_ref = best_time(theirs, args.repeat)
        ips_ours, ips_ref = args.pairs / t_ours, args.pairs / t_ref
        note = ""
        if same_value:
            diff = max(abs(a - b) for a, b in zip(v_ours, v_ref, strict=True))
            note = f"max |diff| {diff:.1e}"
            mismatch |= diff > 1e-6
        else:
            note = "(reference differs by design)"
        print(f"{name:52s} {ips_ours:11.2f} {ips_ref:14.2f} {ips_ours / ips_ref:12.2f}x  "
              f"{v_ours[0]:.4f} vs {v_ref[0]:.4f} {note}")
    if mismatch:
        raise SystemExit("ieqa and scikit-image disagree where they should not")


if __name__ == "__main__":
    main()
