"""The reward service on a real uvicorn server (127.0.0.1, classic scorer): responses equal
the in-process LocalRewarder's, per-item errors, every error status, auth, --allow-root."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from ieqa.rewards import LocalRewarder
from ieqa.serve.app import ServeConfig, create_app
from ieqa.serve.auth import read_tokens

from .helpers import SlowScorer, b64, png, running

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    path = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    path.write_text(f"# the tests' tokens\n\n{TOKEN}   # the RL job\nanother-token\n")
    return read_tokens(path)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    base = tmp_path_factory.mktemp("allow")
    inside = base / "root"
    (inside / "sub").mkdir(parents=True)
    (inside / "sub" / "src.png").write_bytes(png(1))
    (inside / "sub" / "edt.png").write_bytes(png(2))
    (base / "secret.png").write_bytes(png(3))
    os.symlink(base / "secret.png", inside / "escape.png")
    return inside


@pytest.fixture(scope="module")
def server(classic, tokens, root):
    config = ServeConfig(tokens=tokens, allow_root=root, max_batch=4, max_wait_ms=20,
                         max_body_mb=1.0, max_pixels=64 * 64, max_queue=64)
    with running(create_app(classic, rule="mean", config=config)) as url:
        yield url


def item(i, instruction="make it warmer", group=0):
    return {"id": f"e{i}", "source": b64(png(100 + group)), "edited": b64(png(i)),
            "instruction": instruction}


def offline(classic, items, **kw):
    decoded = [{**it, "source": _unb64(it["source"]), "edited": _unb64(it["edited"])} for it in items]
    return LocalRewarder(classic, rule="mean").score(decoded, **kw).model_dump()


def _unb64(s):
    import base64

    return base64.b64decode(s)


def test_concurrent_requests_of_mixed_sizes_equal_offline_scores(server, classic):
    requests = [[item(10 * r + k, group=r % 2) for k in range(size)]
                for r, size in enumerate((1, 3, 5, 2, 7, 1, 4, 6))]
    with httpx.Client(headers=AUTH, timeout=30) as client, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda its: client.post(f"{server}/v1/score", json={"items": its}),
                                requests))
    for items, answer in zip(requests, answers, strict=True):
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body == offline(classic, items)
        assert [r["id"] for r in body["results"]] == [it["id"] for it in items]
        assert body["n_ok"] == len(items) and body["reward_rule"]["rule"] == "mean"
    metrics = httpx.get(f"{server}/metrics", headers=AUTH).text
    assert "ieqa_batch_size_count" in metrics and 'ieqa_items_total{outcome="ok"}' in metrics
    # the requests are counted under their endpoint, not "other" (the API routes live in an
    # included router, which FastAPI 0.16x keeps as one entry of app.routes)
    ok = [line for line in metrics.splitlines()
          if line.startswith("ieqa_requests_total{") and 'endpoint="/v1/score"' in line
          and 'status="200"' in line]
    assert ok and float(ok[0].rsplit(" ", 1)[1]) >= len(requests), metrics


def test_half_bad_items_return_the_good_half_scored(server, classic):
    good = [item(i) for i in range(4)]
    bad = [{"id": "b0", "source": "%%%not-base64%%%", "edited": b64(png(1))},
           {"id": "b1", "source": b64(png(1)), "edited": b64(b"not an image at all")},
           {"id": "b2", "source": b64(png(1)), "edited": "https://example.com/x.png"},
           {"id": "b3", "source": b64(png(1)), "edited": b64(png(5, size=80))}]  # over 64x64
    items = [x for pair in zip(good, bad, strict=True) for x in pair]
    body = httpx.post(f"{server}/v1/score", json={"items": items}, headers=AUTH).json()
    assert (body["n_ok"], body["n_failed"]) == (4, 4)
    results = {r["id"]: r for r in body["results"]}
    expected = {r["id"]: r for r in offline(classic, good)["results"]}
    for g in good:
        assert results[g["id"]] == expected[g["id"]]
    errors = {b["id"]: results[b["id"]]["error"] for b in bad}
    # with --allow-root a string that is not base64 is read as a path
    assert "no file" in errors["b0"] and "items[1].source" in errors["b0"] and "base64" in errors["b0"]
    assert "not a readable image" in errors["b1"]
    assert "never fetches URLs" in errors["b2"]
    assert "pixel budget" in errors["b3"] and "80x80" in errors["b3"]
    assert all(results[b["id"]]["reward"] is None for b in bad)


def test_compare_and_upload_equal_local_rewarder(server, classic):
    src, cands = png(7), [png(8), png(9), png(10)]
    groups = [{"id": "g", "source": b64(src), "instruction": "brighter",
               "candidates": [b64(c) for c in cands]},
              {"source": b64(src), "candidates": [b64(cands[0]), "data:image/png;base64," + b64(src)]}]
    body = httpx.post(f"{server}/v1/compare", json={"groups": groups}, headers=AUTH).json()
    local = LocalRewarder(classic, rule="mean").compare(
        [{"id": "g", "source": src, "instruction": "brighter", "candidates": cands},
         {"source": src, "candidates": [cands[0], src]}]).model_dump()
    assert body == local
    assert len(body["results"][0]["preference"]) == 3 and body["results"][1]["id"] == "1"
    upload = httpx.post(f"{server}/v1/score/upload", headers=AUTH,
                        files={"source": ("s.png", src, "image/png"), "edited": ("e.png", cands[0])},
                        data={"instruction": "brighter", "id": "up"})
    assert upload.status_code == 200, upload.text
    expected = LocalRewarder(classic, rule="mean").score(
        [{"id": "up", "source": src, "edited": cands[0], "instruction": "brighter"}]).model_dump()
    assert upload.json() == expected


def test_info_health_and_metrics(server):
    info = httpx.get(f"{server}/v1/info", headers=AUTH).json()
    assert info["scorer"] == "classic" and info["api_version"] == "v1"
    assert info["reward_rule"]["formula"] == "mean over dimensions"
    assert info["units"] == "1-5 scale" and info["score_range"] == [1.0, 5.0]
    assert (info["max_batch"], info["has_sigma"]) == (4, False)
    for path in ("/healthz", "/readyz", "/openapi.json"):  # open without a token
        assert httpx.get(f"{server}{path}").status_code == 200
    metrics = httpx.get(f"{server}/metrics", headers=AUTH)
    assert metrics.headers["content-type"].startswith("text/plain")
    for name in ("ieqa_requests_total", "ieqa_request_seconds_bucket", "ieqa_batch_size_bucket",
                 "ieqa_queue_items", "ieqa_items_total"):
        assert name in metrics.text


def test_tokens_are_enforced(server):
    url = f"{server}/v1/score"
    body = {"items": [item(1)]}
    missing = httpx.post(url, json=body)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in missing.json()["detail"]
    assert httpx.post(url, json=body, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert httpx.post(url, json=body, headers={"Authorization": "Bearer"}).status_code == 401
    wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403 and "--tokens-file" in wrong.json()["detail"]
    assert httpx.get(f"{server}/metrics").status_code == 401
    assert httpx.get(f"{server}/v1/info", headers={"Authorization": "Bearer x"}).status_code == 403
    second = httpx.post(url, json=body, headers={"Authorization": "Bearer another-token"})
    assert second.status_code == 200
    # the comment after the token is not part of it
    assert httpx.post(url, json=body, headers={"Authorization": "Bearer #"}).status_code == 403


def test_paths_only_inside_allow_root(server, root, classic):
    items = [{"id": "rel", "source": "sub/src.png", "edited": "sub/edt.png"},
             {"id": "abs", "source": str(root / "sub" / "src.png"), "edited": str(root / "sub/edt.png")},
             {"id": "dotdot", "source": "sub/../sub/src.png", "edited": "sub/edt.png"},
             {"id": "outside", "source": str(root.parent / "secret.png"), "edited": "sub/edt.png"},
             {"id": "symlink", "source": "escape.png", "edited": "sub/edt.png"},
             {"id": "missing", "source": "sub/none.png", "edited": "sub/edt.png"},
             {"id": "folder", "source": "sub/.", "edited": "sub/edt.png"}]
    body = httpx.post(f"{server}/v1/score", json={"items": items}, headers=AUTH).json()
    res = {r["id"]: r for r in body["results"]}
    expected = LocalRewarder(classic, rule="mean").score(
        [{"id": "rel", "source": png(1), "edited": png(2)}]).model_dump()["results"][0]
    assert res["rel"] == expected and res["abs"]["scores"] == expected["scores"]
    assert "'..' is not allowed" in res["dotdot"]["error"]
    assert "outside the server's --allow-root" in res["outside"]["error"]
    assert "outside the server's --allow-root" in res["symlink"]["error"]
    assert "no file" in res["missing"]["error"] and "is not a file" in res["folder"]["error"]


def test_malformed_requests_are_422_naming_the_field(server):
    url = f"{server}/v1/score"
    missing = httpx.post(url, json={"items": [{"edited": b64(png(1))}]}, headers=AUTH)
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["body", "items", 0, "source"]
    assert "items.0.source" in missing.json()["error"]
    broken = httpx.post(url, content=b'{"items": [', headers={**AUTH, "content-type": "application/json"})
    assert broken.status_code == 422 and broken.json()["detail"][0]["type"] == "json_invalid"
    extra = httpx.post(url, json={"items": [item(1)], "bogus": 1}, headers=AUTH)
    assert extra.status_code == 422 and extra.json()["detail"][0]["loc"] == ["body", "bogus"]
    dims = httpx.post(url, json={"items": [item(1)], "dimensions": ["colourfulness"]}, headers=AUTH)
    assert dims.status_code == 422 and dims.json()["detail"][0]["loc"] == ["body", "dimensions", 0]
    few = httpx.post(f"{server}/v1/compare", json={"groups": [{"source": "x", "candidates": ["y"]}]},
                     headers=AUTH)
    assert few.status_code == 422 and few.json()["detail"][0]["loc"][-1] == "candidates"


def test_dimensions_filter(server, classic):
    body = httpx.post(f"{server}/v1/score", json={"items": [item(1)], "dimensions": ["PQ"]},
                      headers=AUTH).json()
    assert list(body["results"][0]["scores"]) == ["visual_quality"]
    assert body == offline(classic, [item(1)], dimensions=["PQ"])


def test_bodies_over_the_limit_are_413(server):
    big = {"items": [{"source": "A" * (1 << 20), "edited": "A"}]}  # > --max-body-mb 1
    declared = httpx.post(f"{server}/v1/score", json=big, headers=AUTH)
    assert declared.status_code == 413 and "--max-body-mb" in declared.json()["detail"]

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"items": [{"source": "'
        for _ in range(40):
            yield b"A" * 65536
        yield b'", "edited": "A"}]}'

    streamed = httpx.post(f"{server}/v1/score", content=chunks(),
                          headers={**AUTH, "content-type": "application/json"})
    assert streamed.status_code == 413
    # the server still answers afterwards
    assert httpx.post(f"{server}/v1/score", json={"items": [item(1)]}, headers=AUTH).status_code == 200



def test_images_over_the_request_pixel_budget_are_413(classic):
    # 48x48 images: 2304 px each; budget 10 000 px = two items (4 images) but not three
    config = ServeConfig(max_request_pixels=10_000, max_wait_ms=1)
    with running(create_app(classic, rule="mean", config=config)) as url:
        fits = httpx.post(f"{url}/v1/score", json={"items": [item(1), item(2)]})
        assert fits.status_code == 200 and fits.json()["n_ok"] == 2
        over = httpx.post(f"{url}/v1/score", json={"items": [item(1), item(2), item(3)]})
        assert over.status_code == 413 and "--max-request-pixels" in over.json()["detail"]
        group = {"source": b64(png(100)), "instruction": "x",
                 "candidates": [b64(png(i)) for i in range(4)]}  # 5 images
        assert httpx.post(f"{url}/v1/compare", json={"groups": [group]}).status_code == 413
        group["candidates"] = group["candidates"][:2]  # 3 images
        assert httpx.post(f"{url}/v1/compare", json={"groups": [group]}).status_code == 200

def test_more_items_than_the_queue_holds_is_413(server):
    items = [{"source": "QQ==", "edited": "QQ=="}] * 65  # --max-queue 64
    answer = httpx.post(f"{server}/v1/score", json={"items": items}, headers=AUTH)
    assert answer.status_code == 413 and "--max-queue" in answer.json()["detail"]


def test_full_queue_is_429_with_retry_after_then_recovers():
    scorer = SlowScorer(pause_s=0.05)
    config = ServeConfig(max_batch=2, max_wait_ms=0, max_queue=2, timeout_s=20)
    app = create_app(scorer, rule="mean", config=config)
    batcher = app.state.service.batcher
    with running(app) as url, httpx.Client(timeout=30) as client, ThreadPoolExecutor(2) as pool:
        scorer.gate.clear()  # the model "hangs" until the gate opens
        running_batch = pool.submit(client.post, f"{url}/v1/score", json={"items": [item(1), item(2)]})
        _wait_for(lambda: batcher.running_items == 2)
        queued = pool.submit(client.post, f"{url}/v1/score", json={"items": [item(3), item(4)]})
        _wait_for(lambda: _queue(client, url) == 2)
        refused = client.post(f"{url}/v1/score", json={"items": [item(5)]})
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1 and "retry after" in refused.json()["detail"]
        scorer.gate.set()
        assert running_batch.result().status_code == 200 and queued.result().status_code == 200
        assert client.post(f"{url}/v1/score", json={"items": [item(5)]}).status_code == 200


def _queue(client, url):
    for line in client.get(f"{url}/metrics").text.splitlines():
        if line.startswith("ieqa_queue_items "):
            return float(line.split()[1])
    return None


def _wait_for(condition, timeout_s=10.0):
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_request_over_its_timeout_is_504():
    scorer = SlowScorer(pause_s=0.5)
    config = ServeConfig(timeout_s=0.1, max_wait_ms=0)
    with running(create_app(scorer, rule="mean", config=config)) as url:
        answer = httpx.post(f"{url}/v1/score", json={"items": [item(1)]}, timeout=10)
        assert answer.status_code == 504 and "--timeout-s" in answer.json()["detail"]


def test_shutdown_drains_in_flight_requests():
    import threading
    import time

    import uvicorn

    scorer = SlowScorer(pause_s=0.3)
    app = create_app(scorer, rule="mean", config=ServeConfig(max_batch=2, max_wait_ms=0))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           timeout_graceful_shutdown=10))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    while httpx.get(f"{url}/readyz").status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    batcher = app.state.service.batcher
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(httpx.post, f"{url}/v1/score", json={"items": [item(i), item(i + 1)]},
                               timeout=30) for i in range(3)]
        _wait_for(lambda: batcher.running_items + batcher.queued_items == 6)  # all in, one running
        server.should_exit = True
        answers = [f.result() for f in futures]
    thread.join(30)
    assert not thread.is_alive()
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all(a.json()["n_ok"] == 2 for a in answers)


def test_readyz_is_503_until_the_warm_up_item_is_scored():
    import time

    scorer = SlowScorer(pause_s=0.0)
    scorer.gate.clear()  # the warm-up call waits at the gate
    with running(create_app(scorer, rule="mean"), ready=False) as url:
        not_yet = httpx.get(f"{url}/readyz")
        assert not_yet.status_code == 503 and "warming up" in not_yet.json()["detail"]
        assert httpx.get(f"{url}/healthz").status_code == 200
        scorer.gate.set()
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_a_bad_group_source_fails_only_its_group(server):
    good = {"id": "ok", "source": b64(png(7)), "candidates": [b64(png(8)), b64(png(9))]}
    bad = {"id": "bad", "source": "https://example.com/a.png", "candidates": [b64(png(8)), b64(png(9))]}
    body = httpx.post(f"{server}/v1/compare", json={"groups": [bad, good]}, headers=AUTH).json()
    failed, fine = body["results"]
    assert all("never fetches URLs" in c["error"] for c in failed["candidates"])
    assert failed["ranking"] == [] and failed["preference"][0][1] is None
    assert fine["ranking"] and all(c["error"] is None for c in fine["candidates"])
