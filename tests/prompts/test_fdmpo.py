"""FDMPO (``ieqa.optimize`` / ``ieqa optimize-prompt``) with the local chat-completions
test server as the optimiser (scripted answers, delays and errors).

Most tests use a stand-in feedback model whose V_d is a fixed table of definition ->
value, so the loop's logic (history shown to the optimiser, argmax, resume, failures,
usage) is checked exactly; the CLI test runs the real ``vlm-digits`` V_d and validation
readout of a tiny random VLM.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chat_server import Reply
from ieqa import optimize as fdmpo
from ieqa.data.schema import EditSample
from ieqa.optimize import (
    ChatOptimizer,
    FDMPOError,
    OptimizerError,
    OptimizerReply,
    optimize,
    read_trajectory,
)
from ieqa.prompts import PromptTemplate, load_template
from ieqa.scorers.vlm.base import resolve_template
from ieqa.scorers.vlm.digits import DefinitionValue

DIM = "visual_quality"
TEMPLATE = {"name": "short-def", "description": "", "reference": "", "system": None,
            "output": "digits", "scale": [1, 5], "images": ["source", "edited"],
            "user": "<image:source><image:edited>{instruction} {definition} Rate the "
                    "{dimension}.",
            "answer_prefix": "{Dimension} score: "}


class TableFeedback:
    """A stand-in feedback model: V_d of a definition from a table (default 0.1)."""

    def __init__(self, values: dict[str, float]) -> None:
        self.template = resolve_template(TEMPLATE)
        self.values = values
        self.seen: list[str] = []
        self.targets: list[dict] = []
        self.batch_size = 8

    def definition_value(self, samples, targets=None, *, template=None) -> DefinitionValue:
        text = template.definitions[DIM]
        self.seen.append(text)
        self.targets.append(dict(targets))
        return DefinitionValue(mean=self.values.get(text, 0.1), per_sample={})

    def config(self) -> dict:
        return {"readout": "table"}


def _samples(n: int = 6) -> list[EditSample]:
    return [EditSample(id=f"s{i}", edited=f"e{i}.png", instruction="make it red",
                       scores={DIM: 1.0 + 0.5 * i}, meta={"score_scale": [1, 5]})
            for i in range(n)]


def chat(text: str, usage: bool = True) -> Reply:
    body = {"id": "chatcmpl-x", "object": "chat.completion", "model": "opt",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]}
    if usage:
        body["usage"] = {"prompt_tokens": 100, "completion_tokens": 7}
    return Reply(body=body)


def _user(seen) -> str:
    content = next(m["content"] for m in seen.body["messages"] if m["role"] == "user")
    return "".join(p["text"] for p in content if p["type"] == "text")


def _run(server, out: Path | None, answers, values=None, **kw):
    server.plan = [a if isinstance(a, Reply) else chat(a) for a in answers]
    feedback = kw.pop("feedback", None) or TableFeedback(values or {})
    opt = ChatOptimizer(server.url, "opt", timeout_s=kw.pop("timeout_s", 10.0), max_retries=0)
    try:
        result = optimize(feedback, opt, _samples(), dimension=DIM, initial_definition="Poor.",
                          out_dir=out, plot=False, **kw)
    finally:
        opt.close()
    return result, feedback


def test_optimiser_sees_sorted_history_and_best_is_argmax(server, tmp_path):
    values = {"Poor.": 0.2, "Sharp.": 0.3, "Clean and sharp.": 0.5, "Colourful.": 0.4}
    result, feedback = _run(server, tmp_path, ["<definition>Sharp.</definition>",
                                               "Clean and sharp.", "  <definition> Colourful."
                                               "</definition>"], values, iterations=3)
    assert [t.definition for t in result.trials] == ["Poor.", "Sharp.", "Clean and sharp.",
                                                     "Colourful."]
    assert result.best.definition == "Clean and sharp." and result.best.iteration == 2
    assert result.complete and not result.failures
    # the third call shows every trial, lowest V_d first, and the best
    third = _user(server.requests[2])
    history = ["V_d = 0.2000: Poor.", "V_d = 0.3000: Sharp.", "V_d = 0.5000: Clean and sharp."]
    positions = [third.index(line) for line in history]
    assert positions == sorted(positions)
    assert "The best so far (V_d = 0.5000):\nClean and sharp." in third
    assert "The 3 definitions tried so far" in third and "6 rated edits" in third
    assert server.requests[0].body["messages"][0]["role"] == "system"
    # V_d targets: the data's 1-5 scores on the template's 1-5 scale, as d.dd
    assert feedback.targets[0]["s3"] == {DIM: 2.5}
    # tokens from the server's usage field
    assert result.usage == {"prompt_tokens": 300, "completion_tokens": 21, "calls": 3,
                            "calls_without_usage": 0}
    # outputs: the best as a template usable with --template, and the trajectory
    best = load_template(tmp_path / fdmpo.BEST_TEMPLATE_FILE)
    assert best.definitions == {DIM: "Clean and sharp."}
    assert "Clean and sharp." in best.fill(instruction="x", dimension=DIM).user
    assert (tmp_path / fdmpo.BEST_DEFINITION_FILE).read_text().strip() == "Clean and sharp."
    header, trials, failures = read_trajectory(tmp_path / fdmpo.TRAJECTORY_FILE)
    assert header["dimension"] == DIM and len(trials) == 4 and not failures
    summary = json.loads((tmp_path / fdmpo.RESULT_FILE).read_text())
    assert summary["best"]["iteration"] == 2 and summary["complete"] is True


def test_failures_are_recorded_by_kind_and_retried(server, tmp_path):
    answers = [Reply(body=chat("late").body, sleep_s=1.5),  # timeout
               Reply(status=500, body={"error": {"message": "boom"}}),  # http
               "<definition></definition>",  # empty
               "<definition>poor</definition>",  # duplicate of the initial definition
               "x" * 61,  # too long
               chat("<definition>Sharp.</definition>", usage=False)]
    result, _ = _run(server, tmp_path, answers, {"Sharp.": 0.3}, iterations=1,
                     timeout_s=0.5, max_definition_chars=60)
    kinds = [f.failure for f in result.failures]
    assert kinds == ["timeout", "http", "empty", "duplicate", "too_long"]
    assert result.failure_counts() == {k: 1 for k in kinds}
    assert result.complete and result.trials[1].definition == "Sharp."
    assert result.trials[1].attempts == 6
    # the retry prompt says why the previous answer was rejected
    fifth, sixth = _user(server.requests[4]), _user(server.requests[5])
    assert "attempt 4 was rejected (duplicate): the definition repeats trial 0" in fifth
    assert "attempt 5 was rejected (too_long)" in sixth
    assert "attempt 1 was rejected (timeout)" in sixth  # every rejection of this proposal
    assert "rejected" not in _user(server.requests[0])
    # usage: empty, duplicate and too-long answers reported it; the rest did not
    assert result.usage == {"prompt_tokens": 300, "completion_tokens": 21, "calls": 6,
                            "calls_without_usage": 3}
    _, _, failures = read_trajectory(tmp_path / fdmpo.TRAJECTORY_FILE)
    assert [f.failure for f in failures] == kinds


def test_failure_budget_stops_the_run(server, tmp_path):
    result, _ = _run(server, tmp_path, ["", "", ""], iterations=2, max_failures=2)
    assert not result.complete and len(result.trials) == 1 and len(result.failures) == 2
    assert len(server.requests) == 2
    assert result.best.definition == "Poor."


def test_resume_continues_as_the_uninterrupted_run(server, tmp_path):
    values = {"Poor.": 0.2, "A.": 0.3, "B.": 0.6, "C.": 0.4}
    whole, _ = _run(server, tmp_path / "whole", ["A.", "", "B.", "C."], values, iterations=3)
    whole_prompts = [_user(r) for r in server.requests]
    server.requests.clear()

    part, _ = _run(server, tmp_path / "part", ["A.", ""], values, iterations=3,
                   max_failures=1)  # stops in iteration 2 after its failure
    assert not part.complete and len(part.trials) == 2
    traj = tmp_path / "part" / fdmpo.TRAJECTORY_FILE
    with traj.open("a") as fh:
        fh.write('{"kind": "trial", "iter')  # a write cut short by a crash
    resumed, feedback = _run(server, tmp_path / "part", ["B.", "C."], values, iterations=3)
    assert feedback.seen == ["B.", "C."]  # the initial and A. were not evaluated again
    assert [(t.definition, t.v_d, t.attempts) for t in resumed.trials] == \
        [(t.definition, t.v_d, t.attempts) for t in whole.trials]
    assert [_user(r) for r in server.requests] == whole_prompts  # same prompts, same order
    assert resumed.best.definition == "B." and resumed.usage == whole.usage

    # interrupted while measuring an accepted proposal: resumed without asking again
    class Interrupted(TableFeedback):
        def definition_value(self, samples, targets=None, *, template=None):
            if template.definitions[DIM] == "D.":
                raise KeyboardInterrupt
            return super().definition_value(samples, targets, template=template)

    with pytest.raises(KeyboardInterrupt):
        _run(server, tmp_path / "part", ["D."], values, iterations=4,
             feedback=Interrupted(values))
    n_requests = len(server.requests)
    again, feedback = _run(server, tmp_path / "part", [], values, iterations=4)
    assert len(server.requests) == n_requests and feedback.seen == ["D."]
    assert again.trials[-1].definition == "D." and again.trials[-1].attempts == 1
    assert again.usage["calls"] == whole.usage["calls"] + 1

    with pytest.raises(FDMPOError, match="other settings.*--fresh"):
        _run(server, tmp_path / "part", [], values, iterations=3, seed=5)
    fresh, feedback = _run(server, tmp_path / "part", ["A."], values, iterations=1,
                           resume=False)
    assert len(fresh.trials) == 2 and feedback.seen == ["Poor.", "A."]


def test_callable_optimiser_and_its_failures(tmp_path):
    calls = []

    def optimizer(messages):
        calls.append(messages)
        if len(calls) == 1:
            raise TimeoutError("slow")
        if len(calls) == 2:
            raise RuntimeError("client bug")
        if len(calls) == 3:
            raise OptimizerError("quota", "http", {"prompt_tokens": 5, "completion_tokens": 0})
        return OptimizerReply("Better.", {"prompt_tokens": 10, "completion_tokens": 2})

    result = optimize(TableFeedback({"Better.": 0.9}), optimizer, _samples(), dimension="PQ",
                      iterations=1, initial_definition="Poor.")
    assert [f.failure for f in result.failures] == ["timeout", "error", "http"]
    assert "RuntimeError: client bug" in result.failures[1].message
    assert result.best.definition == "Better." and result.dimension == DIM
    assert result.usage == {"prompt_tokens": 15, "completion_tokens": 2, "calls": 4,
                            "calls_without_usage": 2}


def test_bad_inputs_say_what_to_do():
    feedback = TableFeedback({})
    no_def = {**TEMPLATE, "user": "<image:source><image:edited>{instruction} Rate it."}
    with pytest.raises(FDMPOError, match=r"no \{definition\} placeholder.*ds-ieqa-digits"):
        optimize(feedback, lambda m: "x", _samples(), dimension=DIM, template=no_def)
    with pytest.raises(FDMPOError, match="no 'instruction_alignment' scores"):
        optimize(feedback, lambda m: "x", _samples(), dimension="instruction_alignment")
    with pytest.raises(FDMPOError, match="unknown placeholder"):
        optimize(feedback, lambda m: "x", _samples(), dimension=DIM,
                 optimizer_prompt="{history} {nope}")


def test_template_definitions_field_round_trips():
    base = resolve_template(TEMPLATE)
    assert base.to_dict().get("definitions") is None  # digests of old templates unchanged
    tmpl = fdmpo.definition_template(base, "PQ", "Crisp pixels.")
    assert tmpl.definitions == {DIM: "Crisp pixels."}
    again = load_template(tmpl.to_dict())
    assert again == tmpl and again.digest == tmpl.digest
    assert "Crisp pixels." in again.fill(instruction="x", dimension=DIM).user
    # other dimensions keep the built-in definitions
    assert again.definition("instruction_alignment").startswith("Instruction alignment")
    with pytest.raises(Exception, match="definitions"):
        PromptTemplate(**{**base.to_dict(), "definitions": {"nonsense_dim": "x"}})


def test_local_causal_lm_optimiser(tiny_models, tmp_path):
    """``--optimizer-local``: a tiny causal LM built offline from a config (with the tiny
    VLM's byte-level tokenizer and chat template) answers with exact token counts."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2-vl"])
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32,
                                         intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1))
    model.save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    opt = fdmpo.LocalOptimizer(tmp_path / "lm", max_new_tokens=6, device="cpu")
    messages = fdmpo.render_optimizer_messages(DIM, [fdmpo.Trial(0, "Poor.", 0.1)],
                                               n_samples=4)
    reply = opt(messages)
    assert isinstance(reply.text, str)
    assert reply.usage["completion_tokens"] <= 6 and reply.usage["prompt_tokens"] > 100
    assert opt(messages).text == reply.text  # greedy: deterministic
    # in the loop: whatever it answers is a trial or a recorded failure, tokens counted
    result = optimize(TableFeedback({}), opt, _samples(), dimension=DIM, iterations=1,
                      initial_definition="Poor.", max_failures=3)
    assert len(result.trials) == 2 or len(result.failures) == 3
    assert result.usage["calls_without_usage"] == 0 and result.usage["completion_tokens"] > 0


