"""RewardClient / AsyncRewardClient against an httpx.MockTransport that answers API v1
with LocalRewarder's output (see conftest.FakeServer): retries, errors, chunking, the
async client, and image encoding that reproduces local scores."""

from __future__ import annotations

import asyncio
import base64
import io
import json

import httpx
import numpy as np
import pytest
from PIL import Image

from ieqa.data.schema import EditSample
from ieqa.errors import ImageNotFoundError
from ieqa.rewards import (
    AsyncRewardClient,
    LocalRewarder,
    RewardClient,
    RewardServiceError,
    ServerPath,
)
from ieqa.rewards.client import encode_image

from .conftest import FakeServer, grey

URL = "http://127.0.0.1:8000"


def client_for(server: FakeServer, **kwargs) -> RewardClient:
    return RewardClient(URL, transport=httpx.MockTransport(server), **kwargs)


def test_score_matches_local_rewarder(fake_server: FakeServer, rewarder: LocalRewarder) -> None:
    items = [(grey(51), grey(102), "brighten"), (grey(51), grey(153), "fail"), (grey(51), grey(204), "brighten")]
    with client_for(fake_server) as client:
        remote = client.score(items)
    local = rewarder.score(items)
    assert remote == local
    # hand-worked: reward = mean edited pixel / 51
    assert [r.reward for r in remote.results] == [2.0, None, 4.0]
    assert remote.results[1].error == "ValueError: asked to fail"
    assert (remote.n_ok, remote.n_failed) == (2, 1)


def test_chunks_keep_order_and_sum_counts(fake_server: FakeServer) -> None:
    # 7 items, 3 per request -> requests of 3, 3, 1; item 4 fails
    values = [51, 102, 153, 204, 102, 51, 153]
    items = [{"source": grey(51), "edited": grey(v), "instruction": "fail" if i == 4 else "go"}
             for i, v in enumerate(values)]
    with client_for(fake_server, max_items_per_request=3) as client:
        response = client.score(items)
    assert fake_server.sizes("/v1/score") == [3, 3, 1]
    assert [r.id for r in response.results] == [str(i) for i in range(7)]  # global positions
    assert [r.reward for r in response.results] == [1.0, 2.0, 3.0, 4.0, None, 1.0, 3.0]
    assert (response.n_ok, response.n_failed) == (6, 1)


def test_compare_chunks_by_group(fake_server: FakeServer, rewarder: LocalRewarder) -> None:
    groups = [{"id": f"g{g}", "source": grey(51), "instruction": "brighten",
               "candidates": [grey(51 * (g + 1)), grey(51 * (g + 2))]} for g in range(3)]
    with client_for(fake_server, max_items_per_request=2) as client:
        response = client.compare(groups)
    assert fake_server.sizes("/v1/compare") == [2, 1]
    assert response == rewarder.compare(groups)
    assert [g.id for g in response.results] == ["g0", "g1", "g2"]
    # group 0: rewards 1 and 2 -> candidate 1 first; P(0 > 1) = sigmoid(1 - 2)
    assert response.results[0].ranking == [1, 0]
    assert response.results[0].preference[0][1] == pytest.approx(1 / (1 + np.e))


