"""`ieqa train` and `ieqa list recipes` on the command line."""

from __future__ import annotations

import json

import yaml
from tests.train.conftest import SHORT_HEAD, tiny_overrides
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.train import load_recipe

runner = CliRunner()


def test_list_recipes_shows_every_builtin_recipe():
    result = runner.invoke(app, ["list", "recipes"])
    assert result.exit_code == 0
    for name in ("ds-ieqa", "edithf", "editreward", "epaiqa", "re-reward", "reasonedit-sft"):
        assert name in result.output


def test_train_command_runs_stops_and_resumes(tiny_train_vlm, tmp_path):
    data = {"train": {"shapesedit": {"n": 32, "k": 4, "seed": 3, "size": 112,
                                     "preset": "artifacts", "photo_fraction": 0.0}},
            "max_eval_samples": 8}
    recipe = load_recipe("edithf", {**tiny_overrides(tiny_train_vlm), "data": data,
                                    "head.hidden_features": 16})
    spec = recipe.model_dump(mode="json")
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(spec))
    common = ["train", str(path), "--out", str(tmp_path / "run"), "--no-progress",
              "--set", "stages.0.template=" + json.dumps({**SHORT_HEAD, "output": "levels",
                                                           "scale": [1, 5],
                                                           "answer_prefix": "Level:"}),
              "--set", "stages.1.template=" + json.dumps(SHORT_HEAD),
              "--set", "stages.2.template=" + json.dumps(SHORT_HEAD)]
    for i in range(3):
        common += ["--set", f"stages.{i}.max_steps=2"]
    first = runner.invoke(app, [*common, "--stop-after", "3"])
    assert first.exit_code == 0, first.output
    assert "--resume" in first.output
    second = runner.invoke(app, [*common, "--resume"])
    assert second.exit_code == 0, second.output
    assert "evaluator:" in second.output and (tmp_path / "run" / "evaluator").is_dir()
    steps = [json.loads(line) for line in
             (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["global_step"] for r in steps if r["event"] == "step"] == [1, 2, 3, 4, 5, 6]


def test_train_command_reports_bad_overrides():
    result = runner.invoke(app, ["train", "edithf", "--set", "optim.lr=-1"])
    assert result.exit_code != 0
