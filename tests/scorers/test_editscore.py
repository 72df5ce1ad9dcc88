"""``editscore``: EditScore's released judges, against EditScore's rules written out here.

The replica is laid out as the release: a tiny Qwen2.5-VL base (``ieqa.testing``) and a
LoRA adapter in PEFT's folder layout (``build_lora_adapter``); the prompt file is a
stand-in with the authors' path and constant names (``write_prompt_standins``).

The references below are written from EditScore's paper and released code's behaviour,
without ieqa's scorer code:

* the **rules** (given the same answer strings): per pass ``SC = min(SC scores) / (R/10)``,
  ``PQ = min(PQ scores) / (R/10)``, ``O = sqrt(SC * PQ)``; prompt following and
  consistency are the two SC scores / (R/10); over passes the means, and ``overall`` is the
  mean O (average_last), ``sqrt(mean prompt following * mean PQ)`` (average_first) or
  ``sqrt(mean SC * mean PQ)`` (the RL server's variant);
* the **transformers path**: the chat text written by hand (system message, ``<imgN>: ``
  labels before the vision tokens, the prompt), each image resized as qwen_vl_utils does,
  the base model with the adapter merged by PEFT, and per pass ``torch.manual_seed(42 +
  pass)`` right before ``generate(do_sample=True, temperature=0.7, top_p=0.9, top_k=20)``.
"""

from __future__ import annotations

import functools
import itertools
import json
import math

import numpy as np
import pytest
import torch
from PIL import Image

from chat_server import FakeServer, Reply, serve
from ieqa import EditSample, create_scorer
from ieqa.backends.processor import BackendError
from ieqa.prompts.answers import write_vie_answer

from .qwen_steps import qwen_vl_utils_resize as _qwen_resize

SYSTEM = "You are a helpful assistant."


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    from ieqa.scorers.published.editscore import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_lora_adapter, write_prompt_standins

    root = tmp_path_factory.mktemp("editscore")
    base = build_tiny_vlm(root / "base", "qwen2.5-vl", seed=3)
    return {"base": base, "adapter": build_lora_adapter(root / "adapter", base, seed=5),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _image(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _edits(n: int = 2) -> list[EditSample]:
    return [EditSample(id=f"e{i}", source=_image(10 + i, (64, 48)),
                       edited=_image(20 + i, (40, 70)), instruction=f"make the cube {c}")
            for i, c in zip(range(n), ("red", "blue", "green"), strict=False)]


# ------------------------------------------------------------------ the rules (server)
def _answers(kind: str, seed: int, high: int) -> tuple[int | float, int | float]:
    """The scripted answer of one prompt and pass: distinct per kind and seed, on 0-high."""
    if kind == "SC":
        return (seed * 7) % (high + 1), (seed * 3 + 1) % (high + 1)
    return (seed * 5 + 2) % (high + 1), float(high) - (seed % 4) * 0.5


class ScriptedJudge(FakeServer):
    """Answers each EditScore prompt from its kind (the SC prompt names the instruction)
    and its seed; answers listed in ``override`` replace the scripted ones."""

    def __init__(self, high: int) -> None:
        super().__init__()
        self.high = high
        self.override: dict[tuple[str, str, int], str] = {}

    def next_reply(self, body):
        text = body["messages"][-1]["content"][-1]["text"]
        kind = "SC" if "Stand-in text for sc_scale" in text else "PQ"
        instruction = next((w for w in ("red", "blue", "green") if f"cube {w}" in text), "")
        seed = body["seed"]
        content = self.override.get((kind, instruction, seed)) or write_vie_answer(
            _answers(kind, seed, self.high), f"{kind} reasoning")
        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}]})


def _reference(seeds: list[int], high: int, reduction: str) -> dict[str, float]:
    unit = high / 10
    per = []
    for seed in seeds:
        sc = [v / unit for v in _answers("SC", seed, high)]
        pq = [v / unit for v in _answers("PQ", seed, high)]
        per.append({"pf": sc[0], "cons": sc[1], "SC": min(sc), "PQ": min(pq),
                    "O": math.sqrt(min(sc) * min(pq))})
    mean = {k: sum(p[k] for p in per) / len(per) for k in per[0]}
    overall = {"average_last": mean["O"],
               "average_first": math.sqrt(mean["pf"] * mean["PQ"]),
               "average_first_min_sc": math.sqrt(mean["SC"] * mean["PQ"])}[reduction]
    return {"instruction_alignment": mean["pf"], "content_preservation": mean["cons"],
            "visual_quality": mean["PQ"], "sc_min": mean["SC"], "overall": overall}


