"""OpenAICompatBackend against a real (fake) chat-completions server on 127.0.0.1.

The server is a ``ThreadingHTTPServer`` in a background thread: it records every request
and answers according to a per-test plan (normal echo answers, HTTP errors, delays,
malformed bodies, ignoring ``n``). Nothing in httpx is mocked.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from PIL import Image

from chat_server import FakeServer, Reply, serve
from ieqa.backends.base import Prompt, VLMBackend, fit_pixel_budget
from ieqa.backends.openai_compat import OpenAICompatBackend, _RequestFailed
from ieqa.backends.processor import BackendError
from ieqa.errors import RunStopped
from ieqa.retry import retry_after_s as _retry_after_s


@pytest.fixture
def make(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
         ) -> Callable[..., OpenAICompatBackend]:
    """Builds backends with fast retry settings and closes them after the test."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def build(url: str, **kw: Any) -> OpenAICompatBackend:
        kw.setdefault("backoff_s", 0.01)
        kw.setdefault("timeout_s", 5.0)
        backend = OpenAICompatBackend(url, kw.pop("model", "test-vlm"), **kw)
        request.addfinalizer(backend.close)
        return backend

    return build


def _img(w: int = 64, h: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> Image.Image:
    return Image.new("RGB", (w, h), color)


def _answer(gen: Any) -> dict[str, Any]:
    assert gen.ok, gen.error
    return json.loads(gen.text)


def _decode(url: str) -> Image.Image:
    head, data = url.split(",", 1)
    assert head.endswith(";base64")
    return Image.open(io.BytesIO(base64.b64decode(data)))


# -- normal answers --------------------------------------------------------------------


def test_generate_sends_messages_and_returns_answers(server, make) -> None:
    backend = make(server.url)
    assert isinstance(backend, VLMBackend)
    prompts = [Prompt(parts=("Rate:", _img(), "edited", _img()), system="You judge edits."),
               Prompt(parts=("text only",))]
    out = backend.generate(prompts, max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3)
    assert len(out) == 2 and all(len(gens) == 1 for gens in out)
    assert _answer(out[0][0]) == {"text": "Rate: edited", "images": 2, "i": 0, "seed": 3}
    assert _answer(out[1][0])["images"] == 0
    gen = out[0][0]
    assert gen.finish_reason == "stop" and gen.top_logprobs is None
    assert gen.raw["usage"] == {"prompt_tokens": 10, "completion_tokens": 3}
    assert gen.raw["id"].startswith("chatcmpl-")
    json.dumps(gen.raw)

    assert len(server.requests) == 2
    seen = next(r for r in server.requests if r.body["messages"][0]["role"] == "system")
    assert seen.path == "/v1/chat/completions"
    body = seen.body
    assert body["model"] == "test-vlm"
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (7, 0.5, 0.9, 3)
    assert "n" not in body and "logprobs" not in body and "continue_final_message" not in body
    assert body["messages"][0] == {"role": "system", "content": "You judge edits."}
    user = body["messages"][1]
    assert user["role"] == "user"
    assert [p["type"] for p in user["content"]] == ["text", "image_url", "text", "image_url"]
    assert "authorization" not in {k.lower() for k in seen.headers}


def test_empty_prompt_list_sends_nothing(server, make) -> None:
    assert make(server.url).generate([]) == []
    assert server.requests == []


def test_images_are_base64_data_urls_within_the_pixel_budget(server, make) -> None:
    big, small = _img(2000, 1000), _img(20, 10)
    backend = make(server.url, max_pixels=500_000, min_pixels=800)
    backend.generate([Prompt(parts=(big, "and", small))])
    parts = server.requests[0].body["messages"][-1]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert all(u.startswith("data:image/png;base64,") for u in urls)
    decoded = [_decode(u) for u in urls]
    assert decoded[0].format == "PNG"
    assert decoded[0].size == fit_pixel_budget(big, 500_000, 800).size == (1000, 500)
    assert decoded[1].size == fit_pixel_budget(small, 500_000, 800).size
    assert decoded[1].size[0] * decoded[1].size[1] >= 780  # upscaled to about min_pixels
    assert decoded[0].convert("RGB").getpixel((10, 10)) == (200, 30, 30)  # lossless

    jpeg = make(server.url, image_format="jpeg", max_pixels=None)
    jpeg.generate([Prompt(parts=(_img(300, 200).convert("RGBA"),))])
    url = server.requests[1].body["messages"][-1]["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert _decode(url).format == "JPEG" and _decode(url).size == (300, 200)


def test_a_shared_image_is_encoded_once(server, make, monkeypatch) -> None:
    backend = make(server.url, max_concurrency=3)
    calls: list[tuple[int, int]] = []
    encode = backend._encode_image

    def counting(image: Image.Image) -> str:
        calls.append(image.size)
        return encode(image)

    monkeypatch.setattr(backend, "_encode_image", counting)
    source = _img(50, 50)
    prompts = [Prompt(parts=(source, _img(40 + i, 40), f"p{i}"), share_key="s", shared_images=1)
               for i in range(5)]
    out = backend.generate(prompts)
    assert all(_answer(g[0])["images"] == 2 for g in out)
    assert calls.count((50, 50)) == 1 and len(calls) == 6


def test_api_key_is_a_bearer_header_and_never_in_config(server, make, monkeypatch) -> None:
    backend = make(server.url, api_key="sk-secret-123")
    backend.generate([Prompt(parts=("hi",))])
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret-123"
    config = backend.config()
    text = json.dumps(config) + backend.name + repr(backend)
    assert "sk-secret-123" not in text
    assert config["api_key_set"] is True and config["model"] == "test-vlm"
    assert config["base_url"] == server.url
    assert backend.name == f"openai:test-vlm@{server.url}"

    monkeypatch.setenv("IEQA_TEST_KEY", "sk-from-env")
    make(server.url, api_key_env="IEQA_TEST_KEY").generate([Prompt(parts=("hi",))])
    assert server.requests[1].headers["Authorization"] == "Bearer sk-from-env"
    assert make(server.url).config()["api_key_set"] is False


def test_base_url_is_normalised(server, make) -> None:
    for url in (server.url + "/", server.url + "/chat/completions"):
        backend = make(url)
        assert backend.base_url == server.url
        assert backend.generate([Prompt(parts=("x",))])[0][0].ok
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2


def test_extra_body_is_merged_last(server, make) -> None:
    backend = make(server.url, extra_body={"top_k": 5, "temperature": 0.7})
    backend.generate([Prompt(parts=("x",))], temperature=0.0)
    body = server.requests[0].body
    assert body["top_k"] == 5 and body["temperature"] == 0.7
    assert backend.config()["extra_body"] == {"top_k": 5, "temperature": 0.7}


def test_top_logprobs_are_requested_and_parsed(server, make) -> None:
    backend = make(server.url)
    gen = backend.generate([Prompt(parts=("score?",))], top_logprobs=2)[0][0]
    body = server.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert gen.top_logprobs == [{"5": -0.1, "4": -2.5}, {".": -0.01}]

    server.logprobs = False  # a server that ignores the request
    assert backend.generate([Prompt(parts=("score?",))], top_logprobs=2)[0][0].top_logprobs is None


def test_finish_reasons_are_mapped(server, make) -> None:
    backend = make(server.url)
    server.finish_reason = "length"
    assert backend.generate([Prompt(parts=("x",))])[0][0].finish_reason == "length"
    server.finish_reason = "eos_token"  # TGI's name
    assert backend.generate([Prompt(parts=("x",))])[0][0].finish_reason == "stop"


# -- samples ---------------------------------------------------------------------------


def test_num_samples_uses_n(server, make) -> None:
    out = make(server.url).generate([Prompt(parts=("x",))], num_samples=3, temperature=1.0)
    assert [_answer(g)["i"] for g in out[0]] == [0, 1, 2]
    assert len(server.requests) == 1 and server.requests[0].body["n"] == 3


def test_missing_choices_are_topped_up_when_the_server_ignores_n(server, make) -> None:
    server.ignore_n = True
    out = make(server.url).generate([Prompt(parts=("x",)), Prompt(parts=("y",))],
                                    num_samples=3, temperature=1.0, seed=10)
    assert [len(g) for g in out] == [3, 3]
    assert all(g.ok for gens in out for g in gens)
    assert [_answer(g)["text"] for g in out[1]] == ["y"] * 3
    assert len(server.requests) == 6
    x_bodies = [r.body for r in server.requests if r.body["messages"][-1]["content"][0]["text"] == "x"]
    assert [b.get("n") for b in x_bodies] == [3, 2, None]
    assert [b["seed"] for b in x_bodies] == [10, 11, 12]  # distinct samples
    assert [_answer(g)["seed"] for g in out[0]] == [10, 11, 12]


# -- answer prefix ---------------------------------------------------------------------


def test_answer_prefix_continue_mode(server, make) -> None:
    backend = make(server.url)
    out = backend.generate([Prompt(parts=("rate", _img()), answer_prefix="Score: "),
                            Prompt(parts=("no prefix",))])
    assert all(g[0].ok for g in out)
    with_prefix = next(r.body for r in server.requests if len(r.body["messages"]) == 2)
    assert with_prefix["messages"][-1] == {"role": "assistant", "content": "Score: "}
    assert with_prefix["continue_final_message"] is True
    assert with_prefix["add_generation_prompt"] is False
    without = next(r.body for r in server.requests if len(r.body["messages"]) == 1)
    assert "continue_final_message" not in without and "add_generation_prompt" not in without


def test_answer_prefix_error_mode(server, make) -> None:
    backend = make(server.url, answer_prefix_mode="error")
    with pytest.raises(BackendError, match="answer_prefix.*continue_final_message"):
        backend.generate([Prompt(parts=("a",)), Prompt(parts=("b",), answer_prefix="Score: ")])
    assert server.requests == []
    assert backend.generate([Prompt(parts=("a",))])[0][0].ok  # no prefix: fine


def test_a_400_for_a_prefix_hints_at_continue_final_message(server, make) -> None:
    server.plan = [Reply(400, {"error": {"message": "Unrecognized request argument"}})]
    gen = make(server.url).generate([Prompt(parts=("a",), answer_prefix="S: ")])[0][0]
    assert "Unrecognized request argument" in gen.error
    assert "continue_final_message" in gen.error and len(server.requests) == 1


# -- retries and errors ----------------------------------------------------------------


def test_5xx_is_retried_then_succeeds(server, make, caplog) -> None:
    server.plan = [Reply(500, {"error": {"message": "boom"}}), Reply(503, {"detail": "busy"})]
    with caplog.at_level("WARNING", logger="ieqa.backends.openai_compat"):
        gen = make(server.url, max_retries=3).generate([Prompt(parts=("x",))])[0][0]
    assert _answer(gen)["text"] == "x"
    assert len(server.requests) == 3
    assert "HTTP 500" in caplog.text and "retry 1 of 3" in caplog.text


def test_429_honours_retry_after(server, make) -> None:
    server.plan = [Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0.15"}),
                   Reply(429, {}, headers={"retry-after-ms": "100"})]
    backend = make(server.url, backoff_s=20.0)  # backoff would take far longer
    start = time.monotonic()
    gen = backend.generate([Prompt(parts=("x",))])[0][0]
    assert gen.ok and len(server.requests) == 3
    assert time.monotonic() - start < 3.0
    t = [r.t for r in server.requests]
    assert t[1] - t[0] >= 0.14 and t[2] - t[1] >= 0.09


def test_retry_after_is_capped(server, make) -> None:
    server.plan = [Reply(429, {}, headers={"Retry-After": "3600"})]
    start = time.monotonic()
    assert make(server.url, max_backoff_s=0.05).generate([Prompt(parts=("x",))])[0][0].ok
    assert time.monotonic() - start < 2.0


def test_retry_after_parsing() -> None:
    assert _retry_after_s(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert _retry_after_s(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    assert _retry_after_s(httpx.Headers({})) is None
    assert _retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= _retry_after_s(httpx.Headers({"Retry-After": future})) <= 31
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert _retry_after_s(httpx.Headers({"Retry-After": past})) == 0.0


def test_persistent_5xx_gives_a_per_prompt_error(server, make) -> None:
    server.plan = [Reply(502, {"error": {"message": "bad gateway"}})] * 3
    out = make(server.url, max_retries=2, max_concurrency=1).generate(
        [Prompt(parts=("bad",)), Prompt(parts=("good",))], num_samples=2)
    assert [len(g) for g in out] == [2, 2]
    assert all(not g.ok and g.text == "" for g in out[0])
    assert "HTTP 502" in out[0][0].error and "bad gateway" in out[0][0].error
    assert "after 3 attempts" in out[0][0].error
    assert all(g.ok for g in out[1])  # the batch goes on
    assert len(server.requests) == 4


def test_timeout_is_retried_then_recorded(server, make) -> None:
    server.plan = [None, Reply(sleep_s=0.5), Reply(sleep_s=0.5)]  # answered once before
    backend = make(server.url, timeout_s=0.2, max_retries=1, max_concurrency=1)
    start = time.monotonic()
    out = backend.generate([Prompt(parts=("first",)), Prompt(parts=("slow",)),
                            Prompt(parts=("fast",))])
    assert time.monotonic() - start < 2.0
    assert not out[1][0].ok and "timeout=0.2" in out[1][0].error
    assert "after 2 attempts" in out[1][0].error and out[1][0].error_kind == "timeout"
    assert _answer(out[2][0])["text"] == "fast"
    assert len(server.requests) == 4

    server.plan = [Reply(sleep_s=0.5)]  # one timeout, then an answer
    assert backend.generate([Prompt(parts=("x",))])[0][0].ok


@pytest.mark.parametrize(("reply", "expected"), [
    (Reply(raw=b"<html>oops</html>"), "not JSON"),
    (Reply(body={"id": "x", "object": "chat.completion"}), "no 'choices'"),
    (Reply(body={"choices": []}), "empty 'choices'"),
    (Reply(body={"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}),
     "no message content"),
    (Reply(body={"choices": [{"index": 0, "message": {"content": None,
                                                       "reasoning_content": "hmm"}}]}),
     "raise max_new_tokens"),
    (Reply(body={"choices": [{"index": 0, "finish_reason": "stop"}]}), "no message"),
    (Reply(body=["not", "an", "object"]), "not an object"),
])
def test_malformed_answers_are_per_prompt_errors(server, make, reply, expected) -> None:
    server.plan = [reply]
    out = make(server.url, max_concurrency=1).generate(
        [Prompt(parts=("x",)), Prompt(parts=("y",))])
    assert not out[0][0].ok and out[0][0].text == "" and expected in out[0][0].error
    assert out[1][0].ok
    assert len(server.requests) == 2  # not retried


def test_empty_content_is_an_empty_answer(server, make) -> None:
    server.plan = [Reply(body={"choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": ""}}]})]
    gen = make(server.url).generate([Prompt(parts=("x",))])[0][0]
    assert gen.ok and gen.text == "" and gen.finish_reason == "stop"


def test_401_fails_fast_with_an_actionable_message(server, make) -> None:
    server.plan = [Reply(401, {"error": {"message": "Invalid API key"}})]
    backend = make(server.url, max_retries=3, max_concurrency=1, api_key_env="IEQA_NO_SUCH_KEY")
    out = backend.generate([Prompt(parts=(f"p{i}",)) for i in range(3)], num_samples=2)
    assert len(server.requests) == 1  # no retry, and the rest of the batch is not sent
    first = out[0][0].error
    assert "401" in first and server.url in first and "Invalid API key" in first
    assert "set IEQA_NO_SUCH_KEY or pass api_key" in first
    assert all(not g.ok for gens in out for g in gens) and [len(g) for g in out] == [2, 2, 2]
    assert "not sent" in out[2][0].error and "401" in out[2][0].error


def test_404_hints_at_base_url_and_model(server, make) -> None:
    server.plan = [Reply(404, {"object": "error", "message": "The model `m` does not exist."})]
    gen = make(server.url, model="m").generate([Prompt(parts=("x",))])[0][0]
    assert "does not exist" in gen.error and "/v1" in gen.error and "'m'" in gen.error
    assert len(server.requests) == 1


def test_400_is_not_retried_and_not_fatal(server, make) -> None:
    server.plan = [Reply(400, {"error": {"message": "too many images"}})]
    out = make(server.url, max_concurrency=1).generate(
        [Prompt(parts=("x",)), Prompt(parts=("y",))])
    assert "HTTP 400" in out[0][0].error and "too many images" in out[0][0].error
    assert out[1][0].ok and len(server.requests) == 2


def test_connection_refused_is_retried_then_actionable(make) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = make(f"http://127.0.0.1:{port}/v1", max_retries=1, max_concurrency=1)
    # nothing ever answered: the run stops at once, naming the server and the error
    with pytest.raises(RunStopped) as info:
        backend.generate([Prompt(parts=("x",)), Prompt(parts=("y",))])
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "has not answered any request" in message
    assert "cannot connect" in message and "(after 2 attempts)" in message
    assert "is the server running" in message and "run the same command again" in message
    with pytest.raises(_RequestFailed) as failed:  # the kind of the failure
        backend._post({"model": "m", "messages": []})
    assert failed.value.kind == "connection"
    with pytest.raises(RunStopped):  # a stopped backend sends nothing more
        backend.generate([Prompt(parts=("z",))])


@pytest.mark.parametrize(("reply", "kind", "words"), [
    (Reply(500, {"error": {"message": "boom"}}), "http", "HTTP 500"),
    (Reply(400, {"error": {"message": "filtered"}}), "http", "HTTP 400"),
    (Reply(raw=b"<html>oops</html>"), "unreadable", "not JSON"),
    (Reply(body={"choices": [{"index": 0, "finish_reason": "stop"}]}), "unreadable",
     "no message"),
    (Reply(sleep_s=0.6), "timeout", "timeout=0.3"),
])
def test_each_failure_has_its_kind(server, make, reply, kind, words) -> None:
    server.plan = [None, reply]  # one answer first: no stop for a first timeout
    out = make(server.url, max_retries=0, max_concurrency=1, timeout_s=0.3).generate(
        [Prompt(parts=("ok",)), Prompt(parts=("bad",))])
    gen = out[1][0]
    assert not gen.ok and gen.error_kind == kind and words in gen.error, gen.error
    assert "malformed" not in gen.error


def test_consecutive_failures_stop_the_run_with_the_server_and_the_last_error(server,
                                                                                make) -> None:
    server.plan = [Reply(500, {"error": {"message": "down for maintenance"}})] * 10
    backend = make(server.url, max_retries=0, max_concurrency=1, max_consecutive_failures=3)
    with pytest.raises(RunStopped) as info:
        backend.generate([Prompt(parts=(f"p{i}",)) for i in range(6)])
    message = str(info.value)
    assert len(server.requests) == 3  # the rest is not sent
    assert "3 requests in a row" in message and server.url in message
    assert "HTTP 500" in message and "down for maintenance" in message
    assert "run the same command again" in message and "max_consecutive_failures" in message


def test_an_answer_resets_the_count_and_zero_never_stops(server, make) -> None:
    bad = Reply(500, {"error": {"message": "flaky"}})
    server.plan = [bad, bad, None, bad, bad, None, bad, bad]
    backend = make(server.url, max_retries=0, max_concurrency=1, max_consecutive_failures=3)
    out = backend.generate([Prompt(parts=(f"p{i}",)) for i in range(8)])
    assert [g[0].ok for g in out] == [False, False, True, False, False, True, False, False]
    server.plan = [bad] * 5
    never = make(server.url, max_retries=0, max_concurrency=1, max_consecutive_failures=0)
    assert not any(g[0].ok for g in never.generate([Prompt(parts=("x",))] * 5))


def test_a_judge_that_never_answers_ends_the_run_within_one_requests_attempts(server,
                                                                               make) -> None:
    server.delay = lambda body: 30.0  # accepts the connection, never answers in time
    backend = make(server.url, timeout_s=0.3, max_retries=1, backoff_s=0.01,
                   max_backoff_s=0.05, max_concurrency=4)
    start = time.monotonic()
    with pytest.raises(RunStopped) as info:
        backend.generate([Prompt(parts=(f"p{i}",)) for i in range(12)])
    elapsed = time.monotonic() - start
    # the bound: (max_retries + 1) * timeout_s + max_retries * max_backoff_s = 0.65 s, for
    # the requests in flight together; 3 s of margin for a loaded machine
    assert elapsed < 0.65 + 3.0, elapsed
    assert "has not answered any request" in str(info.value)
    assert "timeout=0.3" in str(info.value)
    assert len(server.requests) <= 4 * 2  # the first wave and its retries, nothing more


# -- concurrency and order -------------------------------------------------------------


def test_concurrency_limit_is_respected(server, make) -> None:
    server.delay = lambda body: 0.1
    out = make(server.url, max_concurrency=2).generate(
        [Prompt(parts=(f"p{i}",)) for i in range(6)])
    assert [_answer(g[0])["text"] for g in out] == [f"p{i}" for i in range(6)]
    assert server.max_in_flight == 2


def test_output_order_is_input_order(server, make) -> None:
    # later prompts answer first
    server.delay = lambda body: 0.03 * (8 - int(body["messages"][-1]["content"][0]["text"][1:]))
    out = make(server.url, max_concurrency=8).generate(
        [Prompt(parts=(f"p{i}",)) for i in range(8)], num_samples=2)
    assert [[_answer(g)["text"] for g in gens] for gens in out] == [[f"p{i}"] * 2 for i in range(8)]
    assert server.max_in_flight > 1


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [
    {"base_url": "localhost:8000/v1"}, {"model": ""}, {"timeout_s": 0}, {"max_retries": -1},
    {"max_concurrency": 0}, {"image_format": "gif"}, {"answer_prefix_mode": "ignore"},
    {"max_pixels": 10, "min_pixels": 20}, {"extra_body": {"x": object()}},
])
def test_bad_arguments(kw) -> None:
    args = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **kw}
    with pytest.raises(ValueError):
        OpenAICompatBackend(args.pop("base_url"), args.pop("model"), **args)


def test_bad_generate_arguments(server, make) -> None:
    backend = make(server.url)
    for kw in ({"num_samples": 0}, {"max_new_tokens": 0}, {"top_logprobs": -1}):
        with pytest.raises(ValueError):
            backend.generate([Prompt(parts=("x",))], **kw)
    assert server.requests == []


def test_a_replay_serves_recorded_failures_without_the_stop_rule_or_the_server(server, make,
                                                                               tmp_path):
    from ieqa.backends.judge_log import JudgeLog, read_judge_log

    # recorded: the first request timed out, the second was answered, then a 401 (fatal:
    # the third prompt was not sent)
    server.plan = [Reply(sleep_s=0.6), None, Reply(401, {"error": {"message": "bad key"}})]
    backend = make(server.url, timeout_s=0.3, max_retries=0, max_concurrency=1,
                   max_consecutive_failures=0)
    backend.judge_log = JudgeLog(tmp_path / "a.jsonl", mode="record")
    prompts = [Prompt(parts=(f"p{i}",)) for i in range(4)]
    first = backend.generate(prompts)
    assert [g[0].error_kind for g in first] == ["timeout", None, "http", "http"]
    assert "not sent" in first[3][0].error
    log = read_judge_log(tmp_path / "a.jsonl")
    assert [bool(e.get("not_sent")) for e in log] == [False, False, False, True]
    # the replay: no server, no stop although a timeout came before any answer
    dead = make("http://127.0.0.1:9/v1", max_retries=0, max_concurrency=1)
    dead.judge_log = JudgeLog(tmp_path / "b.jsonl", mode="replay", source=tmp_path / "a.jsonl")
    again = dead.generate(prompts)
    assert [(g[0].text, g[0].error, g[0].error_kind) for g in again] == \
        [(g[0].text, g[0].error, g[0].error_kind) for g in first]
    # a new run on the same backend starts the stop rule afresh
    dead.judge_log = None
    with pytest.raises(RunStopped):
        dead.generate([Prompt(parts=("x",))])
    dead.reset_stop()
    assert dead._stop is None and dead._streak == 0


class _ArrivalAnswers(FakeServer):
    """Answers ``answer K`` to the K-th request to arrive, the earlier ones more slowly, so
    identical requests sent together come back in the reverse order."""

    def next_reply(self, body):
        with self.lock:
            k = len(self.requests) - 1
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": f"answer {k}"}}]},
                     sleep_s=0.15 * max(0, 4 - k))


