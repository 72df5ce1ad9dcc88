"""CLI commands, one module each. Every module defines ``command`` (a Typer-compatible
function whose parameters use ``typer.Option`` / ``typer.Argument``) and ``NAME`` (the
command's name); :mod:`ieqa.cli` registers the modules listed in ``COMMAND_MODULES``."""

COMMAND_MODULES: tuple[str, ...] = ("listing", "synth", "demo", "score", "manifest", "bench", "mos", "rank_editors", "tiny_vlm",
                                     "train", "serve", "curate", "best_of_n", "dpo_pairs",
                                     "bench_explanations", "baseline", "explain", "studio",
                                     "optimize_prompt")
