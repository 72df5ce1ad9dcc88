"""The contract every scorer follows: :class:`Scorer`, :class:`ScoreResult`, :class:`ScorerInfo`.

A scorer turns :class:`~ieqa.data.schema.EditSample` objects (source image, edited image,
instruction) into one :class:`ScoreResult` each, in input order. A result carries

* ``scores`` — per canonical dimension (``visual_quality``, ``instruction_alignment``,
  ``content_preservation``, ``overall``), in the units stated by the scorer's
  :class:`ScorerInfo` (``score_range``, ``higher_better``);
* ``unavailable`` — dimensions the scorer declares but cannot measure for this sample,
  each with the reason and what to use instead (never a made-up number);
* ``sigma`` — optional per-dimension uncertainty (same units as the score);
* ``explanation`` — optional text; ``region`` — optional edit region
  (:class:`~ieqa.data.schema.BBox`); ``raw`` — JSON-serialisable extras (sub-scores,
  parsed judge output, ...);
* ``flags`` — degenerate outputs (``blank``, ``transparent``, ``tiny``, ``no_op``,
  ``unrelated``; :mod:`ieqa.scorers.flags`), detected for every scorer;
* ``error`` — set instead of scores when this sample could not be scored (an image that
  does not load, a missing source image, ...). :meth:`Scorer.score` records such
  failures per sample rather than aborting the batch.

:meth:`Scorer.score` is the one entry point: it accepts :class:`EditSample` objects,
``(source, edited[, instruction])`` tuples or dicts of EditSample fields (ids ``"0"``,
``"1"``, ... assigned in input order when absent), decodes every image once, attaches the
flags and hands the decoded samples to :meth:`Scorer.score_batch`, which subclasses
override to batch (a VLM does) or leave to call :meth:`Scorer.score_sample` per sample.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.images import load_image
from ieqa.data.schema import BBox, EditSample, ImageRef
from ieqa.errors import IeqaError
from ieqa.scorers.flags import detect_flags

__all__ = ["MAX_SAMPLE_THREADS", "SampleLike", "Scorer", "ScoreResult", "ScorerInfo", "ScorerError", "ScorerKind",
           "as_sample"]

ScorerKind = Literal["full-reference", "no-reference", "composite", "vlm", "learned"]


#: the most samples a CPU scorer scores at once (:attr:`Scorer.sample_threads`): each holds
#: a few float copies of its two images, so more threads mostly add memory
MAX_SAMPLE_THREADS = 8


class ScorerError(IeqaError):
    """A scorer cannot be built or cannot score a sample (the message says why and what to do)."""


@dataclass(frozen=True)
class ScorerInfo:
    """What a registered scorer is (one row of the declarative table in :mod:`ieqa.scorers.catalog`).

    Attributes:
        name: registry name, e.g. ``"ssim"``.
        description: one line for ``ieqa list``.
        kind: ``full-reference`` (compares source and edited), ``no-reference`` (edited
            only), ``composite``, ``vlm`` or ``learned``.
        dimensions: canonical dimensions the scorer outputs (a subset of its results may
            be reported unavailable).
        higher_better: True when a larger score means a better edit.
        needs_source: the source image is required.
        needs_instruction: the instruction text is required.
        score_range: ``(low, high)`` of the output, ``None`` for an open end.
        units: what a score is measured in (``"dB"``, ``"1-5 scale"``, ...).
        factory: ``"module:attribute"`` building the scorer (imported on first use).
        defaults: keyword arguments the factory gets unless overridden.
        extras: pip extras the scorer needs (``pip install ieqa[...]``).
        function: for a metric scorer, the ``"module:function"`` it wraps (else ``""``).
        release: for a published evaluator, what its authors released: ``hub_id`` (the
            default weights), ``base_model``, ``parameters`` and ``paper`` (empty for
            ieqa's own scorers).
    """

    name: str
    description: str
    kind: ScorerKind
    dimensions: tuple[str, ...]
    higher_better: bool
    needs_source: bool
    factory: str
    needs_instruction: bool = False
    score_range: tuple[float | None, float | None] = (None, None)
    units: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    extras: tuple[str, ...] = ()
    function: str = ""
    release: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimensions", tuple(canonical_dimension(d) for d in self.dimensions))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (for ``ieqa list --json`` and output metadata)."""
        return {"name": self.name, "description": self.description, "kind": self.kind,
                "dimensions": list(self.dimensions), "higher_better": self.higher_better,
                "needs_source": self.needs_source, "needs_instruction": self.needs_instruction,
                "score_range": list(self.score_range), "units": self.units,
                "defaults": dict(self.defaults), "extras": list(self.extras),
                **({"release": dict(self.release)} if self.release else {})}


@dataclass
class ScoreResult:
    """The scores of one sample (see the module docstring for each field)."""

    id: str
    scores: dict[str, float] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    sigma: dict[str, float] = field(default_factory=dict)
    explanation: str | None = None
    region: BBox | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the sample was scored (``error`` is None)."""
        return self.error is None

    @classmethod
    def failed(cls, sample_id: str, error: BaseException | str) -> ScoreResult:
        """A result recording why ``sample_id`` could not be scored."""
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        return cls(id=sample_id, error=str(error))

    def __post_init__(self) -> None:
        for name, value in self.scores.items():
            if not isinstance(value, (int, float, np.floating, np.integer)) or math.isnan(float(value)):
                raise ScorerError(f"sample {self.id!r}: score {name!r} is {value!r}; a scorer must "
                                  "report a dimension it cannot measure in `unavailable`, not as NaN")
        self.scores = {canonical_dimension(k): float(v) for k, v in self.scores.items()}
        self.sigma = {canonical_dimension(k): float(v) for k, v in self.sigma.items()}
        self.unavailable = {canonical_dimension(k): str(v) for k, v in self.unavailable.items()}


#: what :meth:`Scorer.score` accepts for one edit
SampleLike = EditSample | tuple | Mapping[str, Any]


def as_sample(item: SampleLike, index: int) -> EditSample:
    """An :class:`EditSample` from an EditSample, a ``(source, edited[, instruction])``
    tuple or a dict of EditSample fields; ``index`` (0-based) gives the id ``str(index)``
    when the item has none. Paths may be ``str`` or ``Path``.

    Raises:
        ScorerError: the item is none of these, or its fields are invalid.
    """
    if isinstance(item, EditSample):
        return item
    if isinstance(item, tuple):
        if len(item) not in (2, 3):
            raise ScorerError(f"item {index}: a tuple must be (source, edited) or (source, edited, "
                              f"instruction), got {len(item)} values")
        data: dict[str, Any] = {"source": item[0], "edited": item[1],
                                "instruction": item[2] if len(item) == 3 else ""}
    elif isinstance(item, Mapping):
        data = dict(item)
    else:
        raise ScorerError(f"item {index}: expected an EditSample, a (source, edited, instruction) "
                          f"tuple or a dict, got {type(item).__name__}")
    data.setdefault("id", str(index))
    try:
        return EditSample.model_validate(data)
    except ValueError as exc:
        raise ScorerError(f"item {index}: {exc}") from None


def _as_array(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.uint8)


class Scorer(ABC):
    """Base class of every scorer.

    Subclasses implement :meth:`score_sample` (one sample) and may override :meth:`score`
    to batch (a VLM does). Build registered scorers with :func:`ieqa.create_scorer`; the
    :class:`ScorerInfo` describing a scorer is its :attr:`info`.
    """

    info: ScorerInfo
    #: degenerate-output flags (:mod:`ieqa.scorers.flags`) for which :meth:`score` does not
    #: measure the edit but returns :meth:`floor_result` (none by default)
    floor_flags: frozenset[str] = frozenset()
    #: samples the default :meth:`score_batch` scores at once, each on its own thread (1:
    #: one after another). CPU scorers whose work runs in numpy and scipy, which release
    #: the GIL, set it from the configured thread count (:func:`ieqa.threads.thread_count`,
    #: at most :data:`MAX_SAMPLE_THREADS`); the results do not depend on it.
    sample_threads: int = 1

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dimensions(self) -> tuple[str, ...]:
        return self.info.dimensions

    @property
    def higher_better(self) -> bool:
        return self.info.higher_better

    @property
    def needs_source(self) -> bool:
        return self.info.needs_source

    @property
    def score_range(self) -> tuple[float | None, float | None]:
        """``(low, high)`` of the scores (``None`` = open end); see :class:`ScorerInfo`."""
        return self.info.score_range

    def config(self) -> dict[str, Any]:
        """The keyword arguments that reproduce this scorer (recorded in output files)."""
        return {}

    @abstractmethod
    def score_sample(self, sample: EditSample) -> ScoreResult:
        """Score one sample; raise on failure (:meth:`score` turns it into a recorded error)."""

    def score(self, samples: Iterable[SampleLike]) -> list[ScoreResult]:
        """One :class:`ScoreResult` per item, in input order.

        Items are :class:`EditSample` objects, ``(source, edited[, instruction])`` tuples
        or dicts (see :func:`as_sample`). Each image is decoded once; a sample whose
        images do not load, or that the scorer fails on, gets a result with ``error`` set
        instead of stopping the batch. Every result carries the degenerate-output
        ``flags`` of :func:`ieqa.scorers.flags.detect_flags`.
        """
        items = [as_sample(item, i) for i, item in enumerate(samples)]
        results: list[ScoreResult | None] = [None] * len(items)
        flags: list[list[str]] = [[] for _ in items]
        decoded: list[tuple[int, EditSample]] = []
        for i, sample in enumerate(items):
            try:
                source = load_image(sample.source) if sample.source is not None else None
                edited = load_image(sample.edited)
            except Exception as exc:  # noqa: BLE001 - recorded per sample, by contract
                results[i] = ScoreResult.failed(sample.id, exc)
                continue
            flags[i] = detect_flags(source, edited)
            floored = [f for f in flags[i] if f in self.floor_flags]
            if floored:
                results[i] = self.floor_result(sample, floored)
                continue
            update: dict[str, Any] = {"edited": edited}
            if source is not None:
                update["source"] = source
            decoded.append((i, sample.model_copy(update=update)))
        if decoded:
            scored = self.score_batch([s for _, s in decoded])
            if len(scored) != len(decoded):
                raise ScorerError(f"scorer {self.name!r} returned {len(scored)} results for "
                                  f"{len(decoded)} samples")
            for (i, _), result in zip(decoded, scored, strict=True):
                results[i] = result
        out: list[ScoreResult] = []
        for i, result in enumerate(results):
            assert result is not None
            result.flags = [f for f in dict.fromkeys([*result.flags, *flags[i]])]
            out.append(result)
        return out

    def floor_result(self, sample: EditSample, floored: list[str]) -> ScoreResult:
        """The result of an output carrying one of :attr:`floor_flags` (``floored``): a
        scorer that sets :attr:`floor_flags` defines it."""
        raise NotImplementedError(f"{type(self).__name__} sets floor_flags but no floor_result")

    def score_batch(self, samples: Sequence[EditSample]) -> list[ScoreResult]:
        """Score decoded samples (their images are RGB ``PIL.Image`` objects); one result
        each, in order. The default calls :meth:`score_sample` per sample and records a
        failure per sample; batching scorers override it. Call :meth:`score` instead.
        With :attr:`sample_threads` > 1 it scores that many samples at once on threads."""

        def one(sample: EditSample) -> ScoreResult:
            try:
                self.check_sample(sample)
                return self.score_sample(sample)
            except Exception as exc:  # noqa: BLE001 - recorded per sample, by contract
                return ScoreResult.failed(sample.id, exc)

        threads = min(self.sample_threads, len(samples))
        if threads <= 1:
            return [one(sample) for sample in samples]
        with ThreadPoolExecutor(threads, thread_name_prefix=f"ieqa-{self.name}") as pool:
            return list(pool.map(one, samples))

    def check_sample(self, sample: EditSample) -> None:
        """Raise :class:`ScorerError` when ``sample`` lacks what this scorer needs."""
        if self.info.needs_source and sample.source is None:
            raise ScorerError(f"{self.name} compares the edited image with its source, and sample "
                              f"{sample.id!r} has no source image; use a no-reference scorer "
                              f"(ieqa list scorers) or add the source")
        if self.info.needs_instruction and not sample.instruction.strip():
            raise ScorerError(f"{self.name} needs the edit instruction and sample {sample.id!r} "
                              "has none")

    def __call__(self, source: ImageRef | str | None, edited: ImageRef | str,
                 instruction: str = "") -> ScoreResult:
        """Score one triplet given directly (paths, PIL images, arrays or bytes)."""

        def ref(x: Any) -> Any:
            return Path(x) if isinstance(x, str) else x

        sample = EditSample(id="0", source=ref(source), edited=ref(edited), instruction=instruction)
        return self.score([sample])[0]

    @staticmethod
    def load_rgb(ref: ImageRef) -> np.ndarray:
        """An ``HxWx3`` ``uint8`` array (0-255) of an image reference (see
        :func:`ieqa.data.images.load_image` for the accepted references and errors)."""
        return _as_array(load_image(ref))

    @classmethod
    def load_pair(cls, source: ImageRef, edited: ImageRef) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(source, edited, resized)`` as ``uint8`` RGB arrays of the same size.

        Full-reference comparisons need equal sizes: an edited image of another size is
        resized to the source's size (bicubic) and ``resized`` is True (scorers record it
        in ``raw`` so the user can see it happened).
        """
        src = load_image(source)
        edt = load_image(edited)
        resized = src.size != edt.size
        if resized:
            edt = edt.resize(src.size, Image.Resampling.BICUBIC)
        return _as_array(src), _as_array(edt), resized

    def __repr__(self) -> str:
        cfg = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({cfg})" if cfg else f"{type(self).__name__}()"
