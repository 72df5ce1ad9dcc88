"""CLI commands, one module each. Every module defines ``command`` (a Typer-compatible
function whose parameters use ``typer.Option`` / ``typer.Argument``) and ``NAME`` (the
command's name); :mod:`ieqa.cli` loads a command's module only when that command runs (or
when the help lists them all), from :data:`COMMANDS`."""

#: command name -> its module in this package, in the order ``ieqa --help`` lists them
COMMANDS: dict[str, str] = {
    "list": "listing", "synth": "synth", "demo": "demo", "score": "score",
    "manifest": "manifest", "bench": "bench", "mos": "mos", "rank-editors": "rank_editors",
    "tiny-vlm": "tiny_vlm", "train": "train", "serve": "serve", "curate": "curate",
    "best-of-n": "best_of_n", "dpo-pairs": "dpo_pairs",
    "bench-explanations": "bench_explanations", "baseline": "baseline", "explain": "explain",
    "studio": "studio", "optimize-prompt": "optimize_prompt",
    "bench-editor": "bench_editor", "editor-table": "editor_table", "judge-diff": "judge_diff",
    "generate": "generate", "stand-in-judge": "stand_in_judge", "mmrb2-judge": "mmrb2_judge",
    "launch-config": "launch_config",
}

#: the command modules (kept for scripts that listed them)
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS.values())
