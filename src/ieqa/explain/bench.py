"""Explanation benchmarks: text metrics (and the EPAIQA judge) over one or more runs.

Files (see ``docs/reference/files.md``):

* **predictions** — JSONL, one object per line: ``id`` and ``explanation`` (the aliases
  ``text``, ``critique`` and ``response`` are read too). One file per inference run.
* **references** — JSONL: ``id``, ``explanation`` (the standard answer), optionally
  ``instruction`` (shown to the judge), and what the skip rule reads: ``has_naturalness``
  / ``has_harmony`` booleans, or ``sections`` (an object whose ``naturalness`` /
  ``local_naturalness`` and ``harmony`` entries are the analyses; absent, null or empty
  means the standard answer has none). With neither, every dimension counts.

:func:`bench_explanations` computes, per run, the mean over samples of ROUGE-1, METEOR and
(with an encoder) the embedding cosine, and (with a judge backend) EPAIQA's PA / LNA /
GHA / Overall; then, per metric, the mean and the sample std (ddof=1) over runs, as
ReasonEdit's Table 4 reports them. A reference without a prediction in a run is left out
of that run's means and counted (coverage); a prediction whose id is not among the
references is an error.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ieqa.data.textfile import json_lines
from ieqa.explain.judge_protocol import (
    JUDGE_DIMENSIONS,
    JudgeItem,
    JudgeProtocolResult,
    run_judge_protocol,
)
from ieqa.explain.metrics import (
    ExplainMetricError,
    TextEncoder,
    embedding_cosine,
    mean_std,
    meteor,
    meteor_variant,
    rouge1,
)

__all__ = ["ExplanationBenchResult", "Reference", "RunResult", "bench_explanations",
           "read_predictions", "read_references", "write_outputs"]

_TEXT_KEYS = ("explanation", "text", "critique", "response")
_SECTION_KEYS = {"naturalness": ("naturalness", "local_naturalness"),
                 "harmony": ("harmony",)}


@dataclass(frozen=True)
class Reference:
    """One standard answer.

    Attributes:
        id: the sample id.
        explanation: the ground-truth explanation text.
        instruction: the editing instruction (``None`` when not given).
        has_naturalness / has_harmony: whether it analyses local naturalness / harmony
            (EPAIQA's skip rule leaves LNA / GHA out otherwise).
    """

    id: str
    explanation: str
    instruction: str | None = None
    has_naturalness: bool = True
    has_harmony: bool = True


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    path = Path(path)
    if not path.is_file():
        raise ExplainMetricError(f"{path}: no such file")
    out = []
    # the one decoding path: a non-UTF-8 byte or a damaged .gz names its line too
    for n, row in json_lines(path, error=ExplainMetricError):
        if "id" not in row or row["id"] is None:
            raise ExplainMetricError(f"{path}: line {n}: the row has no 'id'")
        out.append((n, row))
    return out


def _text(row: Mapping[str, Any]) -> Any:
    for key in _TEXT_KEYS:
        if key in row:
            return row[key]
    return None


def read_predictions(path: str | Path) -> dict[str, str | None]:
    """``id -> explanation`` from a predictions JSONL file (``None``: the row has no text,
    e.g. a failed generation; it counts as missing). Repeated ids are an error."""
    out: dict[str, str | None] = {}
    for n, row in _rows(Path(path)):
        ident = str(row["id"])
        if ident in out:
            raise ExplainMetricError(f"{path}: line {n}: id {ident!r} repeats; one explanation per id")
        text = _text(row)
        if text is not None and not isinstance(text, str):
            raise ExplainMetricError(f"{path}: line {n}: the explanation must be text, got "
                                     f"{type(text).__name__}")
        out[ident] = text if text and text.strip() else None
    return out


def _has(row: Mapping[str, Any], what: str, where: str) -> bool:
    flag = row.get(f"has_{what}")
    if flag is not None:
        if not isinstance(flag, bool):
            raise ExplainMetricError(f"{where}: has_{what} must be true or false, got {flag!r}")
        return flag
    sections = row.get("sections")
    if sections is None:
        return True
    if not isinstance(sections, dict):
        raise ExplainMetricError(f"{where}: 'sections' must be an object of section texts")
    return any(isinstance(sections.get(k), str) and sections[k].strip()
               for k in _SECTION_KEYS[what])


def read_references(path: str | Path) -> dict[str, Reference]:
    """``id -> Reference`` from a references JSONL file (see the module docstring)."""
    out: dict[str, Reference] = {}
    for n, row in _rows(Path(path)):
        where = f"{path}:{n}"
        ident = str(row["id"])
        if ident in out:
            raise ExplainMetricError(f"{where}: id {ident!r} repeats")
        text = _text(row)
        if not isinstance(text, str) or not text.strip():
            raise ExplainMetricError(f"{where}: the reference needs a non-empty 'explanation'")
        instruction = row.get("instruction")
        out[ident] = Reference(ident, text, instruction if isinstance(instruction, str) else None,
                               _has(row, "naturalness", where), _has(row, "harmony", where))
    if not out:
        raise ExplainMetricError(f"{path}: no references")
    return out


@dataclass
class RunResult:
    """One run's metrics.

    Attributes:
        name: the run's label (its predictions file name).
        n_references: references in the benchmark.
        n_scored: references with a prediction in this run (the text metrics' sample count).
        missing: ids of references without a prediction.
        metrics: metric -> mean over the scored samples.
        per_sample: id -> metric -> value.
        judge: the judge protocol's result (``None`` without a judge).
    """

    name: str
    n_references: int
    n_scored: int
    missing: list[str]
    metrics: dict[str, float]
    per_sample: dict[str, dict[str, float]]
    judge: JudgeProtocolResult | None = None


@dataclass
class ExplanationBenchResult:
    """Every run and the per-metric mean ± std over runs.

    Attributes:
        runs: one :class:`RunResult` per predictions file.
        summary: metric -> ``{"mean", "std", "n_runs"}`` (std: ddof=1, ``nan`` for one run).
        config: what ran (METEOR variant, ROUGE settings, encoder, judge settings).
        notes: caveats to print with the numbers.
    """

    runs: list[RunResult]
    summary: dict[str, dict[str, float]]
    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable (``nan`` -> ``None``)."""
        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list):
                return [clean(v) for v in x]
            return x
        return clean({
            "summary": self.summary, "config": self.config, "notes": self.notes,
            "runs": [{"name": r.name, "n_references": r.n_references, "n_scored": r.n_scored,
                      "missing": r.missing, "metrics": r.metrics, "per_sample": r.per_sample,
                      "judge": None if r.judge is None else r.judge.to_dict()}
                     for r in self.runs]})


def bench_explanations(runs: Sequence[Mapping[str, str | None]],
                       references: Mapping[str, Reference], *,
                       names: Sequence[str] | None = None, encoder: TextEncoder | None = None,
                       judge: Any = None, judge_options: Mapping[str, Any] | None = None,
                       use_wordnet: bool | None = None, rouge_stemmer: bool = False,
                       ) -> ExplanationBenchResult:
    """Explanation metrics of one or more runs against the references.

    Args:
        runs: per run, ``id -> explanation`` (:func:`read_predictions`).
        references: ``id -> Reference`` (:func:`read_references`).
        names: a label per run (default ``run1``, ``run2``, ...).
        encoder: a :class:`TextEncoder` for ``embedding_cosine`` (``None``: not computed).
        judge: a backend for EPAIQA's judge protocol (``None``: not run).
        judge_options: keywords of :func:`~ieqa.explain.judge_protocol.run_judge_protocol`
            (``votes``, ``min_votes``, ``temperature``, ``seed``, ...).
        use_wordnet: METEOR's synonym stage (``None``: when WordNet data is installed).
        rouge_stemmer: ROUGE-1 with Porter stemming (``rouge-score``'s ``use_stemmer``).
    """
    if not runs:
        raise ExplainMetricError("no runs: pass at least one predictions file")
    names = list(names) if names is not None else [f"run{i + 1}" for i in range(len(runs))]
    if len(names) != len(runs):
        raise ExplainMetricError("names needs one label per run")
    variant = meteor_variant(use_wordnet)
    wordnet = variant.endswith("wordnet")
    results: list[RunResult] = []
    for name, preds in zip(names, runs, strict=True):
        unknown = sorted(set(preds) - set(references))
        if unknown:
            raise ExplainMetricError(
                f"{name}: {len(unknown)} prediction id(s) are not in the references (first: "
                f"{unknown[0]!r}); check that both files use the same ids")
        ids = [i for i in references if preds.get(i) is not None]
        missing = [i for i in references if preds.get(i) is None]
        per: dict[str, dict[str, float]] = {i: {} for i in ids}
        for i in ids:
            per[i]["rouge1"] = rouge1(preds[i], references[i].explanation,  # type: ignore[arg-type]
                                      use_stemmer=rouge_stemmer)
            per[i]["meteor"] = meteor(preds[i], references[i].explanation,  # type: ignore[arg-type]
                                      use_wordnet=wordnet)
        if encoder is not None and ids:
            cos = embedding_cosine([preds[i] for i in ids],  # type: ignore[misc]
                                   [references[i].explanation for i in ids], encoder)
            for i, c in zip(ids, cos, strict=True):
                per[i]["embedding_cosine"] = c
        metric_names = ["rouge1", "meteor"] + (["embedding_cosine"] if encoder else [])
        metrics = {m: (math.fsum(per[i][m] for i in ids) / len(ids) if ids else math.nan)
                   for m in metric_names}
        judged = None
        if judge is not None:
            items = [JudgeItem(i, preds[i], references[i].explanation,  # type: ignore[arg-type]
                               references[i].instruction, references[i].has_naturalness,
                               references[i].has_harmony) for i in ids]
            judged = run_judge_protocol(items, judge, **dict(judge_options or {}))
            for s in judged.samples:
                for d in JUDGE_DIMENSIONS:
                    if s.scores[d] is not None:
                        per[s.id][f"judge_{d}"] = float(s.scores[d])  # type: ignore[arg-type]
            for d in JUDGE_DIMENSIONS:
                metrics[f"judge_{d}"] = judged.mean[d]
        results.append(RunResult(name, len(references), len(ids), missing, metrics, per, judged))
    summary: dict[str, dict[str, float]] = {}
    for m in results[0].metrics:
        values = [r.metrics[m] for r in results if not math.isnan(r.metrics[m])]
        mu, sd = mean_std(values) if values else (math.nan, math.nan)
        summary[m] = {"mean": mu, "std": sd, "n_runs": len(values)}
    config: dict[str, Any] = {
        "rouge1": {"package": "rouge-score", "measure": "fmeasure", "use_stemmer": rouge_stemmer},
        "meteor": {"implementation": "nltk single_meteor_score", "variant": variant,
                   "alpha": 0.9, "beta": 3.0, "gamma": 0.5, "tokens": "lower-cased \\w+ runs"},
        "embedding_cosine": None if encoder is None else {
            "encoder": encoder.name, "pooling": encoder.pooling, "max_length": encoder.max_length},
        "std": "sample standard deviation over runs (ddof=1)",
    }
    notes = []
    if results[0].judge is not None:
        config["judge"] = results[0].judge.config
    if any(r.missing for r in results):
        notes.append("some references have no prediction in a run: they are left out of that "
                     "run's means (see n_scored)")
    if len(results) == 1:
        notes.append("one run: the std over runs needs at least two (--runs)")
    return ExplanationBenchResult(results, summary, config, notes)


def write_outputs(result: ExplanationBenchResult, out: str | Path) -> dict[str, Path]:
    """Write ``results.json`` (everything), ``results.csv`` (metric, mean, std, n_runs and
    one column per run) and ``per_sample.csv`` (run, id, one column per metric) into the
    folder ``out``; returns their paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "results.json", "csv": folder / "results.csv",
             "per_sample": folder / "per_sample.csv"}
    paths["json"].write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n",
                             encoding="utf-8")

    def num(x: float) -> str:
        return "" if isinstance(x, float) and math.isnan(x) else f"{x:.6g}"

    with paths["csv"].open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["metric", "mean", "std", "n_runs", *(r.name for r in result.runs)])
        for m, s in result.summary.items():
            w.writerow([m, num(s["mean"]), num(s["std"]), s["n_runs"],
                        *(num(r.metrics[m]) for r in result.runs)])
    metric_names = list(result.summary)
    with paths["per_sample"].open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "id", *metric_names])
        for r in result.runs:
            for i, values in r.per_sample.items():
                w.writerow([r.name, i, *(num(values.get(m, math.nan)) for m in metric_names)])
    return paths
