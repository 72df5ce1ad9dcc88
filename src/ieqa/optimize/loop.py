"""The FDMPO loop: :func:`optimize` proposes definitions, measures their Definition Value and
keeps every trial (see :mod:`ieqa.optimize`).
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.optimize.messages import (
    OPTIMIZER_PROMPT,
    OPTIMIZER_SYSTEM,
    check_prompt,
    ranked_trials,
    render_optimizer_messages,
)
from ieqa.optimize.outputs import correlation_or_none, write_outputs
from ieqa.optimize.records import (
    TRAJECTORY_FILE,
    Failure,
    FDMPOResult,
    OptimizerError,
    OptimizerReply,
    Trial,
)
from ieqa.optimize.trajectory import (
    add_usage,
    append_line,
    empty_usage,
    pending_proposal,
    read_trajectory,
)
from ieqa.prompts.answers.definition import normalise_definition, parse_definition
from ieqa.prompts.redefine import FDMPOError, definition_template
from ieqa.prompts.templates import PromptTemplate


# ------------------------------------------------------------------------ evaluation
class _Feedback:
    """V_d (and validation correlations) of candidate definitions with one scorer."""

    def __init__(self, scorer: Any, dimension: str, samples: Sequence[EditSample],
                 validation: Sequence[EditSample] | None, data_scale: tuple[float, float],
                 template: PromptTemplate) -> None:
        from ieqa.prompts.answers import digits_target

        self.scorer, self.dimension, self.template = scorer, dimension, template
        if tuple(getattr(scorer, "score_dimensions", (dimension,))) != (dimension,):
            from ieqa.scorers.catalog import create_scorer

            # V_d of the optimised dimension only (the others need no ground truth)
            self.scorer = create_scorer("vlm-digits", backend=scorer.backend,
                                        template=template, dimensions=[dimension],
                                        batch_size=scorer.batch_size)
        scale = template.scale or (1, 5)
        self.samples = list(samples)
        self.targets = {s.id: {dimension: float(digits_target(
            s.scores[dimension], scale=data_scale, template_scale=scale))}
            for s in self.samples}
        self.validation = list(validation or [])

    def evaluate(self, definition: str) -> tuple[float, dict[str, float] | None]:
        from ieqa.metrics.correlation import plcc, srcc
        from ieqa.scorers.catalog import create_scorer

        candidate = definition_template(self.template, self.dimension, definition)
        vd = self.scorer.definition_value(self.samples, self.targets, template=candidate)
        if not self.validation:
            return vd.mean, None
        judge = create_scorer("vlm-digits", backend=self.scorer.backend, template=candidate,
                              dimensions=[self.dimension], batch_size=self.scorer.batch_size)
        results = judge.score(self.validation)
        pairs = [(r.scores[self.dimension], s.scores[self.dimension])
                 for r, s in zip(results, self.validation, strict=True) if r.ok]
        if len(pairs) < 3:
            errors = sorted({r.error for r in results if not r.ok})[:3]
            raise FDMPOError(f"only {len(pairs)} of {len(results)} validation samples could "
                             f"be scored ({'; '.join(map(str, errors))})")
        pred, truth = [p for p, _ in pairs], [t for _, t in pairs]
        s, p = correlation_or_none(srcc, pred, truth), correlation_or_none(plcc, pred, truth)
        score = (s + p) / 2 if s is not None and p is not None else None
        return vd.mean, {"srcc": s, "plcc": p, "score": score, "n": len(pairs),
                         "errors": len(results) - len(pairs)}


def _data_scale(samples: Sequence[EditSample], dimension: str,
                given: tuple[float, float] | None) -> tuple[float, float]:
    from ieqa.data.scales import data_scale

    values = [float(s.scores[dimension]) for s in samples if dimension in s.scores
              and not math.isnan(float(s.scores[dimension]))]
    ranges = {dimension: (min(values), max(values))} if values else {}
    return data_scale(samples, given, ranges)


def _pick(samples: Sequence[EditSample], dimension: str, n: int | None, seed: int,
          what: str) -> list[EditSample]:
    labelled = [s for s in samples if dimension in s.scores
                and not math.isnan(float(s.scores[dimension]))]
    if not labelled:
        raise FDMPOError(f"the {what} samples carry no {dimension!r} scores; FDMPO needs "
                         "samples rated on the optimised dimension")
    if n is not None and n < len(labelled):
        labelled = random.Random(seed).sample(labelled, n)
    return labelled


# ------------------------------------------------------------------------ the loop
def optimize(scorer: Any, optimizer: Callable[[list[dict[str, str]]], str | OptimizerReply],
             samples: Sequence[EditSample], *, dimension: str, iterations: int = 10,
             n_samples: int | None = 64, validation: Sequence[EditSample] | None = None,
             initial_definition: str | None = None, template: Any = None,
             out_dir: str | Path | None = None, resume: bool = True,
             max_failures: int = 10, max_definition_chars: int = 2000,
             max_history: int = 20, optimizer_prompt: str = OPTIMIZER_PROMPT,
             optimizer_system: str = OPTIMIZER_SYSTEM,
             data_scale: tuple[float, float] | None = None, seed: int = 0,
             plot: bool = True, on_event: Callable[[dict[str, Any]], None] | None = None,
             ) -> FDMPOResult:
    """Run FDMPO for one dimension (see the module docstring).

    Args:
        scorer: the feedback model: a :class:`~ieqa.scorers.vlm.digits.DigitsScorer`
            (anything with its ``definition_value(samples, targets, template=...)``).
        optimizer: ``optimizer(messages) -> str | OptimizerReply``; raise
            :class:`OptimizerError` (or any exception; ``TimeoutError`` counts as a
            timeout) when it cannot answer.
        samples: labelled samples; V_d is averaged over ``n_samples`` of them (chosen
            once with ``seed``; ``None``: all) that carry a ``dimension`` score.
        dimension: the dimension whose definition is optimised.
        iterations: proposals to evaluate after the initial definition (>= 0).
        validation: held-out labelled samples; each trial's SRCC / PLCC / (SRCC+PLCC)/2
            of the readout on them is recorded (optional, costs one scoring pass).
        initial_definition: the starting definition (default: the template's).
        template: base template (name, file, dict or object; default: the scorer's). It
            must use ``{definition}``.
        out_dir: folder for ``trajectory.jsonl`` (appended as the run goes), the plot,
            ``best_template.yaml``, ``best_definition.txt`` and ``result.json``.
        resume: continue the ``trajectory.jsonl`` in ``out_dir`` when there is one
            (its settings must match); ``False`` starts it afresh.
        max_failures: optimiser failures allowed over the whole run (>= 0); when they
            run out the loop stops early (``complete=False``).
        max_definition_chars: longest accepted definition, in characters.
        max_history: trials shown to the optimiser (the best ones).
        optimizer_prompt, optimizer_system: the optimiser's texts (see
            :data:`OPTIMIZER_PROMPT` for the placeholders).
        data_scale: ``(low, high)`` of the samples' scores (default: their meta
            ``score_scale``, else the observed range); rescaled onto the template's scale.
        seed: seed of the sample choice.
        plot: draw ``trajectory.png`` (needs matplotlib; skipped with a note otherwise).
        on_event: called with each trial / failure record as it happens.

    Raises:
        FDMPOError: bad arguments, a template without ``{definition}``, or a trajectory
            that belongs to another run.
    """
    from ieqa.scorers.vlm.base import resolve_template

    if iterations < 0 or max_failures < 0 or max_definition_chars < 1:
        raise FDMPOError("iterations and max_failures must be >= 0 and "
                         "max_definition_chars >= 1")
    if n_samples is not None and n_samples < 1:
        raise FDMPOError(f"n_samples must be >= 1 (or None for all), got {n_samples}")
    check_prompt(optimizer_prompt)
    dim = canonical_dimension(dimension)
    base = resolve_template(template) if template is not None else scorer.template
    if "definition" not in base.placeholders:
        raise FDMPOError(f"template {base.name!r} has no {{definition}} placeholder, so the "
                         "definition cannot change the prompt; use ds-ieqa-digits or add "
                         "{definition} to your template")
    if base.output != "digits":
        raise FDMPOError(f"template {base.name!r} answers {base.output!r}; V_d reads the "
                         "digits of 'X.XX' answers: use a digits template (ds-ieqa-digits)")
    chosen = _pick(samples, dim, n_samples, seed, "optimisation")
    valid = _pick(validation, dim, None, seed, "validation") if validation else None
    scale = _data_scale([*samples, *(validation or [])], dim, data_scale)
    start = " ".join((initial_definition or base.definition(dim)).split())
    feedback = _Feedback(scorer, dim, chosen, valid, scale, base)

    header = {"dimension": dim, "template": base.name, "template_digest": base.digest,
              "initial_definition": start, "samples": sorted(s.id for s in chosen),
              "validation": sorted(s.id for s in valid) if valid else [],
              "data_scale": list(scale), "iterations": iterations,
              "max_failures": max_failures, "max_definition_chars": max_definition_chars,
              "seed": seed, "scorer": _scorer_config(scorer)}
    trials: list[Trial] = []
    failures: list[Failure] = []
    pending: dict[str, Any] | None = None
    traj: Path | None = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        traj = out / TRAJECTORY_FILE
        if resume and traj.exists():
            text = traj.read_text(encoding="utf-8")
            if text and not text.endswith("\n"):  # a line cut short by an interruption
                traj.write_text(text[:text.rfind("\n") + 1], encoding="utf-8")
            old, trials, failures = read_trajectory(traj)
            _check_header(old, header, traj)
            pending = pending_proposal(traj, len(trials))
        else:
            traj.write_text(json.dumps({"kind": "run", **header}, ensure_ascii=False) + "\n",
                            encoding="utf-8")

    def record(item: Trial | Failure) -> None:
        (trials if isinstance(item, Trial) else failures).append(item)  # type: ignore[arg-type]
        row = item.to_json()
        if traj is not None:
            append_line(traj, row)
        if on_event is not None:
            on_event(row)

    if not trials:
        t0 = time.perf_counter()
        vd, val = feedback.evaluate(start)
        record(Trial(0, start, vd, val, "initial", 0, empty_usage(),
                     round(time.perf_counter() - t0, 3)))

    complete = True
    while len(trials) <= iterations:
        iteration = len(trials)
        usage = empty_usage()
        attempt, rejected = 0, []
        for f in failures:  # resumed mid-iteration: its failures count as attempts
            if f.iteration == iteration:
                attempt += 1
                rejected.append(f)
                add_usage(usage, f.usage)
        accepted = None
        if pending is not None:  # accepted before an interruption; V_d still to measure
            accepted, attempt, usage = pending["definition"], pending["attempt"], pending["usage"]
            pending = None
        while accepted is None:
            if len(failures) >= max_failures:
                break
            messages = render_optimizer_messages(
                dim, trials, n_samples=len(chosen), scale=base.scale or (1, 5),
                prompt=optimizer_prompt, system=optimizer_system, max_history=max_history,
                max_chars=max_definition_chars, label=base.label(dim), rejected=rejected)
            attempt += 1
            answer, call_usage = None, None
            try:
                reply = optimizer(messages)
                if isinstance(reply, OptimizerReply):
                    answer, call_usage = reply.text, reply.usage
                else:
                    answer = reply
                if not isinstance(answer, str):
                    raise OptimizerError(f"the optimiser returned {type(answer).__name__}, "
                                         "not text")
            except OptimizerError as exc:
                fail = Failure(iteration, attempt, exc.kind, str(exc), answer, exc.usage)
            except TimeoutError as exc:
                fail = Failure(iteration, attempt, "timeout", f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # a user's client: recorded, never silent
                fail = Failure(iteration, attempt, "error", f"{type(exc).__name__}: {exc}")
            else:
                fail = _check_answer(answer, trials, iteration, attempt, max_definition_chars,
                                     call_usage)
                if fail is None:
                    add_usage(usage, call_usage)
                    accepted = parse_definition(answer)
                    if traj is not None:  # a resumed run measures it without asking again
                        append_line(traj, {"kind": "proposal", "iteration": iteration,
                                       "attempt": attempt, "definition": accepted,
                                       "usage": usage})
                    break
            add_usage(usage, fail.usage)
            record(fail)
            rejected.append(fail)
        if accepted is None:
            complete = False
            break
        t0 = time.perf_counter()
        vd, val = feedback.evaluate(accepted)
        record(Trial(iteration, accepted, vd, val, "optimizer", attempt, usage,
                     round(time.perf_counter() - t0, 3)))

    best = ranked_trials(trials)[-1]
    best_template = definition_template(
        base, dim, best.definition, name=_best_name(base.name, dim))
    total = empty_usage()
    for t in trials[1:]:
        for key in total:
            total[key] += t.usage.get(key, 0)
    for f in failures:
        if f.iteration >= len(trials):  # failures of the iteration that never finished
            add_usage(total, f.usage)
    result = FDMPOResult(dim, trials, failures, best, best_template, total, complete)
    if out_dir is not None:
        result.out_dir = Path(out_dir)
        result.notes.extend(write_outputs(result, plot=plot))
    return result


def _check_answer(answer: str, trials: Sequence[Trial], iteration: int, attempt: int,
                  limit: int, usage: dict[str, int] | None) -> Failure | None:
    definition = parse_definition(answer)
    if not definition:
        return Failure(iteration, attempt, "empty", "the answer holds no definition",
                       answer, usage)
    if len(definition) > limit:
        return Failure(iteration, attempt, "too_long",
                       f"the definition has {len(definition)} characters, over the limit of "
                       f"{limit}", answer[:limit + 200], usage)
    key = normalise_definition(definition)
    for t in trials:
        if normalise_definition(t.definition) == key:
            return Failure(iteration, attempt, "duplicate",
                           f"the definition repeats trial {t.iteration} (V_d = {t.v_d:.4f})",
                           answer, usage)
    return None


def _best_name(base: str, dim: str) -> str:
    return re.sub(r"[^a-z0-9_.\-]", "-", f"{base}-fdmpo-{dim}".lower())


def _scorer_config(scorer: Any) -> dict[str, Any]:
    try:
        config = scorer.config()
    except Exception:  # noqa: BLE001 - a user's scorer without a usable config
        return {"type": type(scorer).__name__}
    backend = config.get("backend", {}) if isinstance(config, dict) else {}
    return {"readout": config.get("readout"), "model": backend.get("model_id")
            or backend.get("model") or backend.get("name")}


def _check_header(old: dict[str, Any] | None, new: dict[str, Any], path: Path) -> None:
    if old is None:
        raise FDMPOError(f"{path} has no run header line; start fresh (--fresh) or use "
                         "another --out folder")
    keys = ("dimension", "template_digest", "initial_definition", "samples", "validation",
            "data_scale", "max_definition_chars", "seed")
    changed = [k for k in keys if old.get(k) != new.get(k)]
    if changed:
        raise FDMPOError(f"{path} belongs to a run with other settings ({', '.join(changed)} "
                         "differ); resume with the same settings, use another --out folder, "
                         "or start fresh (--fresh)")
