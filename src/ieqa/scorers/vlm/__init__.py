"""VLM readouts: ``vlm-judge``, ``vlm-levels``, ``vlm-digits``, ``vlm-head``,
``vlm-gaussian``, ``vlm-dual`` and ``vlm-pairwise`` (build them with
:func:`ieqa.create_scorer`; each module's docstring gives the exact readout)."""

from ieqa.scorers.vlm.base import CORE_DIMENSIONS, LoadedSample, VLMScorer, share_key

__all__ = ["CORE_DIMENSIONS", "LoadedSample", "VLMScorer", "share_key"]
