"""``ieqa generate``: candidate edits from any diffusers image-editing pipeline
(:func:`generate_candidates`).

The pipeline is loaded with ``diffusers.DiffusionPipeline.from_pretrained`` (a hub id such
as ``timbrooks/instruct-pix2pix``, ``Qwen/Qwen-Image-Edit`` or
``black-forest-labs/FLUX.1-Kontext-dev``, or a local folder) and called per item and seed as
``pipe(prompt=instruction, image=source, num_inference_steps=steps,
generator=torch.Generator(device).manual_seed(seed), **call_options)``; ``call_options``
carries what differs between pipelines (``image_guidance_scale``, ``true_cfg_scale``,
``guidance_scale``, ...). Candidate ``k`` of every item uses ``seeds[k]``, so the same
seed list reproduces the same candidates.

Inputs are an editor benchmark's data, found through the registered benchmarks
(:data:`ieqa.registry.EDITOR_BENCHMARKS`: each protocol's ``detect`` recognises its files,
so a benchmark registered from its own module is generated for too), or a manifest of
``(id, source, instruction)`` rows (JSONL or CSV; paths relative to the manifest's folder).
Outputs, under ``out``:

* GEdit-Bench: the benchmark's layout, ``fullset/{task_type}/{language}/{key}.png`` with
  one candidate, ``candidate-{k}/fullset/...`` with several (each folder one
  ``--outputs`` of ``ieqa bench-editor``);
* ImgEdit-Bench: its layout, ``{key}.png``, or ``candidate-{k}/{key}.png``;
* RISEBench (its JSON file, :mod:`ieqa.data.loaders.risebench`): its layout,
  ``images/{category}/{index}.png``, or ``candidate-{k}/images/...``;
* KRIS-Bench (its folder, :mod:`ieqa.data.loaders.kris_bench`): its layout,
  ``{category}/{id}.png``, or ``candidate-{k}/{category}/...``. Its multi-element
  composition and temporal prediction items take several input images, which a pipeline
  called with one image cannot; they are not generated, and the run record lists them
  (``skipped``; ``bench-editor`` then needs ``--missing skip`` and states the coverage);
* the Emu Edit test set (its Parquet files, :mod:`ieqa.data.loaders.emu_edit`; the test
  split, or a validation file): ``{idx}.png``, or ``candidate-{k}/{idx}.png``;
* the MagicBrush test set (its unpacked folder, :mod:`ieqa.data.loaders.magicbrush`): every
  turn from its ground-truth input, ``{session}/{session}_1.png`` and
  ``{session}_inde_{k}.png``; the iterative final turns (each from the editor's own
  previous output) are not generated and are listed under ``skipped``;
* a manifest: ``images/{id}/candidate-{k}.png``;
* always ``candidates.jsonl``: an ieqa manifest with one row per candidate (``id`` =
  ``{item id}#{k}``, ``group_id`` = the item's id, ``editor`` = the pipeline, ``meta`` =
  seed and k) that ``ieqa score`` reads, whose score file ``best-of-n`` and ``dpo-pairs``
  read;
* ``generate.json``: the run's settings; a re-run with other settings is refused unless
  ``overwrite``.

**Resumable**: every image is written atomically, and a re-run generates only the
candidates whose file is not there yet.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.data.manifest import write_manifest
from ieqa.data.schema import EditSample
from ieqa.errors import IeqaError
from ieqa.progress import progress_bar
from ieqa.registry import EDITOR_BENCHMARKS

__all__ = ["CandidateJob", "GenerateError", "GenerationItem", "data_help", "generate_candidates",
           "load_pipeline", "make_candidate", "read_generation_items"]


class GenerateError(IeqaError, ValueError):
    """The generation inputs or options cannot be used as given."""


@dataclass(frozen=True)
class GenerationItem:
    """One (source, instruction) to edit; ``outputs`` maps a candidate index to its file
    (see :func:`candidate_path`)."""

    id: str
    source: Path
    instruction: str
    task: str | None = None
    bench_item: Any = None  # the benchmark's item (GEditItem, ImgEditItem) for a benchmark
    skip: str | None = None  # why it cannot be generated (several input images)


def _benchmarks() -> dict[str, Any]:
    """The registered editor benchmarks (:data:`ieqa.registry.EDITOR_BENCHMARKS`), by name: a
    benchmark of one's own registered there is generated for like the built-in ones."""
    return {entry.name: entry.factory() for entry in EDITOR_BENCHMARKS}


