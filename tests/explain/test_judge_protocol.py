"""EPAIQA's judge protocol: the voting rule, the skip rule, unreadable votes, and a run
against the local chat-completions server."""

from __future__ import annotations

import json
import math

import pytest

from chat_server import Reply
from ieqa.explain.judge_protocol import (
    JudgeItem,
    JudgeProtocolError,
    aggregate_judgements,
    judge_sample,
    parse_judge_vote,
    run_judge_protocol,
    vote_mode,
)


def vote(pa, lna, gha, overall):
    return json.dumps({"PA": pa, "LNA": lna, "GHA": gha, "Overall": overall, "reason": "r"})


# ------------------------------------------------------------------------ voting rule


@pytest.mark.parametrize("votes,mode", [
    ([2, 2, 2, 2, 2], 2),
    ([1, 1, 1, 1, 0], 1),
    ([0, 0, 0, 2, 2], 0),      # 3/2: the majority, even though lower
    ([1, 1, 1, 0, 2], 1),      # 3/1/1
    ([2, 2, 1, 1, 0], 2),      # 2/2/1: the highest score appearing twice
    ([0, 0, 1, 1, 2], 1),      # 2/2/1: 1 and 0 appear twice, the single 2 does not count
    ([0, 2, 0, 2, 1], 2),      # 2/2/1 in any order
])
def test_vote_mode(votes, mode):
    assert vote_mode(votes) == mode


def test_vote_mode_empty():
    with pytest.raises(JudgeProtocolError, match="at least one vote"):
        vote_mode([])


# ---------------------------------------------------------------------- vote parsing


def test_parse_judge_vote_reads_and_refuses():
    assert parse_judge_vote('Sure. ```json\n{"pa": 2, "LNA": "1", "gha": 0.0, "Overall": 2}\n```'
                            ) == ({"PA": 2, "LNA": 1, "GHA": 0, "Overall": 2}, {})
    scores, errors = parse_judge_vote('{"PA": 3, "LNA": true, "GHA": 1.5, "Overall": "good"}')
    assert scores == {}
    assert set(errors) == {"PA", "LNA", "GHA", "Overall"}
    assert "not 0, 1 or 2" in errors["PA"]
    scores, errors = parse_judge_vote('{"PA": 2, "Overall": 1}')
    assert scores == {"PA": 2, "Overall": 1} and errors == {"LNA": "key 'LNA' missing",
                                                            "GHA": "key 'GHA' missing"}
    assert parse_judge_vote('{"PA": 2, "LNA"')[1]["PA"] == "no JSON object in the answer"
    assert parse_judge_vote("")[1]["GHA"] == "empty answer"


# ------------------------------------------------------------------- the sample rules


def test_judge_sample_mode_per_dimension():
    item = JudgeItem("s1", "resp", "ref")
    answers = [vote(2, 1, 0, 2), vote(2, 1, 0, 1), vote(1, 2, 0, 1), vote(1, 2, 2, 0),
               vote(0, 0, 1, 0)]
    s = judge_sample(item, answers)
    # PA 2,2,1,1,0 -> 2/2/1 -> 2; LNA 1,1,2,2,0 -> 2; GHA 0,0,0,2,1 -> 0; Overall 2,1,1,0,0 -> 1
    assert s.scores == {"PA": 2, "LNA": 2, "GHA": 0, "Overall": 1}
    assert set(s.status.values()) == {"scored"}
    assert s.votes["Overall"] == [2, 1, 1, 0, 0]


def test_judge_sample_skip_rule():
    # a Type-1 sample: the standard answer has no naturalness and no harmony analysis
    item = JudgeItem("t1", "resp", "ref", has_naturalness=False, has_harmony=False)
    s = judge_sample(item, [vote(2, 0, 0, 2)] * 5)
    assert s.status == {"PA": "scored", "LNA": "skipped", "GHA": "skipped", "Overall": "scored"}
    assert s.scores["LNA"] is None and s.scores["GHA"] is None
    assert s.votes["LNA"] == [0] * 5  # asked and recorded, but not counted
    only_harmony = JudgeItem("t2", "r", "ref", has_naturalness=False, has_harmony=True)
    assert judge_sample(only_harmony, [vote(2, 0, 1, 2)] * 5).status["GHA"] == "scored"


def test_judge_sample_unreadable_votes_fail_not_guessed():
    item = JudgeItem("s", "resp", "ref")
    answers = [vote(2, 2, 2, 2)] * 4 + ['{"PA": 2, "LNA": 2, "GHA": 2}']  # Overall missing
    strict = judge_sample(item, answers)  # min_votes defaults to all five
    assert strict.status["Overall"] == "failed" and strict.scores["Overall"] is None
    assert strict.status["PA"] == "scored"
    assert "vote 5: Overall: key 'Overall' missing" in strict.errors
    lenient = judge_sample(item, answers, min_votes=4)
    assert lenient.scores["Overall"] == 2
    backend_err = judge_sample(item, answers[:4] + [""], answer_errors=[None] * 4 + ["HTTP 500"])
    assert backend_err.status["PA"] == "failed"
    assert "vote 5: backend error: HTTP 500" in backend_err.errors


