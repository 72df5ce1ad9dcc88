"""VLM batches isolate their failures (issue 14, part 5).

A batch that runs out of memory or over the model's context is split down to single rows
and only the offending row gets an error; the other rows get the scores they get when
scored alone. An instruction over ``max_instruction_chars`` is an error before any model
call. Checked on the splitting helper alone, on every readout over a tiny offline model
(an out-of-memory error injected for batches holding a poison row; the real context check
of the transformers backend), and over a local OpenAI-compatible server answering 400.
"""

from __future__ import annotations

import json

import pytest
import torch

import ieqa
from chat_server import FakeServer, Reply
from ieqa.backends import PromptTooLongError
from ieqa.scorers.base import ScorerError
from ieqa.scorers.vlm.isolation import LENGTH, MEMORY, resource_failure, run_isolated

MARK = "POISON"
OOM_TEXT = "CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.1 GiB total capacity)"
FAMILY = "qwen2-vl"


# --------------------------------------------------------------------- the helper alone
RESOURCE_ERRORS = {
    "torch-oom": (lambda: torch.OutOfMemoryError(OOM_TEXT), MEMORY),
    "memory-error": (lambda: MemoryError(), MEMORY),
    "mps-runtime": (lambda: RuntimeError("MPS backend out of memory (MPS allocated: 9 GB)"), MEMORY),
    "cpu-allocator": (lambda: RuntimeError("[enforce fail at alloc_cpu.cpp:118] "
                                           "DefaultCPUAllocator: can't allocate memory: you "
                                           "tried to allocate 9 bytes"), MEMORY),
    "too-long": (lambda: PromptTooLongError("the prompt has 9000 tokens", tokens=9000,
                                            limit=4096), LENGTH),
}


def _fail(row, message):
    return f"failed:{row}:{message}"


@pytest.mark.parametrize("name", sorted(RESOURCE_ERRORS))
def test_a_resource_failure_is_split_down_to_the_offending_row(name):
    make, kind = RESOURCE_ERRORS[name]
    assert resource_failure(make()) == kind
    rows = ["a", "b", MARK, "c", "d", "e", "f"]
    calls = []

    def run(batch):
        calls.append(list(batch))
        if MARK in batch:
            raise make()
        return [f"ok:{r}" for r in batch]

    out = run_isolated(rows, run, _fail)
    assert out[:2] == ["ok:a", "ok:b"] and out[3:] == ["ok:c", "ok:d", "ok:e", "ok:f"]
    assert out[2].startswith(f"failed:{MARK}:") and "this sample alone" in out[2]
    assert "-O max_pixels=N" in out[2]  # says what to do
    # halves, recursively: only the batches holding the poison row are split again
    assert calls == [rows, rows[:4], rows[:2], [MARK, "c"], [MARK], ["c"], rows[4:]]


def test_other_failures_fail_the_batch_once_and_bugs_propagate():
    calls = []

    def broken(batch):
        calls.append(list(batch))
        raise ValueError("the checkpoint is broken")

    out = run_isolated(["a", "b", "c"], broken, _fail)
    assert out == [f"failed:{r}:ValueError: the checkpoint is broken" for r in "abc"]
    assert len(calls) == 1  # not split: it would fail the same way for every row
    assert resource_failure(RuntimeError("shape mismatch")) is None

    def bug(batch):
        raise TypeError("a bug")

    with pytest.raises(TypeError):
        run_isolated(["a"], bug, _fail)


# ----------------------------------------------------------- every readout, tiny model
#: readout -> (options, the backend method the injected OOM replaces)
READOUTS = {
    "vlm-levels": ({}, "forward"),
    "vlm-digits": ({"dimensions": ["content_preservation"]}, "forward"),
    "vlm-head": ({"hidden_features": 16}, "forward"),
    "vlm-gaussian": ({"hidden_features": 16}, "forward"),
    "vlm-dual": ({"hidden_features": 16, "max_new_tokens": 4}, "generate"),  # the critique
    "vlm-judge": ({"max_new_tokens": 4}, "generate"),
}