def data_help() -> str:
    """What ``--data`` takes, from the registered benchmarks (the CLI help and errors)."""
    benchmarks = _benchmarks().values()
    return ("a manifest (.jsonl/.csv: id, source, instruction), "
            + "; ".join(f"{b.name}: {b.data_help}" for b in benchmarks if b.data_help)
            + "; or a benchmark's name (" + ", ".join(b.name for b in benchmarks)
            + ": its data in the local hub cache)")


def read_generation_items(data: str | os.PathLike[str], *, languages: Sequence[str] = ("en",),
                          work_dir: str | os.PathLike[str]) -> tuple[str, list[GenerationItem]]:
    """``(kind, items)`` of ``data``: a registered editor benchmark's name (its data in the
    local hub cache) or its data (a file or folder its protocol's ``detect`` claims; kind:
    the benchmark's name), else ``"manifest"`` (a .jsonl or .csv file with ``id``,
    ``source``, ``instruction`` and optionally ``task``). ``languages`` are asked of a
    benchmark with several (GEdit-Bench); the others are read in their one language."""
    path = Path(data)
    benchmarks = _benchmarks()
    if str(data) in benchmarks:
        kind, source = str(data), None
    else:
        claims = [name for name, b in benchmarks.items() if b.detect(path)]
        if len(claims) > 1:
            raise GenerateError(f"--data {data}: holds the data of {' and '.join(claims)}; "
                                "give one benchmark's own file or folder")
        kind, source = (claims[0], path) if claims else ("manifest", None)
    if kind != "manifest":
        bench = benchmarks[kind]
        asked = languages if len(bench.languages) > 1 else bench.languages
        read = bench.read_items(source, asked, Path(work_dir))
        return kind, [GenerationItem(i.id, i.source, i.instruction, i.task_type, i,
                                     bench.generation_skip(i)) for i in read]
    if not path.is_file():
        raise GenerateError(f"--data {data}: no such file; give {data_help()}")
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
    elif path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    else:
        raise GenerateError(f"--data {path}: a manifest must be .jsonl or .csv")
    items, seen = [], set()
    for n, row in enumerate(rows, 1):
        missing = [k for k in ("id", "source", "instruction") if not row.get(k)]
        if missing:
            raise GenerateError(f"{path}, row {n}: no {', '.join(missing)}; each row needs id, "
                                "source and instruction")
        ident = str(row["id"])
        if ident in seen:
            raise GenerateError(f"{path}, row {n}: id {ident!r} twice")
        seen.add(ident)
        source = Path(row["source"])
        source = source if source.is_absolute() else path.parent / source
        if not source.is_file():
            raise GenerateError(f"{path}, row {n}: source {source} does not exist")
        items.append(GenerationItem(ident, source, str(row["instruction"]), row.get("task")))
    if not items:
        raise GenerateError(f"{path}: no rows")
    return "manifest", items