@pytest.mark.parametrize("mode", ["replay", "resume"])
@pytest.mark.parametrize("samples", [1, 2])
def test_identical_requests_of_one_batch_replay_to_the_prompts_that_got_them(make, tmp_path,
                                                                             mode, samples):
    """Four identical prompts sent at once get four different answers, recorded as they
    come back (the last sent first); read back, each prompt gets its own answer again, not
    the one recorded in its place (the occurrence is numbered in batch order)."""
    from ieqa.backends.judge_log import JudgeLog, read_judge_log

    prompts = [Prompt(parts=("same",)) for _ in range(4)]
    kw = {"num_samples": samples, "seed": 0, "seed_per_sample": True}  # a request per sample
    with serve(_ArrivalAnswers()) as judge:
        backend = make(judge.url, max_concurrency=4, max_retries=0)
        backend.judge_log = JudgeLog(tmp_path / "a.jsonl", mode="record")
        first = [[g.text for g in gens] for gens in backend.generate(prompts, **kw)]
    assert sorted(t for gens in first for t in gens) == sorted(
        f"answer {k}" for k in range(4 * samples))
    log = read_judge_log(tmp_path / "a.jsonl")
    assert sorted(e["occurrence"] for e in log) == sorted([0, 1, 2, 3] * samples)
    written = [e["response"]["choices"][0]["message"]["content"] for e in log]
    assert written[:4] != [gens[0] for gens in first]  # answered out of batch order
    dead = make("http://127.0.0.1:9/v1", max_retries=0, max_concurrency=4)
    dead.judge_log = JudgeLog(tmp_path / "b.jsonl", mode=mode, source=tmp_path / "a.jsonl")
    assert [[g.text for g in gens] for gens in dead.generate(prompts, **kw)] == first
    assert dead.judge_log.served == 4 * samples


