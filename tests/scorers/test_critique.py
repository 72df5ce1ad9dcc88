"""The ``critique`` scorer (RE-Reward): the critique-text convention, the weighted reward,
per-item errors, and a checkpoint trained with the ``re-reward`` recipe on a tiny VLM
loading as ``critique`` and scoring critiques."""

from __future__ import annotations

import math

import pytest

from ieqa import create_scorer
from ieqa.data.schema import EditSample
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult, ScorerInfo
from ieqa.scorers.critique import DEFAULT_WEIGHTS, CritiqueScorer, weighted_reward


class LengthJudge(Scorer):
    """A programmatic critique judge: scores grow with the critique's length, and accuracy
    is 5 when the critique names 'noise'."""

    info = ScorerInfo("length-judge", "test judge", "composite",
                      ("logicality", "accuracy", "usefulness"), True, needs_source=False,
                      factory="tests:none")

    def __init__(self) -> None:
        self.seen: list[str] = []

    def score_sample(self, sample: EditSample) -> ScoreResult:
        text = sample.meta["critique"]
        self.seen.append(text)
        if text == "boom":
            raise RuntimeError("judge failed")
        n = min(5.0, 1.0 + len(text) / 20)
        return ScoreResult(id=sample.id, scores={"logicality": n, "usefulness": n / 2,
                                                 "accuracy": 5.0 if "noise" in text else 1.0})


def _sample(i: int, image_png: bytes, **meta: str) -> EditSample:
    return EditSample(id=f"s{i}", source=image_png, edited=image_png, instruction="add noise",
                      meta=meta)


@pytest.fixture
def png() -> bytes:
    import io

    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(
        buf, format="PNG")
    return buf.getvalue()


def test_weighted_reward_defaults_and_normalisation():
    assert DEFAULT_WEIGHTS == {"logicality": 0.25, "accuracy": 0.5, "usefulness": 0.25}
    s = {"logicality": 2.0, "accuracy": 4.0, "usefulness": 3.0}
    assert weighted_reward(s) == pytest.approx(0.25 * 2 + 0.5 * 4 + 0.25 * 3)
    # weights are normalised to sum 1 and accept aliases
    assert weighted_reward(s, {"logic": 1, "accuracy": 1, "usefulness": 2}) == pytest.approx(3.0)
    assert weighted_reward({"accuracy": 4.0}, {"accuracy": 1}) == 4.0
    with pytest.raises(ScorerError, match="needs logicality"):
        weighted_reward({"accuracy": 4.0})
    with pytest.raises(ScorerError, match="weighs logicality, accuracy, usefulness only"):
        weighted_reward(s, {"overall": 1})
    with pytest.raises(ScorerError, match="sum to 0"):
        weighted_reward(s, {"accuracy": 0})


def test_critique_from_meta_completion_fallback_and_per_item_errors(png):
    judge = LengthJudge()
    scorer = create_scorer("critique", scorer=judge, weights={"accuracy": 2, "logicality": 1,
                                                              "usefulness": 1})
    assert scorer.name == "critique" and "overall" in scorer.dimensions
    results = scorer.score([
        _sample(0, png, critique="The edit adds visible noise everywhere."),
        _sample(1, png, completion="Looks fine."),           # the TRL adapter's key
        _sample(2, png),                                      # no critique at all
        _sample(3, png, critique="boom"),                     # the readout fails
        _sample(4, png, critique="   "),                      # blank is no critique
    ])
    assert [r.ok for r in results] == [True, True, False, False, False]
    first = results[0]
    assert first.scores["accuracy"] == 5.0
    expected = 0.25 * first.scores["logicality"] + 0.5 * 5.0 + 0.25 * first.scores["usefulness"]
    assert first.scores["overall"] == pytest.approx(expected)
    assert results[1].scores["accuracy"] == 1.0
    assert "no critique text" in results[2].error and "meta['critique']" in results[2].error
    assert "judge failed" in results[3].error
    assert judge.seen[1] == "Looks fine."
    assert scorer.config()["weights"]["accuracy"] == pytest.approx(0.5)


def test_critique_needs_a_model_and_valid_weights():
    with pytest.raises(ScorerError, match="needs a model"):
        create_scorer("critique")
    with pytest.raises(ScorerError, match="must be a number"):
        CritiqueScorer(scorer=LengthJudge(), weights={"accuracy": -1})


# --------------------------------------------------------------------- trained checkpoint
@pytest.fixture(scope="module")
def re_reward_checkpoint(tmp_path_factory):
    """The re-reward recipe, scaled to a tiny random VLM, trained briefly on ShapesEdit
    edits whose critiques are the generator's factual descriptions (``meta.critique``)."""
    from ieqa.data.manifest import write_manifest
    from ieqa.data.shapesedit import EDITOR_PRESETS, ShapesEditConfig, describe, iter_groups
    from ieqa.testing import build_tiny_vlm
    from ieqa.train import train
    from ieqa.train.tiny import tiny_recipe

    root = tmp_path_factory.mktemp("re-reward")
    model = build_tiny_vlm(root / "vlm", "qwen2-vl")
    cfg = ShapesEditConfig(editors=EDITOR_PRESETS["artifacts"], n=48, k=4, seed=3, size=112,
                           photo_fraction=0.0)
    samples = [s.model_copy(update={"meta": {**s.meta, "critique": describe(s.meta)}})
               for g in iter_groups(cfg) for s in g.samples]
    manifest = write_manifest(samples, root / "critiques.jsonl")
    template = {"name": "short-critique-reward", "description": "tiny RE-Reward prompt",
                "reference": "tests", "system": None, "scale": None,
                "images": ["source", "edited"], "output": "text",
                "user": "<image:source><image:edited>{instruction} Critique: {critique} Rate it."}
    recipe = tiny_recipe("re-reward", model, steps=4, max_eval_samples=8,
                         overrides={"data.train": str(manifest), "stages.0.template": template,
                                    "data.max_eval_samples": 8})
    result = train(recipe, output_dir=root / "run", progress=False)
    return result.evaluator_dir, samples


