"""``POST /v1/critique`` on a real uvicorn server (127.0.0.1) serving the ``critique``
scorer around a programmatic critique judge: answers equal the in-process
``LocalRewarder.critique``, per-item errors, limits, and a server whose scorer does not
judge critiques says so (400)."""

from __future__ import annotations

import httpx
import pytest

from ieqa import create_scorer
from ieqa.data.schema import EditSample
from ieqa.rewards import AsyncRewardClient, LocalRewarder, RewardClient, RewardServiceError
from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo
from ieqa.serve.app import ServeConfig, create_app

from .helpers import b64, png, running


class KeywordJudge(Scorer):
    """Accuracy 5 when the critique names the instruction's colour, else 1; logicality
    grows with the number of sentences; usefulness 3 when it suggests a fix."""

    info = ScorerInfo("keyword-judge", "test critique judge", "composite",
                      ("logicality", "accuracy", "usefulness"), True, needs_source=True,
                      factory="tests:none")

    def score_sample(self, sample: EditSample) -> ScoreResult:
        text = sample.meta["critique"].lower()
        colour = sample.instruction.split()[-1].lower()
        return ScoreResult(id=sample.id, scores={
            "logicality": min(5.0, 1.0 + text.count(".")),
            "accuracy": 5.0 if colour in text else 1.0,
            "usefulness": 3.0 if "should" in text else 1.0})


@pytest.fixture(scope="module")
def critique_scorer():
    return create_scorer("critique", scorer=KeywordJudge(),
                         weights={"logicality": 0.2, "accuracy": 0.6, "usefulness": 0.2})


@pytest.fixture(scope="module")
def server(critique_scorer):
    config = ServeConfig(max_batch=4, max_wait_ms=10, max_pixels=64 * 64, max_queue=16)
    with running(create_app(critique_scorer, config=config)) as url:
        yield url


def _item(i: int, critique: str, instruction: str = "make the square red") -> dict:
    return {"id": f"c{i}", "source": b64(png(1)), "edited": b64(png(10 + i)),
            "instruction": instruction, "critique": critique}


def test_critique_endpoint_equals_in_process_and_weights_accuracy(server, critique_scorer):
    items = [_item(0, "The square is now red. Edges are clean."),
             _item(1, "The square turned blue. It should be red."),
             _item(2, "Fine.")]
    answer = httpx.post(f"{server}/v1/critique", json={"items": items}, timeout=30)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["n_ok"] == 3 and body["scorer"] == "critique"
    assert body["weights"] == pytest.approx({"logicality": 0.2, "accuracy": 0.6, "usefulness": 0.2})
    first = body["results"][0]
    assert (first["logicality"], first["accuracy"], first["usefulness"]) == (3.0, 5.0, 1.0)
    assert first["reward"] == pytest.approx(0.2 * 3 + 0.6 * 5 + 0.2 * 1)
    assert [r["id"] for r in body["results"]] == ["c0", "c1", "c2"]
    local = LocalRewarder(critique_scorer).critique(
        [{**it, "source": png(1), "edited": png(10 + i)} for i, it in enumerate(items)])
    assert local.model_dump() == body
    # /v1/score on the same server: the critique scorer's overall is the same reward, and an
    # item without a critique is that item's error
    scored = httpx.post(f"{server}/v1/score", json={"items": [
        {k: v for k, v in items[0].items() if k != "critique"}]}, timeout=30).json()
    assert scored["n_failed"] == 1 and "no critique text" in scored["results"][0]["error"]


def test_critique_per_item_errors_and_validation(server):
    big = b64(png(5, size=80))  # over max_pixels (64 x 64)
    items = [_item(0, "Red now."), {**_item(1, "Red."), "edited": big},
             {**_item(2, "Red."), "source": "not base64!"}]
    body = httpx.post(f"{server}/v1/critique", json={"items": items}, timeout=30).json()
    assert [r["error"] is None for r in body["results"]] == [True, False, False]
    assert body["results"][1]["reward"] is None and "pixels" in body["results"][1]["error"]
    bad = httpx.post(f"{server}/v1/critique", json={"items": [{**_item(0, "x"), "critique": ""}]})
    assert bad.status_code == 422 and "critique" in bad.json()["error"]
    bad = httpx.post(f"{server}/v1/critique", json={"items": [_item(i, "x") for i in range(17)]})
    assert bad.status_code == 413


