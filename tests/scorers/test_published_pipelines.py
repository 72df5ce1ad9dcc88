"""Published evaluators are scorers: ``ieqa serve``, the RL adapters, ``curate``,
``best-of-n`` and ``dpo-pairs`` take them unchanged, with their named reward rules
(``editscore`` = overall / 10, ``editreward`` = the fused mu).

EditScore runs against a scripted judge server (its answers fixed per prompt and seed, see
test_editscore.py); EditReward on its tiny replica (test_editreward.py's layout)."""

from __future__ import annotations

import base64
import io
import json

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from chat_server import serve
from ieqa import EditSample, create_scorer
from ieqa.cli import app
from ieqa.prompts.answers import write_vie_answer
from ieqa.rewards import LocalRewarder, edit_reward_fn

from .test_editscore import ScriptedJudge, _image

COLORS = ("red", "blue", "green")


def _judge() -> ScriptedJudge:
    """The scripted judge, with answers that differ between the three instructions."""
    judge = ScriptedJudge(25)
    for i, color in enumerate(COLORS):
        for seed in range(42, 46):
            judge.override[("SC", color, seed)] = write_vie_answer(
                ((seed + 6 * i) % 26, (3 * seed + i) % 26), "sc")
            judge.override[("PQ", color, seed)] = write_vie_answer(
                (25 - (seed + 4 * i) % 20, 20 + i), "pq")
    return judge


def _png(image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope="module")
def editscore_prompts(tmp_path_factory):
    from ieqa.scorers.published.editscore import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    return write_prompt_standins(tmp_path_factory.mktemp("es") / "prompts", PROMPT_SOURCES)


@pytest.fixture(scope="module")
def editreward(tmp_path_factory):
    from ieqa.scorers.published.editreward import PROMPT_SOURCES
    from ieqa.testing import build_tiny_vlm
    from ieqa.testing.releases import build_reward_release, write_prompt_standins

    root = tmp_path_factory.mktemp("er")
    base = build_tiny_vlm(root / "base", "qwen2.5-vl", seed=3)
    build_reward_release(root / "release", base, seed=11)
    return {"base": base, "release": root / "release",
            "prompts": write_prompt_standins(root / "prompts", PROMPT_SOURCES)}


def _edits() -> list[EditSample]:
    source = _image(7, (56, 56))
    return [EditSample(id=f"c{i}", source=source, edited=_image(30 + i, (56, 56)),
                       instruction=f"make the cube {color}", group_id="g")
            for i, color in enumerate(COLORS)]


def test_editscore_as_an_rl_reward_and_behind_the_server(editscore_prompts):
    from ieqa.serve.app import ServeConfig, create_app
    from ieqa.testing import serve_in_thread

    edits = _edits()
    with serve(_judge()) as judge:
        scorer = create_scorer("editscore", base_url=judge.url, model="editscore",
                               prompts=str(editscore_prompts), num_pass=4)
        offline = [r.scores["overall"] / 10 for r in scorer.score(edits)]
        assert len(set(offline)) == 3 and all(0 <= r <= 1 for r in offline)
        rewarder = LocalRewarder(scorer, rule="editscore")
        rewards, info = edit_reward_fn(rewarder)(
            [e.edited for e in edits], [e.instruction for e in edits],
            [{"source": e.source} for e in edits])
        assert rewards.tolist() == pytest.approx(offline, abs=1e-12)
        assert info["reward_rule"]["rule"] == "editscore"
        app_ = create_app(scorer, rule="editscore", config=ServeConfig(max_pixels=None))
        with serve_in_thread(app_) as url:
            answer = httpx.post(f"{url}/v1/score", timeout=60, json={"items": [
                {"id": e.id, "source": _png(e.source), "edited": _png(e.edited),
                 "instruction": e.instruction} for e in edits]}).json()
    served = [item["reward"] for item in answer["results"]]
    assert served == pytest.approx(offline, abs=1e-9)


def test_published_score_files_feed_curate_best_of_n_and_dpo_pairs(tmp_path, editreward,
                                                                    editscore_prompts):
    folder = tmp_path / "edits"
    (folder / "source").mkdir(parents=True)
    (folder / "edited").mkdir()
    rows = []
    for g in range(2):
        _image(100 + g, (56, 56)).save(folder / "source" / f"s{g}.png")
        for c, color in enumerate(COLORS):
            name = f"g{g}c{c}"
            _image(200 + 3 * g + c, (56, 56)).save(folder / "edited" / f"{name}.png")
            rows.append({"id": name, "source": f"source/s{g}.png", "edited": f"edited/{name}.png",
                         "instruction": f"make the cube {color}", "group_id": f"g{g}"})
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    with serve(_judge()) as judge:
        runs = {
            "editscore": ["--scorer", "editscore", "--model", "editscore", "-O",
                          f"base_url={judge.url}", "--prompts", str(editscore_prompts)],
            "editreward": ["--scorer", "editreward", "--model", str(editreward["release"]),
                           "--base-model", str(editreward["base"]), "--prompts",
                           str(editreward["prompts"]), "-O", "device=cpu"],
        }
        for name, args in runs.items():
            out = tmp_path / f"{name}.jsonl"
            res = runner.invoke(app, ["score", str(manifest), *args, "-o", str(out)])
            assert res.exit_code == 0, res.output
    for name, rule in (("editscore", "editscore"), ("editreward", "editreward")):
        scores = tmp_path / f"{name}.jsonl"
        table = [json.loads(line) for line in scores.read_text().splitlines()]
        best = {g: max((r for r in table if r["group_id"] == g), key=lambda r: r["overall"])["id"]
                for g in ("g0", "g1")}
        res = runner.invoke(app, ["curate", str(scores), "-o", str(tmp_path / f"{name}-top"),
                                  "--keep", "top-k=2", "--by", rule])
        assert res.exit_code == 0, res.output
        kept = json.loads((tmp_path / f"{name}-top" / "report.json").read_text())
        assert kept["counts"]["kept"] == 2, kept["counts"]
        res = runner.invoke(app, ["best-of-n", str(scores), "-o", str(tmp_path / f"{name}-best.jsonl"),
                                  "--group-by", "group_id", "--by", rule])
        assert res.exit_code == 0, res.output
        picks = [json.loads(line) for line in
                 (tmp_path / f"{name}-best.jsonl").read_text().splitlines()]
        assert {p["group_id"]: p["id"] for p in picks} == best
        res = runner.invoke(app, ["dpo-pairs", str(scores), "-o", str(tmp_path / f"{name}-dpo"),
                                  "--mode", "global", "--group-by", "group_id", "--by", "overall"])
        assert res.exit_code == 0, res.output
        pairs = [json.loads(line) for line in
                 (tmp_path / f"{name}-dpo" / "dpo.jsonl").read_text().splitlines()]
        worst = {g: min((r for r in table if r["group_id"] == g), key=lambda r: r["overall"])["id"]
                 for g in ("g0", "g1")}
        assert sorted((p["chosen_id"], p["rejected_id"]) for p in pairs) \
            == sorted((best[g], worst[g]) for g in ("g0", "g1"))
    assert np.isfinite([json.loads(line)["overall"] for line in
                        (tmp_path / "editreward.jsonl").read_text().splitlines()]).all()
