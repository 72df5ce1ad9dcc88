"""``ieqa bench-editor``: score one or more editors' outputs on an editor benchmark with a
judge and aggregate them as the benchmark publishes them (:func:`bench_editor`).

Each benchmark is an :class:`~ieqa.bench.editor.protocol.EditorProtocol`
(:data:`PROTOCOLS`): GEdit-Bench (:mod:`ieqa.bench.editor.gedit`) and ImgEdit-Bench
(:mod:`ieqa.bench.editor.imgedit`), KRIS-Bench (:mod:`ieqa.bench.editor.kris`) and
RISEBench (:mod:`ieqa.bench.editor.rise`) say what their numbers are, and the Emu Edit and
MagicBrush test sets (:mod:`ieqa.bench.editor.emu`, :mod:`ieqa.bench.editor.magicbrush`)
what their metrics are. What is common is here: per
editor and per repeat, the judge scores every item whose output exists into
``OUT/scores/{editor}/repeat-{r}.jsonl`` through :func:`ieqa.scorers.run.score_to_file`
(resumable: a re-run scores only what is missing or failed); per language, the protocol's
parts, and

* ``coverage`` — items in the benchmark, with an output, scored, failed (judge errors,
  never replaced by a guess unless the judge's ``on_malformed="random"`` was asked for:
  then ``substituted`` counts the items drawn for in any repeat, as ``failed`` counts
  the items that failed in any; ``failed_by_kind``: ``http``, ``timeout``,
  ``connection``, ``unreadable`` or ``other``, each item by its first error) and missing;
* with ``repeats > 1``: each number is the mean over the repeats, ``std`` (in each part)
  their standard deviation (judge drift); ``ci`` stays repeat 1's interval (the report
  says so).

Missing outputs fail the run with their list (``missing="error"``); ``missing="skip"``
scores the rest, as the released scripts do silently, and every table states the
coverage ("17 of 20 items"). The judge is recorded as run: model, temperature, seed, the
model ids and fingerprints the server reported, tokens and cost (:func:`judge_record`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.backends.judge_log import JUDGE_LOG, JudgeLog
from ieqa.bench.editor.aggregate import repeat_summary
from ieqa.bench.editor.protocol import EditorProtocol
from ieqa.bench.errors import BenchError
from ieqa.data.schema import EditSample
from ieqa.registry import EDITOR_BENCHMARKS
from ieqa.scorers.base import Scorer, ScorerError
from ieqa.scorers.run import attach_judge_log, detach_judge_log, read_scores, score_to_file

__all__ = ["BENCHMARKS", "MISSING_RULES", "PROTOCOLS", "EditorBenchResult", "bench_editor",
           "get_protocol", "judge_record"]

class _Protocols(Mapping[str, EditorProtocol]):
    """The editor benchmarks registered in :data:`ieqa.registry.EDITOR_BENCHMARKS`, by name,
    each protocol built once; a live view, so a benchmark registered later is in it."""

    def __init__(self) -> None:
        self._built: dict[str, EditorProtocol] = {}

    def __getitem__(self, name: str) -> EditorProtocol:
        if name not in EDITOR_BENCHMARKS:
            raise KeyError(name)
        factory = EDITOR_BENCHMARKS.get(name).factory
        built = self._built.get(name)
        if built is None or type(built) is not factory:  # registered anew under this name
            built = self._built[name] = factory()
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(EDITOR_BENCHMARKS.names())

    def __len__(self) -> int:
        return len(EDITOR_BENCHMARKS)


class _Names(Sequence[str]):
    """The registered editor benchmarks' names (a live view, sorted)."""

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return EDITOR_BENCHMARKS.names()[i]

    def __len__(self) -> int:
        return len(EDITOR_BENCHMARKS)


#: the editor benchmarks ``bench-editor`` runs, by name (:data:`ieqa.registry.EDITOR_BENCHMARKS`)
PROTOCOLS: Mapping[str, EditorProtocol] = _Protocols()
BENCHMARKS: Sequence[str] = _Names()
#: what to do with items an editor has no output for
MISSING_RULES: tuple[str, ...] = ("error", "skip")


def get_protocol(benchmark: str) -> EditorProtocol:
    """The protocol of ``benchmark`` (a name of :data:`BENCHMARKS`).

    Raises:
        BenchError: an unknown name (the message lists the known ones).
    """
    if benchmark not in PROTOCOLS:
        raise BenchError(f"unknown editor benchmark {benchmark!r}; choose one of "
                         f"{', '.join(BENCHMARKS)}")
    return PROTOCOLS[benchmark]


