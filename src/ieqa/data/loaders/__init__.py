"""Loaders of public image-editing benchmarks, one module per format.

Examples:
    >>> from ieqa.data.loaders import load_benchmark
    >>> data = load_benchmark("genai-bench", root="~/data/GenAI-Bench")  # doctest: +SKIP
    >>> data = load_benchmark("path/to/pairs.json")  # format sniffed   # doctest: +SKIP
    >>> print(data.summary())  # doctest: +SKIP

Importing this package registers every loader in :data:`ieqa.registry.BENCHMARKS`
(factory: ``factory(root=..., **options) -> BenchmarkData``) and its format sniffer for
:func:`load_benchmark` (tried by priority: specific layouts first, the generic ieqa
manifest last).
"""

from __future__ import annotations

from ieqa.data.loaders import (
    aurora,
    ebench,
    editreward_bench,
    editscore_bench,
    genai_bench,
    imagenhub,
    manifest,
    ntire,
    shapesedit,
)
from ieqa.data.loaders.aurora import load_aurora
from ieqa.data.loaders.base import (
    BenchmarkData,
    BenchmarkFormatError,
    load_benchmark,
    preferences_from_groups,
    sniff_format,
    supported_formats,
)
from ieqa.data.loaders.ebench import load_ebench
from ieqa.data.loaders.editreward_bench import load_editreward_bench
from ieqa.data.loaders.editscore_bench import load_editscore_bench
from ieqa.data.loaders.genai_bench import load_genai_bench
from ieqa.data.loaders.imagenhub import load_imagenhub
from ieqa.data.loaders.manifest import load_manifest
from ieqa.data.loaders.ntire import load_ntire
from ieqa.data.loaders.shapesedit import load_shapesedit
from ieqa.registry import BENCHMARKS

_ENTRIES = (
    (genai_bench.NAME, "GenAI-Bench image editing: 919 human pairwise votes (A>B, B>A, tie, both bad) "
     "between two editors' outputs", load_genai_bench, ("pairwise", "human", "public")),
    (imagenhub.NAME, "ImagenHub human ratings: [SC, PQ] from 3 raters per edit, overall sqrt(SC*PQ)",
     load_imagenhub, ("pointwise", "human", "public")),
    (editreward_bench.NAME, "EditReward-Bench (TIGER): multi-way rankings of K=2/3/4 candidate edits",
     load_editreward_bench, ("multiway", "pairwise", "human", "public")),
    (editscore_bench.NAME, "EditScore's EditReward-Bench: preferred-first pairs, 13 task types, "
     "3 dimensions", load_editscore_bench, ("pairwise", "human", "public")),
    (ebench.NAME, "EBench-18K (LMM4Edit): 0-100 MOS for visual quality, editing alignment and "
     "attribute preservation", load_ebench, ("pointwise", "human", "public")),
    (aurora.NAME, "AURORA: ground-truth edit triplets, or AURORA-Bench pointwise/pairwise human ratings",
     load_aurora, ("pointwise", "pairwise", "public")),
    (ntire.NAME, "NTIRE X-AIGC track 2 style MOS table: per-dimension MOS, in/out-of-distribution split",
     load_ntire, ("pointwise", "human", "challenge")),
    (shapesedit.NAME, "ShapesEdit folder: synthetic edits with exact 1-5 ground truth (view= pointwise, "
     "pairwise or multiway)", load_shapesedit, ("pointwise", "pairwise", "multiway", "synthetic", "offline")),
    (manifest.NAME, "Any ieqa manifest (pointwise) or preference file (pairwise/multiway)",
     load_manifest, ("pointwise", "pairwise", "multiway", "offline")),
)

for _name, _description, _factory, _tags in _ENTRIES:
    if _name not in BENCHMARKS.names():
        BENCHMARKS.add(_name, _description, factory=_factory, tags=_tags)

__all__ = [
    "BenchmarkData", "BenchmarkFormatError", "load_aurora",
    "load_benchmark", "load_ebench", "load_editreward_bench", "load_editscore_bench",
    "load_genai_bench", "load_imagenhub", "load_manifest", "load_ntire",
    "load_shapesedit", "preferences_from_groups", "sniff_format", "supported_formats",
]