@pytest.mark.parametrize("high", [25, 10])
@pytest.mark.parametrize("num_pass", [1, 4])
@pytest.mark.parametrize("reduction", ["average_last", "average_first", "average_first_min_sc"])
def test_scores_follow_editscore_rules_given_the_same_answers(replica, high, num_pass, reduction):
    with serve(ScriptedJudge(high)) as judge:
        scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                               prompts=str(replica["prompts"]), score_range=high,
                               num_pass=num_pass, reduction=reduction)
        results = scorer.score(_edits(2))
    seeds = list(range(42, 42 + num_pass))
    want = _reference(seeds, high, reduction)
    for r in results:
        assert r.error is None, r.error
        assert r.scores == pytest.approx(want, rel=1e-12, abs=0)
        # EditScore's own reading of these well-formed answers: its evaluate()'s four
        # outputs; the RL server's reduction reads with another parser, not recorded
        released = r.raw["released"]
        if reduction == "average_first_min_sc":
            assert released["status"] == "none" and "batch_evaluate" in released["reason"]
        else:
            assert released["status"] == "read"
            assert released["scores"] == pytest.approx(
                {k: v for k, v in want.items() if k != "sc_min"}, rel=1e-12, abs=0)
    # one request per prompt and pass, each seeded seed + pass, sampled as released
    assert len(judge.requests) == 2 * 2 * num_pass
    assert sorted({q.body["seed"] for q in judge.requests}) == seeds
    for q in judge.requests:
        body = q.body
        assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) \
            == (0.7, 0.9, 20, 512)
        assert "n" not in body
        system, user = body["messages"]
        assert system == {"role": "system", "content": SYSTEM}
        labels = [p["text"] for p in user["content"][:-1] if p["type"] == "text"]
        images = [p for p in user["content"] if p["type"] == "image_url"]
        text = user["content"][-1]["text"]
        if "sc_scale" in text:
            assert labels == ["<img1>: ", "<img2>: "] and len(images) == 2
            assert f"<instruction> {high}" not in text and "cube " in text and f" {high}\n" in text
        else:
            assert labels == ["<img1>: "] and len(images) == 1
            assert text.endswith(f"pq_rule: {high}\n")


def test_reductions_by_hand():
    """``vie_overall`` on two passes worked out by hand: (prompt following, min SC, PQ) =
    (9, 4, 1) and (1, 1, 9). average_last = (sqrt(4 * 1) + sqrt(1 * 9)) / 2 = 2.5;
    average_first = sqrt(mean(9, 1) * mean(1, 9)) = 5; average_first_min_sc =
    sqrt(mean(4, 1) * mean(1, 9)) = sqrt(12.5)."""
    from ieqa.scorers.published.vie_judge import vie_overall

    passes = [{"prompt_following": 9.0, "sc": 4.0, "pq": 1.0},
              {"prompt_following": 1.0, "sc": 1.0, "pq": 9.0}]
    assert vie_overall(passes, "average_last") == pytest.approx(2.5)
    assert vie_overall(passes, "average_first") == pytest.approx(5.0)
    assert vie_overall(passes, "average_first_min_sc") == pytest.approx(12.5 ** 0.5)
    # one pass: VIEScore's O = sqrt(min SC * PQ)
    assert vie_overall(passes[:1], "average_last") == pytest.approx(2.0)


