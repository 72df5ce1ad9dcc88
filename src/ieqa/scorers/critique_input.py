"""Where a scorer of critiques reads the critique of an edit: :data:`CRITIQUE_KEYS` of
``EditSample.meta`` and :func:`critique_text` (used by the ``critique`` scorer and by the
released RE-Reward, ``re-reward``)."""

from __future__ import annotations

from collections.abc import Iterable

from ieqa.data.schema import EditSample

__all__ = ["CRITIQUE_KEYS", "critique_text"]

#: ``EditSample.meta`` keys read for the critique text, in order.
CRITIQUE_KEYS: tuple[str, ...] = ("critique", "completion")


def critique_text(sample: EditSample, keys: Iterable[str] = CRITIQUE_KEYS) -> str | None:
    """The critique of ``sample``: the first non-empty ``sample.meta[key]`` of ``keys``
    (``meta["critique"]``, then the TRL adapter's ``meta["completion"]``), or None."""
    for key in keys:
        value = sample.meta.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None