def test_re_reward_checkpoint_loads_as_critique_and_scores_critiques(re_reward_checkpoint):
    folder, samples = re_reward_checkpoint
    scorer = create_scorer("critique", checkpoint=folder)
    assert scorer.name == "critique" and scorer.inner.name == "vlm-head"
    sample = samples[0]
    right = sample.model_copy(update={"meta": {"critique": sample.meta["critique"]}})
    other = sample.model_copy(update={"id": "b", "meta": {"critique": "Nothing changed at all."}})
    missing = sample.model_copy(update={"id": "c", "meta": {}})
    results = scorer.score([right, other, missing])
    assert results[0].ok and results[1].ok and not results[2].ok
    for r in results[:2]:
        assert set(r.scores) == {"logicality", "accuracy", "usefulness", "overall"}
        assert all(math.isfinite(v) for v in r.scores.values())
        assert r.scores["overall"] == pytest.approx(weighted_reward(r.scores))
    # the model reads the critique: another text, other scores
    assert results[0].scores["accuracy"] != results[1].scores["accuracy"]
    # same scores through create_scorer(..., checkpoint=) twice (deterministic load)
    again = create_scorer("critique", checkpoint=folder, weights={"accuracy": 1}).score([right])[0]
    assert again.scores["accuracy"] == pytest.approx(results[0].scores["accuracy"], abs=1e-5)
    assert again.scores["overall"] == pytest.approx(again.scores["accuracy"], abs=1e-5)


def test_a_checkpoint_whose_prompt_lacks_the_critique_is_refused(re_reward_checkpoint, tmp_path):
    import json
    import shutil

    folder, _ = re_reward_checkpoint
    copy = shutil.copytree(folder, tmp_path / "ckpt")
    record = json.loads((copy / "ieqa_evaluator.json").read_text())
    record["args"]["template"]["user"] = "<image:source><image:edited>{instruction} Rate it."
    (copy / "ieqa_evaluator.json").write_text(json.dumps(record))
    with pytest.raises(ScorerError, match=r"no \{critique\} placeholder"):
        create_scorer("critique", checkpoint=copy)


def test_ieqa_score_with_critique_around_a_re_reward_checkpoint(re_reward_checkpoint, tmp_path):
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from ieqa.cli import app
    from ieqa.data.manifest import write_manifest
    from ieqa.rewards import LocalRewarder

    folder, samples = re_reward_checkpoint
    manifest = write_manifest(samples[:4], tmp_path / "critiques.jsonl")
    out = tmp_path / "scores.parquet"
    res = CliRunner().invoke(app, ["score", str(manifest), "--scorer", "critique", "--checkpoint",
                                   str(folder), "-O", "weights={accuracy: 1}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out).to_pylist()
    assert len(table) == 4 and all(row["error"] is None for row in table)
    assert all(row["overall"] == pytest.approx(row["accuracy"]) for row in table)
    # the same checkpoint in-process, as ieqa serve's /v1/critique answers
    rewarder = LocalRewarder("critique", checkpoint=folder)
    s = samples[0]
    answer = rewarder.critique([{"source": s.source, "edited": s.edited,
                                 "instruction": s.instruction, "critique": s.meta["critique"]}])
    assert answer.n_ok == 1 and answer.weights == DEFAULT_WEIGHTS
    assert answer.results[0].reward == pytest.approx(weighted_reward(
        {d: getattr(answer.results[0], d) for d in ("logicality", "accuracy", "usefulness")}))


def test_zero_shot_judge_readout_over_a_chat_server(server, png):
    """``readout="judge"``: the ``reasonedit-reward`` prompt, critique included, goes to an
    OpenAI-compatible server, and its JSON answer is read back (appendix E.4 protocol)."""
    import json as _json

    from chat_server import FakeServer, Reply

    def texts(body):
        return " ".join(p["text"] for m in body["messages"] if isinstance(m["content"], list)
                        for p in m["content"] if p["type"] == "text")

    class Judge(FakeServer):
        def echo(self, body):
            said = texts(body)
            answer = {"logicality": 4, "usefulness": 2,
                      "accuracy": 5 if "noise" in said.split("Candidate critique:")[-1] else 1}
            return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                               "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant", "content": _json.dumps(answer)}}]})

    server.__class__ = Judge
    scorer = create_scorer("critique", model="judge", base_url=server.url, readout="judge",
                           backend_options={"backoff_s": 0.01, "timeout_s": 5.0})
    results = scorer.score([_sample(0, png, critique="Visible noise was added."),
                            _sample(1, png, critique="The sky is purple.")])
    assert [r.scores["accuracy"] for r in results] == [5.0, 1.0]
    assert results[0].scores["overall"] == pytest.approx(0.25 * 4 + 0.5 * 5 + 0.25 * 2)
    prompts = [texts(r.body) for r in server.requests]  # the two requests may arrive in either order
    assert any("Visible noise was added." in p and "add noise" in p for p in prompts)
    assert any("The sky is purple." in p for p in prompts)
