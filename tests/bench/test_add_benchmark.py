"""A judge benchmark and an evaluator added the way docs/howto/add-a-benchmark.md says: a loader
registered with ``register_format(..., benchmark=)``, its own metric set with
``register_metric_set`` and an evaluator with ``register_scorer``, all from this file; no
shared file is edited, and ``ieqa list`` and ``ieqa bench --scorer`` then know them."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from PIL import Image
from scipy.stats import spearmanr
from typer.testing import CliRunner

from ieqa.bench.protocols import POINTWISE_CORE, PROTOCOLS, register_metric_set
from ieqa.cli import app
from ieqa.data.images import load_image
from ieqa.data.loaders.base import BenchmarkData, register_format, remove_format
from ieqa.data.schema import EditSample
from ieqa.registry import BENCHMARKS, SCORERS
from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo
from ieqa.scorers.table import register_scorer

#: the human ratings of the toy benchmark's six edits (1-5) and the grey level of each edit:
#: brighter is rated better except for one swapped pair, so SRCC is neither 1 nor a guess
GREYS = [10, 60, 110, 160, 210, 250]
HUMAN = [1.0, 2.5, 2.0, 3.5, 4.0, 5.0]


class BrightnessEvaluator(Scorer):
    """A toy evaluator: visual quality = the edited image's mean grey level / 51."""

    def score_sample(self, sample: EditSample) -> ScoreResult:
        grey = np.asarray(load_image(sample.edited).convert("L"), dtype=np.float64)
        value = float(grey.mean()) / 51.0
        return ScoreResult(sample.id, scores={"visual_quality": value})


def load_toy(root, **_kw) -> BenchmarkData:  # noqa: ANN001
    """The toy benchmark's loader: ``toy-ratings.csv`` (id, source, edited, instruction,
    mos) in ``root``."""
    with open(root / "toy-ratings.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    samples = [EditSample(id=r["id"], source=root / r["source"], edited=root / r["edited"],
                          instruction=r["instruction"], scores={"visual_quality": float(r["mos"])})
               for r in rows]
    return BenchmarkData("toy-ratings", "pointwise", samples, dimensions=["visual_quality"],
                         meta={"score_scale": [1, 5]})


@pytest.fixture
def toy(tmp_path):
    root = tmp_path / "toy"
    root.mkdir()
    with open(root / "toy-ratings.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "source", "edited", "instruction", "mos"])
        for n, (grey, mos) in enumerate(zip(GREYS, HUMAN, strict=True)):
            Image.new("L", (8, 8), 128).save(root / f"src{n}.png")
            Image.new("L", (8, 8), grey).save(root / f"edit{n}.png")
            out.writerow([f"e{n}", f"src{n}.png", f"edit{n}.png", "brighten it", mos])
    register_format("toy-ratings", "a folder with toy-ratings.csv",
                    lambda p: (p / "toy-ratings.csv").is_file(), lambda p, **kw: load_toy(p),
                    priority=10, summary="A toy judge benchmark of the add-a-benchmark test",
                    tags=("pointwise", "human"), benchmark=load_toy)
    register_metric_set("toy-ratings", "pointwise", (POINTWISE_CORE[0],))
    register_scorer(ScorerInfo("toy-brightness", "A toy evaluator: mean grey level / 51",
                               "no-reference", ("visual_quality",), higher_better=True,
                               needs_source=False, factory=f"{__name__}:BrightnessEvaluator",
                               score_range=(0.0, 5.0)))
    yield root
    remove_format("toy-ratings")
    PROTOCOLS.pop("toy-ratings", None)
    SCORERS.remove("toy-brightness")


def test_a_judge_benchmark_and_an_evaluator_added_from_one_file_run_in_ieqa_bench(
        tmp_path, toy) -> None:
    runner = CliRunner()
    listed = " ".join(runner.invoke(app, ["list", "benchmarks"]).output.split())
    assert "toy-ratings" in listed and "A toy judge benchmark" in listed
    assert "toy-brightness" in " ".join(runner.invoke(app, ["list", "scorers"]).output.split())
    res = runner.invoke(app, ["bench", "--benchmark", str(toy), "--scorer", "toy-brightness",
                              "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = results["rows"]
    # its own metric set (SRCC only), not the generic pointwise one
    assert {r["metric"] for r in rows} == {"srcc"}
    expected = spearmanr(GREYS, HUMAN).statistic
    assert 0.5 < expected < 1.0
    assert rows[0]["value"] == pytest.approx(expected, abs=1e-12)
    # taken back, the names are unknown again
    remove_format("toy-ratings")
    SCORERS.remove("toy-brightness")
    assert "toy-ratings" not in BENCHMARKS.names() and "toy-brightness" not in SCORERS


def test_register_metric_set_refuses_a_second_set_and_an_unknown_protocol() -> None:
    with pytest.raises(ValueError, match="unknown protocol 'ranking'"):
        register_metric_set("toy-x", "ranking", (POINTWISE_CORE[0],))
    with pytest.raises(ValueError, match="imagenhub has a pointwise metric set already"):
        register_metric_set("imagenhub", "pointwise", (POINTWISE_CORE[0],))
    assert "toy-x" not in PROTOCOLS


PLUGIN = '''
from ieqa.scorers.base import Scorer, ScoreResult, ScorerInfo
from ieqa.scorers.table import register_scorer


class Constant(Scorer):
    def score_sample(self, sample):
        return ScoreResult(sample.id, scores={"visual_quality": 2.5})


register_scorer(ScorerInfo("plugin-constant", "a plugin's evaluator: always 2.5",
                           "no-reference", ("visual_quality",), higher_better=True,
                           needs_source=False, factory="my_ieqa_plugin:Constant"))
'''


def test_the_ieqa_command_loads_plugins_named_in_ieqa_plugins(tmp_path) -> None:
    """A module named in ``$IEQA_PLUGINS`` registers before any registry is read, so the
    ``ieqa`` command (another process) lists and runs what it adds; one that cannot be
    imported stops the command with the module named and what to do."""
    import os
    import subprocess
    import sys

    (tmp_path / "my_ieqa_plugin.py").write_text(PLUGIN)
    Image.new("L", (8, 8), 7).save(tmp_path / "edit.png")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "IEQA_PLUGINS": "my_ieqa_plugin", "HF_HUB_OFFLINE": "1"}
    ieqa = [sys.executable, "-m", "ieqa.cli"]
    listed = subprocess.run([*ieqa, "list", "scorers"], env=env, capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "plugin-constant" in " ".join(listed.stdout.split())
    scored = subprocess.run([*ieqa, "score", "--scorer", "plugin-constant", "edit.png",
                             "--json"], env=env, capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["scores"]["visual_quality"] == 2.5
    broken = subprocess.run([*ieqa, "list", "scorers"], env={**env, "IEQA_PLUGINS": "no_such_mod"},
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert broken.returncode != 0
    assert "IEQA_PLUGINS names 'no_such_mod', which cannot be imported" in broken.stdout + broken.stderr
