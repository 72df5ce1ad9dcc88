"""What every VLM readout shares: :class:`VLMScorer`.

A VLM scorer owns a backend (:func:`ieqa.backends.make_backend`: a transformers checkpoint
or an OpenAI-compatible server), a prompt template (:mod:`ieqa.prompts`), the dimensions
it reports and a batch size. :meth:`VLMScorer.score` loads the images of each batch,
records per-sample load failures, orders the batch so candidates of one source and
instruction sit together (the transformers backend then encodes their shared prefix once)
and calls the readout's :meth:`VLMScorer.score_items` on the rest. Results come back in
input order. Readouts differ only in how they turn model outputs into scores.

**Failures stay per row.** An instruction longer than ``max_instruction_chars`` (default
:data:`DEFAULT_MAX_INSTRUCTION_CHARS` characters) is a recorded error before any model
call. A batch that runs out of memory or over the model's context is split and retried
down to single rows (:func:`ieqa.scorers.vlm.isolation.run_isolated`), so only the rows
that fail alone get an error; readouts call the model through :meth:`VLMScorer.isolated`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from PIL import Image

from ieqa.backends import ERROR_KINDS, Prompt, VLMBackend, make_backend
from ieqa.data.dimensions import canonical_dimension
from ieqa.data.images import crop_to_box, load_image
from ieqa.data.schema import EditSample
from ieqa.scorers.base import Scorer, ScorerError, ScoreResult
from ieqa.scorers.vlm.isolation import run_isolated

__all__ = ["VLMScorer", "LoadedSample", "share_key", "resolve_template", "failure",
           "request_kind", "CORE_DIMENSIONS", "DEFAULT_MAX_INSTRUCTION_CHARS"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: longest instruction (characters) a VLM scorer sends to the model unless told otherwise
#: (``max_instruction_chars``); real edit instructions are far shorter (benchmarks' stay
#: under 1 000), and a longer one is usually a data error that would fill the context
DEFAULT_MAX_INSTRUCTION_CHARS = 4000

#: the three dimensions every readout reports by default
CORE_DIMENSIONS: tuple[str, ...] = ("visual_quality", "instruction_alignment",
                                    "content_preservation")


@dataclass
class LoadedSample:
    """A sample with its images decoded (RGB PIL; ``source`` is None when absent)."""

    sample: EditSample
    source: Image.Image | None
    edited: Image.Image

    @property
    def images(self) -> dict[str, Image.Image]:
        """Template image slots: ``source`` (when present), ``edited``, and ``crop`` (the
        edited image cut to the sample's bbox, EPAIQA local naturalness) when it has one."""
        out = {"edited": self.edited}
        if self.source is not None:
            out["source"] = self.source
        if self.sample.bbox is not None:
            out["crop"] = crop_to_box(self.edited, self.sample.bbox)
        return out


def render_sample(template: Any, sample: EditSample, dimension: str | None = None,
                  share_key: str | None = None, item: LoadedSample | None = None) -> Prompt:
    """``template`` rendered for ``sample``: its images in the template's slots, its
    instruction, and any other placeholder the template names taken from ``sample.meta``
    (``{critique}`` for RE-Reward). Used by the scorers and by training, so both see the
    same prompts."""
    if item is None:
        source = load_image(sample.source) if sample.source is not None else None
        item = LoadedSample(sample, source, load_image(sample.edited))
    images = VLMScorer.template_images(item, template)
    extra = {k: sample.meta[k] for k in template.placeholders if k in sample.meta
             and k not in ("instruction", "dimension", "Dimension")}
    return template.render(instruction=sample.instruction, images=images, dimension=dimension,
                           share_key=share_key, **extra)


def estimated_tokens(item: LoadedSample) -> float:
    """A sample's prompt length in tokens, roughly, before any processor runs: one token per
    28x28 pixels of its images (Qwen-VL's merged patches; larger images are resized by the
    processor, which the estimate ignores, but the order it gives holds) and one per four
    characters of its instruction. Used to order samples into batches of similar length."""
    pixels = sum(img.width * img.height for img in (item.source, item.edited) if img is not None)
    return pixels / (28 * 28) + len(item.sample.instruction) / 4


def share_key(sample: EditSample) -> str:
    """Key of the (source image, instruction) group a sample belongs to: candidates with
    equal keys share a prompt prefix."""
    if sample.group_id:
        return f"group:{sample.group_id}"
    ref = sample.source
    if isinstance(ref, Path):
        where = str(ref)
    elif isinstance(ref, (bytes, bytearray)):
        where = hashlib.sha1(ref).hexdigest()
    else:
        where = f"object:{id(ref)}"
    return f"{where}\x00{sample.instruction}"


def resolve_template(template: Any) -> Any:
    """A :class:`~ieqa.prompts.PromptTemplate` from a registered name, a YAML/JSON file
    path, a dict of template fields, or a template object."""
    from ieqa.prompts import PromptTemplate, get_template, load_template

    if isinstance(template, PromptTemplate):
        return template
    if isinstance(template, Mapping):
        return load_template(dict(template))
    if isinstance(template, Path) or (isinstance(template, str)
                                      and template.endswith((".yaml", ".yml", ".json"))):
        return load_template(Path(template))
    if isinstance(template, str):
        return get_template(template)
    raise ScorerError(f"template must be a name, a file path, a dict or a PromptTemplate, "
                      f"got {type(template).__name__}")


class VLMScorer(Scorer):
    """Base of the VLM readouts (see the module docstring).

    Args:
        model: hub id or local checkpoint folder (transformers backend), or the served
            model's name when ``base_url`` is given.
        base_url: an OpenAI-compatible server (``http://host:8000/v1``).
        backend: an already built backend (overrides ``model``/``base_url``).
        template: prompt template name (``ieqa list templates``), file or dict.
        dimensions: dimensions to score (canonical names or aliases); default
            :data:`CORE_DIMENSIONS`.
        batch_size: samples per backend call.
        max_instruction_chars: longest instruction scored, in characters (>= 1; ``None``:
            no limit); a longer one is a recorded error for that sample, before any model
            call (CLI: ``-O max_instruction_chars=N``).
        device, dtype, max_pixels: transformers backend settings (see
            :class:`ieqa.backends.TransformersVLM`).
        backend_options: any other backend constructor arguments.
    """

    #: readout name recorded in configs (``levels``, ``digits``, ...)
    readout: str = ""
    #: the template used when none is given
    default_template: str = "judge-json"
    #: whether the readout needs a transformers backend (logits or hidden states)
    needs_local_model: bool = True
    #: order a call's samples by estimated prompt length (whole candidate groups kept
    #: together) before cutting them into batches, so a batch's prompts are of similar
    #: length and pad little (results come back in input order; a sample's scores do not
    #: depend on its batch, to float rounding)
    length_buckets: bool = True

    def __init__(self, *, model: str | Path | None = None, base_url: str | None = None,
                 backend: VLMBackend | None = None, template: Any = None,
                 dimensions: Sequence[str] | None = None, batch_size: int = 8,
                 max_instruction_chars: int | None = DEFAULT_MAX_INSTRUCTION_CHARS,
                 device: str | None = "auto", dtype: str = "auto",
                 max_pixels: int | None = None,
                 backend_options: Mapping[str, Any] | None = None) -> None:
        if batch_size < 1:
            raise ScorerError(f"batch_size must be at least 1, got {batch_size}")
        if max_instruction_chars is not None and int(max_instruction_chars) < 1:
            raise ScorerError(f"max_instruction_chars must be at least 1 (or None for no "
                              f"limit), got {max_instruction_chars}")
        self.batch_size = int(batch_size)
        self.max_instruction_chars = (int(max_instruction_chars)
                                      if max_instruction_chars is not None else None)
        self.template = resolve_template(template if template is not None else self.default_template)
        dims = tuple(canonical_dimension(d) for d in (dimensions or self._default_dimensions()))
        if not dims:
            raise ScorerError("dimensions is empty; name at least one dimension to score")
        self.score_dimensions = dims
        options = dict(backend_options or {})
        if backend is None and base_url is None:
            options = {"device": device, "dtype": dtype, "max_pixels": max_pixels, **options}
        elif backend is None and max_pixels is not None:
            options = {"max_pixels": max_pixels, **options}
        self.backend = make_backend(model=model, base_url=base_url, backend=backend, **options)
        if self.needs_local_model and not hasattr(self.backend, "forward"):
            raise ScorerError(f"the {self.readout} readout reads logits or hidden states and "
                              "needs a local transformers model (model=<checkpoint>); an HTTP "
                              "server only returns text: use vlm-judge")

    def _default_dimensions(self) -> tuple[str, ...]:
        return CORE_DIMENSIONS

    # ------------------------------------------------------------------ scorer contract
    @property
    def dimensions(self) -> tuple[str, ...]:
        return self.score_dimensions

    def config(self) -> dict[str, Any]:
        return {"readout": self.readout, "template": self.template.name,
                "dimensions": list(self.score_dimensions), "batch_size": self.batch_size,
                "max_instruction_chars": self.max_instruction_chars,
                "backend": self.backend.config(), **self.readout_config()}

    def readout_config(self) -> dict[str, Any]:
        """Readout-specific settings recorded in :meth:`config` (override)."""
        return {}

    def checkpoint_args(self) -> dict[str, Any]:
        """Readout constructor arguments an evaluator checkpoint records (override)."""
        return {}

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        """``(low, high)`` of this scorer's scores: the template's scale."""
        if self.template.scale is None:
            return (None, None)
        low, high = self.template.scale
        return (float(low), float(high))

    def score_sample(self, sample: EditSample) -> ScoreResult:
        return self.score([sample])[0]

    def check_sample(self, sample: EditSample) -> None:
        """The scorer's checks (:meth:`Scorer.check_sample`) and the instruction length."""
        super().check_sample(sample)
        self.check_instruction(sample)

    def check_instruction(self, sample: EditSample) -> None:
        """Raise :class:`ScorerError` when the instruction is longer than
        ``max_instruction_chars``."""
        limit = self.max_instruction_chars
        n = len(sample.instruction)
        if limit is not None and n > limit:
            raise ScorerError(f"the instruction of sample {sample.id!r} has {n} characters, "
                              f"over max_instruction_chars={limit}; shorten it, or raise the "
                              f"limit with -O max_instruction_chars={n} if the model's context "
                              "holds it")

    def load_samples(self, samples: Sequence[EditSample]
                     ) -> tuple[list[tuple[int, LoadedSample]], dict[int, Exception]]:
        """Each sample checked (:meth:`check_sample`) and its images loaded: ``(index,
        LoadedSample)`` of those that load, and by index the exception of each that does
        not (the caller records it as that sample's error, by contract never dropped)."""
        loaded: list[tuple[int, LoadedSample]] = []
        failed: dict[int, Exception] = {}
        for i, sample in enumerate(samples):
            try:
                self.check_sample(sample)
                source = load_image(sample.source) if sample.source is not None else None
                loaded.append((i, LoadedSample(sample, source, load_image(sample.edited))))
            except Exception as exc:  # noqa: BLE001 - recorded per sample, by contract
                failed[i] = exc
        return loaded, failed

    def score_batch(self, samples: Sequence[EditSample]) -> list[ScoreResult]:
        """One result per sample in input order; a sample whose images do not load or
        whose instruction is too long, or a batch the model fails on, gets a recorded
        error (a batch out of memory or context is split first, see the module
        docstring)."""
        loaded, failed = self.load_samples(samples)
        results: dict[int, ScoreResult] = {i: ScoreResult.failed(samples[i].id, exc)
                                           for i, exc in failed.items()}
        # candidates of one source+instruction next to each other (stable), so a batch
        # holds whole groups and the backend can share their prefix; the groups ordered by
        # their prompts' estimated length (length_buckets), so a batch pads little
        first_seen: dict[str, int] = {}
        length: dict[str, list[float]] = {}
        for _, item in loaded:
            key = share_key(item.sample)
            first_seen.setdefault(key, len(first_seen))
            length.setdefault(key, []).append(estimated_tokens(item))
        order = {key: (sum(length[key]) / len(length[key]) if self.length_buckets else 0.0,
                       first_seen[key]) for key in first_seen}
        loaded.sort(key=lambda pair: order[share_key(pair[1].sample)])
        for start in range(0, len(loaded), self.batch_size):
            chunk = loaded[start:start + self.batch_size]
            out = self.isolated([item for _, item in chunk], self.score_items,
                                lambda item, message: ScoreResult.failed(item.sample.id, message))
            for (i, _), result in zip(chunk, out, strict=True):
                results[i] = result
        return [results[i] for i in range(len(samples))]

    def isolated(self, rows: Sequence[T], run: Callable[[Sequence[T]], list[R]],
                 fail: Callable[[T, str], R]) -> list[R]:
        """``run(rows)`` with failures isolated per row: the one way readouts call the
        model on a batch (:func:`~ieqa.scorers.vlm.isolation.run_isolated`). ``fail``
        builds a row's result from an error message."""
        return run_isolated(rows, run, fail, label=f"vlm-{self.readout}")

    @abstractmethod
    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:
        """Score one batch of loaded samples (one result each, in order)."""

    # -------------------------------------------------------------------- explanations
    def explain(self, samples: Any, format: str = "reasonedit", *,  # noqa: A002
                template: Any = None, max_new_tokens: int = 512, temperature: float = 0.0,
                seed: int = 0) -> list[Any]:
        """Generate one structured critique per sample and parse it (``ieqa explain``).

        Args:
            samples: :class:`~ieqa.data.schema.EditSample` objects or
                ``(source, edited, instruction)`` tuples, as :meth:`score` takes them.
            format: ``reasonedit`` (per-dimension analysis, then ``[Final Assessment]``
                scores) or ``epaiqa`` (EPAIQA stage 3: completion, harmony, naturalness,
                overall level, with the early exit); see :mod:`ieqa.prompts.answers`.
            template: the prompt asking for the critique; default the scorer's own
                template when the scorer was made for this format (``explain_format``,
                e.g. an EPAIQA stage-3 checkpoint), else the format's built-in one
                (``reasonedit-critique`` / ``epaiqa-overall``).
            max_new_tokens: answer length limit in tokens (a cut answer fails to parse).
            temperature: sampling temperature (0: greedy).
            seed: sampling seed.

        Returns:
            One :class:`ieqa.explain.Critique` per sample, in input order: ``status`` is
            ``ok`` (parsed), ``failed`` (the answer does not follow the format; the text
            and the reason are kept, no value is guessed) or ``error`` (no answer: images
            that do not load, an instruction over ``max_instruction_chars``, a backend
            failure).
        """
        from ieqa.prompts.answers import FORMAT_TEMPLATES, Critique, parse_explanation
        from ieqa.scorers.base import as_sample

        if format not in FORMAT_TEMPLATES:
            raise ScorerError(f"unknown critique format {format!r}; choose one of "
                              f"{', '.join(FORMAT_TEMPLATES)}")
        if template is None and getattr(self, "explain_format", None) == format:
            template = self.template
        tmpl = resolve_template(template if template is not None else FORMAT_TEMPLATES[format])
        options: dict[str, Any] = {}
        if format == "reasonedit" and tmpl.scale is not None:
            options["scale"] = tmpl.scale
        items = [as_sample(s, i) for i, s in enumerate(samples)]
        loaded, failed = self.load_samples(items)
        out: dict[int, Any] = {i: Critique(None, format, "error", id=items[i].id,
                                           error=f"{type(exc).__name__}: {exc}")
                               for i, exc in failed.items()}

        def run(chunk: Sequence[LoadedSample]) -> list[Any]:
            prompts = [render_sample(tmpl, item.sample, None, None, item) for item in chunk]
            answers = self.backend.generate(prompts, max_new_tokens=int(max_new_tokens),
                                            temperature=float(temperature), num_samples=1,
                                            seed=int(seed))
            crits = []
            for item, gens in zip(chunk, answers, strict=True):
                gen = gens[0]
                if gen.error:
                    crits.append(Critique(gen.text or None, format, "error", error=gen.error,
                                          id=item.sample.id))
                    continue
                crit = parse_explanation(gen.text, format, **options)
                crit.id = item.sample.id
                if not crit.ok and gen.finish_reason == "length":
                    crit.error = (f"{crit.error} (the answer was cut at max_new_tokens="
                                  f"{max_new_tokens}; raise it)")
                crits.append(crit)
            return crits

        for start in range(0, len(loaded), self.batch_size):
            chunk = loaded[start:start + self.batch_size]
            got = self.isolated([item for _, item in chunk], run,
                                lambda item, message: Critique(None, format, "error",
                                                               error=message, id=item.sample.id))
            for (i, _), crit in zip(chunk, got, strict=True):
                out[i] = crit
        return [out[i] for i in range(len(items))]

    # ----------------------------------------------------------------------- prompts
    def render(self, item: LoadedSample, dimension: str | None = None,
               template: Any = None) -> Prompt:
        """The prompt of one sample (and dimension), with its prefix-sharing key."""
        template = template or self.template
        # candidates of one group share the prefix of the same dimension's prompt
        key = share_key(item.sample) + (f"\x00{dimension}" if dimension else "")
        return render_sample(template, item.sample, dimension, key, item)

    def render_dimensions(self, item: LoadedSample, dimensions: Sequence[str],
                          template: Any = None) -> list[Prompt]:
        """The prompts of one sample for each of ``dimensions``, keyed so the backend
        computes their common prefix once: when the prompts differ only after their last
        image (the dimension asked at the end, as the built-in templates do), the
        dimensions of one edit share that prefix, both images included; otherwise the
        candidates of a group share the source per dimension (:meth:`render`). Sharing
        both images of one edit beats sharing the source of K candidates whenever two or
        more dimensions are asked: 2 images per edit encoded against ``d x (1 + 1/K)``."""
        prompts = [self.render(item, dim, template) for dim in dimensions]
        if len(prompts) < 2 or not _differ_after_images(prompts):
            return prompts
        key = f"edit\x00{id(item)}\x00{share_key(item.sample)}"
        n_images = sum(isinstance(part, Image.Image) for part in prompts[0].parts)
        return [dataclasses.replace(p, share_key=key, shared_images=n_images) for p in prompts]

    @staticmethod
    def template_images(item: LoadedSample, template: Any) -> dict[str, Image.Image]:
        """The sample's images for the template's slots (an error names a missing one)."""
        missing = [slot for slot in template.images if slot not in item.images]
        if missing:
            raise ScorerError(f"template {template.name!r} needs the {', '.join(missing)} "
                              f"image(s) and sample {item.sample.id!r} has none")
        return {slot: img for slot, img in item.images.items() if slot in template.images}


def _differ_after_images(prompts: Sequence[Prompt]) -> bool:
    """Whether ``prompts`` (one sample's, one per dimension) hold the same images and are
    identical up to their last image (system message included)."""
    first = prompts[0]
    last = max((i for i, part in enumerate(first.parts) if isinstance(part, Image.Image)),
               default=-1)
    if last < 0:
        return False
    for other in prompts[1:]:
        if other.system != first.system or len(other.parts) <= last:
            return False
        for a, b in zip(first.parts[:last + 1], other.parts[:last + 1], strict=True):
            if isinstance(a, Image.Image) != isinstance(b, Image.Image):
                return False
            if isinstance(a, Image.Image) and not (a is b or a.tobytes() == b.tobytes()):
                return False
            if not isinstance(a, Image.Image) and a != b:
                return False
    return True


def failure(item_id: str, raw: dict[str, Any], problems: Sequence[tuple[str, str]], *,
            asked: int | None = None) -> ScoreResult:
    """The failed row of a judge whose answers could not all be read: ``problems`` are
    ``(kind, what)`` pairs, ``kind`` one of :data:`~ieqa.backends.ERROR_KINDS` (a request
    that failed: its :attr:`~ieqa.backends.Generation.error_kind`; an answer the reader
    refused: ``"unreadable"``). The error names the kinds first ("HTTP error (2 of 2): ...",
    with ``asked`` the answers asked for), so a failed request never reads as a bad
    answer; ``raw["error_kinds"]`` keeps them."""
    kinds = list(dict.fromkeys(kind for kind, _ in problems))
    words = ", ".join(ERROR_KINDS.get(k, k) for k in kinds)
    count = f" ({len(problems)} of {asked})" if asked is not None else ""
    raw["error_kinds"] = kinds
    return ScoreResult(id=item_id, raw=raw,
                       error=f"{words}{count}: " + "; ".join(what for _, what in problems[:4]))


def request_kind(gen: Any) -> str:
    """The kind of a failed request's generation (``"http"``, ``"timeout"``,
    ``"connection"``, ``"unreadable"``; ``"request"`` when the backend gave none)."""
    return getattr(gen, "error_kind", None) or "request"
