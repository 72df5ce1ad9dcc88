"""Study design: what is judged, by whom, in which order.

:func:`plan_study` turns a manifest's samples and a :class:`StudyConfig` into items,
raters (with random invite tokens) and each rater's ordered assignments:

* **items** by protocol: ``rate`` and ``critique`` judge one sample each; ``rank`` one
  group (all the samples sharing a ``group_id``, at least two); ``pairwise`` every pair
  inside each group, the side of each edit (A or B) drawn at random;
* **gold items** (``gold``): items whose answer is known (``sample.meta["gold"]``, a dict
  dimension -> value, or with ``gold_from="scores"`` the sample's ``scores``), mixed into
  every rater's list to screen and calibrate raters;
* **training items** (``training``): shown to every rater first, each followed by the
  known answer when there is one; never exported;
* **study items**: each goes to ``per_item`` raters, always the least-loaded ones (ties
  broken at random), so every item gets the same number of raters and raters get lists
  of equal length (within one item);
* **order**: training first, then the rater's study and gold items in an order shuffled
  per rater (seeded by ``seed``: the same configuration gives the same study).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ieqa.data.dimensions import canonical_dimension
from ieqa.data.schema import EditSample
from ieqa.errors import UnknownDimensionError
from ieqa.studio.security import new_token
from ieqa.studio.store import StudioError

__all__ = ["DEFAULT_DIMENSIONS", "PAIR_LABELS", "PROTOCOLS", "StudyConfig", "StudyPlan", "parse_scale",
           "plan_study", "sample_record"]

PROTOCOLS: tuple[str, ...] = ("rate", "rank", "pairwise", "critique")
#: the dimensions each protocol asks about when none are given
DEFAULT_DIMENSIONS: dict[str, tuple[str, ...]] = {
    "rate": ("visual_quality", "instruction_alignment", "content_preservation", "overall"),
    "rank": ("overall",),
    "pairwise": ("overall",),
    "critique": ("logicality", "accuracy", "usefulness"),
}
#: pairwise verdicts (GenAI-Bench's four): A better, B better, tie (both good), both bad
PAIR_LABELS: tuple[str, ...] = ("a>b", "b>a", "tie", "both-bad")
GOLD_SOURCES: tuple[str, ...] = ("meta", "scores")
#: what happens to an answer whose sliders were not moved or whose ranking is unchanged
UNTOUCHED: tuple[str, ...] = ("flag", "refuse")


def parse_scale(text: str) -> tuple[float, float]:
    """``"1-5"``, ``"1,5"`` or ``"0:100"`` -> ``(1.0, 5.0)``; raises :class:`StudioError`
    saying how to write it."""
    cleaned = text.strip()
    for sep in (",", ":", "..", " "):
        if sep in cleaned:
            parts = cleaned.split(sep)
            break
    else:  # "1-5" (a leading minus belongs to the number)
        head, _, tail = cleaned[1:].partition("-")
        parts = [cleaned[0] + head, tail] if tail else [cleaned]
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise StudioError(f"scale {text!r}: write LO-HI, e.g. 1-5 or 0-100") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise StudioError(f"scale {text!r}: the lowest rating must be below the highest, e.g. 1-5")
    return lo, hi


@dataclass(frozen=True)
class StudyConfig:
    """How a study is run.

    Attributes:
        protocol: ``rate`` | ``rank`` | ``pairwise`` | ``critique``.
        dimensions: what raters judge (canonical names; default per protocol,
            :data:`DEFAULT_DIMENSIONS`).
        scale: the slider range of ``rate`` and ``critique``, ``(lo, hi)``.
        raters: how many raters (invite links) the study has.
        per_item: raters per study item (at most ``raters``).
        gold: gold items mixed into every rater's list.
        training: training items shown to every rater first.
        gold_from: where known answers come from: ``meta`` (``sample.meta["gold"]``) or
            ``scores`` (``sample.scores``).
        gold_min: a rater whose gold agreement (see :mod:`ieqa.studio.analysis`) is below
            this is flagged.
        tie_margin: pairwise/rank gold: values closer than this are a tie.
        seed: the seed of every random choice.
        title: shown on every page.
        untouched: what happens to an answer with a slider the rater never moved, or a
            ranking left in the order shown: ``flag`` (stored with ``untouched=true`` in
            the exports) or ``refuse`` (the page asks the rater to set it).
        revise_any: raters may revise any earlier answer while the study is open (else
            only their last one).
        min_seconds: a rater whose median time per answer (from the page being shown to
            the answer) is below this many seconds is flagged as too fast.
        max_share: a rater who gives one value (sliders) or one verdict (pairwise) in more
            than this share of their answers, or the same value on every slider of an
            answer (straight-lining) that often, or leaves rankings in the shown order that
            often, is flagged (0.5-1).
    """

    protocol: str = "rate"
    dimensions: tuple[str, ...] = field(default_factory=tuple)
    scale: tuple[float, float] = (1.0, 5.0)
    raters: int = 3
    per_item: int = 3
    gold: int = 0
    training: int = 0
    gold_from: str = "meta"
    gold_min: float = 0.7
    tie_margin: float = 0.0
    seed: int = 0
    title: str = "ieqa studio"
    untouched: str = "flag"
    revise_any: bool = False
    min_seconds: float = 2.0
    max_share: float = 0.9

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise StudioError(f"--protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}; pass one of them")
        dims = self.dimensions or DEFAULT_DIMENSIONS[self.protocol]
        try:
            canon = tuple(dict.fromkeys(canonical_dimension(d) for d in dims))
        except UnknownDimensionError as exc:
            raise StudioError(f"--dimensions: {exc}") from None
        object.__setattr__(self, "dimensions", canon)
        lo, hi = (float(x) for x in self.scale)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise StudioError(f"--scale {self.scale}: the lowest rating must be below the highest, e.g. 1-5")
        object.__setattr__(self, "scale", (lo, hi))
        if self.raters < 1:
            raise StudioError(f"--raters must be >= 1, got {self.raters}")
        if not 1 <= self.per_item <= self.raters:
            raise StudioError(f"--per-item must be in 1..--raters ({self.raters}), got {self.per_item}; "
                              "add raters (--raters) or ask fewer per item (--per-item)")
        if self.gold < 0 or self.training < 0:
            raise StudioError(f"--gold and --training must be >= 0, got {self.gold} and {self.training}")
        if self.gold_from not in GOLD_SOURCES:
            raise StudioError(f"--gold-from must be one of {', '.join(GOLD_SOURCES)}, got {self.gold_from!r}")
        if not 0.0 <= self.gold_min <= 1.0:
            raise StudioError(f"--gold-min must be in [0, 1], got {self.gold_min}")
        if self.untouched not in UNTOUCHED:
            raise StudioError(f"--untouched must be one of {', '.join(UNTOUCHED)}, got {self.untouched!r}")
        if not (math.isfinite(self.min_seconds) and self.min_seconds >= 0):
            raise StudioError(f"--min-seconds must be a number >= 0, got {self.min_seconds}")
        if not 0.5 <= self.max_share <= 1.0:
            raise StudioError(f"--max-share must be in [0.5, 1], got {self.max_share}")

    def to_json(self) -> dict[str, Any]:
        """The configuration as a JSON-able dict (stored in the study file)."""
        d = asdict(self)
        d["dimensions"], d["scale"] = list(self.dimensions), list(self.scale)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StudyConfig:
        """Inverse of :meth:`to_json`."""
        return cls(**{**d, "dimensions": tuple(d["dimensions"]), "scale": tuple(d["scale"])})


@dataclass(frozen=True)
class StudyPlan:
    """What :func:`plan_study` built: rows for :meth:`ieqa.studio.store.Store.create`."""

    items: list[dict[str, Any]]
    raters: list[tuple[str, str]]
    assignments: list[tuple[str, str, int]]


def sample_record(sample: EditSample) -> dict[str, Any]:
    """What the studio keeps of a sample: id, absolute image paths, text fields, bbox and
    critique. Raises :class:`StudioError` when an image is not an existing file."""
    paths: dict[str, str | None] = {}
    for name in ("source", "edited"):
        ref = getattr(sample, name)
        if ref is None and name == "source":
            paths[name] = None
            continue
        if not isinstance(ref, Path):
            raise StudioError(f"sample {sample.id!r}: {name} is an in-memory image; the studio serves "
                              "image files only: write the manifest with image paths")
        if not ref.is_file():
            raise StudioError(f"sample {sample.id!r}: {name} image {ref} does not exist; fix the "
                              "manifest's path (relative paths are read from the manifest's folder)")
        paths[name] = str(ref.resolve())
    critique = None
    for key in ("critique", "completion"):
        value = sample.meta.get(key)
        if isinstance(value, str) and value.strip():
            critique = value
            break
    return {"id": sample.id, **paths, "instruction": sample.instruction, "editor": sample.editor,
            "group_id": sample.group_id, "task": sample.task,
            "bbox": None if sample.bbox is None else sample.bbox.model_dump(), "critique": critique}


def _gold_values(sample: EditSample, config: StudyConfig) -> dict[str, float] | None:
    """The known answer of one sample on every dimension of the study, or None."""
    raw = sample.meta.get("gold") if config.gold_from == "meta" else sample.scores
    if not isinstance(raw, dict):
        return None
    try:
        values = {canonical_dimension(k): float(v) for k, v in raw.items()}
    except (UnknownDimensionError, TypeError, ValueError):
        raise StudioError(f"sample {sample.id!r}: gold answers must map dimensions to numbers, "
                          f"got {raw!r}") from None
    if not all(d in values and math.isfinite(values[d]) for d in config.dimensions):
        return None
    return {d: values[d] for d in config.dimensions}


def _items(samples: Sequence[EditSample], config: StudyConfig, rng: random.Random) -> list[dict[str, Any]]:
    """The protocol's items (role still ``study``), each with its gold values or None."""
    if config.protocol in ("rate", "critique"):
        items = []
        for s in samples:
            rec = sample_record(s)
            if config.protocol == "critique" and rec["critique"] is None:
                raise StudioError(f"sample {s.id!r} has no critique (meta.critique); the critique "
                                  "protocol rates a given critique: add one to every sample")
            gold = _gold_values(s, config)
            items.append({"id": s.id, "kind": "sample", "data": {"samples": [rec]},
                          "gold": None if gold is None else {d: [v] for d, v in gold.items()}})
        return items
    groups: dict[str, list[EditSample]] = {}
    for s in samples:
        if s.group_id is None:
            raise StudioError(f"sample {s.id!r} has no group_id; the {config.protocol} protocol "
                              "compares the edits of one group (one source and instruction)")
        groups.setdefault(s.group_id, []).append(s)
    items = []
    for gid, members in groups.items():
        if len(members) < 2:
            continue
        recs = [sample_record(s) for s in members]
        golds = [_gold_values(s, config) for s in members]
        if config.protocol == "rank":
            gold = None if any(g is None for g in golds) else {
                d: [g[d] for g in golds] for d in config.dimensions}  # type: ignore[index]
            items.append({"id": gid, "kind": "group", "data": {"group_id": gid, "samples": recs},
                          "gold": gold})
            continue
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                a, b = (i, j) if rng.random() < 0.5 else (j, i)
                gold = None if golds[a] is None or golds[b] is None else {
                    d: [golds[a][d], golds[b][d]] for d in config.dimensions}  # type: ignore[index]
                items.append({"id": f"{recs[a]['id']}~{recs[b]['id']}", "kind": "pair",
                              "data": {"group_id": gid, "samples": [recs[a], recs[b]]}, "gold": gold})
    if not items:
        raise StudioError(f"no group has two or more samples; the {config.protocol} protocol needs "
                          "groups of candidates (samples sharing a group_id)")
    return items