def test_reductions_differ_on_these_answers(replica):
    """The scorer's ``overall`` over four passes of the scripted judge (0-25), for each
    reduction, against the numbers worked out here from the answers written out as
    literals: the three differ, so each reduction is told apart from the others."""
    seeds = list(range(42, 46))
    sc_answers = [(8, 23), (15, 0), (22, 3), (3, 6)]  # (prompt following, consistency)
    pq_answers = [(4, 24.0), (9, 23.5), (14, 25.0), (19, 24.5)]
    assert [_answers("SC", s, 25) for s in seeds] == sc_answers  # the script gives these
    assert [_answers("PQ", s, 25) for s in seeds] == pq_answers
    sc, pq = np.array(sc_answers) / 2.5, np.array(pq_answers) / 2.5  # 0-25 -> 0-10
    sc_min, pq_min = sc.min(axis=1), pq.min(axis=1)
    want = {"average_last": float(np.mean(np.sqrt(sc_min * pq_min))),
            "average_first": float(np.sqrt(sc[:, 0].mean() * pq_min.mean())),
            "average_first_min_sc": float(np.sqrt(sc_min.mean() * pq_min.mean()))}
    assert min(abs(a - b) for a, b in itertools.combinations(want.values(), 2)) > 0.1
    with serve(ScriptedJudge(25)) as judge:
        for reduction, value in want.items():
            scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                                   prompts=str(replica["prompts"]), num_pass=4,
                                   reduction=reduction)
            result = scorer.score(_edits(1))[0]
            assert result.error is None, result.error
            assert result.scores["overall"] == pytest.approx(value, rel=1e-12), reduction
            assert result.scores["sc_min"] == pytest.approx(sc_min.mean(), rel=1e-12)
            assert result.scores["visual_quality"] == pytest.approx(pq_min.mean(), rel=1e-12)
            assert result.scores["instruction_alignment"] == pytest.approx(sc[:, 0].mean(),
                                                                           rel=1e-12)
            assert result.scores["content_preservation"] == pytest.approx(sc[:, 1].mean(),
                                                                          rel=1e-12)


MALFORMED = {
    "trailing comma": '{"reasoning": "ok", "score": [20, 5],}',
    "string scores": '{"reasoning": "ok", "score": ["20", "5"]}',
    "one element": '{"reasoning": "ok", "score": [20]}',
    "missing key": '{"reasoning": "ok"}',
    "negative": '{"reasoning": "ok", "score": [-1, 5]}',
    "out of range": '{"reasoning": "ok", "score": [26, 5]}',
    "refusal": "I'm sorry, but I can't assist with that request.",
    "empty": "",
}


def test_malformed_answers_are_recorded_and_counted(replica, tmp_path):
    from typer.testing import CliRunner

    from ieqa.cli import app

    edits = tmp_path / "edits"
    (edits / "source").mkdir(parents=True)
    (edits / "edited").mkdir()
    rows = []
    for i, label in enumerate([*MALFORMED, "fine"]):
        _image(i, (56, 56)).save(edits / "source" / f"e{i}.png")
        _image(100 + i, (56, 56)).save(edits / "edited" / f"e{i}.png")
        rows.append({"id": f"e{i}", "source": f"source/e{i}.png",
                     "edited": f"edited/e{i}.png", "instruction": f"make cube {i} {label}"})
    (edits / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with serve(ScriptedJudge(25)) as judge:
        judge.next_reply = _by_instruction(judge, MALFORMED)
        out = tmp_path / "scores.jsonl"
        result = CliRunner().invoke(app, [
            "score", str(edits / "manifest.jsonl"), "--scorer", "editscore", "--model",
            "editscore", "-O", f"base_url={judge.url}", "--prompts", str(replica["prompts"]),
            "-o", str(out)])
        assert result.exit_code == 3, result.output
        assert "9 rows" in result.output and "; 8 with errors" in result.output
        assert "8 of 9 rows have errors" in result.output
        by_id = {json.loads(line)["id"]: json.loads(line) for line in out.read_text().splitlines()}
        reasons = {"trailing comma": "not valid JSON", "string scores": "not a number",
                   "one element": "expected 2 scores, got 1", "missing key": "no 'score'",
                   "negative": "outside 0-25", "out of range": "outside 0-25",
                   "refusal": "no answer object", "empty": "the answer is empty"}
        for i, label in enumerate(MALFORMED):
            row = by_id[f"e{i}"]
            assert row["error"].startswith("unreadable answer (1 of 2): pass 0 SC: "), row["error"]
            assert reasons[label] in row["error"], (label, row["error"])
            assert row.get("overall") is None
        assert by_id[f"e{len(MALFORMED)}"]["error"] is None
        # EditScore's own reading (its evaluate(), written out): json-repair mends the
        # trailing comma; an out-of-range score is kept; one SC score fails on its second,
        # a negative one on sqrt, strings and a missing key on min; the refusal is a random
        # draw (left out); an empty answer would be asked again (left out)
        pq = min(_answers("PQ", 42, 25)) / 2.5
        released = {label: by_id[f"e{i}"]["raw"]["released"] for i, label in
                    enumerate([*MALFORMED, "fine"])}
        for label, (pf, cons) in {"trailing comma": (20, 5), "out of range": (26, 5),
                                  "fine": _answers("SC", 42, 25)}.items():
            got = released[label]
            assert got["status"] == "read", (label, got)
            assert got["scores"] == pytest.approx({
                "instruction_alignment": pf / 2.5, "content_preservation": cons / 2.5,
                "visual_quality": pq, "overall": math.sqrt(min(pf, cons) / 2.5 * pq)}), label
        assert released["refusal"]["status"] == "random"
        for label in ("string scores", "one element", "missing key", "negative", "empty"):
            assert released[label]["status"] == "unread" and "scores" not in released[label]
        assert "asks again" in released["empty"]["reason"]
        assert "sqrt" in released["negative"]["reason"]

        # the authors' RL-server rule, only when asked for: labelled and counted
        scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                               prompts=str(replica["prompts"]), on_malformed="midpoint")
        sample = EditSample(id="m", source=edits / "source" / "e0.png",
                            edited=edits / "edited" / "e0.png",
                            instruction="make cube 0 trailing comma")
        got = scorer.score([sample])[0]
    assert got.error is None and "substituted" in got.flags
    assert got.raw["substituted"] == 1
    assert got.scores["instruction_alignment"] == 5.0  # 12.5 / 2.5
    assert got.scores["overall"] == pytest.approx(math.sqrt(5.0 * pq))