def test_429_with_retry_after_then_success(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script.append((429, {"Retry-After": "7"}, {"detail": "queue full"}))
    with client_for(fake_server, backoff_s=0.5) as client:
        response = client.score([(grey(51), grey(102), "x")])
    assert response.results[0].reward == 2.0
    assert sleeps == [7.0]  # the server's Retry-After, not the backoff
    assert len(fake_server.requests) == 2


def test_503_twice_then_success_backs_off_exponentially(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script += [(503, {}, {"detail": "loading"})] * 2
    with client_for(fake_server, backoff_s=0.5) as client:
        assert client.score([(grey(51), grey(153), "x")]).results[0].reward == 3.0
    assert sleeps == [0.5, 1.0]
    assert len(fake_server.requests) == 3


def test_connection_errors_are_retried(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script.append((0, {}, httpx.ConnectError("connection refused")))
    with client_for(fake_server, backoff_s=0.25) as client:
        assert client.score([(grey(51), grey(51), "x")]).results[0].reward == 1.0
    assert sleeps == [0.25]


def test_gives_up_after_max_retries_and_says_what_to_do(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script += [(504, {}, {"detail": "scoring took longer than 30 s"})] * 3
    with client_for(fake_server, max_retries=2, backoff_s=1.0) as client, \
            pytest.raises(RewardServiceError, match="HTTP 504 after 3 attempts.*lower max_items_per_request") as err:
        client.score([(grey(51), grey(51), "x")])
    assert err.value.status == 504
    assert sleeps == [1.0, 2.0]


def test_backoff_is_capped(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script += [(502, {}, {"detail": "bad gateway"})] * 4
    with client_for(fake_server, max_retries=4, backoff_s=1.0, max_backoff_s=3.0) as client:
        client.score([(grey(51), grey(51), "x")])
    assert sleeps == [1.0, 2.0, 3.0, 3.0]


def test_401_is_not_retried_and_asks_for_a_token(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.token = "s3cret"
    with client_for(fake_server) as client, pytest.raises(RewardServiceError, match="pass token=") as err:
        client.score([(grey(51), grey(102), "x")])
    assert err.value.status == 401
    assert len(fake_server.requests) == 1 and sleeps == []
    with client_for(fake_server, token="s3cret") as client:
        assert client.score([(grey(51), grey(102), "x")]).results[0].reward == 2.0
    assert fake_server.requests[-1].headers["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(("status", "advice"), [(403, "tokens-file"), (413, "max_items_per_request"),
                                                (422, "malformed"), (500, "server's log|its log")])
def test_other_errors_are_not_retried(fake_server: FakeServer, sleeps: list[float], status: int, advice: str) -> None:
    fake_server.script.append((status, {}, {"detail": [{"loc": ["body", "items", 0, "edited"],
                                                        "msg": "field required"}]}))
    with client_for(fake_server) as client, pytest.raises(RewardServiceError, match=advice) as err:
        client.score([(grey(51), grey(102), "x")])
    assert err.value.status == status
    assert "body.items.0.edited: field required" in str(err.value)
    assert len(fake_server.requests) == 1 and sleeps == []


def test_unreachable_server_is_explained(sleeps: list[float]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with RewardClient(URL, transport=httpx.MockTransport(refuse), max_retries=1) as client:
        with pytest.raises(RewardServiceError, match="cannot reach .* after 2 attempts.*ieqa serve"):
            client.info()
        assert client.ready() is False


def test_ready_and_base_url(fake_server: FakeServer) -> None:
    with RewardClient(URL + "/v1/", transport=httpx.MockTransport(fake_server)) as client:
        assert client.base_url == URL
        assert client.ready() is True
    with pytest.raises(ValueError, match="http"):
        RewardClient("127.0.0.1:8000")


def test_a_local_image_that_cannot_be_read_fails_alone(fake_server: FakeServer, tmp_path) -> None:
    items = [(grey(51), grey(102), "x"), (tmp_path / "missing.png", grey(102), "x"), (grey(51), grey(204), "x")]
    with client_for(fake_server, max_items_per_request=1) as client:
        response = client.score(items)
    assert [r.reward for r in response.results] == [2.0, None, 4.0]
    assert response.results[1].error.startswith("not sent: ImageNotFoundError")
    assert (response.n_ok, response.n_failed) == (2, 1)
    assert fake_server.sizes("/v1/score") == [1, 1]  # the unreadable item is never sent


def test_fields_the_api_cannot_carry_are_refused(fake_server: FakeServer) -> None:
    with client_for(fake_server) as client, pytest.raises(ValueError, match="LocalRewarder"):
        client.score([{"source": grey(51), "edited": grey(102), "meta": {"completion": "text"}}])
    # labels and bookkeeping fields never change a score: accepted, not sent
    sample = EditSample(id="e1", source=grey(51), edited=grey(102), editor="m", group_id="g", scores={"overall": 3})
    with client_for(fake_server) as client:
        assert client.score([sample]).results[0].id == "e1"


def test_async_client_retries_chunks_and_orders(fake_server: FakeServer, sleeps: list[float]) -> None:
    fake_server.script.append((429, {"Retry-After": "2"}, {"detail": "queue full"}))
    items = [(grey(51), grey(v), "x") for v in (51, 102, 153, 204, 51)]

    async def main():
        async with AsyncRewardClient(URL, transport=httpx.MockTransport(fake_server),
                                     max_items_per_request=2, max_concurrent_requests=2) as client:
            scored = await client.score(items)
            compared = await client.compare([{"source": grey(51), "instruction": "x",
                                              "candidates": [grey(102), grey(51)]}])
            return scored, compared, await client.ready()

    scored, compared, ready = asyncio.run(main())
    assert [r.reward for r in scored.results] == [1.0, 2.0, 3.0, 4.0, 1.0]
    assert [r.id for r in scored.results] == ["0", "1", "2", "3", "4"]
    assert sorted(fake_server.sizes("/v1/score")) == [1, 2, 2, 2]  # one 429 + 3 chunks
    assert sleeps == [2.0]
    assert compared.results[0].ranking == [0, 1]
    assert ready


# --------------------------------------------------------------------------- encoding


def _jpeg_with_orientation(path) -> None:
    img = Image.fromarray(np.tile(np.arange(48, dtype=np.uint8)[None, :, None] * 5, (32, 1, 3)))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° on display
    img.save(path, format="JPEG", exif=exif, quality=90)


def test_encoded_images_score_like_the_originals(tmp_path) -> None:
    """Every kind of local reference, sent through the client, gets the scores and flags
    LocalRewarder gives the original (classic scorer: sensitive to every pixel)."""
    rng = np.random.default_rng(0)
    src = (rng.random((64, 64, 3)) * 255).astype(np.uint8)
    edit = src.copy()
    edit[16:40, 16:40] = [250, 20, 20]
    rgba = np.dstack([edit, np.full((64, 64), 255, np.uint8)])
    rgba[:, :40, 3] = 0  # mostly transparent -> the "transparent" flag
    jpeg = tmp_path / "rotated.jpg"
    _jpeg_with_orientation(jpeg)
    edits = [
        Image.fromarray(edit),                                    # PIL RGB
        edit.astype(np.float32) / 255.0,                          # float array in [0, 1]
        (edit.astype(np.uint16) * 257),                           # 16-bit array
        Image.fromarray(rgba, "RGBA"),                            # alpha -> transparent flag
        Image.fromarray(edit).convert("CMYK"),                    # a mode PNG cannot hold
        Image.fromarray(edit).convert("P"),                       # palette
        jpeg,                                                     # a file, EXIF-rotated
        str(jpeg),                                                # the same as a str path
        Image.open(jpeg),                                         # an opened, EXIF-rotated PIL image
    ]
    items = [{"id": f"e{i}", "source": src, "edited": e, "instruction": "make the square red"}
             for i, e in enumerate(edits)]
    local = LocalRewarder("classic", rule="mean")
    with RewardClient(URL, transport=httpx.MockTransport(FakeServer(local))) as client:
        remote = client.score(items)
    expected = local.score(items)
    assert remote == expected
    assert remote.n_failed == 0
    assert "transparent" in remote.results[3].flags


def test_encode_image_forms(tmp_path) -> None:
    png = io.BytesIO()
    Image.fromarray(grey(102)).save(png, format="PNG")
    raw = png.getvalue()
    b64 = base64.b64encode(raw).decode()
    assert encode_image(raw) == b64
    assert encode_image(b64) == b64
    assert encode_image("data:image/png;base64," + b64) == "data:image/png;base64," + b64
    assert encode_image(ServerPath("images/a.png")) == "images/a.png"
    path = tmp_path / "a.png"
    path.write_bytes(raw)
    assert encode_image(path) == encode_image(str(path)) == b64
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(encode_image(grey(102))))))
    assert (decoded == grey(102)).all()  # lossless
    with pytest.raises(ImageNotFoundError, match="ServerPath"):
        encode_image("images/not-here.png")
    with pytest.raises(TypeError, match="PIL image"):
        encode_image(3.5)


def test_requests_are_json_with_base64_images(fake_server: FakeServer) -> None:
    with client_for(fake_server) as client:
        client.score([(grey(51), grey(102), "brighten")], dimensions=["VQ"])
    body = json.loads(fake_server.requests[0].content)
    assert body["dimensions"] == ["VQ"]
    assert set(body["items"][0]) == {"id", "source", "edited", "instruction"}
    assert Image.open(io.BytesIO(base64.b64decode(body["items"][0]["edited"]))).format == "PNG"
