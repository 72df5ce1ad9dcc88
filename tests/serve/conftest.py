"""Fixtures for the client and adapter tests: a tiny scorer whose scores are worked out by
hand, and an ``httpx.MockTransport`` that answers API v1 with :class:`LocalRewarder`'s
output (the server's contract, without the server)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import pytest

import ieqa
from ieqa.data.schema import EditSample
from ieqa.rewards import LocalRewarder
from ieqa.rewards.schema import CompareRequest, ScoreRequest
from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo


class PixelMeanScorer(Scorer):
    """``visual_quality`` = mean edited pixel / 51 (0-5); ``content_preservation`` =
    5 - mean |edited - source| / 51. An instruction ``"fail"`` makes the item fail."""

    info = ScorerInfo(name="pixel-mean", description="test scorer", kind="full-reference",
                      dimensions=("visual_quality", "content_preservation"), higher_better=True,
                      needs_source=True, factory="tests.serve.conftest:PixelMeanScorer",
                      score_range=(0.0, 5.0), units="0-5")

    def score_sample(self, sample: EditSample) -> ScoreResult:
        if sample.instruction == "fail":
            raise ValueError("asked to fail")
        src = np.asarray(sample.source, dtype=np.float64)
        out = np.asarray(sample.edited, dtype=np.float64)
        cp = 5.0 - float(np.abs(out - src).mean()) / 51 if src.shape == out.shape else 0.0
        return ScoreResult(id=sample.id, scores={"visual_quality": float(out.mean()) / 51,
                                                 "content_preservation": cp})


class CritiqueLengthScorer(Scorer):
    """``usefulness`` = words in ``meta["completion"]``, at most 5 (a stand-in critique
    scorer: it judges text written about the edit)."""

    info = ScorerInfo(name="critique-length", description="test scorer", kind="learned",
                      dimensions=("usefulness",), higher_better=True, needs_source=False,
                      factory="tests.serve.conftest:CritiqueLengthScorer", score_range=(0.0, 5.0))

    def score_sample(self, sample: EditSample) -> ScoreResult:
        text = sample.meta["completion"]
        return ScoreResult(id=sample.id, scores={"usefulness": float(min(5, len(text.split())))})


def grey(value: int, size: int = 64) -> np.ndarray:
    """A size x size RGB image of mean grey level ``value`` (8-247): one column 8 darker
    and one 8 lighter, so the mean is exactly ``value``."""
    img = np.full((size, size, 3), value, dtype=np.uint8)
    img[:, 0, :] = value - 8
    img[:, 1, :] = value + 8
    return img


@pytest.fixture
def rewarder() -> LocalRewarder:
    """PixelMeanScorer rewarded by its visual quality alone (reward = mean pixel / 51)."""
    return LocalRewarder(PixelMeanScorer(), rule="visual_quality")


def _decode(image: str) -> bytes:
    if image.startswith("data:"):
        image = image.split(",", 1)[1]
    return base64.b64decode(image)


@dataclass
class FakeServer:
    """The API v1 contract answered by a LocalRewarder; ``script`` holds canned answers
    (status, headers, body) given before the real ones."""

    rewarder: LocalRewarder
    script: list[tuple[int, dict[str, str], Any]] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)
    token: str | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            status, headers, body = self.script.pop(0)
            if isinstance(body, BaseException):
                raise body
            return httpx.Response(status, headers=headers, json=body)
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            return httpx.Response(401, json={"detail": "missing or wrong bearer token"})
        path = request.url.path
        if path == "/readyz":
            return httpx.Response(200, json={"status": "ready"})
        if path == "/v1/score":
            req = ScoreRequest.model_validate(json.loads(request.content))
            items = [{"id": it.id, "source": _decode(it.source), "edited": _decode(it.edited),
                      "instruction": it.instruction} for it in req.items]
            for i, it in enumerate(items):  # the server's default id is the position in the request
                it["id"] = it["id"] if it["id"] is not None else str(i)
            return httpx.Response(200, json=self.rewarder.score(items, req.dimensions).model_dump())
        if path == "/v1/compare":
            req = CompareRequest.model_validate(json.loads(request.content))
            groups = [{"id": g.id, "source": _decode(g.source), "instruction": g.instruction,
                       "candidates": [_decode(c) for c in g.candidates]} for g in req.groups]
            return httpx.Response(200, json=self.rewarder.compare(groups).model_dump())
        return httpx.Response(404, json={"detail": "Not Found"})

    def sizes(self, path: str) -> list[int]:
        """Items (or groups) per request to ``path``, in order."""
        key = "items" if path == "/v1/score" else "groups"
        return [len(json.loads(r.content)[key]) for r in self.requests if r.url.path == path]


@pytest.fixture
def fake_server(rewarder: LocalRewarder) -> FakeServer:
    return FakeServer(rewarder)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's waits between retries, recorded instead of slept."""
    waited: list[float] = []

    async def asleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr("ieqa.rewards.client._sleep", waited.append)
    monkeypatch.setattr("ieqa.rewards.client._asleep", asleep)
    return waited


def async_transport(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    """MockTransport serves sync and async clients alike."""
    return httpx.MockTransport(handler)


@pytest.fixture(scope="session")
def classic() -> Scorer:
    """The classic scorer, built once per session (the server tests share it)."""
    return ieqa.create_scorer("classic")
