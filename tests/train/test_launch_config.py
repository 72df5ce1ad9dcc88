"""The launch configs of ``ieqa launch-config``: accelerate reads every one; DeepSpeed's own
schema accepts the ZeRO ones (with DeepSpeed from ``make setup``'s side install); the FSDP
one is what tests/train/test_data_parallel.py trains with on two CPU processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.train.launch import (
    LAUNCH_CONFIGS,
    LaunchConfigError,
    deepspeed_json,
    launch_config,
    write_launch_config,
)

REPO = Path(__file__).resolve().parents[2]
DEEPSPEED_LIB = REPO / ".venv" / "deepspeed-lib"


@pytest.mark.parametrize("name", list(LAUNCH_CONFIGS))
def test_accelerate_reads_every_launch_config(name, tmp_path):
    from accelerate.commands.config.config_args import ClusterConfig

    files = write_launch_config(name, tmp_path / f"{name}.yaml", processes=16, machines=2,
                                machine_rank=1, main_ip="10.1.2.3", main_port=29600)
    config = ClusterConfig.from_yaml_file(str(files[0]))
    expected = LAUNCH_CONFIGS[name][1]["distributed_type"]
    assert str(config.distributed_type).split(".")[-1] == expected
    assert (config.num_processes, config.num_machines, config.machine_rank) == (16, 2, 1)
    assert (config.main_process_ip, config.main_process_port) == ("10.1.2.3", 29600)
    if expected == "DEEPSPEED":
        ds = Path(config.deepspeed_config["deepspeed_config_file"])
        assert ds.is_absolute() and ds == files[1].resolve()
        zero = json.loads(ds.read_text())["zero_optimization"]
        assert zero["stage"] == (3 if name == "zero3" else 2)
        assert config.mixed_precision in (None, "no")  # bf16 lives in the JSON
    else:
        assert config.mixed_precision == "bf16" and len(files) == 1
    if expected == "FSDP":
        assert config.fsdp_config["fsdp_version"] == 2
        assert config.fsdp_config.get("fsdp_activation_checkpointing", False) == (
            name == "fsdp-full")


def test_launch_config_refuses_what_cannot_run():
    with pytest.raises(LaunchConfigError, match="known: ddp, fsdp-lora"):
        launch_config("zero4")
    with pytest.raises(LaunchConfigError, match="main_ip"):
        launch_config("ddp", processes=16, machines=2)
    with pytest.raises(LaunchConfigError, match="do not split evenly"):
        launch_config("ddp", processes=9, machines=2, main_ip="10.0.0.1")
    with pytest.raises(LaunchConfigError, match="machine_rank"):
        launch_config("ddp", machines=2, machine_rank=2, main_ip="10.0.0.1")


def test_the_cli_writes_the_config_and_its_deepspeed_json(tmp_path):
    out = tmp_path / "z2.yaml"
    result = CliRunner().invoke(app, ["launch-config", "zero2", "--processes", "4", "-o",
                                      str(out)])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(out.read_text())
    assert config["num_processes"] == 4
    assert json.loads((tmp_path / "z2.deepspeed.json").read_text()) == deepspeed_json(2)
    listed = CliRunner().invoke(app, ["launch-config", "--list"])
    assert all(name in listed.output for name in LAUNCH_CONFIGS)


_VALIDATE = """
import json, sys
from ieqa.train.launch import deepspeed_json, validate_deepspeed
for stage in (2, 3):
    parsed = validate_deepspeed(deepspeed_json(stage), batch_size=4, grad_accum=8)
    assert parsed.zero_optimization_stage == stage, parsed.zero_optimization_stage
    assert parsed.train_batch_size == 32 and parsed.gradient_clipping == 1.0
bad = deepspeed_json(3)
bad["zero_optimization"]["stage3_gather_16bit_weight_on_model_save"] = True  # a typo
try:
    validate_deepspeed(bad)
except Exception as exc:
    print("rejected:", type(exc).__name__)
"""


def test_the_zero_configs_pass_deepspeeds_own_schema():
    if not (DEEPSPEED_LIB / ".installed").exists():
        pytest.skip(f"DeepSpeed is not installed in {DEEPSPEED_LIB} (make setup installs it)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DEEPSPEED_LIB), str(REPO / "src")]),
           "DS_ACCELERATOR": "cpu"}
    done = subprocess.run([sys.executable, "-c", _VALIDATE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rejected: ValidationError" in done.stdout, done.stdout + done.stderr[-2000:]
