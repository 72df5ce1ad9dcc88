"""What a curation pass works on: the keep rule (:class:`KeepRule`) and the per-row numbers of
pass 1 (:class:`Columns`), shared by the selection and its report."""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass
from typing import Literal

from ieqa.curate.source import CurateError, ScoredRow

__all__ = ["Columns", "KeepRule"]

_NONE = "(none)"


@dataclass(frozen=True)
class KeepRule:
    """What to keep: ``top-k`` (``value`` = N, an integer >= 1), ``threshold`` (``value``
    = X: keep rewards >= X) or ``quantile`` (``value`` = Q in [0, 1): keep rewards >= the
    Q-quantile, i.e. about the top ``1 - Q``)."""

    kind: Literal["top-k", "threshold", "quantile"]
    value: float

    @classmethod
    def parse(cls, text: str) -> KeepRule:
        """``"top-k=20000"``, ``"threshold=3.5"`` or ``"quantile=0.9"``."""
        m = re.fullmatch(r"\s*(top-k|threshold|quantile)\s*=\s*(\S+)\s*", text or "")
        if m is None:
            raise CurateError(f"--keep {text!r}: write top-k=N, threshold=X or quantile=Q "
                              "(e.g. top-k=20000, threshold=3.5, quantile=0.9)")
        kind, raw = m.group(1), m.group(2)
        try:
            value = float(raw)
        except ValueError:
            raise CurateError(f"--keep {text!r}: {raw!r} is not a number") from None
        rule = cls(kind, value)  # type: ignore[arg-type]
        rule.check()
        return rule

    def check(self) -> None:
        """Raise :class:`CurateError` when ``value`` is out of range for ``kind``."""
        v = self.value
        if self.kind == "top-k" and not (math.isfinite(v) and v >= 1 and v == int(v)):
            raise CurateError(f"top-k needs a whole number >= 1, got {v:g}")
        if self.kind == "quantile" and not 0.0 <= v < 1.0:
            raise CurateError(f"quantile needs Q in [0, 1) (0.9 keeps about the top 10%), got {v:g}")
        if self.kind == "threshold" and not math.isfinite(v):
            raise CurateError(f"threshold needs a finite number, got {v}")

    def __str__(self) -> str:
        return f"{self.kind}={int(self.value) if self.kind == 'top-k' else f'{self.value:g}'}"


class Columns:
    """Pass 1's per-row numbers, in growable typed arrays."""

    def __init__(self) -> None:
        self.reward = array("d")
        self.sigma = array("d")
        self.status = array("b")
        self.task = array("i")
        self.editor = array("i")
        self.dims: dict[str, array] = {}
        self.codes: dict[str, dict[str, int]] = {"task": {}, "editor": {}}
        self.first_error: str | None = None

    def code(self, kind: str, value: str | None) -> int:
        """The integer code of ``value`` in the ``kind`` table (task or editor), new ones
        numbered in order of appearance."""
        table = self.codes[kind]
        key = _NONE if value is None else str(value)
        return table.setdefault(key, len(table))

    def add(self, row: ScoredRow, status: int) -> None:
        """Append one scored row (its reward, sigma, status, task, editor and scores)."""
        n = len(self.reward)
        rw = row.reward
        if rw.error is not None and self.first_error is None:
            self.first_error = f"{row.id}: {rw.error}"
        self.reward.append(math.nan if rw.reward is None else rw.reward)
        self.sigma.append(math.inf if rw.sigma is None else rw.sigma)
        self.status.append(status)
        self.task.append(self.code("task", row.fields.get("task")))
        self.editor.append(self.code("editor", row.fields.get("editor")))
        for d, v in row.result.scores.items():
            col = self.dims.get(d)
            if col is None:
                col = self.dims[d] = array("f", [math.nan]) * n
            col.append(v)
        for col in self.dims.values():
            if len(col) == n:
                col.append(math.nan)

    def names(self, kind: str) -> list[str]:
        """The values of the ``kind`` table, indexed by their code."""
        table = self.codes[kind]
        out = [""] * len(table)
        for name, code in table.items():
            out[code] = name
        return out
