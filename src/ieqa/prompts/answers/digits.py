"""DS-IEQA §3.2-3.4 digit answers: a score written ``d.dd`` (``"3.46"``) after
``"<Dimension> score: "`` — the writers :func:`format_digits` / :func:`digits_target` and the
strict reader :func:`digit_values` (the free-text reader is
:func:`~ieqa.prompts.answers.parse_text_score`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ieqa.errors import TrainDataError
from ieqa.prompts.answers._text import bounds_pair, clip, rescale

__all__ = ["digit_values", "digits_target", "format_digits"]

_DIGITS = re.compile(r"\s*(\d)\.(\d)(\d)\s*")


def format_digits(value: float) -> str:
    """``value`` written as ``d.dd`` (0.00-9.99), the DS-IEQA answer format; raises
    :class:`~ieqa.errors.TrainDataError` outside [0, 9.99]."""
    if not 0.0 <= value < 9.995:
        raise TrainDataError(f"a digit score must lie in [0, 9.99], got {value}; rescale the "
                             "ground truth to the template's scale")
    return f"{value:.2f}"


def digits_target(score: float, *, scale: Sequence[float] = (1, 5),
                  template_scale: Sequence[float] = (1, 5)) -> str:
    """DS-IEQA digit target: ``score`` as ``"d.dd"`` on the template's scale.

    ``score`` is on the data scale ``scale`` (e.g. ``(0, 100)`` for EditHF MOS); it is
    mapped linearly onto ``template_scale`` (the ``ds-ieqa-digits`` template asks for
    1-5), clipped into ``template_scale`` (so rounding noise such as 5.0000001 stays
    writable) and formatted with :func:`format_digits`
    (two decimals, round half to even on the binary value). ``template_scale`` must lie in
    [0, 9.99] (one integer digit). Returns the text that follows the answer prefix
    ``"<Dimension> score: "``, e.g. ``digits_target(3.456) == "3.46"``.
    """
    tlo, thi = bounds_pair(template_scale, "template_scale")
    if not 0.0 <= tlo < thi < 9.995:
        raise TrainDataError("template_scale must satisfy 0 <= low < high <= 9.99 (the d.dd "
                             f"format has one integer digit), got {tuple(template_scale)!r}")
    value = clip(rescale(score, scale, (tlo, thi)), (tlo, thi))
    return format_digits(value)


def digit_values(text: str) -> list[int]:
    """The three digits ``[d0, d1, d2]`` of a ``"d.dd"`` target (surrounding whitespace
    allowed): ``digit_values("3.46") == [3, 4, 6]``. These are the ground-truth digits
    ``g_t`` of DS-IEQA's TDRL loss and Definition Value. Raises :class:`TrainDataError`
    for any other text."""
    m = _DIGITS.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise TrainDataError(f"expected a 'd.dd' digit target such as '3.46', got {text!r}")
    return [int(g) for g in m.groups()]