def test_definition_value_of_another_template_equals_that_templates_scorer(tiny_models):
    """FDMPO's V_d of a candidate (``definition_value(template=...)``) is the V_d a scorer
    built with that template reports: one formula, batched with shared prefixes."""
    from ieqa import create_scorer
    from ieqa.train.data import _load_source
    from ieqa.train.tiny import artifacts_world

    samples, _ = _load_source(artifacts_world(8, seed=5, size=64))
    model = str(tiny_models["qwen2-vl"])
    candidate = fdmpo.definition_template(resolve_template(TEMPLATE), DIM, "Crisp pixels.")
    base = create_scorer("vlm-digits", model=model, device="cpu", template=TEMPLATE,
                         dimensions=[DIM], batch_size=4)
    own = create_scorer("vlm-digits", backend=base.backend, template=candidate,
                        dimensions=[DIM], batch_size=4)
    via = base.definition_value(samples, template=candidate)
    direct = own.definition_value(samples)
    assert via.mean == pytest.approx(direct.mean, abs=1e-6)
    assert via.mean != pytest.approx(base.definition_value(samples).mean, abs=1e-9)


def test_cli_with_a_tiny_vlm_resumes_and_its_template_scores(server, tiny_models, tmp_path):
    from ieqa.cli import app
    from ieqa.data.shapesedit import EDITOR_PRESETS, ShapesEditConfig
    from ieqa.data.shapesedit.generator import generate

    manifest = generate(tmp_path / "data", ShapesEditConfig(
        n=8, k=4, seed=3, size=64, editors=EDITOR_PRESETS["artifacts"], photo_fraction=0.0))
    model = str(tiny_models["qwen2-vl"])
    out = tmp_path / "fdmpo"
    template_file = tmp_path / "short.yaml"
    template_file.write_text(json.dumps(TEMPLATE))
    args = ["optimize-prompt", "-d", DIM, "--model", model, "--data", str(manifest),
            "--validation", str(manifest), "--samples", "4", "--template", str(template_file),
            "--optimizer-base-url", server.url, "--optimizer-model", "opt", "--out", str(out),
            "-O", "device=cpu", "-O", "batch_size=8", "--initial-definition", "Poor."]
    server.plan = [chat("<definition>Clean.</definition>"), chat("")]
    runner = CliRunner()
    res = runner.invoke(app, [*args, "--iterations", "1"])
    assert res.exit_code == 0, res.output
    assert "trial 1: V_d" in res.output and "validation SRCC" in res.output
    for name in (fdmpo.TRAJECTORY_FILE, fdmpo.BEST_TEMPLATE_FILE, fdmpo.RESULT_FILE,
                 fdmpo.PLOT_FILE):
        assert (out / name).exists(), name
    _, trials, _ = read_trajectory(out / fdmpo.TRAJECTORY_FILE)
    assert [t.definition for t in trials] == ["Poor.", "Clean."]
    assert all(0 <= t.v_d <= 1.11 and t.validation["n"] == 8 for t in trials)
    # resumed with one more iteration; the optimiser's empty answer spends the budget
    res = runner.invoke(app, [*args, "--iterations", "2", "--max-failures", "1"])
    assert res.exit_code == 3, res.output
    assert "failure budget" in res.output and len(server.requests) == 2
    log = [json.loads(x) for x in (out / "judge_log.jsonl").read_text().splitlines()]
    assert len(log) == 2 and [e["response"]["choices"][0]["message"]["content"]
                              for e in log] == ["<definition>Clean.</definition>", ""]
    # the best definition's template scores with ieqa score --template
    res = runner.invoke(app, ["score", str(manifest), "--scorer", "vlm-digits", "--model", model,
                              "--template", str(out / fdmpo.BEST_TEMPLATE_FILE),
                              "-O", "device=cpu", "-O", "dimensions=[visual_quality]",
                              "-o", str(tmp_path / "scores.jsonl")])
    assert res.exit_code == 0, res.output
    # usage errors name the missing option
    res = runner.invoke(app, ["optimize-prompt", "-d", DIM, "--model", model, "--data",
                              str(manifest)])
    assert res.exit_code == 2 and "--optimizer-base-url" in res.output


