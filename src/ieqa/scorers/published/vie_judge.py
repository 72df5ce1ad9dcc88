"""What the published VIEScore-style judges share: :class:`VieJudge`.

VIEScore (Ku et al. 2024) and the judges trained on its format (EditScore,
UnifiedReward-Edit) ask two prompts per edit and read two scores from each answer
(:func:`ieqa.prompts.answers.parse_vie_answer`):

* the **SC prompt** (source and edited image, the instruction): editing success (prompt
  following) and over-editing (consistency);
* the **PQ prompt** (the edited image): naturalness and artifacts.

Each score is divided by ``score_range / 10`` (0-10). Per pass, ``SC = min`` of the SC
scores, ``PQ = min`` of the PQ scores and ``O = sqrt(SC * PQ)``. Over the passes (one
unless the judge samples several) ieqa reports the means: ``instruction_alignment`` (editing
success), ``content_preservation`` (over-editing), ``visual_quality`` (PQ), ``sc_min`` (SC),
and ``overall`` by ``reduction`` (:func:`vie_overall`).

**Malformed answers** make the row an error naming the pass, the prompt and the reason;
nothing is guessed. ``on_malformed="midpoint"`` (only where a judge's released code does so)
substitutes ``score_range / 2`` for each score of an unreadable answer, labelled: the row
carries the flag ``substituted`` and its ``raw`` the count. ``on_malformed="random"`` (only
where a judge's released code does so: GEdit-Bench) substitutes a uniformly random integer
in ``[0, score_range]`` for an unreadable or failed answer, drawn from a generator seeded by
the sample id, the pass and the prompt (reproducible; the released code's is not), labelled
the same way. A judge whose released code asks again before giving up
(:attr:`VieJudge.reask_unparsable`) re-sends both prompts of an edit whose answers did not
all parse, that many times; ``raw["reasked"]`` keeps the first answers.

Each pass records what the server said about itself (``model``, ``system_fingerprint``)
and the tokens it counted (``usage``) under ``sc_server`` / ``pq_server`` in ``raw``.

A subclass builds the two prompts (:meth:`VieJudge.prompts`) and sets the sampling of its
release.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ieqa.backends import Prompt
from ieqa.data.combine import viescore
from ieqa.prompts.answers import JudgeParseError, parse_vie_answer
from ieqa.prompts.published import PublishedText, SourceFile
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.published.base import PublishedPrompts
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    VLMScorer,
    failure,
    request_kind,
)

__all__ = ["VieJudge", "REDUCTIONS", "VIE_DIMENSIONS", "vie_overall"]

#: how the passes' scores become ``overall``
REDUCTIONS: tuple[str, ...] = ("average_last", "average_first", "average_first_min_sc")

#: the dimensions a VIEScore-style judge reports (and ``overall``)
VIE_DIMENSIONS: tuple[str, ...] = ("instruction_alignment", "content_preservation",
                                   "visual_quality", "sc_min")


def vie_overall(passes: Sequence[dict[str, float]], reduction: str) -> float:
    """``overall`` of an edit from its passes (each with ``prompt_following``, ``sc`` =
    min of the SC scores, ``pq``, all on 0-10) by ``reduction``:

    * ``average_last`` — the mean of the per-pass ``sqrt(sc * pq)`` (with one pass:
      VIEScore's O);
    * ``average_first`` — ``sqrt(mean prompt_following * mean pq)``;
    * ``average_first_min_sc`` — ``sqrt(mean sc * mean pq)``.
    """
    if not passes:
        raise ScorerError("no pass to reduce")

    def mean(key: str) -> float:
        return sum(p[key] for p in passes) / len(passes)

    if reduction == "average_last":
        return sum(viescore(p["sc"], p["pq"]) for p in passes) / len(passes)
    if reduction == "average_first":
        return viescore(mean("prompt_following"), mean("pq"))
    if reduction == "average_first_min_sc":
        return viescore(mean("sc"), mean("pq"))
    raise ScorerError(f"unknown reduction {reduction!r}; choose one of {', '.join(REDUCTIONS)}")



def vie_prompt_sources(file: SourceFile, *, context: str = "_context_no_delimit",
                       scaled: bool = False) -> tuple[PublishedText, ...]:
    """VIEScore's four texts of its ``tie`` task in ``file`` (VIEScore's ``vie_prompts.py``,
    which GEdit-Bench and EditScore copy), by what ieqa calls them: the context, the edit
    rule, the SC scale (the instruction goes into ``<instruction>``) and the PQ rule;
    ``scaled``: every "10" of the scale texts becomes the score range, so each must hold
    one (EditScore)."""
    ten = ("10",) if scaled else ()
    return (PublishedText("context", file, context),
            PublishedText("edit_rule", file, "_prompts_0shot_two_image_edit_rule"),
            PublishedText("sc_scale", file, "_prompts_0shot_tie_rule_SC",
                          markers=("<instruction>", *ten)),
            PublishedText("pq_rule", file, "_prompts_0shot_rule_PQ", markers=ten))

class VieJudge(PublishedPrompts, VLMScorer):
    """Base of the published VIEScore-style judges (see the module docstring).

    A subclass calls :meth:`configure` (before loading anything, so that a bad option fails
    fast), then :meth:`VLMScorer.__init__`, and implements :meth:`prompts`.
    """

    needs_local_model = False
    #: what ``on_malformed`` may be for this judge (``"midpoint"`` only where its
    #: released code substitutes the midpoint)
    malformed_rules: tuple[str, ...] = ("error",)
    #: how many times both prompts of an edit are asked again when an answer did not parse
    #: (0: never; GEdit-Bench's released code asks once more)
    reask_unparsable: int = 0
    #: ``on_malformed="random"`` draws in the released reading (:meth:`released_reading`)
    #: only, never in ieqa's (GEdit-Bench's judge)
    random_in_released_reading: bool = False

    def init_server_judge(self, *, model: str | None, base_url: str | None, backend: Any,
                          backend_options: Mapping[str, Any] | None, default_model: str,
                          default_base_url: str, request: Mapping[str, Any],
                          batch_size: int = 8,
                          max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                          ) -> None:
        """Build the judge on an OpenAI-compatible server, as its authors send requests:
        ``request`` holds the backend settings of their requests (image format, ...),
        which ``backend_options`` may override; a local transformers model is refused."""
        options = dict(backend_options or {})
        if backend is None:
            base_url, model = base_url or default_base_url, model or default_model
            for key, value in request.items():
                options.setdefault(key, value)
        elif model is not None or base_url is not None:
            raise ScorerError("pass either backend= or model=/base_url=, not both")
        VLMScorer.__init__(self, model=model, base_url=base_url, backend=backend,
                           template="editreward", dimensions=VIE_DIMENSIONS,
                           batch_size=batch_size, max_instruction_chars=max_instruction_chars,
                           backend_options=options)
        if hasattr(self.backend, "forward"):
            raise ScorerError(f"{self.readout} sends its authors' requests to an OpenAI-"
                              "compatible server (-O base_url=URL --model NAME); a local "
                              "transformers model is not the published protocol")

    def configure(self, *, score_range: int, num_pass: int = 1, reduction: str = "average_last",
                  temperature: float | None = None, top_p: float | None = None,
                  top_k: int | None = None, seed: int | None = None,
                  max_new_tokens: int = 512, on_malformed: str = "error") -> None:
        """Check and keep the judge's settings (the released ones, or the user's)."""
        if int(num_pass) < 1:
            raise ScorerError(f"num_pass must be at least 1, got {num_pass}")
        if reduction not in REDUCTIONS:
            raise ScorerError(f"unknown reduction {reduction!r}; choose one of "
                              f"{', '.join(REDUCTIONS)}")
        if on_malformed not in self.malformed_rules:
            raise ScorerError(f"on_malformed must be {' or '.join(self.malformed_rules)}, got "
                              f"{on_malformed!r}")
        if top_k is not None and int(top_k) < 1:
            raise ScorerError(f"top_k must be at least 1 (or None for no limit), got {top_k}")
        if top_p is not None and not 0 < float(top_p) <= 1:
            raise ScorerError(f"top_p must lie in (0, 1], got {top_p}")
        if int(num_pass) > 1 and seed is None:
            raise ScorerError("several passes need a seed (pass k samples with seed + k)")
        self.score_range_asked = int(score_range)
        self.num_pass = int(num_pass)
        self.reduction = reduction
        self.temperature = None if temperature is None else float(temperature)
        self.top_p = None if top_p is None else float(top_p)
        self.top_k = None if top_k is None else int(top_k)
        self.seed = None if seed is None else int(seed)
        self.max_new_tokens = int(max_new_tokens)
        self.on_malformed = on_malformed

    # ------------------------------------------------------------------ scorer contract
    def _default_dimensions(self) -> tuple[str, ...]:
        return VIE_DIMENSIONS

    @property
    def dimensions(self) -> tuple[str, ...]:
        return (*self.score_dimensions, "overall")

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        return (0.0, 10.0)

    def readout_config(self) -> dict[str, Any]:
        return {"score_range": self.score_range_asked, "num_pass": self.num_pass,
                "reduction": self.reduction, "temperature": self.temperature,
                "top_p": self.top_p, "top_k": self.top_k, "seed": self.seed,
                "max_new_tokens": self.max_new_tokens, "on_malformed": self.on_malformed,
                **(self.prompts_config() if self.prompt_sources else {})}

    @abstractmethod
    def prompts(self, item: LoadedSample) -> tuple[Prompt, Prompt]:
        """The SC and the PQ prompt of one edit."""

    @staticmethod
    def needs_source(item: LoadedSample, judge: str) -> None:
        if item.source is None:
            raise ScorerError(f"sample {item.sample.id!r} has no source image; {judge} "
                              "compares the edit with its source")

    # ----------------------------------------------------------------------- scoring
    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        prompts = [p for item in items for p in self.prompts(item)]
        answers = self._ask(prompts)
        first: dict[int, list[list[str]]] = {}
        for asked in range(1, self.reask_unparsable + 1):
            again = [k for k in range(len(items))
                     if not (self._readable(answers[2 * k], asked=asked)
                             and self._readable(answers[2 * k + 1], asked=asked))]
            if not again:
                break
            fresh = self._ask([p for k in again for p in (prompts[2 * k], prompts[2 * k + 1])])
            for j, k in enumerate(again):
                first.setdefault(k, []).append([g.error or g.text for g in
                                                (*answers[2 * k], *answers[2 * k + 1])])
                answers[2 * k], answers[2 * k + 1] = fresh[2 * j], fresh[2 * j + 1]
        results = [self._result(item, answers[2 * k], answers[2 * k + 1])
                   for k, item in enumerate(items)]
        for k, earlier in first.items():
            results[k].raw["reasked"] = earlier
        for k, item in enumerate(items):
            self.released_reading(results[k], item, answers[2 * k], answers[2 * k + 1],
                                  asked=1 + len(first.get(k, [])))
        return results

    def released_reading(self, result: ScoreResult, item: LoadedSample, sc_gens: Sequence[Any],
                         pq_gens: Sequence[Any], *, asked: int) -> None:
        """Record in ``result.raw["released"]`` how the judge's released code reads the
        final answers (``asked``: how many times they were asked); nothing by default."""

    def _ask(self, prompts: Sequence[Prompt]) -> list[Any]:
        return list(self.backend.generate(prompts, max_new_tokens=self.max_new_tokens,
                                          temperature=self.temperature, top_p=self.top_p,
                                          top_k=self.top_k, num_samples=self.num_pass,
                                          seed=self.seed, seed_per_sample=self.seed is not None))

    def _readable(self, gens: Sequence[Any], *, asked: int = 1) -> bool:
        """Whether answers given on the ``asked``-th try need no re-ask."""
        for gen in gens:
            if gen.error:
                return False
            try:
                parse_vie_answer(gen.text, n_scores=2, high=self.score_range_asked)
            except JudgeParseError:
                return False
        return True

    def _result(self, item: LoadedSample, sc_gens: Sequence[Any],
                pq_gens: Sequence[Any]) -> ScoreResult:
        unit = self.score_range_asked / 10
        passes, records, problems, substituted = [], [], [], 0
        reasoning: dict[str, str] = {}
        for p, (sc_gen, pq_gen) in enumerate(zip(sc_gens, pq_gens, strict=True)):
            record: dict[str, Any] = {"pass": p, "sc_text": sc_gen.text, "pq_text": pq_gen.text}
            if self.seed is not None:
                record["seed"] = self.seed + p
            read: dict[str, tuple[float, ...]] = {}
            for name, gen in (("SC", sc_gen), ("PQ", pq_gen)):
                if gen.server:
                    record[f"{name.lower()}_server"] = gen.server
                try:
                    if gen.error:
                        raise JudgeParseError(gen.error)
                    answer = parse_vie_answer(gen.text, n_scores=2, high=self.score_range_asked)
                except JudgeParseError as exc:
                    kind = request_kind(gen) if gen.error else "unreadable"
                    problems.append((kind, f"pass {p} {name}: {exc.reason}"))
                    record[f"{name.lower()}_error"] = exc.reason
                    record[f"{name.lower()}_error_kind"] = kind
                    if self.on_malformed == "midpoint" and not gen.error:
                        read[name] = (self.score_range_asked / 2,) * 2
                        substituted += 1
                    elif self.on_malformed == "random" and not self.random_in_released_reading:
                        guess = random.Random(f"{item.sample.id}|{p}|{name}").randint(
                            0, self.score_range_asked)
                        read[name] = (float(guess),) * 2
                        record[f"{name.lower()}_substituted"] = guess
                        substituted += 1
                    continue
                read[name] = answer.scores
                if answer.reasoning and name not in reasoning:
                    reasoning[name] = answer.reasoning
            records.append(record)
            if len(read) < 2:
                continue
            sc = [v / unit for v in read["SC"]]
            pq = [v / unit for v in read["PQ"]]
            record.update(sc_scores=list(read["SC"]), pq_scores=list(read["PQ"]))
            passes.append({"prompt_following": sc[0], "consistency": sc[1], "sc": min(sc),
                           "pq": min(pq)})
        raw: dict[str, Any] = {"passes": records}
        if problems and (self.on_malformed == "error" or len(passes) < self.num_pass):
            return failure(item.sample.id, raw, problems, asked=2 * self.num_pass)

        def mean(key: str) -> float:
            return sum(r[key] for r in passes) / len(passes)

        scores = {"instruction_alignment": mean("prompt_following"),
                  "content_preservation": mean("consistency"), "visual_quality": mean("pq"),
                  "sc_min": mean("sc"), "overall": vie_overall(passes, self.reduction)}
        scores = {d: v for d, v in scores.items() if d in self.dimensions}
        flags = []
        if substituted:
            raw["substituted"] = substituted
            raw["substitution_rule"] = (
                "midpoint (on_malformed='midpoint')" if self.on_malformed == "midpoint" else
                "a uniformly random integer (on_malformed='random', the released code's rule)")
            flags.append("substituted")
        explanation = "\n".join(f"{name}: {text}" for name, text in reasoning.items()) or None
        return ScoreResult(id=item.sample.id, scores=scores, raw=raw, explanation=explanation,
                           flags=flags)
