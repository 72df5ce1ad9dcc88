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
from ieqa.data.loaders.mmrb2 import load_mmrb2_edit
from ieqa.data.loaders.ntire import load_ntire
from ieqa.data.loaders.shapesedit import load_shapesedit

__all__ = [
    "BenchmarkData", "BenchmarkFormatError", "load_aurora",
    "load_benchmark", "load_ebench", "load_editreward_bench", "load_editscore_bench",
    "load_genai_bench", "load_imagenhub", "load_manifest", "load_mmrb2_edit", "load_ntire",
    "load_shapesedit", "preferences_from_groups", "sniff_format", "supported_formats",
]