def _by_instruction(judge: ScriptedJudge, answers: dict[str, str]):
    scripted = ScriptedJudge.next_reply

    def reply(body):
        text = body["messages"][-1]["content"][-1]["text"]
        for label, answer in answers.items():
            if "sc_scale" in text and f" {label}" in text:
                return Reply(body={"id": "x", "object": "chat.completion", "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant",
                                                            "content": answer}}]})
        return scripted(judge, body)

    return reply


# ---------------------------------------------------------- the transformers path
@pytest.mark.parametrize("size", [(64, 48), (40, 70), (3, 500), (9000, 4000), (56, 56)])
def test_images_are_resized_as_qwen_vl_utils_does(size):
    from ieqa.backends.base import fit_qwen_grid

    image = _image(1, (min(size[0], 600), min(size[1], 600))).resize(size)
    got, want = fit_qwen_grid(image), _qwen_resize(image)
    assert got.size == want.size
    assert np.array_equal(np.asarray(got), np.asarray(want))
    # a tight budget and a long side: no side falls below one grid cell
    thin = fit_qwen_grid(image, max_pixels=3136)
    assert min(thin.size) >= 28 and thin.size == _qwen_resize(image, high=3136).size


@functools.lru_cache(maxsize=4)
def _released_model(base: str, adapter: str | None):  # noqa: ANN202
    """The authors' model: the base with the adapter merged by PEFT (none: the base alone),
    float32, in eval mode; and its processor (ieqa's loader: AutoProcessor wants torchvision
    here)."""
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    from ieqa.backends.processor import load_processor

    model = AutoModelForImageTextToText.from_pretrained(base, dtype=torch.float32)
    if adapter is not None:
        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    return model.eval(), load_processor(base)


def _sampled_passes(model, processor, inputs, seeds: list[int],  # noqa: ANN001
                    max_new_tokens: int) -> list[str]:
    """The authors' passes: per seed ``torch.manual_seed`` right before ``generate(
    do_sample=True, temperature=0.7, top_p=0.9, top_k=20)``; the new tokens decoded and
    stripped."""
    out = []
    for seed in seeds:
        torch.manual_seed(seed)
        with torch.no_grad():
            ids = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=True,
                                 temperature=0.7, top_p=0.9, top_k=20)
        new = ids[0, inputs["input_ids"].shape[1]:]
        out.append(processor.tokenizer.decode(new, skip_special_tokens=True,
                                              clean_up_tokenization_spaces=False).strip())
    return out