def plan_study(samples: Sequence[EditSample], config: StudyConfig) -> StudyPlan:
    """Items, raters and assignments of a new study (see the module docstring)."""
    if not samples:
        raise StudioError("the manifest has no samples")
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise StudioError("sample ids must be unique in the manifest (the exported ratings name them)")
    rng = random.Random(config.seed)
    items = _items(samples, config, rng)
    lo, hi = config.scale
    if config.protocol in ("rate", "critique"):
        for it in items:
            bad = {d: v for d, v in (it["gold"] or {}).items() if not lo <= v[0] <= hi}
            if bad:
                raise StudioError(f"sample {it['id']!r}: gold answers {bad} lie outside the scale "
                                  f"{lo:g}-{hi:g}; give --scale the range of the gold answers")
    with_gold = [it for it in items if it["gold"] is not None]
    need = config.gold + config.training
    if config.gold and len(with_gold) < need:
        raise StudioError(f"{config.gold} gold and {config.training} training item(s) asked for, but only "
                          f"{len(with_gold)} item(s) have known answers (gold_from={config.gold_from}); "
                          "add meta.gold to more samples, use --gold-from scores, or ask for fewer")
    rng.shuffle(with_gold)
    training = with_gold[:config.training]
    gold = with_gold[config.training:config.training + config.gold]
    chosen = {id(it) for it in training + gold}
    rest = [it for it in items if id(it) not in chosen]
    if len(training) < config.training:  # no known answer for all of them: training without feedback
        extra = config.training - len(training)
        rng.shuffle(rest)
        training, rest = training + rest[:extra], rest[extra:]
    for it in items:
        it["role"] = "study"
    for it in training:
        it["role"] = "training"
    for it in gold:
        it["role"] = "gold"
    if not rest:
        raise StudioError(f"no study items left after {len(training)} training and {len(gold)} gold "
                          "item(s); ask for fewer")
    rater_ids = [f"rater-{i + 1:02d}" for i in range(config.raters)]
    raters = [(rid, new_token()) for rid in rater_ids]
    load = dict.fromkeys(rater_ids, 0)
    lists: dict[str, list[str]] = {rid: [] for rid in rater_ids}
    order = list(rest)
    rng.shuffle(order)
    for it in order:
        ranked = sorted(rater_ids, key=lambda r: (load[r], rng.random()))
        for rid in ranked[:config.per_item]:
            lists[rid].append(it["id"])
            load[rid] += 1
    assignments: list[tuple[str, str, int]] = []
    for rid in rater_ids:
        mine = lists[rid] + [it["id"] for it in gold]
        random.Random(f"{config.seed}:{rid}").shuffle(mine)
        seq = [it["id"] for it in training] + mine
        assignments += [(rid, iid, pos) for pos, iid in enumerate(seq)]
    return StudyPlan(items, raters, assignments)
