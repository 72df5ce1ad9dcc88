"""``ieqa score --engine ray`` on a local Ray (2 CPUs, 2 actors, classic): the same output as
the local engine, row for row and byte for byte in every column; a run whose driver is
killed (SIGKILL) or interrupted resumes from its finished parts, with either engine."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ieqa
from ieqa.cli import app
from ieqa.data.manifest import iter_manifest_items
from ieqa.data.shapesedit import ShapesEditConfig, generate
from ieqa.scorers.run import read_scores

# Ray Data's own configuration warns on import; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
runner = CliRunner()
N = 40  # ShapesEdit edits (k = 2 editors per group, 64 px)
RAY = ["--engine", "ray", "--replicas", "2", "--batch-size", "4"]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """(manifest, local engine's score file): ShapesEdit n=40 plus a malformed line and a
    row whose edited image is missing (two error rows, exit status 3)."""
    root = tmp_path_factory.mktemp("shapes")
    manifest = generate(root / "set", ShapesEditConfig(n=N, k=2, size=64))
    with open(manifest, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({"id": "gone", "source": "images/missing-src.png",
                             "edited": "images/missing.png", "instruction": "x"}) + "\n")
    local = root / "local.parquet"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(local), "--batch-size", "4"])
    assert res.exit_code == 3, res.output
    return manifest, local


def assert_same_output(a: Path, b: Path) -> None:
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.schema == tb.schema
    assert ta.equals(tb)  # every column, every row, in input order
    meta_a, meta_b = ta.schema.metadata, tb.schema.metadata
    assert meta_a[b"ieqa.run"] == meta_b[b"ieqa.run"]
    assert meta_a[b"ieqa.scorer"] == meta_b[b"ieqa.scorer"]
    assert read_scores(a) == read_scores(b)


def test_ray_engine_writes_the_local_engines_output(local_ray, shapes, tmp_path):
    manifest, local = shapes
    out = tmp_path / "ray.parquet"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), *RAY])
    assert res.exit_code == 3, res.output  # the two error rows, as with the local engine
    assert f"{N + 2} rows ({N + 1} scored" in res.output  # the malformed line is not "scored"
    assert_same_output(local, out)
    rows = read_scores(out)
    assert [r["id"] for r in rows][:3] == [s.id for s in list(iter_manifest_items(manifest))[:3]]
    assert sum(r["error"] is not None for r in rows) == 2
    assert not (tmp_path / "ray.parquet.parts").exists()


def test_jsonl_output_is_the_local_engines(local_ray, shapes, tmp_path):
    manifest, _ = shapes
    a, b = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert runner.invoke(app, ["score", str(manifest), "-o", str(a), "--batch-size", "4"]).exit_code == 3
    assert runner.invoke(app, ["score", str(manifest), "-o", str(b), *RAY]).exit_code == 3
    assert a.read_bytes() == b.read_bytes()
    assert (json.loads((tmp_path / "local.jsonl.run.json").read_text())
            == json.loads((tmp_path / "ray.jsonl.run.json").read_text()))


# The killed run: a scorer with classic's configuration that, in its actor, SIGKILLs the
# driver when it reaches one sample, once the driver has written at least two parts.
KILLED_RUN = textwrap.dedent('''
    import functools, os, signal, sys, time
    from pathlib import Path
    import ieqa
    from ieqa.data.manifest import iter_manifest_items
    from ieqa.scale.raydata import RayScoring, score_to_ray
    from ieqa.scorers.classic.composite import ClassicScorer

    class KillDriver(ClassicScorer):
        def __init__(self, driver, kill_at, parts):
            super().__init__()
            self.driver, self.kill_at, self.parts = driver, kill_at, Path(parts)

        def score(self, samples):
            samples = list(samples)
            if any(s.id == self.kill_at for s in samples):
                deadline = time.monotonic() + 30
                while len(list(self.parts.glob("part-*.parquet"))) < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                os.kill(self.driver, signal.SIGKILL)
                time.sleep(30)
            return super().score(samples)

    address, manifest, out, kill_at = sys.argv[1:]
    build = functools.partial(KillDriver, os.getpid(), kill_at, out + ".parts")
    score_to_ray(build, iter_manifest_items(manifest), out, batch_size=4, progress=False,
                 scaling=RayScoring(replicas=2, address=address),
                 input_id=f"manifest:{Path(manifest).resolve()}")
    print("finished without being killed")
''')


def test_a_killed_ray_run_resumes(local_ray, shapes, tmp_path):
    manifest, local = shapes
    out = tmp_path / "ray.parquet"
    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN)
    kill_at = [s.id for s in iter_manifest_items(manifest)][N - 3]  # in the last block
    address = local_ray.get_runtime_context().gcs_address
    proc = subprocess.run([sys.executable, str(script), address, str(manifest), str(out), kill_at],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -9, proc.stdout + proc.stderr  # SIGKILL, mid-run
    parts = sorted((tmp_path / "ray.parquet.parts").glob("part-*.parquet"))
    done = sum(pq.read_metadata(p).num_rows for p in parts)
    assert not out.exists() and len(parts) >= 2 and 0 < done < N + 2
    kept = sum(r["error"] is None for r in pq.read_table(parts).to_pylist())
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), *RAY])
    assert res.exit_code == 3, res.output
    # only the rest is scored (the malformed line is redone but not counted as scored)
    assert f"({N + 1 - kept} scored" in res.output and f"{kept} kept" in res.output, res.output
    assert_same_output(local, out)


def test_an_interrupted_ray_run_resumes_with_either_engine(local_ray, shapes, tmp_path, monkeypatch):
    from ieqa.scale.raydata import RayScoring, score_to_ray
    from ieqa.scorers import run as run_module

    manifest, local = shapes
    written = []
    real_write = run_module._Parts.write

    def write_then_interrupt(self, table):
        if len(written) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the driver after two parts
        written.append(table.num_rows)
        real_write(self, table)

    monkeypatch.setattr(run_module._Parts, "write", write_then_interrupt)
    out = tmp_path / "ray.parquet"
    build = functools.partial(ieqa.create_scorer, "classic")
    input_id = f"manifest:{manifest.resolve()}"
    with pytest.raises(KeyboardInterrupt):
        score_to_ray(build, iter_manifest_items(manifest), out, batch_size=4, progress=False,
                     scaling=RayScoring(replicas=2), input_id=input_id)
    monkeypatch.undo()
    assert not out.exists() and not (tmp_path / "ray.parquet.lock").exists()
    parts = sorted((tmp_path / "ray.parquet.parts").glob("part-*.parquet"))
    assert len(parts) == 2
    kept = sum(r["error"] is None for r in pq.read_table(parts).to_pylist())
    # the local engine finishes the Ray run (same parts folder, same format) ...
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), "--batch-size", "4"])
    assert res.exit_code == 3 and f"({N + 1 - kept} scored" in res.output, res.output
    assert f"{kept} kept" in res.output
    assert_same_output(local, out)
    # ... and the Ray engine re-runs on a finished output as the local engine does: it
    # keeps every scored row and retries only the two error rows
    res = runner.invoke(app, ["score", str(manifest), "-o", str(out), *RAY])
    assert res.exit_code == 3 and f"{N} kept from an earlier run" in res.output, res.output
    assert_same_output(local, out)


def test_option_errors_say_what_to_do(tmp_path, shapes, monkeypatch):
    manifest, _ = shapes
    out = str(tmp_path / "o.parquet")
    res = runner.invoke(app, ["score", str(manifest), "-o", out, "--replicas", "2"])
    assert res.exit_code == 2 and "--engine ray" in res.output
    res = runner.invoke(app, ["score", str(manifest), "-o", out, "--engine", "spark"])
    assert res.exit_code == 2 and "choose local or ray" in res.output
    res = runner.invoke(app, ["score", str(manifest), "--engine", "ray"])
    assert res.exit_code == 2 and "-o" in res.output
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    res = runner.invoke(app, ["score", str(manifest), "-o", out, "--engine", "ray"])
    assert res.exit_code != 0 and "pip install 'ieqa[ray]'" in str(res.exception)


def test_scorer_errors_on_the_cluster_reach_the_user(local_ray, shapes, tmp_path):
    manifest, _ = shapes
    out = str(tmp_path / "o.parquet")
    res = runner.invoke(app, ["score", str(manifest), "-o", out, "--engine", "ray", "-s", "nope"])
    assert res.exit_code != 0 and "nope" in str(res.exception)
    res = runner.invoke(app, ["score", str(manifest), "-o", out, *RAY, "--fail-fast"])
    assert res.exit_code != 0 and "sample" in str(res.exception), res.output
    assert not Path(out).exists() and not Path(out + ".lock").exists()


@pytest.mark.slow
def test_a_tiny_vlm_scores_the_same_on_ray(local_ray, shapes, tmp_path):
    """A model per actor: a tiny random Qwen2-VL (vlm-levels, CPU) on the first 4 edits."""
    from ieqa.testing import build_tiny_vlm

    manifest, _ = shapes
    model = build_tiny_vlm(tmp_path / "tiny", "qwen2-vl")
    small = tmp_path / "small.jsonl"
    small.write_text("".join(manifest.read_text().splitlines(keepends=True)[:4]))
    (tmp_path / "images").symlink_to(manifest.parent / "images")
    args = ["score", str(small), "-s", "vlm-levels", "-m", str(model), "-O", "device=cpu",
            "--batch-size", "2"]
    a, b = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    assert runner.invoke(app, [*args, "-o", str(a)]).exit_code == 0
    res = runner.invoke(app, [*args, "-o", str(b), "--engine", "ray", "--replicas", "2"])
    assert res.exit_code == 0, res.output
    assert_same_output(a, b)