def build(name, model, **kwargs):
    return ieqa.create_scorer(name, model=str(model), device="cpu", **kwargs)


def _poisoned(prompt) -> bool:
    return any(isinstance(part, str) and MARK in part for part in prompt.parts)


def inject_oom(monkeypatch, scorer, method: str) -> list[int]:
    """Make ``scorer.backend.<method>`` raise a CUDA-style OOM for any batch holding a
    poisoned prompt; returns the sizes of the batches that reached the real method."""
    original = getattr(scorer.backend, method)
    ran: list[int] = []

    def guarded(prompts, *args, **kwargs):
        if any(_poisoned(p) for p in prompts):
            raise torch.OutOfMemoryError(OOM_TEXT)
        ran.append(len(prompts))
        return original(prompts, *args, **kwargs)

    monkeypatch.setattr(scorer.backend, method, guarded)
    return ran


def with_poison(samples):
    """The samples with a poison edit in the first group (so it shares their batch)."""
    poison = samples[0].model_copy(update={"id": "poison",
                                           "instruction": f"{MARK} {samples[0].instruction}"})
    return [*samples[:3], poison, *samples[3:]]


#: scores of a row in a smaller batch vs alone: float32 padding differences only (about
#: 3e-8 measured; the readouts' batched-vs-unbatched tolerance is 1e-4)
TOL = 1e-6


def assert_same(results, alone):
    """Each result equals the one scored alone (generated texts exactly, scores to TOL)."""
    assert [r.id for r in results] == [r.id for r in alone]
    for got, ref in zip(results, alone, strict=True):
        assert (got.error, got.explanation) == (ref.error, ref.explanation)
        if "passes" in ref.raw:  # the judge: the generated texts decide everything
            assert [p["text"] for p in got.raw["passes"]] == [p["text"] for p in ref.raw["passes"]]
        for mine, theirs in ((got.scores, ref.scores), (got.sigma, ref.sigma)):
            assert mine.keys() == theirs.keys()
            assert all(abs(mine[k] - theirs[k]) <= TOL for k in mine), (got.id, mine, theirs)


@pytest.mark.parametrize("readout", sorted(READOUTS))
def test_an_oom_fails_only_the_poison_row(tiny_models, edit_samples, monkeypatch, readout):
    options, method = READOUTS[readout]
    model = tiny_models[FAMILY]
    alone = build(readout, model, batch_size=1, **options).score(edit_samples)
    scorer = build(readout, model, batch_size=8, **options)
    ran = inject_oom(monkeypatch, scorer, method)
    samples = with_poison(edit_samples)
    results = scorer.score(samples)
    assert [r.id for r in results] == [s.id for s in samples]
    poison = results[3]
    assert not poison.ok and "out of memory even with this sample alone" in poison.error
    assert "OutOfMemoryError" in poison.error and "-O max_pixels=N" in poison.error
    others = [r for r in results if r.id != "poison"]
    assert_same(others, alone)
    if readout != "vlm-judge":  # the random tiny model rarely writes parsable JSON
        assert all(r.ok for r in others)
    assert max(ran) > 1  # the good rows still ran batched, not one by one


def test_pairwise_oom_fails_only_the_poison_pair(tiny_models, edit_samples, monkeypatch):
    model = tiny_models[FAMILY]
    samples = with_poison(edit_samples)
    pairs = [(samples[0], samples[1]), (samples[3], samples[2]), (samples[4], samples[5])]
    clean = [pairs[0], pairs[2]]
    kw = {"max_new_tokens": 4, "order": "fixed"}
    alone = build("vlm-pairwise", model, batch_size=1, **kw).compare(clean)
    judge = build("vlm-pairwise", model, batch_size=8, **kw)
    inject_oom(monkeypatch, judge, "generate")
    verdicts = judge.compare(pairs)
    assert "out of memory even with this sample alone" in verdicts[1].error
    assert verdicts[1].verdict is None
    for got, ref in zip([verdicts[0], verdicts[2]], alone, strict=True):
        assert got.shown == ref.shown and got.verdict == ref.verdict and got.error == ref.error