def _reference_passes(replica, sample: EditSample, text: str, seeds: list[int],
                      max_new_tokens: int, adapter: bool = True) -> list[str]:
    model, processor = _released_model(str(replica["base"]),
                                       str(replica["adapter"]) if adapter else None)
    chat = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
            "<img1>: <|vision_start|><|image_pad|><|vision_end|>"
            "<img2>: <|vision_start|><|image_pad|><|vision_end|>"
            f"{text}<|im_end|>\n<|im_start|>assistant\n")
    images = [_qwen_resize(sample.source), _qwen_resize(sample.edited)]
    inputs = processor(text=[chat], images=images, return_tensors="pt")
    return _sampled_passes(model, processor, inputs, seeds, max_new_tokens)


def test_transformers_path_generates_as_the_released_code(replica):
    edits = _edits(2)
    scorer = create_scorer("editscore", model=str(replica["base"]),
                           adapter=str(replica["adapter"]), prompts=str(replica["prompts"]),
                           device="cpu", num_pass=2, max_new_tokens=10)
    results = scorer.score(edits)
    for sample, result in zip(edits, results, strict=True):
        texts = [p["sc_text"].strip() for p in result.raw["passes"]]
        sc_prompt = scorer.sc_text.replace("<instruction>", sample.instruction)
        assert texts == _reference_passes(replica, sample, sc_prompt, [42, 43], 10)
    # the adapter matters: without it the same seeds give other answers
    plain = _reference_passes(replica, edits[0], scorer.sc_text.replace(
        "<instruction>", edits[0].instruction), [42, 43], 10, adapter=False)
    assert plain != [p["sc_text"].strip() for p in results[0].raw["passes"]]
    # a pass depends only on its seed: pass 1 alone (seed 43), in another batch
    alone = create_scorer("editscore", backend=scorer.backend, prompts=str(replica["prompts"]),
                          num_pass=1, seed=43, max_new_tokens=10)
    again = alone.score([edits[1]])[0]
    assert again.raw["passes"][0]["sc_text"] == results[1].raw["passes"][1]["sc_text"]
    assert again.raw["passes"][0]["pq_text"] == results[1].raw["passes"][1]["pq_text"]


# ----------------------------------------------------------------------- the adapter
def test_adapter_by_hub_id_is_downloaded_at_its_revision(replica, monkeypatch):
    import huggingface_hub

    from ieqa.backends.transformers_vlm import resolve_adapter

    calls = []

    def fake_download(repo_id, revision=None, **kwargs):
        calls.append((repo_id, revision))
        return str(replica["adapter"])

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert resolve_adapter("EditScore/EditScore-7B", "abc123") == replica["adapter"]
    assert calls == [("EditScore/EditScore-7B", "abc123")]
    scorer = create_scorer("editscore", model=str(replica["base"]),
                           adapter="EditScore/EditScore-7B", adapter_revision="abc123",
                           prompts=str(replica["prompts"]), device="cpu")
    assert scorer.backend.config()["adapter"] == "EditScore/EditScore-7B"
    assert scorer.backend.config()["adapter_revision"] == "abc123"


