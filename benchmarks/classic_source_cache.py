"""The ``classic`` composite with and without its source cache (``SourceLowpass``), in one run.

Scores ``--edits`` edits of each source, one source after another, first with
``source_cache_mib=0`` (every edit filters its source) and then with the default cache,
best of ``--repeat`` runs each; prints pairs/s of both, the ratio, the cache's hits and
misses, and whether every score and raw field is identical (they must be).

The edits of a source: its own edited image (from the AURORA folder, or the first
candidate of a ShapesEdit group), then the edited images of the next sources as mismatched
edits (resized to the source, as the AURORA test in tests/scorers/test_classic.py pairs
them). Each setting runs once before its timed runs, so neither pays the first call's
imports and allocations.

    .venv/bin/python benchmarks/classic_source_cache.py [--data ../shared/data/aurora_subset]
        [--sources 8] [--edits 2] [--min-width 1280] [--repeat 1]

Without ``--data`` (or where it is missing) it uses ShapesEdit at 512 px.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from ieqa.data.schema import EditSample


def _pairs(args: argparse.Namespace) -> tuple[str, list[EditSample]]:
    data = Path(args.data) if args.data else None
    if data is not None and (data / "pairs.json").is_file():
        from PIL import Image

        from ieqa.data.loaders import load_benchmark

        found = [s for s in load_benchmark(data).samples
                 if Image.open(s.source).size[0] >= args.min_width][: args.sources]
        what = f"{data.name}, sources at least {args.min_width} px wide"
    else:
        from ieqa.data.shapesedit import ShapesEditConfig
        from ieqa.data.shapesedit.generator import iter_groups

        groups = list(iter_groups(ShapesEditConfig(n=args.sources, k=1, seed=3, size=512)))
        found = [g.samples[0] for g in groups]
        what = "ShapesEdit at 512 px"
    n = len(found)
    samples = []
    for i, s in enumerate(found):
        samples.append(s)
        for k in range(1, args.edits):  # the next sources' edits, mismatched
            other = found[(i + k) % n]
            samples.append(EditSample(id=f"{s.id}-x{k}", source=s.source, edited=other.edited,
                                      instruction=s.instruction))
    return f"{what}: {n} sources x {args.edits} edits", samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="an AURORA-style folder with pairs.json")
    parser.add_argument("--sources", type=int, default=8)
    parser.add_argument("--edits", type=int, default=2, help="edits scored per source")
    parser.add_argument("--min-width", type=int, default=1280)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("IEQA_NUM_THREADS", "1")

    from ieqa import create_scorer

    what, samples = _pairs(args)
    print(f"{what}; {platform.processor() or platform.machine()}, "
          f"IEQA_NUM_THREADS={os.environ['IEQA_NUM_THREADS']}")
    results, seconds, caches = {}, {}, {}
    for mib in (0, 256):
        create_scorer("classic", source_cache_mib=mib).score(samples[:2])  # warm-up
        best = float("inf")
        for _ in range(args.repeat):
            scorer = create_scorer("classic", source_cache_mib=mib)
            t0 = time.perf_counter()
            out = scorer.score(samples)
            best = min(best, time.perf_counter() - t0)
        results[mib], seconds[mib], caches[mib] = out, best, scorer.source_cache
    same = [(r.id, r.scores, r.raw, r.region) for r in results[0]] == [
        (r.id, r.scores, r.raw, r.region) for r in results[256]]
    for mib in (0, 256):
        c = caches[mib]
        print(f"source_cache_mib={mib:<4d} {len(samples) / seconds[mib]:6.2f} pairs/s "
              f"({seconds[mib]:.2f} s)  hits {c.hits}, misses {c.misses}")
    print(f"cached / uncached: {seconds[0] / seconds[256]:.2f}x; scores identical: {same}")
    if not same:
        raise SystemExit("the cached scores differ from the uncached ones")


if __name__ == "__main__":
    main()
