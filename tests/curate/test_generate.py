"""``ieqa generate`` on a tiny random diffusers pipeline built offline: K candidates per
item in the documented layouts, read unchanged by ``ieqa score``, ``best-of-n``,
``dpo-pairs`` and ``bench-editor``; a killed run resumes without regenerating what it
finished."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.curate.generate import GenerateError, generate_candidates

pytest.importorskip("diffusers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from chat_server import FakeServer, Reply, serve  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from ieqa.testing.tiny_diffusers import build_tiny_pix2pix

    return build_tiny_pix2pix(tmp_path_factory.mktemp("pix2pix") / "pipe")


def _manifest(folder: Path, n: int = 3) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        img = folder / f"src{i}.png"
        Image.fromarray(rng.integers(0, 256, (32, 40, 3), dtype=np.uint8)).save(img)
        rows.append({"id": f"item{i}", "source": img.name, "instruction": f"make it red {i}",
                     "task": "recolor"})
    path = folder / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_generate_writes_k_candidates_that_score_best_of_n_and_dpo_pairs_read(tmp_path, pipeline):
    manifest = _manifest(tmp_path)
    out = tmp_path / "cands"
    res = runner.invoke(app, ["generate", "--pipeline", str(pipeline), "--data", str(manifest),
                              "-k", "2", "--seeds", "5,9", "--steps", "2", "-o", str(out),
                              "-O", "image_guidance_scale=1.5"])
    assert res.exit_code == 0, res.output
    assert "6 generated now, 0 kept" in res.output
    for i in range(3):
        for k in range(2):
            assert (out / "images" / f"item{i}" / f"candidate-{k}.png").is_file()
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"item{i}#{k}" for i in range(3) for k in range(2)]
    assert {r["group_id"] for r in rows} == {"item0", "item1", "item2"}
    assert [r["meta"]["seed"] for r in rows[:2]] == [5, 9]
    # two seeds give two different candidates; the same seed gives the same one again
    a = np.asarray(Image.open(out / "images/item0/candidate-0.png"))
    b = np.asarray(Image.open(out / "images/item0/candidate-1.png"))
    assert not np.array_equal(a, b)
    again = generate_candidates(str(pipeline), manifest, tmp_path / "again", num_candidates=1,
                                seeds=[5], steps=2, call_options={"image_guidance_scale": 1.5},
                                progress=False)
    assert again["generated"] == 3
    assert np.array_equal(a, np.asarray(Image.open(tmp_path / "again/images/item0/candidate-0.png")))
    # the manifest goes through ieqa score, then best-of-n and dpo-pairs, unchanged
    scores = tmp_path / "scores.jsonl"
    res = runner.invoke(app, ["score", str(out / "candidates.jsonl"), "-s", "classic", "-o",
                              str(scores)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["best-of-n", str(scores), "--group-by", "group_id", "--by",
                              "content_preservation", "-o", str(tmp_path / "best.jsonl")])
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "best.jsonl").read_text().splitlines()) == 3
    res = runner.invoke(app, ["dpo-pairs", str(scores), "--mode", "self", "--by",
                              "content_preservation", "-o", str(tmp_path / "dpo")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "dpo" / "dpo.jsonl").is_file()


def test_a_killed_run_resumes_without_regenerating_finished_items(tmp_path, pipeline):
    manifest = _manifest(tmp_path)
    out = tmp_path / "cands"

    def stop_after_first(item):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate_candidates(str(pipeline), manifest, out, num_candidates=2, steps=2,
                            progress=False, on_item=stop_after_first)
    done = sorted(out.glob("images/*/*.png"))
    assert [p.parent.name for p in done] == ["item0", "item0"]
    stamps = {p: p.stat().st_mtime_ns for p in done}
    record = generate_candidates(str(pipeline), manifest, out, num_candidates=2, steps=2,
                                 progress=False)
    assert (record["generated"], record["kept"]) == (4, 2)
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    assert not list(out.glob("images/*/*.partial.png"))
    with pytest.raises(GenerateError, match="other settings"):
        generate_candidates(str(pipeline), manifest, out, num_candidates=2, steps=3,
                            progress=False)


class FixedJudge(FakeServer):
    def next_reply(self, body):
        from ieqa.prompts.answers import write_vie_answer

        return Reply(body={"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": write_vie_answer((8, 6), "ok")}}]})


def test_gedit_candidates_are_in_the_benchmark_layout_for_bench_editor(tmp_path, pipeline):
    from ieqa.scorers.published.gedit_judge import PROMPT_SOURCES
    from ieqa.testing.editor_bench import build_gedit_fixture, gedit_fixture_items
    from ieqa.testing.releases import write_prompt_standins

    data = build_gedit_fixture(tmp_path / "gedit", gedit_fixture_items(per_type=1))
    out = tmp_path / "step1x"
    record = generate_candidates(str(pipeline), data, out, steps=2, progress=False)
    assert record["generated"] == 11
    assert (out / "fullset" / "subject-remove" / "en" / "shared0.png").is_file()
    assert (out / "fullset" / "subject-replace" / "en" / "shared0.png").is_file()
    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    with serve(FixedJudge()) as judge:
        res = runner.invoke(app, ["bench-editor", "gedit-bench", "--data", str(data),
                                  "--outputs", f"tiny={out}", "--language", "en", "-O",
                                  f"base_url={judge.url}", "--prompts", str(prompts),
                                  "-o", str(tmp_path / "result"), "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "result" / "results.json").read_text())
    assert results["coverage"]["text"] == "11 of 11 items"
    assert results["official"]["G_SC"] == 6.0 and results["official"]["G_PQ"] == 6.0
    assert (tmp_path / "result" / "report.html").is_file()
    # K = 2 over GEdit-Bench: one benchmark-layout folder per candidate
    two = generate_candidates(str(pipeline), data, tmp_path / "k2", num_candidates=2, steps=2,
                              progress=False)
    assert two["generated"] == 22
    assert (tmp_path / "k2" / "candidate-1" / "fullset" / "text_change" / "en").is_dir()


class RubricJudge(FakeServer):
    """Answers every request with ImgEdit's answer format: scores 2, 4, 5."""

    def next_reply(self, body):
        from ieqa.prompts.answers import write_criteria_answer

        content = write_criteria_answer([("A", 2), ("B", 4), ("C", 5)], "fixed")
        return Reply(body={"id": "x", "object": "chat.completion", "model": "judge",
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": content}}]})


def test_imgedit_candidates_from_the_archive_are_what_bench_editor_reads(tmp_path, pipeline):
    from ieqa.scorers.published.imgedit_judge import PROMPT_SOURCES
    from ieqa.testing.editor_bench import build_imgedit_fixture, imgedit_fixture_items
    from ieqa.testing.releases import write_prompt_standins

    archive = build_imgedit_fixture(tmp_path / "hub", imgedit_fixture_items(per_type=1),
                                    archive=True)
    out = tmp_path / "edits"
    res = runner.invoke(app, ["generate", "--pipeline", str(pipeline), "--data", str(archive),
                              "--steps", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.glob("*.png")) == sorted(f"{k}.png" for k in range(1, 10))
    prompts = write_prompt_standins(tmp_path / "prompts", PROMPT_SOURCES)
    with serve(RubricJudge()) as judge:
        res = runner.invoke(app, ["bench-editor", "imgedit-bench", "--data", str(archive),
                                  "--outputs", f"tiny={out}", "-O", f"base_url={judge.url}",
                                  "--prompts", str(prompts), "-o", str(tmp_path / "result"),
                                  "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    assert "imgedit-bench, judge: ImgEdit-Bench" in res.output
    results = json.loads((tmp_path / "result" / "results.json").read_text())
    assert results["coverage"]["text"] == "9 of 9 items"
    assert results["official"]["overall_mean_of_types"] == 3.67  # round(11 / 3, 2)


def test_kris_candidates_skip_items_with_several_inputs_and_bench_editor_states_it(tmp_path,
                                                                                   pipeline):
    from ieqa.testing.editor_bench import build_kris_fixture, kris_fixture_items

    data = build_kris_fixture(tmp_path / "hub", kris_fixture_items())
    out = tmp_path / "edits"
    res = runner.invoke(app, ["generate", "--pipeline", str(pipeline), "--data", str(data),
                              "--steps", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 items not generated" in res.output
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.png")) == [
        "abstract_reasoning/5.png", "anomaly_correction/2.png", "chemistry/4.png",
        "count_change/1.png", "viewpoint_change/3.png"]
    record = json.loads((out / "generate.json").read_text())
    assert [s["id"] for s in record["skipped"]] == ["temporal_prediction/7",
                                                    "multi-element_composition/6"]
    res = runner.invoke(app, ["bench-editor", "kris-bench", "--data", str(data), "--outputs",
                              f"tiny={out}", "--judge", "classic", "--missing", "skip",
                              "--language", "en", "-o", str(tmp_path / "result"),
                              "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "result" / "results.json").read_text())
    # classic gives no instruction following or knowledge judgement: left out, and said
    assert results["coverage"]["text"].startswith("5 of 7 items (2 without an output); "
                                                  "official numbers: ")
    assert results["coverage"]["text"].endswith("left out that the stand-in judge does not "
                                                "give")


def test_emu_edit_candidates_are_what_bench_editor_reads(tmp_path, pipeline):
    from ieqa.testing.editor_bench import build_emu_fixture, emu_fixture_items
    from ieqa.testing.tiny_embedders import build_tiny_clip, build_tiny_dino

    data = build_emu_fixture(tmp_path / "hub", emu_fixture_items())
    out = tmp_path / "edits"
    res = runner.invoke(app, ["generate", "--pipeline", str(pipeline), "--data", str(data),
                              "--steps", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.glob("*.png")) == sorted(f"{i}.png" for i in range(7))
    clip, dino = build_tiny_clip(tmp_path / "clip"), build_tiny_dino(tmp_path / "dino")
    res = runner.invoke(app, ["bench-editor", "emu-edit", "--data", str(data), "--outputs",
                              f"tiny={out}", "-O", f"clip_model={clip}", "-O",
                              f"dino_model={dino}", "--language", "en", "-o",
                              str(tmp_path / "result"), "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "result" / "results.json").read_text())
    assert results["coverage"]["text"] == "7 of 7 items"
    assert -1 <= results["official"]["clip_dir"] <= 1


def test_magicbrush_single_turn_candidates_and_the_official_options(tmp_path, pipeline):
    from ieqa.testing.editor_bench import build_magicbrush_fixture
    from ieqa.testing.tiny_embedders import build_tiny_clip, build_tiny_dino

    data = build_magicbrush_fixture(tmp_path / "mb", turns=(1, 2))
    out = tmp_path / "edits"
    res = runner.invoke(app, ["generate", "--pipeline", str(pipeline), "--data", str(data),
                              "--steps", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "1 items not generated" in res.output  # the iterative final turn
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.png")) == [
        "100/100_1.png", "101/101_1.png", "101/101_inde_2.png"]
    clip, dino = build_tiny_clip(tmp_path / "clip"), build_tiny_dino(tmp_path / "dino")
    # no -O reference=target: bench-editor builds the official judge with it
    res = runner.invoke(app, ["bench-editor", "magicbrush", "--data", str(data), "--outputs",
                              f"tiny={out}", "-O", f"clip_model={clip}", "-O",
                              f"dino_model={dino}", "--missing", "skip", "--language", "en",
                              "-o", str(tmp_path / "result"), "--n-boot", "20"])
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "result" / "results.json").read_text())
    assert results["coverage"]["text"] == "3 of 4 items (1 without an output)"
    assert results["judge"]["config"]["reference"] == "target"
