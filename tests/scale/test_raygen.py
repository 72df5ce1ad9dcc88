"""``ieqa generate --engine ray`` on a local Ray (2 CPUs, 2 actors) with a tiny random
diffusers pipeline: the same files as the local engine for the same seeds, pixel for pixel
(both on one torch thread: Ray gives each 1-CPU actor one); a re-run, with either engine,
makes only what is missing; a bad cluster address fails at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.curate.generate import generate_candidates

pytest.importorskip("diffusers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
runner = CliRunner()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from ieqa.testing.tiny_diffusers import build_tiny_pix2pix

    return build_tiny_pix2pix(tmp_path_factory.mktemp("pix2pix") / "pipe")


def _manifest(folder, n=3):
    rng = np.random.default_rng(3)
    rows = []
    for i in range(n):
        img = folder / f"src{i}.png"
        Image.fromarray(rng.integers(0, 256, (32, 40, 3), dtype=np.uint8)).save(img)
        rows.append({"id": f"item{i}", "source": img.name, "instruction": f"make it blue {i}"})
    path = folder / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _images(out):
    return {p.relative_to(out).as_posix(): np.asarray(Image.open(p))
            for p in sorted((out / "images").rglob("*.png"))}


def test_ray_generates_the_local_engines_files(local_ray, pipeline, tmp_path):
    manifest = _manifest(tmp_path)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        generate_candidates(str(pipeline), manifest, tmp_path / "local", num_candidates=2,
                            seeds=[4, 11], steps=2, progress=False)
    finally:
        torch.set_num_threads(before)
    out = tmp_path / "ray"
    args = ["generate", "--pipeline", str(pipeline), "--data", str(manifest), "-k", "2",
            "--seeds", "4,11", "--steps", "2", "-o", str(out), "--engine", "ray",
            "--replicas", "2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "6 generated now, 0 kept" in res.output
    local, ray = _images(tmp_path / "local"), _images(out)
    assert local.keys() == ray.keys() and len(ray) == 6
    for name in local:
        assert np.array_equal(local[name], ray[name]), name
    assert ((out / "candidates.jsonl").read_text().replace(str(out), "OUT")
            == (tmp_path / "local" / "candidates.jsonl").read_text().replace(
                str(tmp_path / "local"), "OUT"))
    # resumable with either engine (one plan): a candidate lost is made again by the
    # local engine, the rest kept
    (out / "images" / "item1" / "candidate-1.png").unlink()
    torch.set_num_threads(1)
    try:
        again = generate_candidates(str(pipeline), manifest, out, num_candidates=2,
                                    seeds=[4, 11], steps=2, progress=False)
    finally:
        torch.set_num_threads(before)
    assert (again["generated"], again["kept"]) == (1, 5)
    assert np.array_equal(_images(out)["images/item1/candidate-1.png"],
                          local["images/item1/candidate-1.png"])


def test_ray_option_errors_and_a_bad_address_fail_fast(pipeline, tmp_path):
    manifest = _manifest(tmp_path)
    base = ["generate", "--pipeline", str(pipeline), "--data", str(manifest), "--steps", "1",
            "-o", str(tmp_path / "o")]
    res = runner.invoke(app, [*base, "--replicas", "2"])
    assert res.exit_code == 2 and "--engine ray" in res.output
    res = runner.invoke(app, [*base, "--engine", "spark"])
    assert res.exit_code == 2 and "choose local or ray" in res.output
    res = runner.invoke(app, [*base, "--engine", "ray", "--gpus-per-replica", "1"])
    assert res.exit_code != 0 and "--device cuda" in str(res.exception)
    # in a process of its own, as from the shell (this one may already be joined to Ray)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ieqa", *base, "--engine", "ray",
                           "--address", "127.0.0.1:9"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode != 0
    assert "127.0.0.1:9" in done.stderr + done.stdout, done.stderr[-2000:]
    assert time.perf_counter() - t0 < 60