def test_aggregate_hand_worked():
    a = judge_sample(JudgeItem("a", "r", "g"), [vote(2, 1, 2, 2)] * 5)
    b = judge_sample(JudgeItem("b", "r", "g"), [vote(1, 2, 0, 1)] * 5)
    c = judge_sample(JudgeItem("c", "r", "g", has_naturalness=False, has_harmony=False),
                     [vote(0, 2, 2, 0)] * 5)
    d = judge_sample(JudgeItem("d", "r", "g"), [vote(2, 2, 2, 2)] * 4 + ["no idea"])
    res = aggregate_judgements([a, b, c, d])
    # PA: a 2, b 1, c 0 (d failed) -> 1.0; LNA: a 1, b 2 (c skipped, d failed) -> 1.5
    # GHA: a 2, b 0 -> 1.0; Overall: a 2, b 1, c 0 -> 1.0
    assert res.mean == {"PA": 1.0, "LNA": 1.5, "GHA": 1.0, "Overall": 1.0}
    assert res.mean_unit["LNA"] == 0.75
    assert res.n_scored == {"PA": 3, "LNA": 2, "GHA": 2, "Overall": 3}
    assert res.n_skipped == {"PA": 0, "LNA": 1, "GHA": 1, "Overall": 0}
    assert res.n_failed == {"PA": 1, "LNA": 1, "GHA": 1, "Overall": 1}
    assert res.coverage["PA"] == 0.75 and res.coverage["LNA"] == pytest.approx(2 / 3)
    assert res.votes_total == 20 and res.votes_failed == 1
    assert "PA 3/4" in res.describe() and "1 of 20 votes unreadable" in res.describe()
    empty = aggregate_judgements([])
    assert math.isnan(empty.mean["PA"]) and empty.to_dict()["mean"]["PA"] is None


# ------------------------------------------------------------ against a local server


def choices(*contents):
    return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                       "choices": [{"index": i, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": c}}
                                   for i, c in enumerate(contents)]})


def test_run_against_local_server(server):
    from ieqa.backends.openai_compat import OpenAICompatBackend

    server.plan = [
        choices(vote(2, 1, 2, 2), vote(2, 1, 1, 2), vote(1, 2, 1, 1), vote(1, 2, 0, 1),
                vote(0, 0, 2, 0)),
        choices(vote(1, 2, 2, 2), vote(1, 2, 2, 2), vote(1, 2, 2, 2), "I cannot grade this.",
                vote(1, 2, 2, 2)),
        choices(*[vote(2, 0, 0, 1)] * 5),
    ]
    items = [JudgeItem("a", "The cat is red now.", "The prompt is followed: the cat is red.",
                       instruction="make the cat red"),
             JudgeItem("b", "Looks fine.", "Followed; harmony good; naturalness good."),
             JudgeItem("c", "Not followed.", "The prompt is not followed.",
                       has_naturalness=False, has_harmony=False)]
    with OpenAICompatBackend(server.url, "judge", max_retries=0, max_concurrency=1) as backend:
        res = run_judge_protocol(items, backend, votes=5, seed=7)
    assert len(server.requests) == 3
    body = server.requests[0].body
    assert body["n"] == 5 and body["temperature"] == 1.0 and body["seed"] == 7
    prompt = " ".join(p["text"] for m in body["messages"] if m["role"] == "user"
                      for p in m["content"])
    assert "make the cat red" in prompt and "The cat is red now." in prompt
    assert "the cat is red." in prompt and '"PA": <0|1|2>' in prompt
    # a: PA 2,2,1,1,0 -> 2 (2/2/1); LNA 1,1,2,2,0 -> 2; GHA 2,1,1,0,2 -> 2; Overall 2,2,1,1,0 -> 2
    # b: the 4th vote is unreadable -> every dimension failed (min_votes = 5)
    # c: PA 2, Overall 1; LNA, GHA skipped
    assert res.samples[0].scores == {"PA": 2, "LNA": 2, "GHA": 2, "Overall": 2}
    assert set(res.samples[1].status.values()) == {"failed"}
    assert res.samples[2].status["LNA"] == "skipped"
    assert res.mean == {"PA": 2.0, "LNA": 2.0, "GHA": 2.0, "Overall": 1.5}
    assert res.n_failed["PA"] == 1 and res.votes_failed == 1 and res.votes_total == 15
    assert res.config["votes"] == 5 and res.config["template"] == "epaiqa-explain-judge"


def test_run_argument_errors(server):
    from ieqa.backends.openai_compat import OpenAICompatBackend

    with OpenAICompatBackend(server.url, "judge") as backend:
        with pytest.raises(JudgeProtocolError, match="min_votes"):
            run_judge_protocol([], backend, votes=5, min_votes=6)
        with pytest.raises(JudgeProtocolError, match="votes must be"):
            run_judge_protocol([], backend, votes=0)
        with pytest.raises(JudgeProtocolError, match="text-only"):
            run_judge_protocol([], backend, template="judge-json")


def test_run_on_a_local_transformers_judge(tmp_path):
    """A tiny random VLM answers text-only judge prompts; its gibberish votes are counted
    as failures, never turned into scores."""
    from ieqa.backends import make_backend
    from ieqa.testing import build_tiny_vlm

    path = build_tiny_vlm(tmp_path / "judge", "qwen2-vl")
    backend = make_backend(model=str(path))
    items = [JudgeItem("a", "The cat is red.", "The prompt is followed."),
             JudgeItem("b", "Not followed.", "Not followed.", has_naturalness=False,
                       has_harmony=False)]
    res = run_judge_protocol(items, backend, votes=2, max_new_tokens=6, seed=0)
    assert [len(s.answers) for s in res.samples] == [2, 2]
    assert res.votes_total == 4
    # six random tokens never form the JSON object of four 0-2 scores: every vote fails
    assert res.votes_failed == 4
    assert res.samples[0].status == dict.fromkeys(("PA", "LNA", "GHA", "Overall"), "failed")
    assert res.samples[1].status == {"PA": "failed", "LNA": "skipped", "GHA": "skipped",
                                     "Overall": "failed"}
    assert all(v is None for s in res.samples for d in s.votes for v in s.votes[d])
    assert res.n_scored["PA"] == 0 and res.coverage["PA"] == 0.0 and math.isnan(res.mean["PA"])
    assert res.config["backend"] == backend.name
