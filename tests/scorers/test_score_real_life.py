"""``ieqa score`` as a new user meets it: a folder of edits, CSV manifests, malformed rows,
re-runs after a server outage and after a fixed manifest line, the output lock, exit
statuses, and score files feeding ``rank-editors`` and ``bench`` directly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from chat_server import FakeServer, serve
from ieqa.cli import app
from ieqa.data.shapesedit import ShapesEditConfig, generate
from ieqa.scorers.run import OutputLockedError, _Lock, read_scores
from ports import free_port

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


def _image(path: Path, seed: int, size: int = 64) -> Path:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    img = np.stack([0.2 + 0.6 * x, 0.7 - 0.4 * y, 0.4 + 0.3 * x * y], axis=2)
    img[10:30, 20:40] = rng.random(3)
    img += rng.normal(0, 0.02, img.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.clip(np.round(img * 255), 0, 255).astype(np.uint8)).save(path)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "edits"
    for i in range(3):
        _image(root / "source" / f"img{i}.png", i)
        _image(root / "edited" / "good" / f"img{i}.png", i)  # start from the source...
        arr = np.asarray(Image.open(root / "edited" / "good" / f"img{i}.png")).copy()
        arr[40:56, 40:56] = (250, 30, 30)  # ...and paint a red square
        Image.fromarray(arr).save(root / "edited" / "good" / f"img{i}.png")
        (root / "edited" / "black").mkdir(exist_ok=True)
        Image.new("RGB", (64, 64)).save(root / "edited" / "black" / f"img{i}.png")  # blank
    _image(root / "edited" / "good" / "stray.png", 9)  # no source, no instruction
    (root / "instructions.csv").write_text(
        "\ufeffname,instruction,task\n" + "".join(f"img{i},add a red square,add\n" for i in range(3)),
        encoding="utf-8")
    return root


def test_folder_scores_flags_and_ranks_without_a_manifest(tmp_path: Path, folder: Path) -> None:
    out = tmp_path / "scores.parquet"
    res = runner.invoke(app, ["score", str(folder), "-o", str(out)])
    assert res.exit_code == 3, res.output  # the stray image is an error row
    text = _flat(res.output)
    assert "7 rows" in text and "1 with errors" in text and "--allow-errors" in text
    rows = {r["id"]: r for r in read_scores(out)}
    assert set(rows) == {"good/img0", "good/img1", "good/img2", "black/img0", "black/img1",
                         "black/img2", "good/stray"}
    stray = rows["good/stray"]
    assert "no source image" in stray["error"] and "no instruction" in stray["error"]
    good = rows["good/img1"]
    assert good["instruction"] == "add a red square" and good["editor"] == "good"
    assert good["task"] == "add" and good["group_id"] == "img1" and good["source"].endswith("img1.png")
    assert good["flags"] == [] and rows["black/img1"]["flags"] == ["blank"]
    assert rows["black/img1"]["content_preservation"] == 1.0 < good["content_preservation"]
    res = runner.invoke(app, ["score", str(folder), "-o", str(out), "--allow-errors"])
    assert res.exit_code == 0 and "6 kept from an earlier run" in _flat(res.output), res.output
    res = runner.invoke(app, ["rank-editors", str(out), "-o", str(tmp_path / "board")])
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert text.index("good") < text.index("black") and "no instruction_alignment" in text
    assert "1 of 7 edits failed to score" in text

    manifest = tmp_path / "m" / "manifest.jsonl"
    res = runner.invoke(app, ["manifest", str(folder), "-o", str(manifest)])
    assert res.exit_code == 3 and "left out" in _flat(res.output)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert len(lines) == 6 and lines[0]["edited"].startswith("/")  # images outside its folder


def test_csv_manifest_bad_rows_strict_and_fixed_line(tmp_path: Path, folder: Path) -> None:
    src = folder / "source"
    rows = ["source,edited,instruction,editor,visual_quality"]
    rows += [f"{src}/img{i}.png,{folder}/edited/good/img{i}.png,add a red square,good,4.5"
             for i in range(3)]
    rows.append(f"{src}/img0.png,,add a red square,good,4")  # no edited image
    manifest = tmp_path / "edits.csv"
    manifest.write_text("\n".join(rows) + "\n")
    out = tmp_path / "scores.jsonl"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), "--strict"])
    assert res.exit_code != 0 and "edits.csv, line 5" in str(res.exception) and not out.exists()
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out)])
    assert res.exit_code == 3, res.output
    scored = read_scores(out)
    assert len(scored) == 4 and "line 5" in scored[3]["error"] and "edited" in scored[3]["error"]
    rows[4] = f"{src}/img0.png,{folder}/edited/black/img0.png,add a red square,black,1"
    manifest.write_text("\n".join(rows) + "\n")
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "1 scored" in _flat(res.output) and "3 kept from an earlier run" in _flat(res.output)
    again = read_scores(out)
    assert again[:3] == scored[:3] and again[3]["flags"] == ["blank"]
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), "--scorer", "psnr"])
    assert res.exit_code != 0 and "--overwrite" in str(res.exception)
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), "--scorer", "psnr",
                              "--overwrite"])  # the hint works
    assert res.exit_code == 0 and "4 scored" in _flat(res.output), res.output


def test_input_files_get_their_own_messages(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = runner.invoke(app, ["score", str(empty), "-o", str(tmp_path / "o.parquet")])
    assert "is empty" in str(res.exception)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    res = runner.invoke(app, ["score", str(broken), "-o", str(tmp_path / "o.parquet")])
    assert "not a readable Parquet file" in str(res.exception)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    res = runner.invoke(app, ["score", str(notes), "-o", str(tmp_path / "o.parquet")])
    assert "is not an input ieqa score reads" in str(res.exception)
    bom = tmp_path / "bom.jsonl"  # a UTF-8 byte-order mark is fine
    _image(tmp_path / "a.png", 1)
    bom.write_text('\ufeff{"id": "x", "source": "a.png", "edited": "a.png"}\n', encoding="utf-8")
    res = runner.invoke(app, ["score", str(bom), "-o", str(tmp_path / "o.parquet")])
    assert res.exit_code == 0 and read_scores(tmp_path / "o.parquet")[0]["flags"] == ["no_op"], res.output
    res = runner.invoke(app, ["score", str(tmp_path / "nothing.jsonl"), "-o", str(tmp_path / "o.parquet")])
    assert res.exit_code == 2 and "does not exist" in _flat(res.output)


class _LevelServer(FakeServer):
    """Answers every prompt with the level word "good" (its top log-probabilities)."""

    def echo(self, body):
        reply = super().echo(body)
        for choice in reply.body["choices"]:
            choice["message"]["content"] = "good"
            choice["logprobs"] = {"content": [{"token": "good", "logprob": -0.1, "top_logprobs": [
                {"token": "good", "logprob": -0.1}, {"token": "fair", "logprob": -2.4}]}]}
        return reply


def test_server_down_then_up_then_one_line_fixed(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=3, k=2, seed=2, size=64),
                        progress=False)
    port = free_port()
    out = tmp_path / "judge.parquet"
    cmd = ["score", str(manifest), "-o", str(out), "--scorer", "vlm-levels", "-m", "judge",
           "-O", f"base_url=http://127.0.0.1:{port}/v1",
           "-O", "backend_options={max_retries: 0, timeout_s: 5}"]
    res = runner.invoke(app, cmd)  # nothing listens on the port: the run stops at once
    assert res.exit_code == 3, res.output
    assert "has not answered any request" in _flat(res.output) and not out.exists()
    # with the stop rule off every row is an error, recorded
    res = runner.invoke(app, [*cmd, "-O", "max_consecutive_failures=0"])
    assert res.exit_code == 3, res.output
    errors = [r["error"] for r in read_scores(out)]
    assert all(e and "cannot connect" in e for e in errors), errors
    with serve(_LevelServer(), port) as fake:  # the server comes up on the same port
        res = runner.invoke(app, cmd)  # the same command retries every row
        assert res.exit_code == 0, res.output
        assert "3 errored rows retried" in _flat(res.output)
        first = read_scores(out)
        assert not any(r["error"] for r in first) and all(r["visual_quality"] for r in first)
        n_requests = len(fake.requests)
        lines = manifest.read_text().splitlines()
        row = json.loads(lines[2])
        row["instruction"] = row["instruction"] + " please"
        lines[2] = json.dumps(row)
        manifest.write_text("\n".join(lines) + "\n")
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0 and "1 scored" in _flat(res.output), res.output
        assert len(fake.requests) - n_requests == n_requests // 3  # one row of three


class _VaryingLevelServer(FakeServer):
    """Answers a level word whose top log-probabilities depend on the request's bytes, so
    different edits get different scores."""

    def echo(self, body):
        import hashlib

        reply = super().echo(body)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        good = -0.05 - digest[0] / 100
        for choice in reply.body["choices"]:
            choice["message"]["content"] = "good"
            choice["logprobs"] = {"content": [{"token": "good", "logprob": good, "top_logprobs": [
                {"token": "good", "logprob": good},
                {"token": "fair", "logprob": -0.5 - digest[1] / 100}]}]}
        return reply


def test_score_records_its_judge_log_and_replays_it_with_the_server_down(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=4, k=2, seed=5, size=64),
                        progress=False)
    first, again = tmp_path / "judge.parquet", tmp_path / "again.parquet"
    with serve(_VaryingLevelServer()) as fake:
        cmd = ["score", str(manifest), "--scorer", "vlm-levels", "-m", "judge",
               "-O", f"base_url={fake.url}", "-O", "backend_options={max_retries: 0}"]
        res = runner.invoke(app, [*cmd, "-o", str(first)])
        assert res.exit_code == 0, res.output
        sent = len(fake.requests)
    log_file = tmp_path / "judge.parquet.judge_log.jsonl"
    log = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert len(log) == sent > 0 and all(e["source"] == "live" and e["response"] for e in log)
    # the server is gone: the replay answers every request from the log
    res = runner.invoke(app, [*cmd, "-o", str(again), "--replay", str(first)])
    assert res.exit_code == 0, res.output
    a, b = read_scores(first), read_scores(again)
    assert len({r["visual_quality"] for r in a}) > 1  # the scores differ between edits
    assert [(r["id"], r["visual_quality"]) for r in a] == [(r["id"], r["visual_quality"])
                                                           for r in b]
    replayed = (tmp_path / "again.parquet.judge_log.jsonl").read_text().splitlines()
    assert len(replayed) == sent and all(json.loads(x)["source"] == "log" for x in replayed)
    # another input is not in the log: the replay stops, naming the log, and sends nothing
    other = generate(tmp_path / "other", ShapesEditConfig(n=2, k=2, seed=9, size=64),
                     progress=False)
    res = runner.invoke(app, ["score", str(other), *cmd[2:], "-o", str(tmp_path / "x.parquet"),
                              "--replay", str(first)])
    assert res.exit_code == 3 and "is not in the judge log" in _flat(res.output), res.output


def test_a_second_writer_is_stopped_with_the_holders_pid(tmp_path: Path) -> None:
    out = tmp_path / "scores.parquet"
    lock = _Lock(out)
    lock.acquire()
    try:
        with pytest.raises(OutputLockedError, match=rf"PID {os.getpid()}"):
            _Lock(out).acquire()
    finally:
        lock.release()
    _Lock(out).acquire()  # free again


def test_score_command_stops_when_another_process_writes(tmp_path: Path, folder: Path) -> None:
    out = tmp_path / "scores.parquet"
    lock = _Lock(out)
    lock.acquire()  # as a running ieqa score would
    try:
        res = runner.invoke(app, ["score", str(folder), "-o", str(out)])
        assert isinstance(res.exception, OutputLockedError)
        assert f"PID {os.getpid()}" in str(res.exception) and not out.exists()
    finally:
        lock.release()


def test_bench_counts_failed_rows_as_missing(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=40, k=4, seed=3, size=64),
                        progress=False)
    out = tmp_path / "scores.parquet"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), "--scorer", "ssim"])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out).to_pylist()
    for row in table[:8]:  # as if scoring had failed for 8 rows
        row["content_preservation"], row["error"] = None, "HTTP 500"
    table[8]["content_preservation"] = float("nan")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in table))
    res = runner.invoke(app, ["bench", "-b", str(manifest.parent), "-p", str(broken)])
    assert res.exit_code != 0
    message = " ".join(str(res.exception).split())
    assert "9 of 40 samples" in message and "failed to score" in message
    res = runner.invoke(app, ["bench", "-b", str(manifest.parent), "-p", str(broken), "--missing",
                              "drop", "-o", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "31 of 40 items have predictions; 9 failed to score" in _flat(res.output)
    coverage = json.loads((tmp_path / "b" / "results.json").read_text())["coverage"]
    assert coverage["n_predicted"] == 31 and coverage["n_failed"] == 9
    assert "9 failed to score" in (tmp_path / "b" / "report.html").read_text()


def test_bench_overwrite_hint_names_an_existing_option(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "shapes", ShapesEditConfig(n=8, k=4, seed=4, size=64),
                        progress=False)
    cmd = ["bench", "-b", str(manifest.parent), "-o", str(tmp_path / "b")]
    assert runner.invoke(app, [*cmd, "--scorer", "ssim"]).exit_code == 0
    res = runner.invoke(app, [*cmd, "--scorer", "gmsd"])
    assert res.exit_code != 0 and "--overwrite" in str(res.exception)
    res = runner.invoke(app, [*cmd, "--scorer", "gmsd", "--overwrite"])
    assert res.exit_code == 0, res.output


def test_a_black_output_is_floored_and_flagged_on_the_command_line(tmp_path: Path) -> None:
    src = _image(tmp_path / "src.png", 0)
    black = tmp_path / "black.png"
    Image.new("RGB", (64, 64)).save(black)
    res = runner.invoke(app, ["score", str(src), str(black), "Make her close the door", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["flags"] == ["blank"] and out["scores"]["content_preservation"] == 1.0


def test_a_malformed_jsonl_line_is_an_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    src = _image(tmp_path / "a.png", 0)
    good = json.dumps({"id": "x", "source": src.name, "edited": src.name})
    lines = [good.replace('"x"', f'"r{i}"') for i in range(5)]
    lines[3] = '{"id": "r3", "source": "a.png", "edited": '  # cut off
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.parquet"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out)])
    assert res.exit_code == 3, res.output
    rows = read_scores(out)
    assert [r["id"] for r in rows] == ["r0", "r1", "r2", "m.jsonl:4", "r4"]
    assert "line 4: not valid JSON" in rows[3]["error"]
    assert all(r["error"] is None for r in rows if r["id"] != "m.jsonl:4")
