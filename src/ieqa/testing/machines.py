"""CPU kernel profiles: run the same code as it runs on another kind of x86 machine.

Float sums differ with the kernels a CPU runs (AVX-512, AVX2 or plain SSE code in torch,
in MKL's BLAS and in oneDNN), so a learning test's numbers differ from one machine to
the next even with every seed fixed. Each profile below caps the three libraries at one
instruction set through their environment variables, so one machine can produce the
numbers of the others (an AVX-512 Xeon can run its AVX2 and SSE paths; an AVX2 EPYC its
SSE path). ``scripts/test_machines.py`` (``make test-machines``) runs the learning tests
under each profile the CPU supports, and ``benchmarks/recipe_spread.py --profiles`` measures
a recipe's spread over them.

The variables must be set before torch is imported: use :func:`profile_env` for a child
process's environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["NATIVE", "PROFILES", "cpu_flags", "profile_env", "supported_profiles"]

#: profile -> (the CPU flag it needs, its environment). ``ATEN_CPU_CAPABILITY`` picks
#: torch's own vectorised kernels, ``MKL_ENABLE_INSTRUCTIONS`` MKL's (matmuls, BLAS),
#: ``ONEDNN_MAX_CPU_ISA`` oneDNN's (convolutions, some linear layers).
PROFILES: dict[str, tuple[str, dict[str, str]]] = {
    "avx512": ("avx512f", {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512",
                           "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}),
    "avx2": ("avx2", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                      "ONEDNN_MAX_CPU_ISA": "AVX2"}),
    "default": ("sse4_2", {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                           "ONEDNN_MAX_CPU_ISA": "SSE41"}),
}


#: no caps: each library picks the widest code path this CPU has
NATIVE = "native"


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The instruction-set flags of this machine's first CPU (empty where unknown)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def supported_profiles(flags: set[str] | None = None) -> list[str]:
    """The profiles this CPU can run, widest first."""
    have = cpu_flags() if flags is None else flags
    return [name for name, (flag, _) in PROFILES.items() if flag in have]


def profile_env(profile: str, threads: int, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``profile``'s kernel caps (none for :data:`NATIVE`) and ``threads``
    torch/OpenMP/MKL threads (``IEQA_NUM_THREADS`` too, which ieqa's commands and the tests
    read), waiting threads asleep (``OMP_WAIT_POLICY=PASSIVE``, as ieqa's commands set it:
    several such processes on few cores would otherwise spin against each other; the numbers
    do not change).

    Raises:
        ValueError: an unknown profile, or ``threads`` < 1.
    """
    if profile != NATIVE and profile not in PROFILES:
        raise ValueError(f"unknown CPU profile {profile!r}; choose from {', '.join(PROFILES)} "
                         f"or {NATIVE}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    n = str(threads)
    caps = {} if profile == NATIVE else PROFILES[profile][1]
    return {**base, **caps, "IEQA_NUM_THREADS": n, "OMP_NUM_THREADS": n,
            "MKL_NUM_THREADS": n, "OMP_WAIT_POLICY": "PASSIVE"}