@dataclass
class EditorBenchResult:
    """What :func:`bench_editor` found: ``results`` (the ``results.json`` object) and
    ``items`` (one row per editor, repeat and item)."""

    results: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)


def _server_records(raw: Mapping[str, Any]) -> Iterator[Mapping[str, Any] | None]:
    """What the server said about each answer of a judged row (None: nothing)."""
    for record in raw.get("passes") or []:
        for key in ("sc_server", "pq_server"):
            yield record.get(key)
    if "text" in raw:  # a one-request judge (ImgEdit's)
        yield raw.get("server")
    yield from raw.get("servers") or []  # one per request (RISEBench's)


def judge_record(judge: Scorer, rows: Sequence[Mapping[str, Any]],
                 prices: tuple[float, float] | None,
                 protocol: EditorProtocol | None = None) -> dict[str, Any]:
    """The judge as run: name, configuration, whether it is the benchmark's own, the model
    ids and fingerprints the server reported, tokens used and their cost (``prices`` in USD
    per million input and output tokens)."""
    protocol = protocol or PROTOCOLS["gedit-bench"]
    config = judge.config() if hasattr(judge, "config") else {}
    served, fingerprints = set(), set()
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "answers": 0, "answers_without_usage": 0}
    for row in rows:
        for server in _server_records(row.get("raw") or {}):
            if server is None:
                usage["answers_without_usage"] += 1
                continue
            usage["answers"] += 1
            if server.get("model"):
                served.add(str(server["model"]))
            if server.get("system_fingerprint"):
                fingerprints.add(str(server["system_fingerprint"]))
            u = server.get("usage") or {}
            usage["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
            usage["completion_tokens"] += int(u.get("completion_tokens") or 0)
    official = protocol.is_released_judge(judge)
    out: dict[str, Any] = {
        "name": judge.name, "official": official, "label": protocol.judge_label(judge),
        "model": config.get("model") or (config.get("backend") or {}).get("model"),
        "temperature": config.get("temperature"),
        "seed": config.get("seed"), "config": config,
        "served_models": sorted(served), "system_fingerprints": sorted(fingerprints),
        "usage": usage}
    if prices is not None:
        out["cost_usd"] = round((usage["prompt_tokens"] * prices[0]
                                 + usage["completion_tokens"] * prices[1]) / 1e6, 6)
        out["prices_usd_per_mtok"] = {"input": prices[0], "output": prices[1]}
    return out


def _mean_tree(values: Sequence[Any]) -> Any:
    """The mean over repeats of numbers at the same place of each repeat's result."""
    first = values[0]
    if isinstance(first, dict):
        return {k: _mean_tree([v[k] for v in values]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return repeat_summary(values)["mean"]
    return first


def _mean_over_repeats(per_repeat: Sequence[dict[str, Any]],
                       parts: Sequence[str]) -> dict[str, Any]:
    """Numbers that are the mean over repeats, with ``std`` (of each part's headline
    numbers) in each part."""
    first = per_repeat[0]
    if len(per_repeat) == 1:
        return first
    out: dict[str, Any] = {"ci": first["ci"]}
    for part in parts:
        table = _mean_tree([r[part] for r in per_repeat])
        table["std"] = {k: repeat_summary([r[part][k] for r in per_repeat])["std"]
                        for k, v in first[part].items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)}
        out[part] = table
    return out


def bench_editor(
    benchmark: str,
    outputs: Mapping[str, str | os.PathLike[str]],
    judge: Scorer,
    out_dir: str | os.PathLike[str],
    *,
    data: str | os.PathLike[str] | None = None,
    languages: Sequence[str] = ("en", "cn"),
    missing: str = "error",
    repeats: int = 1,
    batch_size: int = 8,
    n_boot: int = 1000,
    prices: tuple[float, float] | None = None,
    overwrite: bool = False,
    progress: bool = True,
    on_scored: Callable[[str, int], None] | None = None,
    replay: str | os.PathLike[str] | None = None,
) -> EditorBenchResult:
    """Judge ``outputs`` (editor name -> output folder in the benchmark's layout) on
    ``benchmark`` and aggregate (see the module docstring).

    Args:
        benchmark: a name of :data:`BENCHMARKS` (``gedit-bench``, ``imgedit-bench``).
        outputs: editor name -> folder in the benchmark's layout (GEdit-Bench:
            ``fullset/{task_type}/{language}/{key}.png``; ImgEdit-Bench: ``{key}.png``).
        judge: the judge (the benchmark's own for the official protocol; any scorer stands
            in, labelled).
        out_dir: where the score files, ``items.jsonl``, ``results.json`` and
            ``report.html`` go.
        data: the benchmark's data (GEdit-Bench: its Parquet files, a folder or one file;
            ImgEdit-Bench: ``Benchmark.tar`` or the folder it unpacks to); None: the hub
            dataset in the local cache.
        languages: GEdit-Bench: ``en`` and/or ``cn`` (``zh`` is read as ``cn``);
            ImgEdit-Bench is English only (``cn`` is left out).
        missing: ``"error"`` (default) or ``"skip"`` (score the items that have an output).
        repeats: judge runs per editor (>= 1); numbers are their mean, ``std`` their spread.
        batch_size: items per judge call and per checkpointed part.
        n_boot: bootstrap resamples of the confidence intervals.
        prices: USD per million input and output tokens, for the cost line.
        overwrite: discard earlier score files made with another judge configuration.
        progress: draw progress bars.
        on_scored: called with (editor, repeat) after each score file is complete.
        replay: a finished run's folder (or its ``judge_log.jsonl``): every judge request is
            answered from that log, as recorded, and no server is contacted
            (:mod:`ieqa.backends.judge_log`); ``out_dir`` must be another folder.

    A judge on an OpenAI-compatible server writes every request and its outcome to
    ``out_dir/judge_log.jsonl``; a re-run in the same folder takes the answers recorded
    there before asking the server (``overwrite`` starts a new log).

    Raises:
        BenchError: unknown benchmark or rule, no editor, missing outputs with
            ``missing="error"`` (the message lists them), or unusable data.
    """
    protocol = get_protocol(benchmark)
    if missing not in MISSING_RULES:
        raise BenchError(f"--missing must be error or skip, got {missing!r}")
    if not outputs:
        raise BenchError("no editor outputs: pass --outputs DIR (or NAME=DIR, repeatable)")
    if repeats < 1:
        raise BenchError(f"--repeats must be >= 1, got {repeats}")
    protocol.check_judge(judge)
    out = Path(out_dir)
    log = _judge_log(judge, out, replay, overwrite)
    try:
        return _bench_editor(protocol, benchmark, outputs, judge, out, log, data=data,
                             languages=languages, missing=missing, repeats=repeats,
                             batch_size=batch_size, n_boot=n_boot, prices=prices,
                             overwrite=overwrite, progress=progress, on_scored=on_scored)
    finally:
        detach_judge_log(judge)


def _judge_log(judge: Scorer, out: Path, replay: str | os.PathLike[str] | None,
               overwrite: bool) -> JudgeLog | None:
    """The judge log of this run (``out/judge_log.jsonl``), attached to the judge's
    server backend (None: the judge sends no requests to a server)."""
    try:
        return attach_judge_log(judge, out / JUDGE_LOG, replay=replay, overwrite=overwrite)
    except ScorerError as exc:
        raise BenchError(str(exc)) from None


def _bench_editor(protocol: EditorProtocol, benchmark: str,
                  outputs: Mapping[str, str | os.PathLike[str]], judge: Scorer, out: Path,
                  log: JudgeLog | None, *, data: str | os.PathLike[str] | None,
                  languages: Sequence[str], missing: str, repeats: int, batch_size: int,
                  n_boot: int, prices: tuple[float, float] | None, overwrite: bool,
                  progress: bool, on_scored: Callable[[str, int], None] | None,
                  ) -> EditorBenchResult:
    items = protocol.read_items(data, languages, out)
    langs = [lang for lang in protocol.languages if any(i.language == lang for i in items)]
    present: dict[str, list[Any]] = {}
    absent: dict[str, list[str]] = {}
    for editor, folder in outputs.items():
        if not Path(folder).is_dir():
            raise BenchError(f"--outputs {folder}: no such folder (editor {editor!r})")
        where = {i.id: protocol.output_path(folder, i) for i in items}
        present[editor] = [i for i in items if where[i.id].is_file()]
        absent[editor] = [str(where[i.id]) for i in items if not where[i.id].is_file()]
    if missing == "error" and any(absent.values()):
        lines = [f"{editor}: {len(paths)} of {len(items)} outputs missing, e.g. "
                 + ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
                 for editor, paths in absent.items() if paths]
        raise BenchError(f"missing outputs ({protocol.name}'s layout is {protocol.layout}):\n"
                         + "\n".join(lines)
                         + "\nGenerate them, or pass --missing skip to score the rest (as the "
                           "released script does); every table then states the coverage")
    all_items: list[dict[str, Any]] = []
    all_rows: list[dict[str, Any]] = []
    editors: dict[str, Any] = {}
    for editor, folder in outputs.items():
        by_id = {i.id: i for i in present[editor]}
        samples = [EditSample(id=i.id, source=i.source, edited=protocol.output_path(folder, i),
                              instruction=i.instruction, task=i.task_type, editor=editor,
                              group_id=i.id, meta=protocol.sample_meta(i))
                   for i in present[editor]]
        per_lang_repeats: dict[str, list[dict[str, Any]]] = {lang: [] for lang in langs}
        substituted: dict[str, set[str]] = {lang: set() for lang in langs}
        failed_ids: dict[str, set[str]] = {lang: set() for lang in langs}
        lang_entries: dict[str, list[dict[str, Any]]] = {lang: [] for lang in langs}
        failed_kind: dict[str, dict[str, str]] = {lang: {} for lang in langs}
        for r in range(1, repeats + 1):
            path = out / "scores" / editor / f"repeat-{r}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            if log is not None:
                log.context = {"editor": editor, "repeat": r}
            if samples:
                score_to_file(judge, samples, path, total=len(samples), batch_size=batch_size,
                              overwrite=overwrite, progress=progress,
                              input_id=f"{benchmark} outputs of {editor}")
                rows = read_scores(path)
            else:
                rows = []
            all_rows.extend(rows)
            if on_scored is not None:
                on_scored(editor, r)
            table: dict[str, list[dict[str, Any]]] = {lang: [] for lang in langs}
            for row in rows:
                item = by_id[row["id"]]
                entry = {"editor": editor, "repeat": r, "task_type": item.task_type,
                         "language": item.language, "key": item.key,
                         "intersection": item.intersection,
                         "substituted": "substituted" in (row.get("flags") or []),
                         **protocol.item_values(row, judge, item),
                         "error_kinds": (row.get("raw") or {}).get("error_kinds"),
                         "source": str(item.source), "edited": row.get("edited"),
                         "instruction": item.instruction}
                table[item.language].append(entry)
                lang_entries[item.language].append(entry)
                all_items.append(entry)
                if entry["substituted"]:
                    substituted[item.language].add(item.id)
                if entry["error"] is not None:
                    failed_ids[item.language].add(item.id)
                    failed_kind[item.language][item.id] = (entry["error_kinds"] or ["other"])[0]
            for lang in langs:
                per_lang_repeats[lang].append(protocol.aggregate(table[lang], n_boot))
        editors[editor] = {}
        for lang in langs:
            n_lang = sum(1 for i in items if i.language == lang)
            n_present = sum(1 for i in present[editor] if i.language == lang)
            n_failed = len(failed_ids[lang])
            scored = n_present - n_failed
            result = _mean_over_repeats(per_lang_repeats[lang], protocol.parts)
            extra, words = protocol.coverage(lang_entries[lang])
            result["coverage"] = {
                "items": n_lang, "with_output": n_present, "missing": n_lang - n_present,
                "scored": scored, "failed": n_failed,
                "failed_by_kind": dict(Counter(failed_kind[lang].values())),
                "substituted": len(substituted[lang]),
                "missing_ids": [i.id for i in items if i.language == lang
                                and i.id not in by_id],
                "text": f"{scored} of {n_lang} items" + (
                    f" ({n_lang - n_present} without an output)" if n_lang > n_present else "")
                + (f" ({n_failed} failed to score)" if n_failed else "")
                + (f"; {words}" if words else ""), **extra}
            editors[editor][lang] = result
    results: dict[str, Any] = {
        "benchmark": benchmark, "dataset": protocol.dataset, "languages": langs,
        "repeats": repeats, "missing_rule": missing,
        "aggregation": protocol.aggregation(),
        "judge": judge_record(judge, all_rows, prices, protocol),
        "judge_log": JUDGE_LOG if log is not None else None,
        "editors": editors}
    if len(editors) == 1 and len(langs) == 1:
        only = next(iter(editors.values()))[langs[0]]
        results.update({k: only[k] for k in (*protocol.parts, "coverage")})
    return EditorBenchResult(results=results, items=all_items)