def test_occurrences_are_numbered_in_batch_order_whichever_thread_asks_first(tmp_path):
    import threading

    from ieqa.backends.judge_log import JudgeLog
    from ieqa.backends.openai_compat import _InOrder, _Occurrence

    log = JudgeLog(tmp_path / "a.jsonl")
    order = _InOrder()
    got: dict[int, int | None] = {}
    slots = [_Occurrence(log, order, i) for i in range(4)]

    def ask(i: int) -> None:
        if i == 1:
            slots[i].done()  # a prompt that sent nothing passes its turn
        else:
            got[i] = slots[i].number("same")

    threads = [threading.Thread(target=ask, args=(i,)) for i in (3, 2, 1, 0)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # the later prompts ask first
    for t in threads:
        t.join(timeout=10)
    assert got == {0: 0, 2: 1, 3: 2}
    # a prompt's later requests (its other samples) carry its own number, no turn to wait
    assert slots[3].number("same, sample 2") == 2 and slots[0].number("same, sample 2") == 0


def test_a_resumed_occurrence_never_takes_another_occurrences_answer(tmp_path):
    """Resume serves answers only: the first asking failed, the second was answered; the
    first asking now has none of its own (sent again), the second gets its answer. A log of
    an earlier ieqa (no numbers) is served in recorded order."""
    import json

    from ieqa.backends.judge_log import JudgeLog

    lines = [{"request": "k", "context": {}, "session": "s1", "occurrence": 0,
              "response": None, "error": "HTTP 500"},
             {"request": "k", "context": {}, "session": "s1", "occurrence": 1,
              "response": {"choices": ["second"]}}]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    log = JudgeLog(tmp_path / "b.jsonl", mode="resume", source=path)
    assert log.take("k", 0) is None
    assert log.take("k", 1)["response"] == {"choices": ["second"]}
    old = [{k: v for k, v in e.items() if k != "occurrence"} for e in lines]
    path.write_text("".join(json.dumps(e) + "\n" for e in old))
    log = JudgeLog(tmp_path / "c.jsonl", mode="resume", source=path)
    assert log.take("k", 0)["response"] == {"choices": ["second"]}  # the only answer
    assert log.take("k", 1) is None


def test_a_truncated_last_log_line_is_left_out_with_a_warning(tmp_path, caplog):
    from ieqa.backends.judge_log import read_judge_log

    path = tmp_path / "judge_log.jsonl"
    path.write_text('{"request": "a", "response": null}\n{"request": "b", "resp')
    assert [e["request"] for e in read_judge_log(path)] == ["a"]
    assert "cut short" in caplog.text
    path.write_text('{"request": "a", "resp\n{"request": "b", "response": null}\n')
    with pytest.raises(ValueError, match="damaged"):
        read_judge_log(path)
