"""What the released evaluators share.

* :class:`PublishedPrompts` — every judge built on its authors' prompt files: reading the
  texts (from a local copy, ``--prompts``, or the pinned files,
  :mod:`ieqa.prompts.published`), recording which texts it used in its readout config, and
  a config without the template (the prompts are the authors' files, not an ieqa
  template).
* :class:`Released` — what every released evaluator reports: its dimensions and
  ``overall`` on its authors' range.
* :class:`ReleasedHead` — the released heads (EditReward, ReasonEdit, RE-Reward, EditHF): their
  dimensions, range and config.
* :class:`PublishedJudge` — the editor benchmarks' official API judges (ImgEdit-Bench's,
  KRIS-Bench's, RISEBench's): their defaults, the request loop, and one reading of each
  item's answers (strict, with the released reading beside it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ieqa.backends import OPENAI_BASE_URL, Prompt
from ieqa.prompts.answers import JudgeParseError
from ieqa.prompts.published import PublishedText, load_texts, prompts_record
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.vlm.base import (
    DEFAULT_MAX_INSTRUCTION_CHARS,
    LoadedSample,
    VLMScorer,
    failure,
    request_kind,
)

__all__ = ["PublishedJudge", "PublishedPrompts", "Released", "ReleasedHead",
           "local_backend_options"]


def local_backend_options(options: Mapping[str, Any] | None, *, device: str | None,
                          dtype: str, pixels: tuple[int, int],
                          attn_implementation: str | None) -> dict[str, Any]:
    """The transformers backend's options of a released local judge: its device and dtype,
    the processor's pixel budget ``pixels`` (min, max) as released, and the attention
    implementation when given; ``options`` (``backend_options``) win."""
    out = {"device": device, "dtype": dtype, "min_pixels": pixels[0], "max_pixels": pixels[1],
           **(options or {})}
    if attn_implementation:
        out.setdefault("attn_implementation", attn_implementation)
    return out


class PublishedPrompts:
    """Mixin of a :class:`~ieqa.scorers.vlm.base.VLMScorer` whose prompts are its authors'
    texts (put it before the scorer class in the bases)."""

    #: the authors' texts the judge's prompts are built from (recorded in its config)
    prompt_sources: tuple[PublishedText, ...] = ()
    #: the local copy they were read from (None: the pinned files)
    prompts_dir: str | None = None

    def load_prompts(self, prompts: str | Path | None) -> dict[str, str]:
        """The authors' texts, from ``prompts`` (a local copy, ``--prompts``) or the pinned
        files; which one is kept for the config."""
        self.prompts_dir = str(prompts) if prompts is not None else None
        return load_texts(self.prompt_sources, prompts_dir=prompts)

    def prompts_config(self) -> dict[str, Any]:
        """The readout config's record of the texts used (``prompts``, ``provenance``)."""
        return {"prompts": prompts_record(self.prompt_sources, self.prompts_dir),
                "provenance": {"prompts": self.prompts_dir}}

    def config(self) -> dict[str, Any]:
        out = super().config()  # type: ignore[misc]
        out.pop("template", None)  # the prompts are the authors' files, not a template
        return out


class Released(PublishedPrompts, VLMScorer):
    """What every released evaluator reports: its dimensions and ``overall``, on the range
    its authors' scores have."""

    #: the range of the released scores (``None``: open)
    released_range: tuple[float | None, float | None] = (None, None)

    @property
    def dimensions(self) -> tuple[str, ...]:
        return (*self.score_dimensions, "overall")

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        return self.released_range