def test_adapter_that_does_not_match_lists_its_keys(replica, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from ieqa.backends.transformers_vlm import TransformersVLM

    bad = tmp_path / "bad"
    shutil.copytree(replica["adapter"], bad)
    weights = load_file(bad / "adapter_model.safetensors")
    key = next(k for k in weights if "layers.0.self_attn.q_proj.lora_A" in k)
    weights[key.replace("layers.0.", "layers.7.")] = weights.pop(key)
    save_file(weights, bad / "adapter_model.safetensors")
    with pytest.raises(BackendError, match=r"1 unexpected: .*layers\.7\.self_attn\.q_proj"
                                           r".*1 missing: .*layers\.0\.self_attn\.q_proj"):
        TransformersVLM(replica["base"], adapter=bad, device="cpu")
    with pytest.raises(BackendError, match="adapter_config.json missing"):
        TransformersVLM(replica["base"], adapter=tmp_path, device="cpu")


def test_options_are_checked_before_loading(replica):
    from ieqa.scorers.base import ScorerError

    common = {"prompts": str(replica["prompts"]), "base_url": "http://127.0.0.1:9/v1",
              "model": "editscore"}
    for bad, match in (({"score_range": 5}, "score_range must be 25"),
                       ({"reduction": "median"}, "unknown reduction"),
                       ({"temperature": 0}, "temperature must be > 0"),
                       ({"on_malformed": "random"}, "on_malformed must be"),
                       ({"variant": "3b"}, "unknown EditScore variant"),
                       ({"top_k": 0}, "top_k must be at least 1"),
                       ({"adapter": "x/y", "backend_options": {"adapter": "z/w"}},
                        "the adapter is given twice"),
                       ({"adapter": "x/y"}, "the server holds the adapter")):
        with pytest.raises(ScorerError, match=match):
            create_scorer("editscore", **common, **bad)


def test_catalog_lists_editscore_with_its_release():
    from typer.testing import CliRunner

    from ieqa.cli import app

    result = CliRunner().invoke(app, ["list", "scorers"])
    assert result.exit_code == 0
    block = result.output[result.output.index("editscore"):]
    assert "EditScore/EditScore-7B" in block and "Qwen/Qwen2.5-VL-7B-Instruct" in block


def test_resume_with_another_copy_of_the_same_prompt_files(replica, tmp_path):
    """Where the prompt files were read from is provenance, not configuration: a run
    resumes from another copy with the same files, without --overwrite."""
    import shutil

    from ieqa.scorers.run import score_to_file

    copy = tmp_path / "copy"
    shutil.copytree(replica["prompts"], copy)
    out = tmp_path / "scores.jsonl"
    with serve(ScriptedJudge(25)) as judge:
        for prompts, n_new in ((replica["prompts"], 2), (copy, 0)):
            scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                                   prompts=str(prompts))
            summary = score_to_file(scorer, _edits(2), out)
            assert summary.n_scored == n_new, summary
            assert scorer.config()["provenance"] == {"prompts": str(prompts)}
        scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                               prompts=str(copy), num_pass=2)
        with pytest.raises(Exception, match="another scorer configuration"):
            score_to_file(scorer, _edits(2), out)


@pytest.mark.parametrize(("answers", "status"), [
    (['{"score": [20, 18]}', '{"reasoning": "ok", "score": [10, 12]}'], "read"),
    (['{"reasoning": "ok", "score": [20, 18]}', '{"score": [10, 12]}'], "unread"),
])
def test_the_released_reading_needs_the_last_passs_reasoning(replica, answers, status):
    """evaluate() ends by returning the last pass's SC and PQ reasoning: without it there
    it fails (unread); an earlier pass without it is read."""
    from types import SimpleNamespace

    from ieqa.scorers.base import ScoreResult

    scorer = create_scorer("editscore", base_url="http://127.0.0.1:9/v1", model="editscore",
                           prompts=str(replica["prompts"]), num_pass=2)
    result = ScoreResult(id="x", scores={})
    gens = [SimpleNamespace(text=t, error=None) for t in answers]
    pq = [SimpleNamespace(text='{"reasoning": "ok", "score": [15, 20]}', error=None)] * 2
    scorer.released_reading(result, None, gens, pq, asked=1)
    released = result.raw["released"]
    assert released["status"] == status, released
    if status == "unread":
        assert "pass 2: no 'reasoning'" in released["reason"]
    else:
        assert released["scores"]["instruction_alignment"] == pytest.approx((20 + 10) / 2 / 2.5)



