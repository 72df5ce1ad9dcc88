"""The scorer table and the registry functions: :func:`create_scorer`, :func:`list_scorers`.

Every scorer is one :class:`~ieqa.scorers.base.ScorerInfo` row below plus one module;
the module is imported only when the scorer is built, so listing scorers stays cheap.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.registry import SCORERS
from ieqa.scorers.base import Scorer, ScorerError, ScorerInfo

__all__ = ["SCORER_TABLE", "create_scorer", "list_scorers", "scorer_info"]

_METRIC = "ieqa.scorers.classic.metric:MetricScorer"
_PRESERVATION = ("content_preservation",)
_QUALITY = ("visual_quality",)


def _fr(name: str, description: str, *, higher_better: bool = True, units: str = "",
        score_range: tuple[float | None, float | None] = (0.0, 1.0)) -> ScorerInfo:
    return ScorerInfo(name, description, "full-reference", _PRESERVATION, higher_better,
                      needs_source=True, factory=_METRIC, score_range=score_range,
                      units=units, defaults={"metric": name})


def _nr(name: str, description: str, *, higher_better: bool, units: str,
        score_range: tuple[float | None, float | None]) -> ScorerInfo:
    return ScorerInfo(name, description, "no-reference", _QUALITY, higher_better,
                      needs_source=False, factory=_METRIC, score_range=score_range,
                      units=units, defaults={"metric": name})


#: The declarative table of every built-in scorer.
SCORER_TABLE: tuple[ScorerInfo, ...] = (
    ScorerInfo(
        "classic",
        "Weight-free default: preservation outside the estimated edit region, NR quality plus "
        "local naturalness; alignment unavailable (use a VLM scorer)",
        "composite",
        ("visual_quality", "content_preservation", "instruction_alignment"),
        higher_better=True, needs_source=True, factory="ieqa.scorers.classic.composite:ClassicScorer",
        score_range=(1.0, 5.0), units="1-5 scale", extras=()),
    _fr("psnr", "Peak signal-to-noise ratio of the edited image against the source (RGB, as "
        "scikit-image; channel='y' for the Y channel)",
        units="dB", score_range=(0.0, None)),
    _fr("ssim", "Structural similarity (Wang et al. 2004, MATLAB conventions) against the source",
        score_range=(-1.0, 1.0)),
    _fr("ms_ssim", "Multi-scale SSIM (Wang et al. 2003) against the source"),
    _fr("gmsd", "Gradient magnitude similarity deviation (Xue et al. 2014); lower is better",
        higher_better=False, score_range=(0.0, None)),
    _fr("vif", "Visual information fidelity (Sheikh & Bovik 2006, wavelet domain); above 1 "
        "when the edit adds contrast",
        score_range=(0.0, None)),
    _fr("fsim", "Feature similarity (Zhang et al. 2011, FSIMc on colour): phase congruency and "
        "gradients"),
    _nr("niqe", "Natural image quality evaluator (Mittal et al. 2013), pristine model fitted "
        "offline; lower is better", higher_better=False, units="distance",
        score_range=(0.0, None)),
    _nr("piqe", "Perception-based image quality evaluator (Venkatanath et al. 2015); lower is "
        "better", higher_better=False, units="0-100", score_range=(0.0, 100.0)),
)


def _register() -> None:
    for info in SCORER_TABLE:
        SCORERS.add(info.name, info.description, tags=(info.kind, *info.dimensions), info=info)


_register()


def scorer_info(name: str) -> ScorerInfo:
    """The :class:`ScorerInfo` of a registered scorer (``KeyError`` lists the known names)."""
    return SCORERS.get(name).info


def list_scorers(*, kind: str | None = None, dimension: str | None = None,
                 needs_source: bool | None = None) -> list[str]:
    """Names of the registered scorers, optionally filtered.

    Args:
        kind: ``full-reference``, ``no-reference``, ``composite``, ``vlm`` or ``learned``.
        dimension: only scorers that output this dimension (aliases accepted).
        needs_source: ``False`` for scorers that work on the edited image alone.
    """
    dim = canonical_dimension(dimension) if dimension is not None else None
    out = []
    for entry in SCORERS:
        info: ScorerInfo = entry.info
        if kind is not None and info.kind != kind:
            continue
        if dim is not None and dim not in info.dimensions:
            continue
        if needs_source is not None and info.needs_source != needs_source:
            continue
        out.append(info.name)
    return out


def _import_factory(info: ScorerInfo) -> Any:
    module, _, attr = info.factory.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        hint = f" (pip install 'ieqa[{','.join(info.extras)}]')" if info.extras else ""
        raise ScorerError(f"scorer {info.name!r} cannot be imported: {exc}{hint}") from exc


def create_scorer(name: str, **overrides: Any) -> Scorer:
    """Build a registered scorer, e.g. ``create_scorer("classic")`` or
    ``create_scorer("ssim", channel="grey")``.

    Keyword arguments override the scorer's defaults; an argument the scorer does not take
    raises :class:`~ieqa.scorers.base.ScorerError` listing the ones it does.
    """
    info = scorer_info(name)
    factory = _import_factory(info)
    kwargs = {**info.defaults, **overrides}
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        params = {}
    if params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            accepted = sorted(k for k in params if k not in info.defaults and k != "self")
            raise ScorerError(f"scorer {name!r} takes no argument(s) {', '.join(unknown)}; "
                              f"it accepts: {', '.join(accepted) or 'none'}")
    scorer = factory(**kwargs)
    scorer.info = info
    return scorer
