"""The JSON contract of ``ieqa serve`` (API v1), as pydantic models.

The FastAPI app validates requests with these models and publishes them in its OpenAPI
schema; :class:`ieqa.rewards.RewardClient` and the in-process rewarders return the same
response models, so code written against one works against the other.

Images travel as strings: base64 of the encoded file (PNG, JPEG, WebP...) or a data URL
(``data:image/png;base64,...``); a file path only when the server was started with
``--allow-root DIR`` and only inside that folder. The server never fetches a URL.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "API_VERSION", "CompareGroup", "CompareRequest", "CompareResponse", "CritiqueItem",
    "CritiqueRequest", "CritiqueResponse", "CritiqueResult", "ErrorResponse",
    "GroupResult", "InfoResponse", "ItemResult", "ScoreItem", "ScoreRequest", "ScoreResponse",
]

#: the API version in every path (``/v1/...``) and in ``/v1/info``
API_VERSION = "v1"

_IMAGE = ("base64 of an encoded image file, or a data URL (data:image/png;base64,...); a file "
          "path only when the server runs with --allow-root, and only inside that folder")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScoreItem(_Strict):
    """One edit to score."""

    id: str | None = Field(None, max_length=512,
                           description="caller's id, echoed back (default: the item's position, '0', '1', ...)")
    source: str = Field(..., min_length=1, description="the source image: " + _IMAGE)
    edited: str = Field(..., min_length=1, description="the edited image: " + _IMAGE)
    instruction: str = Field("", description="the editing instruction (required by VLM scorers)")


class ScoreRequest(_Strict):
    """``POST /v1/score``."""

    items: list[ScoreItem] = Field(..., min_length=1, description="the edits, scored independently")
    dimensions: list[str] | None = Field(
        None, description="return only these dimensions' scores (names or aliases); the reward "
                          "still uses every dimension its rule needs")


class ItemResult(_Strict):
    """The outcome of one item; a bad item has ``error`` set and never fails its neighbours."""

    id: str
    scores: dict[str, float] = Field(default_factory=dict,
                                     description="per-dimension scores on the scorer's scale (see /v1/info)")
    sigma: dict[str, float] | None = Field(None, description="per-dimension standard deviation, "
                                                             "for scorers that report one")
    unavailable: dict[str, str] = Field(default_factory=dict,
                                        description="dimensions the scorer cannot measure here, and why")
    overall: float | None = Field(None, description="the reward rule's combination of the scores")
    reward: float | None = Field(None, description="the reward: overall minus the uncertainty "
                                                   "penalty, or the floor for a flagged edit")
    floored: bool = Field(False, description="true when reward is the floor because of a flag")
    flags: list[str] = Field(default_factory=list,
                             description="degenerate-output flags: blank, transparent, tiny, no_op, unrelated")
    error: str | None = Field(None, description="why this item has no scores or no reward")


class ScoreResponse(_Strict):
    """Answer of ``POST /v1/score``: one result per item, in request order."""

    results: list[ItemResult]
    n_ok: int = Field(..., description="items with a reward")
    n_failed: int = Field(..., description="items with an error")
    scorer: str
    reward_rule: dict[str, Any] = Field(..., description="the rule that made `reward` (as /v1/info)")


class CompareGroup(_Strict):
    """K >= 2 candidate edits of one source under one instruction (a pair is K = 2)."""

    id: str | None = Field(None, max_length=512, description="caller's id, echoed back")
    source: str = Field(..., min_length=1, description="the source image: " + _IMAGE)
    instruction: str = Field("", description="the editing instruction")
    candidates: list[str] = Field(..., min_length=2, description="the edited images: " + _IMAGE)


class CompareRequest(_Strict):
    """``POST /v1/compare``."""

    groups: list[CompareGroup] = Field(..., min_length=1)


class GroupResult(_Strict):
    """Preferences among one group's candidates.

    ``preference[i][j]`` is P(candidate i is better than candidate j): with σ,
    ``E[sigmoid(z)]``, ``z ~ N(r_i - r_j, σ_i² + σ_j²)`` (EditReward / HPSv3); without σ,
    ``sigmoid(r_i - r_j)`` (Bradley-Terry on the reward difference, so it depends on the
    reward's scale). ``None`` where either candidate failed. The diagonal is 0.5.
    """

    id: str
    candidates: list[ItemResult]
    preference: list[list[float | None]]
    ranking: list[int] = Field(..., description="candidate indices, best reward first (exact ties: "
                                                "lower sigma, then lower index); failed candidates "
                                                "are left out")
    ties: list[list[int]] = Field(default_factory=list,
                                  description="pairs (i, j), i < j, whose rewards differ by at most the "
                                              "server's tie threshold")


class CompareResponse(_Strict):
    """Answer of ``POST /v1/compare``."""

    results: list[GroupResult]
    scorer: str
    reward_rule: dict[str, Any]
    tie_threshold: float = Field(..., description="|r_i - r_j| at or below this is a tie")


class CritiqueItem(_Strict):
    """One critique of one edit to judge (RE-Reward, ``POST /v1/critique``)."""

    id: str | None = Field(None, max_length=512,
                           description="caller's id, echoed back (default: the item's position)")
    source: str = Field(..., min_length=1, description="the source image: " + _IMAGE)
    edited: str = Field(..., min_length=1, description="the edited image: " + _IMAGE)
    instruction: str = Field(..., min_length=1, description="the editing instruction")
    critique: str = Field(..., min_length=1, max_length=65536,
                          description="the critique of the edit to judge (plain text)")


class CritiqueRequest(_Strict):
    """``POST /v1/critique``."""

    items: list[CritiqueItem] = Field(..., min_length=1, description="the critiques, judged "
                                                                     "independently")


class CritiqueResult(_Strict):
    """The judgement of one critique; a bad item has ``error`` set and never fails its
    neighbours."""

    id: str
    logicality: float | None = Field(None, description="coherence of the critique's reasoning")
    accuracy: float | None = Field(None, description="factual faithfulness to the images and "
                                                     "the instruction")
    usefulness: float | None = Field(None, description="how actionable and informative it is")
    reward: float | None = Field(None, description="the weighted sum of the three (see weights)")
    flags: list[str] = Field(default_factory=list,
                             description="degenerate-output flags of the edited image")
    error: str | None = Field(None, description="why this critique has no scores")


class CritiqueResponse(_Strict):
    """Answer of ``POST /v1/critique``: one result per item, in request order."""

    results: list[CritiqueResult]
    n_ok: int = Field(..., description="critiques with a reward")
    n_failed: int = Field(..., description="critiques with an error")
    scorer: str
    weights: dict[str, float] = Field(..., description="reward weights of logicality, accuracy "
                                                       "and usefulness (sum 1)")


class InfoResponse(_Strict):
    """``GET /v1/info``."""

    api_version: str
    ieqa_version: str
    scorer: str
    scorer_config: dict[str, Any]
    dimensions: list[str]
    higher_better: bool
    score_range: list[float | None]
    units: str
    has_sigma: bool
    reward_rule: dict[str, Any]
    model: str | None = Field(None, description="model reference (hub id, local path or checkpoint)")
    max_batch: int
    max_wait_ms: float


class ErrorResponse(BaseModel):
    """The body of every error status (401, 403, 413, 422, 429, 503, 504): ``detail`` says
    what went wrong and what to do; a 422 lists each invalid field with its location
    (``loc``, e.g. ``["body", "items", 0, "source"]``) and ``error`` names them in one line."""

    detail: Any
    error: str | None = Field(None, description="422 only: the invalid fields, one line")