# ---------------------------------------------------------------- Qwen3-VL (issue 43)
@pytest.fixture(scope="module")
def replica_qwen3(tmp_path_factory):
    from ieqa.scorers.published.editscore import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_lora_adapter, write_prompt_standins

    root = tmp_path_factory.mktemp("editscore-qwen3")
    base = build_tiny_vlm(root / "base", "qwen3-vl", seed=3)
    return {"base": base, "adapter": build_lora_adapter(root / "adapter", base, seed=5),
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _reference_qwen3(replica, images, text: str, seeds: list[int], max_new_tokens: int) -> list[str]:
    """The authors' ``qwen3vl`` backbone, its steps written out here: the base with the
    adapter merged by PEFT; one user message of the images (as they are) and then the text,
    through the processor's own chat template (tokenized by it, as their ``prepare_input``
    does); per pass ``torch.manual_seed`` right before ``generate(do_sample=True,
    temperature=0.7, top_p=0.9, top_k=20)``; the new tokens decoded and stripped."""
    model, processor = _released_model(str(replica["base"]), str(replica["adapter"]))
    messages = [{"role": "user", "content": [{"type": "image", "image": im} for im in images]
                 + [{"type": "text", "text": text}]}]
    inputs = processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                           return_dict=True, return_tensors="pt")
    return _sampled_passes(model, processor, inputs, seeds, max_new_tokens)


def test_qwen3_vl_variant_generates_as_the_released_qwen3vl_backbone(replica_qwen3):
    from ieqa.scorers.published.editscore import VARIANTS

    assert {v: (VARIANTS[v].adapter, VARIANTS[v].base_model) for v in VARIANTS
            if v.startswith("qwen3")} == {
        f"qwen3-vl-{s.lower()}": (f"EditScore/EditScore-Qwen3-VL-{s}-Instruct",
                                  f"Qwen/Qwen3-VL-{s}-Instruct") for s in ("4B", "8B", "32B")}
    edits = _edits(2)
    scorer = create_scorer("editscore", variant="qwen3-vl-8b", model=str(replica_qwen3["base"]),
                           adapter=str(replica_qwen3["adapter"]),
                           prompts=str(replica_qwen3["prompts"]), device="cpu", num_pass=2,
                           max_new_tokens=10)
    results = scorer.score(edits)
    for sample, result in zip(edits, results, strict=True):
        sc_prompt = scorer.sc_text.replace("<instruction>", sample.instruction)
        assert [p["sc_text"].strip() for p in result.raw["passes"]] == _reference_qwen3(
            replica_qwen3, [sample.source, sample.edited], sc_prompt, [42, 43], 10)
        assert [p["pq_text"].strip() for p in result.raw["passes"]] == _reference_qwen3(
            replica_qwen3, [sample.edited], scorer.pq_text, [42, 43], 10)
    # the chat the model reads: no <imgN>: labels, no system message of ieqa's
    sc, _ = scorer.prompts(scorer.load_samples(edits[:1])[0][0][1])
    rendered = scorer.backend.render(sc)
    assert "<img1>" not in rendered and SYSTEM not in rendered
    assert scorer.config()["variant"] == "qwen3-vl-8b"


def test_qwen3_vl_variant_on_a_server_sends_the_released_vllm_request(replica):
    """The authors' ``qwen3vl_vllm`` path: one user message of the images (resized as
    ``qwen_vl_utils`` does) and then the text, no ``<imgN>:`` labels, no system message;
    the same sampling, and the same scores from the same answers as the Qwen2.5-VL path."""
    import base64
    import io

    edits = _edits(2)
    with serve(ScriptedJudge(25)) as judge:
        scorer = create_scorer("editscore", variant="qwen3-vl-8b", base_url=judge.url,
                               model="editscore", prompts=str(replica["prompts"]))
        results = scorer.score(edits)
    want = _reference([42], 25, "average_last")
    assert all(r.error is None and r.scores == pytest.approx(want, rel=1e-12, abs=0)
               for r in results)
    assert len(judge.requests) == 4
    for q in judge.requests:
        body = q.body
        assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) \
            == (0.7, 0.9, 20, 512)
        (user,) = body["messages"]
        kinds = [p["type"] for p in user["content"]]
        sc = "sc_scale" in user["content"][-1]["text"]
        assert kinds == ["image_url"] * (2 if sc else 1) + ["text"]
        sample = next(e for e in edits if not sc or e.instruction in user["content"][-1]["text"])
        sent = [Image.open(io.BytesIO(base64.b64decode(p["image_url"]["url"].split(",", 1)[1])))
                for p in user["content"][:-1]]
        expected = [sample.source, sample.edited] if sc else [sample.edited]
        if sc:
            assert [im.size for im in sent] == [_qwen_resize(im).size for im in expected]
        else:
            assert sent[0].size in {_qwen_resize(e.edited).size for e in edits}