def test_recipe_definitions_point_at_fdmpo_outputs(server, tmp_path):
    from ieqa.train import load_recipe
    from ieqa.train.recipe import RecipeError
    from ieqa.train.stages import stage_template as _resolve_template

    _run(server, tmp_path / "vq", ["Sharp."], {"Sharp.": 0.5}, iterations=1)
    recipe = load_recipe("ds-ieqa", [f"stages.0.definitions.visual_quality={tmp_path / 'vq'}"])
    template = _resolve_template(recipe.stages[0])
    assert template.name == "ds-ieqa-digits"
    assert template.definitions == {DIM: "Sharp."}
    assert "Definition of visual quality: Sharp." in template.fill(
        instruction="x", dimension=DIM).system
    (tmp_path / "ec.txt").write_text("Follows every part of the instruction.\n")
    recipe = load_recipe("ds-ieqa", [f"stages.0.definitions.editing_fidelity={tmp_path / 'ec.txt'}"])
    assert _resolve_template(recipe.stages[0]).definition("instruction_alignment") == \
        "Follows every part of the instruction."
    with pytest.raises(RecipeError, match="no such file.*optimize-prompt"):
        load_recipe("ds-ieqa", [f"stages.0.definitions.visual_quality={tmp_path / 'nope'}"])
    with pytest.raises(RecipeError, match="defines no 'content_preservation'"):
        load_recipe("ds-ieqa", [f"stages.0.definitions.content_preservation={tmp_path / 'vq'}"])
    with pytest.raises(RecipeError, match="does not train"):
        load_recipe("ds-ieqa", [f"stages.0.definitions.overall={tmp_path / 'ec.txt'}"])