class PublishedJudge(Released):
    """A benchmark's official judge as released: its authors' prompts, sent to an
    OpenAI-compatible server (or, where :attr:`local_stand_in`, a local checkpoint standing
    in), one or more requests per item (:meth:`requests`), each answer read strictly with
    the released reading kept beside it. A subclass states its defaults as class attributes
    and writes :meth:`requests`, :meth:`read_answer` and, where the released reading is
    kept per answer, :meth:`released_reading`; a judge with one request and a raw layout of
    its own overrides :meth:`read_answers`."""

    needs_local_model = False
    #: the released judge's model and endpoint
    default_model: str = ""
    default_base_url: str = OPENAI_BASE_URL
    #: the released request body's own fields (sent as the backend's ``extra_body``)
    released_body: Mapping[str, Any] = {"stream": False}
    #: the dimensions the judgements become (``overall`` is added) and their range
    judged: tuple[str, ...] = ()
    released_range: tuple[float | None, float | None] = (1.0, 5.0)
    #: whether a local checkpoint may stand in for the server (else a server is required)
    local_stand_in: bool = True
    #: the answer limit of every request (``None``: the server's default)
    max_tokens: int | None = None

    def __init__(self, *, model: str | None = None, base_url: str | None = None,
                 prompts: str | Path | None = None, batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 backend: Any = None, backend_options: Mapping[str, Any] | None = None) -> None:
        self.texts = self.load_prompts(prompts)
        options = dict(backend_options or {})
        if backend is None and (base_url is not None or model is None or not self.local_stand_in):
            base_url, model = base_url or self.default_base_url, model or self.default_model
            options.setdefault("max_pixels", None)  # the images go as the released code sends them
            options.setdefault("extra_body", dict(self.released_body))
        super().__init__(model=model, base_url=base_url, backend=backend, template="editreward",
                         dimensions=self.judged, batch_size=batch_size,
                         max_instruction_chars=max_instruction_chars, backend_options=options)
        self.local = hasattr(self.backend, "forward")
        if self.local and not self.local_stand_in:
            raise ScorerError(f"{self.readout} sends its benchmark's requests to an "
                              "OpenAI-compatible server (-O base_url=URL --model NAME)")

    # ------------------------------------------------------------------------ requests
    def requests(self, item: LoadedSample) -> dict[str, Prompt]:
        """The released requests of one item, by the key its answer is read for."""
        raise NotImplementedError

    def generation_options(self) -> dict[str, Any]:
        """How every request is generated: the server's defaults as released (no
        temperature, no top-p); a local model, which has none, answers greedily."""
        if self.local:
            return {"max_new_tokens": self.max_tokens, "temperature": 0.0, "top_p": 1.0}
        return {"max_new_tokens": self.max_tokens, "temperature": None, "top_p": None}

    # ----------------------------------------------------------------------- scoring
    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        plans = [self.requests(item) for item in items]
        gens = iter(self.backend.generate([p for plan in plans for p in plan.values()],
                                          **self.generation_options()))
        answers = [{key: next(gens)[0] for key in plan} for plan in plans]
        return [self.read_answers(item, a) for item, a in zip(items, answers, strict=True)]

    def released_reading(self, item: LoadedSample, key: str, gen: Any) -> dict[str, Any]:
        """What the released code reads from one answer (``raw["released"]`` entries); a
        failed request is given as it is (``gen.error`` set)."""
        return {}

    def read_answer(self, item: LoadedSample, key: str, text: str) -> dict[str, float]:
        """ieqa's strict reading of one answer: its dimensions' scores (raises
        :class:`~ieqa.prompts.answers.JudgeParseError` when it cannot be read)."""
        raise NotImplementedError

    def finish(self, item: LoadedSample, scores: dict[str, float],
               raw: dict[str, Any]) -> ScoreResult:
        """The item's result from the scores of all its answers."""
        raise NotImplementedError

    def read_answers(self, item: LoadedSample, answers: Mapping[str, Any]) -> ScoreResult:
        """One item's answers, by request key: each recorded (``raw["answers"]``, the
        serving replica in ``raw["servers"]``, the released reading in
        ``raw["released"]``), read strictly; a failed request or an unreadable answer makes
        the item a row error naming every problem, never a partial score."""
        raw: dict[str, Any] = {"answers": {}, "released": {}, "servers": []}
        scores: dict[str, float] = {}
        problems = []
        for key, gen in answers.items():
            raw["answers"][key] = gen.text
            raw["servers"].append(gen.server or None)
            raw["released"].update(self.released_reading(item, key, gen))
            if gen.error:
                problems.append((request_kind(gen), f"{key}: {gen.error}"))
                continue
            try:
                scores.update(self.read_answer(item, key, gen.text))
            except JudgeParseError as exc:
                problems.append(("unreadable", f"{key}: {exc.reason}"))
        if problems:
            return failure(item.sample.id, raw, problems, asked=len(answers))
        return self.finish(item, scores, raw)


class ReleasedHead(Released):
    """A released evaluator whose scores are read from its checkpoint (a reward head, LoRA
    heads) on its authors' prompts: EditReward, ReasonEdit's quality head, RE-Reward,
    EditHF. A subclass sets :attr:`prompt_sources`, :attr:`released_range`,
    ``release_files`` (what was loaded), ``package_dir`` (where from) and what its config
    records beyond the common fields (:meth:`release_config`)."""

    #: the provenance key of the folder the release was read from (``None``: not recorded)
    package_key: str | None = "package"
    #: the folder the release was read from
    package_dir: str | None = None
    #: what was loaded (hub ids, revisions, files)
    release_files: dict[str, Any] = {}

    def backend_config(self) -> dict[str, Any]:
        """The backend's part of the config."""
        return self.backend.config()

    def release_config(self) -> dict[str, Any]:
        """What the config records beyond the common fields (image sizes, calibration)."""
        return {}

    def head_results(self, items: Sequence[LoadedSample], outputs: Sequence[Sequence[float]],
                     read: Callable[[LoadedSample, list[float]], ScoreResult]
                     ) -> list[ScoreResult]:
        """One result per item from its head's outputs: a non-finite output is the item's
        error (a numerically broken forward), never a score; the others are ``read``."""
        results = []
        for item, row in zip(items, outputs, strict=True):
            values = [float(v) for v in row]
            if all(math.isfinite(v) for v in values):
                results.append(read(item, values))
            else:
                results.append(ScoreResult.failed(item.sample.id, f"the head returned {values}: "
                                                  "not finite (a numerically broken forward)"))
        return results

    def config(self) -> dict[str, Any]:
        out = {"readout": self.readout, "dimensions": list(self.dimensions),
               "batch_size": self.batch_size, "max_instruction_chars": self.max_instruction_chars,
               "backend": self.backend_config(), "release": self.release_files,
               **self.release_config(), **self.prompts_config()}
        if self.package_key is not None:
            out["provenance"][self.package_key] = self.package_dir
        return out