def test_a_long_instruction_is_an_error_before_any_model_call(tiny_models, edit_samples,
                                                              monkeypatch):
    model = tiny_models[FAMILY]
    long_text = "make it red " * 450  # 5 400 characters
    samples = [*edit_samples[:2], edit_samples[2].model_copy(update={
        "id": "long", "instruction": long_text})]
    scorer = build("vlm-levels", model, batch_size=8, dimensions=["visual_quality"])
    seen: list[str] = []
    original = scorer.backend.forward

    def spy(prompts, *args, **kwargs):
        seen.extend(part for p in prompts for part in p.parts if isinstance(part, str))
        return original(prompts, *args, **kwargs)

    monkeypatch.setattr(scorer.backend, "forward", spy)
    results = scorer.score(samples)
    assert results[0].ok and results[1].ok
    error = results[2].error
    assert "5400 characters, over max_instruction_chars=4000" in error
    assert "-O max_instruction_chars=5400" in error
    assert seen and not any(long_text in text for text in seen)  # never sent
    assert scorer.config()["max_instruction_chars"] == 4000
    with pytest.raises(ScorerError, match="at least 1"):
        build("vlm-levels", model, max_instruction_chars=0)


def test_a_prompt_over_the_model_context_fails_alone(tiny_models, edit_samples):
    """No injection: the tiny model reads 4096 positions and a 5 400-character
    instruction (byte-level tokens) does not fit; with the instruction limit lifted the
    backend's own context check fails that row only."""
    model = tiny_models[FAMILY]
    samples = [*edit_samples[:3], edit_samples[0].model_copy(update={
        "id": "long", "instruction": "make it red " * 450})]
    kw = {"dimensions": ["visual_quality"], "max_instruction_chars": None}
    alone = build("vlm-levels", model, batch_size=1, **kw).score(samples[:3])
    scorer = build("vlm-levels", model, batch_size=8, **kw)
    assert scorer.backend.max_prompt_tokens == 4096
    results = scorer.score(samples)
    assert_same(results[:3], alone)
    error = results[3].error
    assert "does not fit the model's context even with this sample alone" in error
    assert "reads at most 4096 (max_position_embeddings)" in error


# ------------------------------------------------------ OpenAI-compatible server: HTTP 400
VLLM_CONTEXT = ("This model's maximum context length is 32768 tokens. However, you requested "
                "40321 tokens (39809 in the messages, 512 in the completion). Please reduce "
                "the length of the messages or completion.")


class ContextServer(FakeServer):
    """Answers 400 (vLLM's context-length error) to prompts holding the poison mark."""

    def echo(self, body):
        texts = " ".join(p["text"] for m in body["messages"] if isinstance(m["content"], list)
                         for p in m["content"] if p["type"] == "text")
        if MARK in texts:
            return Reply(status=400, body={"object": "error", "message": VLLM_CONTEXT,
                                           "type": "BadRequestError", "code": 400})
        scores = {"visual_quality": 4, "instruction_alignment": 3, "content_preservation": 5}
        return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": json.dumps(scores)}}]})


def test_a_server_context_error_is_a_row_error(server, edit_samples):
    server.__class__ = ContextServer
    scorer = ieqa.create_scorer("vlm-judge", base_url=server.url, model="judge", batch_size=8,
                                backend_options={"backoff_s": 0.01, "timeout_s": 5.0})
    results = scorer.score(with_poison(edit_samples))
    assert [r.ok for r in results] == [True, True, True, False, True, True, True, True]
    assert results[0].scores == {"visual_quality": 4.0, "instruction_alignment": 3.0,
                                 "content_preservation": 5.0}
    error = results[3].error
    assert "HTTP 400" in error and "maximum context length is 32768" in error
    assert "longer than the served model's context" in error and "max_pixels" in error
