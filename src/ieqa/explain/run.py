"""Critiques of a stream of samples into a file: ``ieqa explain``'s engine.

:func:`explain_to_file` reuses the score-file machinery (:func:`ieqa.scorers.run.score_to_file`:
streaming, parallel image decoding, Parquet parts, resume by content key, a lock) through
:class:`ExplainScorer`, a scorer whose "scores" are what the parser reads from each
critique. The output is a score file with three more columns::

    <dimension>    float64 | null   parsed scores / levels (reasonedit: the core three;
                                    epaiqa: prompt_completion 1-3, harmony and
                                    local_naturalness when stated, overall 1-5)
    explanation    str | null       the critique as generated (kept when it does not parse)
    raw            JSON             {"format", "parse_status", "parse_error", "sections",
                                     "levels", "early_exit"}
    error          str | null       no critique could be generated (server down, bad image)
    format         str              reasonedit | epaiqa
    parse_status   str              ok | failed | error (no answer: see ``error``)
    parse_error    str | null       why the critique does not follow the format

A critique that does not parse is a row with ``parse_status="failed"``, its text, the
reason, and null scores: recorded, never guessed; it is not a row error (re-running does
not generate it again). Rows with ``error`` set are generated again on a re-run, like
``ieqa score``'s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ieqa.data.inputs import InputItem
from ieqa.data.schema import EditSample
from ieqa.prompts.answers import (
    FORMAT_TEMPLATES,
    Critique,
    CritiqueFormatError,
    format_dimensions,
)
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult, ScorerInfo
from ieqa.scorers.run import ScoreRunSummary, score_to_file

__all__ = ["PARSE_COLUMNS", "ExplainScorer", "ExplainRunSummary", "critique_to_result",
           "explain_to_file", "read_critiques"]

#: the columns an explain file adds to a score file
PARSE_COLUMNS: tuple[str, ...] = ("format", "parse_status", "parse_error")


def critique_to_result(crit: Critique, sample_id: str) -> ScoreResult:
    """A :class:`Critique` as a score-file row: parsed values as scores, the text as the
    explanation, the parse details in ``raw``; ``error`` only when no answer came back."""
    raw = {"format": crit.format, "parse_status": crit.status, "parse_error": crit.error,
           "sections": crit.sections, "levels": crit.levels, "early_exit": crit.early_exit}
    if crit.status == "error":
        return ScoreResult(id=sample_id, explanation=crit.text, raw=raw,
                           error=crit.error or "no critique was generated")
    return ScoreResult(id=sample_id, scores=dict(crit.scores) if crit.ok else {},
                       explanation=crit.text, raw=raw)


class ExplainScorer(Scorer):
    """A VLM scorer's critiques seen as a scorer (what :func:`explain_to_file` writes).

    Args:
        scorer: any VLM scorer (it has :meth:`~ieqa.scorers.vlm.base.VLMScorer.explain`):
            ``vlm-judge`` over a server or a checkpoint, or the scorer a
            ``--checkpoint`` holds.
        format: ``reasonedit`` or ``epaiqa``.
        template, max_new_tokens, temperature, seed: passed to ``scorer.explain``.
    """

    def __init__(self, scorer: Any, format: str = "reasonedit", *,  # noqa: A002
                 template: Any = None, max_new_tokens: int = 512, temperature: float = 0.0,
                 seed: int = 0) -> None:
        if format not in FORMAT_TEMPLATES:
            raise CritiqueFormatError(f"unknown critique format {format!r}; choose one of "
                                      f"{', '.join(FORMAT_TEMPLATES)}")
        if not callable(getattr(scorer, "explain", None)):
            raise ScorerError(f"scorer {getattr(scorer, 'name', scorer)!r} cannot write "
                              "critiques: use a VLM scorer (--scorer vlm-judge with --model or "
                              "-O base_url=..., or a VLM --checkpoint)")
        self.scorer = scorer
        self.format = format
        self.template = template
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.seed = int(seed)
        low_high = {"reasonedit": (1.0, 5.0), "epaiqa": (1.0, 5.0)}[format]
        self.info = ScorerInfo(
            name=f"explain-{format}", kind="vlm",
            description=f"{format} critiques by {scorer.name}, parsed",
            dimensions=format_dimensions(format), higher_better=True, needs_source=True,
            needs_instruction=True, factory="ieqa.explain.run:ExplainScorer",
            score_range=low_high,
            units="1-5 scale" if format == "reasonedit"
            else "levels (prompt_completion 1-3, others bad=1 ... excellent=5)")

    def config(self) -> dict[str, Any]:
        return {"format": self.format, "scorer": self.scorer.name,
                "scorer_config": self.scorer.config(), "template": (
                    self.template if isinstance(self.template, (str, type(None)))
                    else getattr(self.template, "name", str(self.template))),
                "max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "seed": self.seed}

    def explain(self, samples: Iterable[Any]) -> list[Critique]:
        """The critiques of ``samples`` (see ``VLMScorer.explain``)."""
        return self.scorer.explain(samples, self.format, template=self.template,
                                   max_new_tokens=self.max_new_tokens,
                                   temperature=self.temperature, seed=self.seed)

    def score_sample(self, sample: EditSample) -> ScoreResult:
        return self.score_batch([sample])[0]

    def score_batch(self, samples: Sequence[EditSample]) -> list[ScoreResult]:
        crits = self.explain(list(samples))
        return [critique_to_result(c, s.id) for c, s in zip(crits, samples, strict=True)]


@dataclass
class ExplainRunSummary:
    """A finished ``ieqa explain`` run: the score-run summary plus the parse counts.

    Attributes:
        run: the :class:`~ieqa.scorers.run.ScoreRunSummary` (rows, errors, time).
        n_parsed: critiques that follow the format.
        n_failed: critiques that do not (``parse_status="failed"``).
        stability: ``n_parsed / (n_parsed + n_failed)`` (ReasonEdit's format stability),
            None when no critique was generated.
    """

    run: ScoreRunSummary
    n_parsed: int
    n_failed: int
    stability: float | None


def _parse_fields(raw: str | None) -> dict[str, Any]:
    try:
        obj = json.loads(raw) if raw else {}
    except ValueError:
        obj = {}
    status = obj.get("parse_status") or "error"
    return {"format": obj.get("format"), "parse_status": status,
            "parse_error": obj.get("parse_error")}


def _add_parse_columns(out: Path, fmt: str) -> tuple[int, int]:
    """Add :data:`PARSE_COLUMNS` (derived from ``raw``) to a finished output."""
    if out.name.endswith(".parquet"):
        table = pq.read_table(out)
        meta = table.schema.metadata
        table = table.drop_columns([c for c in PARSE_COLUMNS if c in table.column_names])
        fields = [_parse_fields(r) for r in table.column("raw").to_pylist()]
        for col in PARSE_COLUMNS:
            values = [f[col] if f[col] is not None or col != "format" else fmt for f in fields]
            table = table.append_column(col, pa.array(values, pa.string()))
        table = table.replace_schema_metadata(meta)
        tmp = out.with_name(out.name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, out)
    else:
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()
                if line.strip()]
        fields = []
        for row in rows:
            raw = row.get("raw")
            f = _parse_fields(json.dumps(raw) if isinstance(raw, dict) else raw)
            f["format"] = f["format"] or fmt
            row.update(f)
            fields.append(f)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows),
                       encoding="utf-8")
        os.replace(tmp, out)
    n_ok = sum(f["parse_status"] == "ok" for f in fields)
    n_failed = sum(f["parse_status"] == "failed" for f in fields)
    return n_ok, n_failed


def explain_to_file(scorer: Any, samples: Iterable[InputItem], out: str | os.PathLike[str], *,
                    format: str = "reasonedit", template: Any = None,  # noqa: A002
                    max_new_tokens: int = 512, temperature: float = 0.0, seed: int = 0,
                    **run: Any) -> ExplainRunSummary:
    """Generate and parse a critique per sample into ``out`` (``.parquet`` or ``.jsonl``).

    ``scorer`` is a VLM scorer (or an :class:`ExplainScorer`); ``run`` takes
    :func:`~ieqa.scorers.run.score_to_file`'s options (``total``, ``batch_size``,
    ``workers``, ``overwrite``, ``retry_errors``, ``progress``, ``fail_fast``,
    ``input_id``). The same call again keeps the rows already written (see the module
    docstring for the columns).
    """
    explainer = scorer if isinstance(scorer, ExplainScorer) else ExplainScorer(
        scorer, format, template=template, max_new_tokens=max_new_tokens,
        temperature=temperature, seed=seed)
    out = Path(out)
    summary = score_to_file(explainer, samples, out, **run)
    n_ok, n_failed = _add_parse_columns(out, explainer.format)
    stability = n_ok / (n_ok + n_failed) if n_ok + n_failed else None
    return ExplainRunSummary(summary, n_ok, n_failed, stability)


def read_critiques(path: str | os.PathLike[str]) -> list[Critique]:
    """The critiques of an ``ieqa explain`` output file, in row order (for
    :func:`~ieqa.explain.format_stability` or the explanation metrics)."""
    from ieqa.scorers.run import read_scores

    crits = []
    for row in read_scores(path):
        raw = row.get("raw") or {}
        if isinstance(raw, str):
            raw = json.loads(raw)
        dims = [d for d in format_dimensions(raw.get("format") or row.get("format")
                                             or "reasonedit")]
        status = raw.get("parse_status") or ("error" if row.get("error") else "failed")
        crits.append(Critique(
            text=row.get("explanation"), format=raw.get("format") or row.get("format"),
            status=status, sections=raw.get("sections") or {},
            scores={d: row[d] for d in dims if row.get(d) is not None},
            levels=raw.get("levels") or {}, early_exit=bool(raw.get("early_exit")),
            error=raw.get("parse_error") or row.get("error"), id=row.get("id")))
    return crits

