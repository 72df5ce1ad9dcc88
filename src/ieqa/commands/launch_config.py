"""``ieqa launch-config``: an accelerate config for training on several GPUs or machines.

    ieqa launch-config fsdp-lora --processes 8 -o fsdp.yaml
    accelerate launch --config_file fsdp.yaml -m ieqa train editreward --set ...

Configs: ddp, fsdp-lora, fsdp-full, zero2, zero3 (``ieqa launch-config --list``); the
DeepSpeed ones write their DeepSpeed JSON beside the YAML.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

NAME = "launch-config"
console = Console()


def command(
    name: str | None = typer.Argument(None, help="ddp, fsdp-lora, fsdp-full, zero2 or zero3"),
    out: Path | None = typer.Option(None, "--out", "-o", help="YAML file to write (default: "
                                    "NAME.yaml)"),
    processes: int = typer.Option(8, "--processes", help="processes in all: GPUs per machine "
                                  "x machines"),
    machines: int = typer.Option(1, "--machines", help="machines"),
    machine_rank: int = typer.Option(0, "--machine-rank", help="this machine's rank (0: the "
                                     "main machine)"),
    main_ip: str | None = typer.Option(None, "--main-ip", help="the main machine's address "
                                       "(needed with several machines)"),
    main_port: int = typer.Option(29500, "--main-port", help="the main machine's port"),
    mixed_precision: str = typer.Option("bf16", "--mixed-precision", help="no, fp16 or bf16 "
                                        "(DeepSpeed configs: bf16 'auto' in their JSON)"),
    list_: bool = typer.Option(False, "--list", help="list the configs and exit"),
) -> None:
    """Write an accelerate config for ``accelerate launch --config_file ... -m ieqa train``."""
    from ieqa.train.launch import LAUNCH_CONFIGS, write_launch_config

    if list_ or name is None:
        for key, (what, _) in LAUNCH_CONFIGS.items():
            console.print(f"[bold]{key}[/bold]  {escape(what)}")
        return
    files = write_launch_config(name, out or Path(f"{name}.yaml"), processes=processes,
                                machines=machines, machine_rank=machine_rank, main_ip=main_ip,
                                main_port=main_port, mixed_precision=mixed_precision)
    for f in files:
        console.print(f"wrote {escape(str(f))}")
    console.print(escape(f"run: accelerate launch --config_file {files[0]} -m ieqa train "
                         "RECIPE --set ..."))
