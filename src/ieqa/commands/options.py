"""Argument handling shared by several commands (private): benchmarks given by name or
path, and ``--option key=value`` scorer arguments."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import typer
import yaml

from ieqa.data import resolve
from ieqa.data.inputs import InputItem
from ieqa.data.loaders import BenchmarkData
from ieqa.data.resolve import InputError, open_benchmark


def load_benchmark_arg(benchmark: str, root: Path | None, view: str | None = None) -> BenchmarkData:
    """The benchmark from a registered name + ``--root``, or from a path
    (:func:`ieqa.data.resolve.open_benchmark`; its option errors become usage errors)."""
    try:
        return open_benchmark(benchmark, root, view)
    except InputError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.option) from None


def resolve_input(target: str, root: Path | None) -> tuple[Iterable[InputItem], int, str]:
    """:func:`ieqa.data.resolve.resolve_input`, its option errors as usage errors."""
    try:
        return resolve.resolve_input(target, root)
    except InputError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.option) from None


def run_input(target: str, root: Path | None, *, strict: bool
              ) -> tuple[Iterable[InputItem], int, str]:
    """:func:`resolve_input`, checked whole first with ``--strict``
    (:func:`ieqa.data.resolve.strict_check`)."""
    items, total, description = resolve_input(target, root)
    return (resolve.strict_check(items) if strict else items), total, description


def file_run_input(inputs: list[str], root: Path | None, out: Path | None, *, strict: bool,
                   what: str) -> tuple[Iterable[InputItem], int, str]:
    """The input of a run into ``-o OUT`` (``what``: "the scores", said in the error when
    ``-o`` is missing): :func:`run_input` of ``inputs[0]``."""
    if out is None:
        raise typer.BadParameter(f"pass -o OUT.parquet (or .jsonl) for {what}",
                                 param_hint="--out")
    return run_input(inputs[0], root, strict=strict)


def number_pair(text: str | None, option: str, how: str) -> tuple[float, float] | None:
    """``"A,B"`` as two numbers (``None`` when the option is not given); ``how`` says
    what to write (``"INPUT,OUTPUT in USD per million tokens, e.g. 2,8"``)."""
    if text is None:
        return None
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: write {how}", param_hint=option) from None
    return a, b


def refuse_out_for_one(out: Path | None) -> None:
    """One triplet is printed, never written: ``-o`` is refused with it."""
    if out is not None:
        raise typer.BadParameter("-o is for folders, manifests and benchmarks; one triplet is "
                                 "printed (add --json for machine-readable output)",
                                 param_hint="--out")


def parse_options(options: list[str] | None) -> dict[str, Any]:
    """``["key=value", ...]`` -> ``{key: value}``; values are read as YAML scalars
    (``3`` -> int, ``0.5`` -> float, ``true`` -> bool, anything else a string)."""
    out: dict[str, Any] = {}
    for item in options or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{item!r}: write options as key=value", param_hint="--option")
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            parsed = value
        out[key.strip()] = parsed
    return out


#: the scorer-building options shared by ``ieqa score`` and ``ieqa bench``
OPTION_OPT = typer.Option(None, "--option", "-O", help="scorer argument as key=value (repeatable)")
MODEL_OPT = typer.Option(None, "--model", "-m",
                         help="VLM scorers: hub id or local checkpoint folder (or the served "
                              "model's name with -O base_url=...)")
CHECKPOINT_OPT = typer.Option(None, "--checkpoint", exists=True, file_okay=False,
                              help="a trained ieqa evaluator folder")
#: published evaluators (ieqa list scorers): where the released files come from
BASE_MODEL_OPT = typer.Option(None, "--base-model",
                              help="published evaluators: the base VLM of the release (hub id "
                                   "or local folder); default: the one the release names")
REVISION_OPT = typer.Option(None, "--revision",
                            help="published evaluators: hub revision (branch, tag or commit) "
                                 "of --model")
ADAPTER_OPT = typer.Option(None, "--adapter",
                           help="published evaluators with a LoRA release (editscore): the "
                                "adapter's hub id or local folder; default: the released one")
PROMPTS_OPT = typer.Option(None, "--prompts", exists=True, file_okay=False,
                           help="published evaluators: a local copy of the authors' repository "
                                "(same relative paths) to read the prompt files from instead "
                                "of fetching them")


#: the run options shared by ``ieqa score`` and ``ieqa explain`` (both write a resumable
#: output file through :func:`ieqa.scorers.run.score_to_file`)
OUT_OPT = typer.Option(None, "--out", "-o",
                       help="output file (.parquet or .jsonl) for a folder, manifest or benchmark")
ROOT_OPT = typer.Option(None, "--root", exists=True,
                        help="with a registered benchmark name: your download")
WORKERS_OPT = typer.Option(None, "--workers", min=1,
                           help="image-decoding threads (default: min(8, CPUs))")
NO_RETRY_OPT = typer.Option(False, "--no-retry",
                            help="on a re-run, keep the rows that errored instead of running "
                                 "them again")
STRICT_OPT = typer.Option(False, "--strict",
                          help="check the whole input first and stop, listing every malformed "
                               "row, before running anything")
ALLOW_ERRORS_OPT = typer.Option(False, "--allow-errors",
                                help="exit 0 even when some rows have errors")
FROM_SCORER_OPT = typer.Option(
    None, "--from-scorer", metavar="NAME[@HASH]",
    help="read only this scorer's rows of a score file that holds rows of several (NAME@HASH "
         "as in its scorer column, NAME for any configuration of it, 'none' for rows without "
         "one); the others are counted and left out. Without it such a file is refused")


def _share(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # NaN too
        raise typer.BadParameter(f"a share in [0, 1] (0.05 accepts up to 5 % mismatched "
                                 f"edits), got {value}")
    return value


MAX_MISMATCH_OPT = typer.Option(
    0.0, "--max-mismatch", metavar="SHARE", callback=_share,
    help="share of the edits joined by id whose source, edited image or editor may differ "
         "between the two files before the join is refused (default 0: any)")


#: the scorer of ``ieqa score`` / ``ieqa bench`` when neither --scorer nor --checkpoint names one
DEFAULT_SCORER = "classic"
SCORER_HELP = (f"registered scorer (ieqa list scorers); default: the scorer a --checkpoint holds, "
               f"else {DEFAULT_SCORER}")


def make_scorer(name: str | None, options: list[str] | None, model: str | None = None,
                checkpoint: Path | None = None, *, base_model: str | None = None,
                revision: str | None = None, prompts: Path | None = None,
                adapter: str | None = None) -> Any:
    """The scorer of ``--scorer NAME -O key=value --model M --checkpoint DIR`` (and, for
    published evaluators, ``--base-model``, ``--revision``, ``--prompts``, ``--adapter``).

    Without ``--scorer`` (``name=None``) the scorer is the one the checkpoint holds, or
    :data:`DEFAULT_SCORER` without a checkpoint; an explicit ``--scorer`` that differs
    from the checkpoint's is an error saying which one it holds.
    """
    from ieqa.scorers.base import ScorerError
    from ieqa.scorers.catalog import create_scorer
    from ieqa.scorers.checkpoint import read_evaluator_config

    kwargs = parse_options(options)
    for key, value in (("model", model), ("checkpoint", checkpoint), ("base_model", base_model),
                       ("revision", revision), ("prompts", prompts), ("adapter", adapter)):
        if value is not None:
            if key in kwargs:
                flag = "--" + key.replace("_", "-")
                raise typer.BadParameter(f"{flag} and -O {key}=... both given; use one")
            kwargs[key] = str(value)
    if kwargs.get("checkpoint") is not None:
        try:
            held = read_evaluator_config(kwargs["checkpoint"])["scorer"]
        except ScorerError as exc:
            raise typer.BadParameter(str(exc), param_hint="--checkpoint") from None
        from ieqa.scorers.catalog import wraps_checkpoint

        if name is not None and name != held and wraps_checkpoint(name):
            return create_scorer(name, **kwargs)  # e.g. critique around a re-reward checkpoint
        if name is not None and name != held:
            raise typer.BadParameter(
                f"{name!r}, but the checkpoint {kwargs['checkpoint']} holds a {held!r} evaluator; leave "
                f"out --scorer (the checkpoint's scorer is used) or pass --scorer {held}",
                param_hint="--scorer")
        name = held
    return create_scorer(name or DEFAULT_SCORER, **kwargs)


#: ieqa's exit statuses, one contract for every command (docs/reference/cli.md's table,
#: checked by tests/test_exit_statuses.py): 0 done; 1 the run could not be done (the message
#: says what to do); 2 a usage error (click's own); 3 written, but some rows or items failed
#: and were counted (``--allow-errors``: 0), or the run stopped early and resumes; 128 +
#: the signal's number when Ctrl-C or SIGTERM stopped it (130, 143: ieqa.cli.main)
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3
#: the old name of :data:`EXIT_PARTIAL`
EXIT_FAILED = EXIT_PARTIAL


@contextlib.contextmanager
def exits_when_stopped() -> Iterator[None]:
    """A run stopped early (:class:`~ieqa.errors.RunStopped`) inside the block exits as
    :func:`exit_stopped` says."""
    from ieqa.errors import RunStopped

    try:
        yield
    except RunStopped as exc:
        raise exit_stopped(exc) from None


def exit_stopped(exc: Exception) -> typer.Exit:
    """Print why a run stopped early (:class:`~ieqa.errors.RunStopped`: what was scored is
    kept, a re-run resumes) and return the exit to raise (:data:`EXIT_PARTIAL`)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=False).print(f"[red]{escape(str(exc))}[/red]")
    return typer.Exit(EXIT_PARTIAL)


def benchmark_input_id(bench: BenchmarkData, benchmark: str, root: Path | None) -> str:
    """Identifies a benchmark's sample list for resumable scoring (name, location, ids)."""
    ids = hashlib.sha1("\n".join(s.id for s in bench.samples).encode()).hexdigest()
    where = root if root is not None else Path(benchmark)
    location = str(where.resolve()) if where.exists() else benchmark
    return f"benchmark:{bench.name}:{location}:{ids}"


def manifest_input_id(path: Path) -> str:
    """Identifies a manifest for resumable scoring (location, size, modification time)."""
    st = path.stat()
    return f"manifest:{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
