"""How an evaluator checkpoint records its base model, and how `ieqa score` / `ieqa bench`
pick the scorer of a checkpoint."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.commands.options import make_scorer
from ieqa.scorers.base import ScorerError
from ieqa.scorers.checkpoint import CHECKPOINT_FILE, load_evaluator, model_reference
from ieqa.testing import build_tiny_vlm

runner = CliRunner()


def test_model_reference(tmp_path, monkeypatch):
    ckpt = tmp_path / "run" / "evaluator"
    (ckpt / "model").mkdir(parents=True)
    (tmp_path / "tiny").mkdir()
    monkeypatch.chdir(tmp_path)
    assert model_reference("./tiny", ckpt) == str(tmp_path / "tiny")  # relative local -> absolute
    assert model_reference("tiny", ckpt) == str(tmp_path / "tiny")
    assert model_reference(str(ckpt / "model"), ckpt) == "model"  # inside the checkpoint -> relative
    assert model_reference("run/evaluator/model", ckpt) == "model"
    assert model_reference(str(tmp_path / "tiny"), ckpt) == str(tmp_path / "tiny")  # absolute as given
    assert model_reference("Qwen/Qwen2.5-VL-7B-Instruct", ckpt) == "Qwen/Qwen2.5-VL-7B-Instruct"  # hub id


def _fake_checkpoint(folder, scorer="vlm-head", base_model="./tiny"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CHECKPOINT_FILE).write_text(json.dumps(
        {"format": "ieqa-evaluator", "version": 1, "scorer": scorer, "base_model": base_model, "args": {}}))
    return folder


def test_a_relative_base_model_that_is_not_there_says_to_pass_the_model(tmp_path):
    folder = _fake_checkpoint(tmp_path / "ev")
    with pytest.raises(ScorerError, match=r"records its base model as './tiny', which does not exist here .* "
                                          r"--model DIR on the command line, or model=DIR in Python"):
        load_evaluator(folder)
    # the hint: give the model (on the command line --model reaches load_evaluator as model=)
    tiny = build_tiny_vlm(tmp_path / "tiny", "qwen2-vl")
    for scorer in (load_evaluator(folder, model=str(tiny)), make_scorer(None, None, model=str(tiny), checkpoint=folder)):
        assert scorer.name == "vlm-head" and scorer.backend.config()["model"] == str(tiny)
    with pytest.raises(ScorerError, match=r"holds a 'vlm-head' evaluator, not 'classic'; load it with "
                                          r"name='vlm-head' or without a name"):
        load_evaluator(folder, name="classic")


@pytest.mark.parametrize("command", [["score", "data.jsonl", "-o", "out.parquet"],
                                     ["bench", "--benchmark", "shapes"]])
def test_a_conflicting_scorer_is_a_clear_error(tmp_path, monkeypatch, command):
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    monkeypatch.chdir(tmp_path)
    _fake_checkpoint(tmp_path / "ev")
    (tmp_path / "data.jsonl").write_text("")
    generate(tmp_path / "shapes", ShapesEditConfig(n=4, k=2, size=64, photo_fraction=0.0))
    res = runner.invoke(app, [*command, "--checkpoint", "ev", "--scorer", "vlm-levels"])
    assert res.exit_code == 2
    text = " ".join(res.output.replace("│", " ").split())
    assert ("'vlm-levels', but the checkpoint ev holds a 'vlm-head' evaluator; leave out --scorer (the "
            "checkpoint's scorer is used) or pass --scorer vlm-head") in text
    # not a checkpoint folder
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, [*command, "--checkpoint", "empty"])
    assert res.exit_code == 2 and "is not an ieqa evaluator checkpoint" in res.output


def test_bench_needs_predictions_or_a_scorer_or_a_checkpoint(tmp_path):
    res = runner.invoke(app, ["bench", "--benchmark", str(tmp_path)])
    assert res.exit_code == 2 and "pass either --predictions or --scorer (or --checkpoint)" in res.output
