"""``vlm-judge``: generate an answer, parse the scores out of it, self-ensemble over passes.

Works on both backends (a local checkpoint or an OpenAI-compatible server). The template's
``output`` kind decides how the answer is asked for and parsed
(:func:`ieqa.prompts.answers.parse_output`):

* ``json_scores`` / ``critique`` — one prompt per edit asks for every dimension at once;
* ``viescore_json`` / ``text_score`` / ``digits`` — one prompt per dimension;
* ``template="viescore"`` — VIEScore / EditScore: the SC prompt (source + edited,
  instruction) gives ``instruction_alignment``, the PQ prompt (edited only) gives
  ``visual_quality``, each the min of its sub-scores, and ``overall = sqrt(SC * PQ)``.

**Self-ensemble** (EditScore): ``num_samples`` passes are generated (sampled at
``temperature``, default 0.7 when more than one pass) and the parsed scores are averaged
per dimension. A pass whose answer cannot be parsed is recorded in ``raw`` and left out;
when no pass of a dimension parses, the sample is a recorded failure — never a made-up
score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ieqa.data.combine import OVERALL_RULES, overall_score
from ieqa.prompts.answers import JudgeParseError, parse_output
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.vlm.base import (
    LoadedSample,
    VLMScorer,
    failure,
    request_kind,
    resolve_template,
)

__all__ = ["JudgeScorer"]

_ALL_AT_ONCE = ("json_scores", "critique")
_VIESCORE = {"instruction_alignment": "viescore-sc", "visual_quality": "viescore-pq"}


class JudgeScorer(VLMScorer):
    """VLM-as-a-judge (see the module docstring).

    Args:
        num_samples: passes per prompt (self-ensemble); 1 = a single greedy answer.
        temperature: sampling temperature; default 0 for one pass, 0.7 for several.
        max_new_tokens: answer length limit (tokens).
        seed: sampling seed (reproducible passes).
        seed_per_pass: pass ``k`` of every prompt drawn with seed ``seed + k``
            (``seed_per_sample``): a pass's answer then does not depend on the other
            prompts of its batch (the transformers backend still generates the batch in
            one call; a server gets one request per pass). Default: one seed for the
            whole batch, as before.
        overall: rule adding an ``overall`` score (``viescore``, ``reasonedit``, ``min``,
            ``mean``, ``sum``); ``template="viescore"`` implies ``viescore``.
        explain_format: the critique format (``reasonedit`` / ``epaiqa``) this scorer's
            own template asks for: :meth:`explain` in that format then uses it instead of
            the format's built-in prompt (set by the EPAIQA stage-3 recipe, whose model
            learned its own prompt; recorded in evaluator checkpoints).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "judge"
    default_template = "judge-json"
    needs_local_model = False

    def __init__(self, *, num_samples: int = 1, temperature: float | None = None,
                 max_new_tokens: int = 512, seed: int = 0, seed_per_pass: bool = False,
                 overall: str | None = None, template: Any = None,
                 explain_format: str | None = None, **kwargs: Any) -> None:
        if num_samples < 1:
            raise ScorerError("num_samples must be at least 1")
        if explain_format not in (None, "reasonedit", "epaiqa"):
            raise ScorerError(f"explain_format must be reasonedit or epaiqa, got "
                              f"{explain_format!r}")
        self.explain_format = explain_format
        self.viescore = template == "viescore"
        if self.viescore:
            kwargs.setdefault("dimensions", tuple(_VIESCORE))
            overall = overall or "viescore"
            template = _VIESCORE["instruction_alignment"]
        if overall is not None and overall not in OVERALL_RULES:
            raise ScorerError(f"unknown overall rule {overall!r}; choose one of "
                              f"{', '.join(OVERALL_RULES)}")
        super().__init__(template=template, **kwargs)
        self.num_samples = int(num_samples)
        self.temperature = float(temperature if temperature is not None
                                 else (0.0 if num_samples == 1 else 0.7))
        if self.num_samples > 1 and self.temperature == 0:
            raise ScorerError("a self-ensemble of greedy passes repeats one answer; set "
                              "temperature > 0 or num_samples=1")
        self.max_new_tokens = int(max_new_tokens)
        self.seed = int(seed)
        self.seed_per_pass = bool(seed_per_pass)
        self.overall = overall
        if self.viescore:
            unknown = set(self.score_dimensions) - set(_VIESCORE)
            if unknown:
                raise ScorerError(f"viescore scores {', '.join(_VIESCORE)}; not {', '.join(unknown)}")
            self.templates = {d: resolve_template(_VIESCORE[d]) for d in self.score_dimensions}
        else:
            self.templates = {d: self.template for d in self.score_dimensions}

    @property
    def dimensions(self) -> tuple[str, ...]:
        extra = ("overall",) if self.overall and "overall" not in self.score_dimensions else ()
        return (*self.score_dimensions, *extra)

    def readout_config(self) -> dict[str, Any]:
        return {"num_samples": self.num_samples, "temperature": self.temperature,
                "max_new_tokens": self.max_new_tokens, "seed": self.seed, "overall": self.overall,
                "templates": {d: t.name for d, t in self.templates.items()},
                **({"explain_format": self.explain_format} if self.explain_format else {}),
                **({"seed_per_pass": True} if self.seed_per_pass else {})}

    def checkpoint_args(self) -> dict[str, Any]:
        args = {"num_samples": self.num_samples, "temperature": self.temperature,
                "max_new_tokens": self.max_new_tokens, "seed": self.seed, "overall": self.overall}
        if self.explain_format:
            args["explain_format"] = self.explain_format
        if self.seed_per_pass:
            args["seed_per_pass"] = True
        return {**args, "template": "viescore"} if self.viescore else args

    def _queries(self, item: LoadedSample) -> list[tuple[tuple[str, ...], Any]]:
        """``[(dimensions answered, prompt), ...]`` for one sample."""
        if not self.viescore and self.template.output in _ALL_AT_ONCE:
            meta = item.sample.meta  # other placeholders, as render_sample ({critique}: RE-Reward)
            extra = {k: meta[k] for k in self.template.placeholders if k in meta
                     and k not in ("instruction", "dimension", "Dimension", "dimensions")}
            prompt = self.template.render(instruction=item.sample.instruction,
                                          images=self.template_images(item, self.template),
                                          dimensions=list(self.score_dimensions),
                                          share_key=None, **extra)
            return [(self.score_dimensions, prompt)]
        return [((d,), self.render(item, d, self.templates[d])) for d in self.score_dimensions]

    def _parse(self, dims: tuple[str, ...], text: str) -> dict[str, Any]:
        template = self.templates[dims[0]]
        parsed = parse_output(template.output, text, dimensions=list(dims), scale=template.scale)
        if self.viescore or template.output == "viescore_json":
            return {"scores": {dims[0]: parsed.scores[next(iter(parsed.scores))]},
                    "sub_scores": {dims[0]: next(iter(parsed.sub_scores.values()), [])},
                    "reasoning": parsed.reasoning}
        return {"scores": {d: parsed.scores[d] for d in dims}, "sub_scores": parsed.sub_scores,
                "reasoning": parsed.reasoning}

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        queries = [self._queries(item) for item in items]
        flat = [prompt for qs in queries for _, prompt in qs]
        answers = self.backend.generate(flat, max_new_tokens=self.max_new_tokens,
                                        temperature=self.temperature, num_samples=self.num_samples,
                                        seed=self.seed, seed_per_sample=self.seed_per_pass)
        results, k = [], 0
        for item, qs in zip(items, queries, strict=True):
            passes: dict[str, list[float]] = {}
            raw: dict[str, Any] = {"passes": []}
            failures: list[str] = []
            reasoning = None
            for dims, _ in qs:
                for gen in answers[k]:
                    record: dict[str, Any] = {"dimensions": list(dims), "text": gen.text}
                    if gen.error:
                        record["error"] = gen.error
                        failures.append((request_kind(gen), gen.error))
                    else:
                        try:
                            parsed = self._parse(dims, gen.text)
                        except JudgeParseError as exc:
                            record["error"] = str(exc)
                            failures.append(("unreadable", str(exc)))
                        else:
                            record.update(scores=parsed["scores"], sub_scores=parsed["sub_scores"])
                            for d, v in parsed["scores"].items():
                                passes.setdefault(d, []).append(v)
                            reasoning = reasoning or parsed["reasoning"]
                    raw["passes"].append(record)
                k += 1
            missing = [d for d in self.score_dimensions if d not in passes]
            if missing:
                failed = failure(item.sample.id, raw, failures)
                failed.error = (f"no parsable answer for {', '.join(missing)}: "
                                f"{failed.error}")
                results.append(failed)
                continue
            scores = {d: sum(v) / len(v) for d, v in passes.items()}
            if self.overall:
                scores["overall"] = overall_score(scores, self.overall)
            raw["parse_failures"] = len(failures)
            results.append(ScoreResult(id=item.sample.id, scores=scores, explanation=reasoning,
                                       raw=raw))
        return results