def test_a_server_without_a_critique_scorer_answers_400(classic):
    with running(create_app(classic, config=ServeConfig(max_wait_ms=1))) as url:
        answer = httpx.post(f"{url}/v1/critique", json={"items": [_item(0, "Red.")]}, timeout=30)
    assert answer.status_code == 400
    assert "does not judge critiques" in answer.json()["detail"]
    assert "--scorer critique" in answer.json()["detail"]
    with pytest.raises(ValueError, match="does not judge critiques"):
        LocalRewarder(classic).critique([{"source": png(1), "edited": png(2), "instruction": "x",
                                          "critique": "y"}])


def test_reward_client_critique_chunks_and_equals_the_server(server, critique_scorer):
    items = [{**_item(i, "Red. " * i if i else "Blue."), "source": png(1), "edited": png(10 + i)}
             for i in range(5)]
    with RewardClient(server, max_items_per_request=2, max_retries=0) as client:
        answer = client.critique(items)
        assert answer == LocalRewarder(critique_scorer).critique(items)
        assert [r.id for r in answer.results] == [f"c{i}" for i in range(5)] and answer.n_ok == 5
        assert answer.results[0].accuracy == 1.0 and answer.results[1].accuracy == 5.0

    async def go():
        async with AsyncRewardClient(server, max_items_per_request=2, max_retries=0) as client:
            return await client.critique(items)

    import asyncio

    assert asyncio.run(go()) == answer
    with RewardClient(server, max_retries=0) as client:
        with pytest.raises(ValueError, match="missing \\['critique'\\]"):
            client.critique([{"source": png(1), "edited": png(2), "instruction": "x"}])


def test_reward_client_reports_a_server_without_a_critique_scorer(classic):
    with running(create_app(classic, config=ServeConfig(max_wait_ms=1))) as url, \
            RewardClient(url, max_retries=0) as client:
        with pytest.raises(RewardServiceError, match="does not judge critiques"):
            client.critique([{"source": png(1), "edited": png(2), "instruction": "x",
                              "critique": "y"}])


def test_trl_reward_func_rewards_sampled_critiques_in_process(critique_scorer):
    from ieqa.rewards.adapters import trl_reward_func

    reward = trl_reward_func(LocalRewarder(critique_scorer))
    prompts = ["Critique this edit."] * 3
    completions = ["The square is red now. Good.", "It turned blue. It should be red.",
                   [{"role": "assistant", "content": "Nothing about the colour."}]]
    columns = {"source": [png(1)] * 3, "edited": [png(2)] * 3,
               "instruction": ["make the square red"] * 3}
    rewards = reward(prompts=prompts, completions=completions, **columns)
    # accuracy (weight 0.6) decides: the completions that name the colour score 5 on it
    expected = [0.2 * 3 + 0.6 * 5 + 0.2 * 1, 0.2 * 3 + 0.6 * 5 + 0.2 * 3, 0.2 * 2 + 0.6 * 1 + 0.2 * 1]
    assert rewards == pytest.approx(expected)


def test_the_critique_reward_is_the_same_with_and_without_rule(tmp_path):
    """Issue 42: the critique scorer normalises its weights (2/6/2 -> 0.2/0.6/0.2), and so
    does a reward rule (the one rule of ieqa.data.combine.normalise_weights), so
    ``trl_critique_func`` gives one reward with the server's weights and with ``rule=`` the
    same weights as an expression; before, the rule summed to 10 and gave 10x the reward."""
    from ieqa.rewards import trl_critique_func

    scorer = create_scorer("critique", scorer=KeywordJudge(),
                           weights={"logicality": 2, "accuracy": 6, "usefulness": 2})
    paths = []
    for i in range(3):
        path = tmp_path / f"e{i}.png"
        path.write_bytes(png(10 + i))
        paths.append(str(path))
    (tmp_path / "s.png").write_bytes(png(1))
    critiques = ["The square is now red. Edges are clean.", "It turned blue. It should be red.",
                 "Fine."]
    columns = {"source": [str(tmp_path / "s.png")] * 3, "edited": paths,
               "instruction": ["make the square red"] * 3}
    plain = trl_critique_func(LocalRewarder(scorer))(["p"] * 3, critiques, **columns)
    ruled = trl_critique_func(LocalRewarder(scorer),
                              rule="2*logicality + 6*accuracy + 2*usefulness")(
        ["p"] * 3, critiques, **columns)
    # c0: logicality 3, accuracy 5, usefulness 1; c1: 3, 5, 3; c2: 2, 1, 1
    expected = [0.2 * 3 + 0.6 * 5 + 0.2 * 1, 0.2 * 3 + 0.6 * 5 + 0.2 * 3, 0.2 * 2 + 0.6 + 0.2]
    assert plain == pytest.approx(expected, abs=1e-12)
    assert ruled == pytest.approx(expected, abs=1e-12)
