"""``ieqa train`` on two CPU processes (gloo) trains as one process does.

Two processes with ``grad_accum = 1`` see the micro-batches one process sees with
``grad_accum = 2`` and the same ``batch_size`` (the global batch is 4 both ways); DDP
averages two gradients, accumulation adds two halves, and both sums of two numbers are
exact, so with one thread per process the runs agree to the last bit here (measured: loss
and weight differences 0.0 for every family; with two threads on the single process
instead, 5e-7 in the losses). The bars below (1e-5 in the losses, 1e-6 in the weights)
leave room for kernels that sum in another order.

Launched the way users launch: ``torchrun`` (and through the CLI for GRPO), and
``accelerate launch`` with the FSDP config of ``ieqa launch-config fsdp-lora``;
``accelerate launch --multi_gpu`` (CPU processes over gloo when there is no GPU) runs in
the how-to's examples (docs/howto/train-distributed.md). Every launch binds 127.0.0.1 and
is bounded by :data:`LAUNCH_TIMEOUT_S`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.train.dp_worker import STEPS, dp_recipe

from ieqa.train import TrainError, train

WORKER = Path(__file__).with_name("dp_worker.py")
REPO = Path(__file__).resolve().parents[2]
#: longest a two-process launch may take (each measured at about 10-25 s on 2 cores)
LAUNCH_TIMEOUT_S = 300
RECIPES = ["edithf", "editreward", "ds-ieqa"]
#: FSDP against one process (see the FSDP test): weights measured to 6e-6, scores to 5e-7
FSDP_WEIGHT_TOL = 1e-4
SCORE_TOL = 1e-4



def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(launcher: list[str], spec: dict, tmp_path: Path) -> dict:
    """Run the worker on two processes; the main process's losses."""
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([*launcher, str(WORKER), str(path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return json.loads((Path(spec["out"]) / "losses.json").read_text())


def _torchrun() -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
            "--master_addr", "127.0.0.1", "--master_port", str(_port())]


def _accelerate(*extra: str) -> list[str]:
    return [sys.executable, "-m", "accelerate.commands.launch", *extra, "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "--main_process_ip", "127.0.0.1", "--main_process_port", str(_port())]


def _one_thread_train(recipe, out: Path, **kwargs):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train(recipe, output_dir=out, progress=False, **kwargs)
    finally:
        torch.set_num_threads(before)


def _losses(result) -> dict[str, list[list[float]]]:
    return {d: [list(x) for x in r.losses] for d, r in (result.children or {"": result}).items()}


@pytest.fixture(scope="module")
def reference(tiny_train_vlm, tmp_path_factory):
    """Each recipe on this process with grad_accum 2: the run the two processes match."""
    out = tmp_path_factory.mktemp("dp-reference")
    return out, {name: _losses(_one_thread_train(dp_recipe(name, tiny_train_vlm, grad_accum=2),
                                                 out / name)) for name in RECIPES}


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {f"{f.parent.name}/{k}": v for f in sorted(folder.rglob("*.safetensors"))
            for k, v in load_file(str(f)).items()}


def _assert_same_weights(a: Path, b: Path, tol: float = 1e-6) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa and wa.keys() == wb.keys()
    worst = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    assert worst <= tol, worst


def _assert_same_losses(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for dim, rows in expected.items():
        assert [s for s, _ in got[dim]] == [s for s, _ in rows], dim
        for (step, loss), (_, want) in zip(got[dim], rows, strict=True):
            assert loss == pytest.approx(want, rel=1e-5, abs=1e-6), (dim, step)


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def two_processes(tiny_train_vlm, tmp_path_factory):
    """The recipes under ``torchrun`` on two processes with ``grad_accum`` 1, reporting to
    TensorBoard; EditReward stops (with a checkpoint) after 2 of its 4 steps, to be resumed
    on one process."""
    tmp = tmp_path_factory.mktemp("dp-two")
    out = tmp / "two"
    got = _launch(_torchrun(), {"model": tiny_train_vlm, "out": str(out), "recipes": RECIPES,
                                "grad_accum": 1, "stop_after": {"editreward": 2},
                                "overrides": {"output.report_to": ["tensorboard"]}}, tmp)
    return out, got


def test_two_processes_train_as_one_with_twice_the_accumulation(reference, two_processes):
    ref_dir, ref = reference
    out, got = two_processes
    for name in RECIPES:
        expected = ref[name] if name != "editreward" else {"": ref[name][""][:2]}
        _assert_same_losses(got[name], expected)
    for run in [out / "edithf", out / "ds-ieqa" / "visual_quality"]:
        mine = ref_dir / run.relative_to(out)
        _assert_same_weights(run / "evaluator", mine / "evaluator")
        records = _records(run)
        # one writer: one line per step, one setup line per stage, held-out metrics as
        # one process computes them (the samples dealt to two processes and gathered)
        steps = [r["global_step"] for r in records if r["event"] == "step"]
        assert steps == list(range(1, len(steps) + 1))
        setups = [r for r in records if r["event"] == "setup"]
        assert {(r["processes"], r["distributed"], r["global_batch"]) for r in setups} == {
            (2, "MULTI_CPU", 4)}
        evals = [{k: v for k, v in r.items() if k != "global_step"} for r in records
                 if r["event"] in ("before", "after")]
        theirs = [{k: v for k, v in r.items() if k != "global_step"} for r in _records(mine)
                  if r["event"] in ("before", "after")]
        assert json.dumps(evals) == json.dumps(theirs)
        assert not list(run.rglob("process-*.pt"))
    assert not (out / "editreward" / "evaluator").exists()  # stopped early
    # the tracker got the scalars of metrics.jsonl, once
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tracking = [p for p in (out / "editreward" / "tracking").rglob("events.out.tfevents.*")
                if p.parent.name == "editreward"]
    assert len(tracking) == 1
    events = EventAccumulator(str(tracking[0].parent))
    events.Reload()
    logged = [(s.step, s.value) for s in events.Scalars("ranking/train/loss")]
    steps = [(r["global_step"], r["loss"]) for r in _records(out / "editreward")
             if r["event"] == "step"]
    assert [s for s, _ in logged] == [s for s, _ in steps] == [1, 2]
    assert [v for _, v in logged] == pytest.approx([v for _, v in steps], rel=1e-6)


def test_resume_on_one_process_from_two(reference, two_processes, tiny_train_vlm):
    ref_dir, ref = reference
    out, part = two_processes
    run = out / "editreward"
    checkpoint = run / "checkpoints" / "step-2"
    assert (checkpoint / "process-1.pt").exists()  # the second process's RNG and loss state
    assert json.loads((checkpoint / "trainer_state.json").read_text())["global_batch"] == 4
    # the same global batch on one process is grad_accum 2; another is refused, saying so
    with pytest.raises(TrainError, match=r"global batch of 4 .*--set optim.grad_accum=2"):
        train(dp_recipe("editreward", tiny_train_vlm, grad_accum=1), output_dir=run,
              resume=True, progress=False)
    rest = _one_thread_train(dp_recipe("editreward", tiny_train_vlm, grad_accum=2), run,
                             resume=True)
    _assert_same_losses({"": part["editreward"][""] + [list(x) for x in rest.losses]},
                        ref["editreward"])
    _assert_same_weights(run / "evaluator", ref_dir / "editreward" / "evaluator")
    steps = [r["global_step"] for r in _records(run) if r["event"] == "step"]
    assert steps == list(range(1, STEPS["editreward"] + 1))


def test_fsdp_on_two_processes_exports_what_one_process_trains(tiny_train_vlm, tmp_path):
    """FSDP2 (the shipped fsdp-lora config) on EditHF's level-word and pointwise stages.

    Not bit for bit: FSDP gathers and reduces flattened shards, so the float sums run in
    another order; measured here, losses agree to 2e-7, weights to 6e-6 after 4 steps and
    the exported evaluators' scores to 5e-7. (EditHF's pairwise stage and
    EditReward are left out: a pairwise loss does not change when every score shifts, so
    the head's output bias gets a gradient that is zero but for rounding, which AdamW
    scales up to a full learning-rate step in either direction.)"""
    from ieqa import load_evaluator
    from ieqa.train.data import load_training_data
    from ieqa.train.launch import write_launch_config

    # the shipped FSDP2 config (ieqa launch-config fsdp-lora), for two processes in fp32
    config = write_launch_config("fsdp-lora", tmp_path / "fsdp.yaml", processes=2,
                                 mixed_precision="no")[0]
    out = tmp_path / "fsdp"
    got = _launch(_accelerate("--config_file", str(config)),
                  {"model": tiny_train_vlm, "out": str(out), "recipes": ["edithf"],
                   "grad_accum": 1, "stages": 2}, tmp_path)
    recipe = dp_recipe("edithf", tiny_train_vlm, grad_accum=2, stages=2)
    ref = _one_thread_train(recipe, tmp_path / "one")
    _assert_same_losses(got["edithf"], _losses(ref))
    run = out / "edithf"
    assert {r["distributed"] for r in _records(run) if r["event"] == "setup"} == {"FSDP"}
    # the shards gathered and exported on the main process: the checkpoint one process
    # writes, scoring the same
    _assert_same_weights(run / "evaluator", tmp_path / "one" / "evaluator", tol=FSDP_WEIGHT_TOL)
    samples = load_training_data(recipe.data, recipe.optim.seed).eval
    scores = [[r.scores for r in load_evaluator(folder / "evaluator").score(samples)]
              for folder in (run, tmp_path / "one")]
    assert len(scores[0]) == len(samples) > 3
    worst = max(abs(a[k] - b[k]) for a, b in zip(*scores, strict=True) for k in a)
    assert worst <= SCORE_TOL, worst


def test_grpo_and_the_cli_on_two_processes(tiny_train_vlm, tmp_path):
    """ReasonEdit's SFT then GRPO (TRL) from ``torchrun -m ieqa train``: one line per step,
    one setup record per stage with the global batch, one export, one printed table."""
    import yaml

    sys.path.insert(0, str(REPO / "benchmarks"))
    from grpo_learns import grpo_recipe

    recipe = grpo_recipe(tiny_train_vlm, sft_steps=2, grpo_steps=2, aux=1.0, n=48, max_eval=6,
                         completion=8)
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False))
    out = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "120",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([*_torchrun(), "-m", "ieqa", "train", str(path), "--out", str(out),
                           "--no-progress"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    records = _records(out)
    steps = [(r["stage"], r["global_step"]) for r in records if r["event"] == "step"]
    assert steps == [("warmup", 1), ("warmup", 2), ("grpo", 3), ("grpo", 4)]
    setups = {r["stage"]: r for r in records if r["event"] == "setup"}
    assert setups.keys() == {"warmup", "grpo"}
    assert setups["grpo"]["processes"] == 2
    assert setups["grpo"]["global_batch"] == 2 * setups["grpo"]["batch_size"] == 16
    assert (out / "evaluator" / "ieqa_evaluator.json").is_file()
    assert done.stdout.count("held-out metrics") == 1  # the main process prints
