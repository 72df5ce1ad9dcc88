"""``ieqa score`` (one triplet, a manifest, killed and resumed) and ``ieqa bench --scorer``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.data.shapesedit import ShapesEditConfig, generate

runner = CliRunner()


def _flat(text: str) -> str:
    """Output without box borders and with whitespace runs collapsed: rich wraps long lines
    (and error boxes) at the terminal width."""
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shapes")
    return generate(out, ShapesEditConfig(n=48, k=4, seed=5, size=128), progress=False)


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    src = (rng.random((96, 96, 3)) * 60 + 100).astype(np.uint8)
    edt = src.copy()
    edt[30:60, 30:60] = (250, 20, 20)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    Image.fromarray(src).save(a)
    Image.fromarray(edt).save(b)
    return a, b


def test_one_triplet_is_printed(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    res = runner.invoke(app, ["score", str(a), str(b), "paint a red square"])
    assert res.exit_code == 0, res.output
    assert "content_preservation" in _flat(res.output) and "n/a" in _flat(res.output) and "VLM" in _flat(res.output)
    assert "edit region" in _flat(res.output)
    res = runner.invoke(app, ["score", str(a), str(b), "--scorer", "psnr", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["scores"]["content_preservation"] > 0 and out["error"] is None
    res = runner.invoke(app, ["score", str(b), "--scorer", "piqe"])  # one image, no reference
    assert res.exit_code == 0 and "visual_quality" in _flat(res.output), res.output
    res = runner.invoke(app, ["score", str(b), "--scorer", "ssim"])  # needs a source
    assert res.exit_code == 1 and "no source image" in _flat(res.output)


def test_bad_arguments(tmp_path: Path, shapes: Path) -> None:
    a, b = _pair(tmp_path)
    res = runner.invoke(app, ["score", str(shapes)])
    assert res.exit_code == 2 and "-o OUT.parquet" in _flat(res.output)
    res = runner.invoke(app, ["score", str(a), str(b), "-o", str(tmp_path / "x.parquet")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["score", str(a), str(b), "--scorer", "ssim", "-O", "bogus=1"])
    assert res.exit_code != 0 and "accepts" in str(res.exception)


def test_manifest_run_and_bench(tmp_path: Path, shapes: Path) -> None:
    out = tmp_path / "scores.parquet"
    res = runner.invoke(app, ["score", str(shapes), "-o", str(out), "--batch-size", "5"])
    assert res.exit_code == 0, res.output
    assert "48 rows" in _flat(res.output) and "0 with errors" in _flat(res.output)
    assert pq.read_table(out).num_rows == 48
    res = runner.invoke(app, ["bench", "-b", str(shapes.parent), "-p", str(out)])
    assert res.exit_code == 0 and "srcc" in _flat(res.output), (res.output, res.exception)
    bench_out = tmp_path / "bench"
    res = runner.invoke(app, ["bench", "-b", str(shapes.parent), "--scorer", "gmsd",
                              "-o", str(bench_out)])
    assert res.exit_code == 0, res.output
    assert (bench_out / "scores.parquet").is_file() and (bench_out / "report.html").is_file()
    results = json.loads((bench_out / "results.json").read_text())
    assert results["meta"]["higher_better"] is False  # gmsd is a distance
    res = runner.invoke(app, ["bench", "-b", str(shapes.parent)])
    assert res.exit_code == 2 and "--predictions or --scorer" in _flat(res.output)


def _score_cmd(manifest: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "ieqa", "score", str(manifest), "-o", str(out),
            "--scorer", "classic", "--batch-size", "2", "--workers", "1"]


def _signal_after_three_parts(proc: subprocess.Popen, parts: Path,
                              sig: signal.Signals) -> tuple[str | None, str | None]:
    """Send ``sig`` to a running ``ieqa score`` once it has written 3 parts (at most 120 s
    on); its output once it ended (killed after 60 s more)."""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(parts.glob("part-*.parquet"))) < 3:
            time.sleep(0.05)
        proc.send_signal(sig)
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_run_cleanly_and_it_resumes_to_the_clean_output(
        tmp_path: Path, shapes: Path, sig: signal.Signals) -> None:
    """SIGTERM (a supervisor, ``timeout``, Kubernetes) and Ctrl-C stop ``ieqa score``
    between writes: it says so, in one line without a traceback, exits 128 + the signal's
    number, and a re-run resumes to the output of a run never stopped."""
    clean = tmp_path / "clean.parquet"
    subprocess.run(_score_cmd(shapes, clean), check=True, capture_output=True, timeout=300)
    out = tmp_path / "stopped.parquet"
    parts = out.with_name(out.name + ".parts")
    proc = subprocess.Popen(_score_cmd(shapes, out), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _, err = _signal_after_three_parts(proc, parts, sig)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert f"stopped by {sig.name}" in _flat(err) and "re-run resumes" in _flat(err), err
    assert "Traceback" not in err and "Aborted" not in err, err
    assert not out.exists() and 3 <= len(list(parts.glob("part-*.parquet"))) < 24
    res = subprocess.run(_score_cmd(shapes, out), check=True, capture_output=True, text=True,
                         timeout=300)
    assert "from an earlier run" in _flat(res.stdout)
    assert pq.read_table(out).equals(pq.read_table(clean))


def test_killed_run_resumes_to_the_clean_output(tmp_path: Path, shapes: Path) -> None:
    clean = tmp_path / "clean.parquet"
    subprocess.run(_score_cmd(shapes, clean), check=True, capture_output=True, timeout=300)

    out = tmp_path / "killed.parquet"
    parts = out.with_name(out.name + ".parts")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(_score_cmd(shapes, out), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _signal_after_three_parts(proc, parts, signal.SIGKILL)
    n_parts = len(list(parts.glob("part-*.parquet")))
    assert not out.exists() and 3 <= n_parts < 24, n_parts  # killed mid-run
    res = subprocess.run(_score_cmd(shapes, out), check=True, capture_output=True, text=True,
                         timeout=300)
    assert "from an earlier run" in _flat(res.stdout)
    assert pq.read_table(out).equals(pq.read_table(clean))
    assert not parts.exists()