def _safe(ident: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", ident).strip("._") or "item"


def candidate_path(out: Path, benchmark: Any, item: GenerationItem, k: int,
                   n_candidates: int) -> Path:
    """Where candidate ``k`` of ``item`` is written (see the module docstring):
    ``benchmark``'s layout (its protocol), or a manifest's (``None``)."""
    if benchmark is not None:
        base = out if n_candidates == 1 else out / f"candidate-{k}"
        return benchmark.output_path(base, item.bench_item)
    return out / "images" / _safe(item.id) / f"candidate-{k}.png"


@dataclass(frozen=True)
class CandidateJob:
    """One candidate to make: ``pipe(instruction, source)`` with ``seed``, into ``target``."""

    item_id: str
    k: int
    source: str
    instruction: str
    seed: int
    target: str


def make_candidate(pipe: Any, job: CandidateJob, *, steps: int, call_options: Mapping[str, Any],
                   device: str) -> None:
    """Run the pipeline for ``job`` and write its image atomically (a ``.partial.png``
    renamed into place): the one code path of the local and the Ray engine."""
    import torch
    from PIL import Image

    target = Path(job.target)
    with Image.open(job.source) as im:
        source = im.convert("RGB")
    generator = torch.Generator(device=device).manual_seed(job.seed)
    image = pipe(prompt=job.instruction, image=source, num_inference_steps=steps,
                 generator=generator, **dict(call_options)).images[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.stem + ".partial.png")
    image.save(tmp, format="PNG")
    tmp.replace(target)


#: runs the jobs somewhere else (``ieqa.scale.raygen``): ``(jobs, advance) -> None``, calling
#: ``advance(n)`` as candidates are written and raising when one fails
Executor = Callable[[list[CandidateJob], Callable[[int], None]], None]


def load_pipeline(pipeline: Any, device: str, dtype: str | None, revision: str | None) -> Any:
    """The diffusers pipeline ``pipeline`` (hub id or folder; an object as it is) on
    ``device``."""
    if not isinstance(pipeline, (str, os.PathLike)):
        return pipeline
    try:
        import torch
        from diffusers import DiffusionPipeline
    except ImportError as exc:
        raise GenerateError(f"ieqa generate needs diffusers ({exc}): pip install "
                            "'ieqa[generate]'") from None
    kwargs: dict[str, Any] = {}
    if dtype is not None:
        if not hasattr(torch, dtype):
            raise GenerateError(f"--dtype {dtype}: not a torch dtype (float32, bfloat16, float16)")
        kwargs["torch_dtype"] = getattr(torch, dtype)
    if revision is not None:
        kwargs["revision"] = revision
    try:
        pipe = DiffusionPipeline.from_pretrained(str(pipeline), **kwargs)
    except (OSError, ValueError) as exc:
        raise GenerateError(f"--pipeline {pipeline}: could not load a diffusers pipeline "
                            f"({str(exc)[:300]}); give a hub id or a folder written by "
                            "save_pretrained") from None
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def generate_candidates(
    pipeline: Any,
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    num_candidates: int = 1,
    seeds: Sequence[int] | None = None,
    steps: int = 50,
    call_options: Mapping[str, Any] | None = None,
    languages: Sequence[str] = ("en",),
    device: str = "cpu",
    dtype: str | None = None,
    revision: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    on_item: Callable[[GenerationItem], None] | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Generate ``num_candidates`` edits per item of ``data`` into ``out`` (see the module
    docstring); returns the run record (also in ``out/generate.json``) with ``generated``
    (candidates made now), ``kept`` (found from an earlier run) and ``skipped`` (items
    that cannot be generated, each with why).

    Args:
        pipeline: a hub id or folder (loaded with ``DiffusionPipeline.from_pretrained``), or
            a pipeline object.
        data: a manifest, a registered editor benchmark's data (the file or folder its
            protocol's ``detect`` claims: :func:`read_generation_items`) or its name
            (``"gedit-bench"``, ``"imgedit-bench"``, ...: its data in the local hub cache).
        out: the output folder.
        num_candidates: K >= 1 candidates per item.
        seeds: K seeds (default ``0 .. K-1``); candidate k of every item uses ``seeds[k]``.
        steps: ``num_inference_steps``.
        call_options: more keyword arguments of the pipeline's call.
        languages: GEdit-Bench languages (``en``, ``cn``).
        device: where the pipeline runs (``cpu``, ``cuda``, ...).
        dtype: torch dtype name for loading (``bfloat16``, ...; default the pipeline's).
        revision: hub revision of ``pipeline``.
        overwrite: start again when ``out`` holds a run with other settings.
        progress: draw a progress bar.
        on_item: called after each item's candidates are written (local engine).
        executor: make the candidates elsewhere (:func:`ieqa.scale.raygen.ray_executor`:
            a Ray actor pool); default here, one after another.
    """
    if num_candidates < 1:
        raise GenerateError(f"--num-candidates must be >= 1, got {num_candidates}")
    seeds = list(range(num_candidates)) if seeds is None else [int(s) for s in seeds]
    if len(seeds) != num_candidates:
        raise GenerateError(f"--seeds gives {len(seeds)} seeds for --num-candidates "
                            f"{num_candidates}; give one per candidate")
    if steps < 1:
        raise GenerateError(f"--steps must be >= 1, got {steps}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = str(pipeline) if isinstance(pipeline, (str, os.PathLike)) else type(pipeline).__name__
    settings = {"pipeline": name, "revision": revision, "num_candidates": num_candidates,
                "seeds": seeds, "steps": steps, "call_options": dict(call_options or {}),
                "dtype": dtype, "data": str(data), "languages": list(languages)}
    record_path = out / "generate.json"
    if record_path.is_file() and not overwrite:
        earlier = json.loads(record_path.read_text())
        if earlier.get("settings") != settings:
            raise GenerateError(f"{out} holds candidates made with other settings "
                                f"({earlier.get('settings')}); pass --overwrite to make them "
                                "again, or another --out")
    kind, items = read_generation_items(data, languages=languages, work_dir=out)
    benchmark = None if kind == "manifest" else EDITOR_BENCHMARKS.get(kind).factory()
    skipped = [{"id": i.id, "why": i.skip} for i in items if i.skip]
    items = [i for i in items if not i.skip]
    todo = [(item, k) for item in items for k in range(num_candidates)
            if overwrite or not candidate_path(out, benchmark, item, k, num_candidates).is_file()]
    record = {"settings": settings, "kind": kind, "items": len(items),
              "candidates": len(items) * num_candidates,
              "kept": len(items) * num_candidates - len(todo), "generated": 0,
              "skipped": skipped}
    record_path.write_text(json.dumps({**record, "complete": False}, indent=2))
    jobs = [CandidateJob(item.id, k, str(item.source), item.instruction, seeds[k],
                         str(candidate_path(out, benchmark, item, k, num_candidates)))
            for item, k in todo]
    if todo and executor is not None:
        with progress_bar(f"Generating with {name}", len(todo), enabled=progress,
                          unit="candidates") as advance:

            def count(n: int) -> None:
                record["generated"] += n
                advance(n)

            executor(jobs, count)
    elif todo:
        pipe = load_pipeline(pipeline, device, dtype, revision)
        with progress_bar(f"Generating with {name}", len(todo), enabled=progress,
                          unit="candidates") as advance:
            for n, ((item, _), job) in enumerate(zip(todo, jobs, strict=True)):
                make_candidate(pipe, job, steps=steps, call_options=call_options or {},
                               device=device)
                record["generated"] += 1
                advance(1)
                last = n + 1 == len(todo) or todo[n + 1][0] is not item
                if last and on_item is not None:
                    on_item(item)
    rows = [EditSample(id=f"{item.id}#{k}", source=item.source,
                       edited=candidate_path(out, benchmark, item, k, num_candidates),
                       instruction=item.instruction, task=item.task, editor=name,
                       group_id=item.id, meta={"seed": seeds[k], "k": k})
            for item in items for k in range(num_candidates)]
    write_manifest(rows, out / "candidates.jsonl")
    record_path.write_text(json.dumps({**record, "complete": True}, indent=2))
    return {**record, "complete": True}
