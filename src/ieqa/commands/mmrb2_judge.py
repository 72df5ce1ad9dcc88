"""``ieqa mmrb2-judge``: MMRB2's pairwise judge (image editing) as released, on its pairs,
with the official accuracy and ieqa's beside it.

    ieqa mmrb2-judge --root ~/data/mmrb2 -o results/mmrb2-gpt4o            # gpt-4o, OpenAI
    ieqa mmrb2-judge --root ~/data/mmrb2 --local -o results/mmrb2-qwen3vl8b  # Qwen3-VL-8B here
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

NAME = "mmrb2-judge"
console = Console()


def command(
    root: Path = typer.Option(..., "--root", help="the folder build_from_hf.py wrote (edit.json, "
                                                   "images/, input_images/) or its edit.json"),
    out: Path = typer.Option(..., "-o", "--out", help="output folder (created)"),
    model: str = typer.Option(None, "--model", help="the judge: a served model's name (default "
                                                    "gpt-4o), or with --local a checkpoint "
                                                    "(default Qwen/Qwen3-VL-8B-Instruct)"),
    base_url: str = typer.Option(None, "--base-url", help="an OpenAI-compatible endpoint "
                                                          "(default OpenAI's)"),
    local: bool = typer.Option(False, "--local", help="run the model here with transformers "
                                                      "(their qwen3vl8b-pairwise judge)"),
    prompts: Path = typer.Option(None, "--prompts", help="a local copy of the authors' "
                                                         "repository (offline)"),
    seed: int = typer.Option(0, "--seed", help="sampling seed of a local model"),
    limit: int = typer.Option(None, "--limit", min=1, help="judge the first N pairs only "
                                                           "(the others count as missing)"),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="pairs per backend call"),
) -> None:
    """Judge MMRB2's image-editing pairs with its released pairwise judge: both orders per
    pair; writes predictions.json (the released reading, in the authors' format, for their
    compute_accuracy.py), predictions-ieqa.json (ieqa's strict reading) and results.json."""
    from ieqa.bench.mmrb2 import MMRB2Judge, official_accuracy, write_predictions
    from ieqa.data.loaders.mmrb2 import read_pairs

    pairs = read_pairs(root)
    judged = pairs[:limit] if limit else pairs
    judge = MMRB2Judge(model=model, base_url=base_url, local=local, prompts=prompts, seed=seed)
    released, mine = judge.judge(judged, batch_size=batch_size)
    out.mkdir(parents=True, exist_ok=True)
    write_predictions(out / "predictions.json", released)
    write_predictions(out / "predictions-ieqa.json", mine)
    official, strict = official_accuracy(released, pairs), official_accuracy(mine, pairs)
    results = {"benchmark": "mmrb2-edit", "judge": judge.model, "local": judge.local,
               "seed": judge.seed if judge.local else None, "pairs": len(pairs),
               "judged": len(judged), "official": official.to_dict(), "ieqa": strict.to_dict(),
               "prompts": judge.prompts_dir}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"MMRB2 image editing, judge {judge.model}: official accuracy "
                  f"{100 * official.accuracy:.2f} % ({official.total_correct} of "
                  f"{official.total_evaluated} judgements; {official.missing_pairs} pairs "
                  f"missing, {official.unread} judgements unread, left out as released); "
                  f"over all pairs {100 * official.accuracy_all:.2f} %; ieqa's strict reading "
                  f"{100 * strict.accuracy_all:.2f} % over all pairs")
    console.print(f"wrote {out}/results.json, predictions.json, predictions-ieqa.json")
