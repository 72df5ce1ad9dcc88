"""Input validation shared by the metric functions (private).

Every check raises :class:`MetricInputError` naming the offending argument, so callers
see ``pred has 3 NaN values`` rather than a NaN result or a numpy traceback.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ieqa.errors import IeqaError

NanPolicy = Literal["raise", "omit"]


class MetricInputError(IeqaError, ValueError):
    """A metric received input it cannot score (wrong shape, NaN, constant, too few items)."""


def as_float_array(x: object, name: str, *, ndim: int = 1, what: str = "",
                   error: type[Exception] = MetricInputError) -> np.ndarray:
    """``x`` as a float64 array of ``ndim`` dimensions: the one coercion of numeric input;
    ``error`` (default :class:`MetricInputError`) names ``name`` and ``what`` (the shape
    wanted, in words: ``"(n_items, n_raters)"``)."""
    wanted = f" {what}" if what else ""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be numeric{wanted}, got {type(x).__name__}: {exc}") from None
    if arr.ndim != ndim:
        raise error(f"{name} must be {ndim}-D{wanted}, got shape {arr.shape}")
    return arr


def as_1d_float(x: object, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array; raises :class:`MetricInputError` naming ``name``."""
    return as_float_array(x, name)


def as_1d(x: object, name: str) -> np.ndarray:
    """``x`` as a 1-D array of any dtype (group ids, labels, task names)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise MetricInputError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def check_same_length(arrays: dict[str, np.ndarray]) -> int:
    """Common length of ``arrays``; raises naming every length when they differ."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise MetricInputError(f"length mismatch: {listed}")
    return next(iter(lengths.values()))


def check_nan_policy(nan_policy: str) -> None:
    """Raise :class:`MetricInputError` unless ``nan_policy`` is ``raise`` or ``omit``."""
    if nan_policy not in ("raise", "omit"):
        raise MetricInputError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r}")


def finite_mask(arrays: dict[str, np.ndarray], nan_policy: str) -> np.ndarray | None:
    """Rows to keep under ``nan_policy``, or ``None`` when every row is kept.

    NaN: ``"raise"`` raises naming how many NaNs each array holds; ``"omit"`` drops a row
    when any array has a NaN there. ``±inf`` always raises (it is never a missing value).
    """
    check_nan_policy(nan_policy)
    keep: np.ndarray | None = None
    for name, arr in arrays.items():
        if np.isinf(arr).any():
            raise MetricInputError(f"{name} has {int(np.isinf(arr).sum())} infinite values")
        nan = np.isnan(arr)
        n_nan = int(nan.sum())
        if n_nan == 0:
            continue
        if nan_policy == "raise":
            raise MetricInputError(
                f"{name} has {n_nan} NaN value{'s' if n_nan > 1 else ''} (of {len(arr)}); "
                "pass nan_policy='omit' to drop pairs with a NaN in either array"
            )
        keep = ~nan if keep is None else keep & ~nan
    return keep


def paired(
    pred: object,
    target: object,
    *,
    nan_policy: str = "raise",
    higher_better: bool = True,
    min_items: int = 2,
    names: tuple[str, str] = ("pred", "target"),
) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(pred, target)`` float arrays, NaN rows handled, ``pred`` sign-flipped
    when ``higher_better`` is False (so a lower-is-better metric correlates positively)."""
    p = as_1d_float(pred, names[0])
    t = as_1d_float(target, names[1])
    check_same_length({names[0]: p, names[1]: t})
    keep = finite_mask({names[0]: p, names[1]: t}, nan_policy)
    if keep is not None:
        p, t = p[keep], t[keep]
    if len(p) < min_items:
        extra = " after dropping NaN pairs" if keep is not None else ""
        raise MetricInputError(
            f"need at least {min_items} (pred, target) pairs{extra}, got {len(p)}"
        )
    if not higher_better:
        p = -p
    return p, t


def check_not_constant(arr: np.ndarray, name: str, what: str) -> None:
    """Raise when ``arr`` is constant: ``what`` (e.g. ``"SRCC"``) is undefined then."""
    if arr.size and arr.max() == arr.min():
        raise MetricInputError(f"{what} is undefined: {name} is constant ({arr[0]!r})")


def check_choice(value: object, name: str, choices: tuple[object, ...]) -> None:
    """Raise :class:`MetricInputError` naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise MetricInputError(f"{name} must be one of {choices}, got {value!r}")
