"""Building a scorer from its table row (the second layer of the scorer factory): import its
module, check the options against its signature and their types, construct it."""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from typing import Any

from ieqa.scorers.base import Scorer, ScorerError, ScorerInfo
from ieqa.scorers.table import scorer_info

__all__ = ["SERVER_OPTIONS", "build_scorer", "wraps_checkpoint"]


def _import_factory(info: ScorerInfo) -> Any:
    module, _, attr = info.factory.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        hint = f" (pip install 'ieqa[{','.join(info.extras)}]')" if info.extras else ""
        raise ScorerError(f"scorer {info.name!r} cannot be imported: {exc}{hint}") from exc


def build_scorer(name: str, **overrides: Any) -> Scorer:
    """Build the registered scorer ``name`` from its table row: the row's defaults, then
    ``overrides`` (each checked against the factory's signature and option types).
    ``checkpoint=`` reaches only scorers that take it themselves
    (:func:`wraps_checkpoint`); :func:`~ieqa.scorers.catalog.create_scorer` rebuilds other
    checkpoints through :mod:`ieqa.scorers.checkpoint`."""
    if overrides.get("checkpoint") is None:
        overrides.pop("checkpoint", None)
    info = scorer_info(name)
    factory = _import_factory(info)
    params = _accepted_params(factory)
    overrides = _server_options(name, overrides, params)
    kwargs = {**info.defaults, **overrides}
    if params is not None:
        unknown = sorted(set(kwargs) - params)
        if unknown:
            accepted = sorted(k for k in params if k not in info.defaults)
            raise ScorerError(f"scorer {name!r} takes no argument(s) {', '.join(unknown)}; "
                              f"it accepts: {', '.join(accepted) or 'none'}")
    _check_option_types(name, factory, overrides)
    scorer = factory.__new__(factory) if isinstance(factory, type) else None
    if scorer is not None:
        scorer.info = info  # known while __init__ runs (error messages use the name)
        scorer.__init__(**kwargs)
    else:  # pragma: no cover - function factories
        scorer = factory(**kwargs)
        scorer.info = info
    return scorer


#: options every judge on an OpenAI-compatible server takes (``-O timeout=S``), as the
#: backend's arguments they become (a ``backend_options`` entry of the same name wins)
SERVER_OPTIONS: dict[str, str] = {"timeout": "timeout_s",
                                  "max_consecutive_failures": "max_consecutive_failures"}


def _server_options(name: str, overrides: dict[str, Any],
                    params: set[str] | None) -> dict[str, Any]:
    """``overrides`` with :data:`SERVER_OPTIONS` moved into ``backend_options``."""
    given = {k: overrides[k] for k in SERVER_OPTIONS if k in overrides}
    if not given:
        return overrides
    if params is not None and "backend_options" not in params:
        raise ScorerError(f"scorer {name!r} sends no requests to a server; "
                          f"{', '.join(sorted(given))} applies to judges on an OpenAI-compatible "
                          "server (-O base_url=URL)")
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                or (key == "timeout" and value == 0):
            raise ScorerError(f"scorer {name!r}: -O {key} takes a "
                              + ("number of seconds > 0" if key == "timeout"
                                 else "whole number >= 0 (0: never stop)") + f", got {value!r}")
    rest = {k: v for k, v in overrides.items() if k not in SERVER_OPTIONS}
    options = dict(rest.get("backend_options") or {})
    for key, value in given.items():
        options.setdefault(SERVER_OPTIONS[key], value)
    rest["backend_options"] = options
    return rest


def wraps_checkpoint(name: str) -> bool:
    """True for a registered scorer that takes ``checkpoint=`` itself (``critique`` loads
    a ``re-reward`` checkpoint as its readout) instead of being rebuilt from one."""
    try:
        info = scorer_info(name)
    except KeyError:
        return False
    factory = _import_factory(info)
    target = factory.__init__ if isinstance(factory, type) else factory
    try:
        return "checkpoint" in inspect.signature(target).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return False


_SIMPLE_TYPES: dict[Any, tuple[str, Any]] = {
    float: ("a number", (int, float)), int: ("a whole number", (int,)),
    bool: ("true or false", (bool,)), str: ("text", (str,)),
}


def _check_option_types(name: str, factory: Any, options: dict[str, Any]) -> None:
    """Raise :class:`ScorerError` when an option's value does not have the type the
    factory's signature declares (``-O sigma=abc`` for a float). Only plain ``float``,
    ``int``, ``bool`` and ``str`` (optionally ``| None``, or unions of them) are
    checked; other annotations are left to the scorer."""
    owners = [c for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(factory, type) else [factory]
    hints: dict[str, Any] = {}
    for owner in reversed(owners):
        target = owner.__init__ if isinstance(owner, type) else owner
        try:
            hints.update(typing.get_type_hints(target))
        except Exception:  # noqa: BLE001 - an annotation that cannot be resolved: no check
            continue
    for key, value in options.items():
        hint = hints.get(key)
        if hint is None:
            continue
        members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        if value is None and type(None) in members:
            continue
        simple = [m for m in members if m in _SIMPLE_TYPES]
        if len(simple) != len([m for m in members if m is not type(None)]):
            continue  # another type among them: the scorer checks it
        ok = any(isinstance(value, _SIMPLE_TYPES[m][1]) and not (isinstance(value, bool) and m is not bool)
                 for m in simple)
        if not ok:
            wanted = " or ".join(_SIMPLE_TYPES[m][0] for m in simple)
            raise ScorerError(f"scorer {name!r}: option {key} takes {wanted}, got {value!r} "
                              f"(-O {key}=VALUE)")


def _accepted_params(factory: Any) -> set[str] | None:
    """Keyword arguments a factory accepts, following ``**kwargs`` up a class's MRO
    (``None`` when they cannot be determined)."""
    owners = [c for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(factory, type) else [factory]
    names: set[str] = set()
    for owner in owners:
        target = owner.__init__ if isinstance(owner, type) else owner
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
            return None
        names |= {k for k, p in params.items()
                  if k != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return names
    return None
