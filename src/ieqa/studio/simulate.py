"""Simulated raters for a study: check the rater flags of :mod:`ieqa.studio.analysis`
against raters whose behaviour is known.

Each item has a latent truth per dimension and candidate: its gold values when it has
some, else a value drawn per sample id (seeded), uniform on the scale, shared by the
dimensions up to a deviation (so one sample's dimensions correlate, as they do in real
studies). Behaviours (:data:`BEHAVIOURS`):

* ``good``: the truth plus Gaussian noise (SD ``noise`` times the scale range, 0.12 by
  default: 0.48 on 1-5), on the slider's
  0.01 grid; rankings by the noisy values; pairwise: ``tie`` (both above the middle of
  the scale) or ``both-bad`` when the noisy values are within 10% of the range, else the
  better side; 6-15 s per answer;
* ``random``: uniform slider values, random permutations, uniform verdicts;
* ``constant``: the slider never moved (every slider at the scale's middle,
  ``untouched=True``); rank: the shown order kept (``untouched=True``); pairwise: not
  applicable, answers like ``good``;
* ``always_a``: pairwise ``a>b`` on every pair; elsewhere answers like ``good``;
* ``reversing``: a good rater's answer turned round: ``lo + hi - value``, the ranking
  reversed, the verdict swapped (``a>b`` <-> ``b>a``, ``tie`` <-> ``both-bad``);
* ``fast``: answers like ``good``, in 15-50% of ``min_seconds`` (at least 2 s) each.

The shown order of a ranking is :func:`ieqa.studio.answers.candidate_slots`'s. Every
behaviour but ``fast`` takes 6-15 s per answer. :func:`fill_store` answers through
:meth:`Store.submit` (with faked times); :func:`simulate_responses` returns the rows of
:meth:`Store.responses` in memory, for items :func:`simulated_items` makes without
images (the benchmark's path).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ieqa.studio.answers import candidate_slots
from ieqa.studio.design import StudyConfig
from ieqa.studio.store import Item, Response, Store, StudioError

__all__ = ["BEHAVIOURS", "EXPECTED_FLAGS", "GOOD_NOISE", "expected_flags", "fill_store", "latent_truth",
           "simulate_answer", "simulate_responses", "simulate_study", "simulated_items"]

BEHAVIOURS: tuple[str, ...] = ("good", "random", "constant", "always_a", "reversing", "fast")
#: per behaviour and protocol, the flag kinds (:data:`ieqa.studio.analysis.FLAG_KINDS`)
#: the behaviour should raise; a protocol not listed: the behaviour does not apply there
#: (the rater answers like a good one and should not be flagged)
EXPECTED_FLAGS: dict[str, dict[str, frozenset[str]]] = {
    "good": {},
    "random": {p: frozenset({"low_agreement"}) for p in ("rate", "critique", "rank", "pairwise")},
    "constant": {"rate": frozenset({"constant", "straight_lining"}),
                 "critique": frozenset({"constant", "straight_lining"}),
                 "rank": frozenset({"straight_lining"})},
    "always_a": {"pairwise": frozenset({"constant", "position_bias"})},
    "reversing": {p: frozenset({"low_agreement"}) for p in ("rate", "critique", "rank", "pairwise")},
    "fast": {p: frozenset({"too_fast"}) for p in ("rate", "critique", "rank", "pairwise")},
}
#: a good rater's noise SD, as a share of the scale range
GOOD_NOISE: float = 0.12
_SWAP = {"a>b": "b>a", "b>a": "a>b", "tie": "both-bad", "both-bad": "tie"}
_START = 1_700_000_000.0  # the faked clock's start (epoch seconds)


def expected_flags(behaviour: str, config: StudyConfig) -> frozenset[str]:
    """The flag kinds ``behaviour`` should raise in ``config``'s study (empty: it does not
    apply there, or it is ``good``); straight-lining of sliders needs 2+ dimensions."""
    if behaviour not in EXPECTED_FLAGS:
        raise StudioError(f"unknown rater behaviour {behaviour!r}; pick one of {', '.join(BEHAVIOURS)}")
    kinds = EXPECTED_FLAGS[behaviour].get(config.protocol, frozenset())
    if config.protocol in ("rate", "critique") and len(config.dimensions) < 2:
        kinds = kinds - {"straight_lining"}
    if config.min_seconds <= 0:  # no floor: nobody is too fast
        kinds = kinds - {"too_fast"}
    return kinds


def latent_truth(config: StudyConfig, item: Item, seed: int = 0) -> dict[str, list[float]]:
    """Per dimension, the true value of each of ``item``'s candidates: the gold values
    when the item has them, else drawn per sample id (see the module docstring)."""
    if item.gold is not None and all(d in item.gold for d in config.dimensions):
        return {d: [float(v) for v in item.gold[d]] for d in config.dimensions}
    lo, hi = config.scale
    span = hi - lo
    out: dict[str, list[float]] = {d: [] for d in config.dimensions}
    for sample in item.data["samples"]:
        rng = random.Random(f"{seed}:truth:{sample['id']}")
        base = rng.uniform(lo, hi)
        for d in config.dimensions:
            out[d].append(min(hi, max(lo, base + rng.gauss(0.0, 0.15 * span))))
    return out


def _slider(value: float, lo: float, hi: float) -> float:
    return round(min(hi, max(lo, value)), 2)


def _good(config: StudyConfig, truth: dict[str, list[float]], rng: random.Random, noise: float) -> dict[str, Any]:
    """A good rater's answer per dimension: a slider value, an order of candidate
    indices (best first) or a verdict."""
    lo, hi = config.scale
    span = hi - lo
    out: dict[str, Any] = {}
    for d in config.dimensions:
        noisy = [t + rng.gauss(0.0, noise * span) for t in truth[d]]
        if config.protocol in ("rate", "critique"):
            out[d] = _slider(noisy[0], lo, hi)
        elif config.protocol == "rank":
            out[d] = sorted(range(len(noisy)), key=lambda i: -noisy[i])
        else:
            a, b = noisy
            if abs(a - b) < 0.1 * span:
                out[d] = "tie" if (a + b) / 2 >= (lo + hi) / 2 else "both-bad"
            else:
                out[d] = "a>b" if a > b else "b>a"
    return out


def simulate_answer(config: StudyConfig, behaviour: str, rater: str, item: Item, *,
                    seed: int = 0, noise: float = GOOD_NOISE) -> tuple[list[Response], float]:
    """``rater``'s responses to ``item`` as ``behaviour`` answers them (``(dimension,
    value, answer, untouched)`` per dimension, as :meth:`Store.submit` takes them) and
    the seconds the answer took; ``noise``: a good rater's noise SD as a share of the
    scale range. Deterministic in (seed, rater, item key)."""
    expected_flags(behaviour, config)  # an unknown behaviour raises
    rng = random.Random(f"{seed}:{rater}:{item.key}")
    lo, hi = config.scale
    truth = latent_truth(config, item, seed)
    good = _good(config, truth, rng, noise)
    shown = [int(s["slot"][1:]) for s in candidate_slots(config.protocol, rater, item)]
    k = len(item.data["samples"])
    out: list[Response] = []
    for d in config.dimensions:
        if config.protocol in ("rate", "critique"):
            value = {"random": _slider(rng.uniform(lo, hi), lo, hi), "constant": (lo + hi) / 2,
                     "reversing": _slider(lo + hi - good[d], lo, hi)}.get(behaviour, good[d])
            out.append((d, value, None, behaviour == "constant"))
        elif config.protocol == "rank":
            order = {"random": rng.sample(range(k), k), "constant": shown,
                     "reversing": good[d][::-1]}.get(behaviour, good[d])
            out.append((d, None, json.dumps([f"c{i}" for i in order]), list(order) == shown))
        else:
            verdict = {"random": rng.choice(("a>b", "b>a", "tie", "both-bad")), "always_a": "a>b",
                       "reversing": _SWAP[good[d]]}.get(behaviour, good[d])
            out.append((d, None, verdict, None))
    if behaviour == "fast":
        seconds = max(config.min_seconds, 2.0) * rng.uniform(0.15, 0.5)
    else:
        seconds = rng.uniform(6.0, 15.0)
    return out, seconds


def fill_store(store: Store, behaviours: Mapping[str, str], *, seed: int = 0, noise: float = GOOD_NOISE) -> int:
    """Answer every assignment of each rater named in ``behaviours`` (rater id ->
    behaviour) through :meth:`Store.submit`, in the rater's order and with faked times
    (``shown`` and ``now``); raters not named answer nothing. Returns the answers
    recorded."""
    config = StudyConfig.from_json(store.meta()["config"])
    items = {it.key: it for it in store.items()}
    known = {r for r, _ in store.raters(revoked=True)}
    missing = sorted(set(behaviours) - known)
    if missing:
        raise StudioError(f"no rater(s) {', '.join(missing)} in this study")
    n = 0
    for rater, behaviour in behaviours.items():
        clock = _START
        for a in store.assignments(rater):
            responses, seconds = simulate_answer(config, behaviour, rater, items[a.item], seed=seed, noise=noise)
            outcome = store.submit(f"sim-{seed}-{rater}-{a.item}", rater, a.item, responses,
                                   shown=clock, now=clock + seconds)
            n += outcome.status == "recorded"
            clock += seconds + 1.0
    return n


def simulate_responses(config: StudyConfig, items: Sequence[Item], behaviours: Mapping[str, str], *,
                       seed: int = 0, noise: float = GOOD_NOISE) -> list[dict[str, Any]]:
    """Every rater of ``behaviours`` (rater id -> behaviour) answers every item of
    ``items`` in order: the rows :meth:`Store.responses` would return (rater, item,
    item_id, role, dimension, value, answer, untouched, created, shown, duration,
    submission), without a database."""
    rows: list[dict[str, Any]] = []
    for rater, behaviour in behaviours.items():
        clock = _START
        for it in items:
            responses, seconds = simulate_answer(config, behaviour, rater, it, seed=seed, noise=noise)
            sub = f"sim-{seed}-{rater}-{it.key}"
            for d, value, answer, untouched in responses:
                rows.append({"rater": rater, "item": it.key, "item_id": it.id, "role": it.role,
                             "dimension": d, "value": value, "answer": answer, "untouched": untouched,
                             "created": clock + seconds, "shown": clock, "duration": seconds,
                             "submission": sub})
            clock += seconds + 1.0
    return rows


def simulated_items(protocol: str, n_samples: int, k: int = 3, *, seed: int = 0) -> list[Item]:
    """Study items without images for ``protocol``: ``n_samples`` samples (ids ``s000``
    ...) in groups of ``k``; ``rate``/``critique``: one item per sample, ``rank``: one
    per group, ``pairwise``: every pair of a group, sides drawn at random."""
    if k < 2 and protocol in ("rank", "pairwise"):
        raise StudioError(f"the {protocol} protocol needs groups of 2+ candidates, got k={k}")
    rng = random.Random(f"{seed}:items")
    samples = [{"id": f"s{i:03d}", "group_id": f"g{i // k:03d}"} for i in range(n_samples)]
    if protocol in ("rate", "critique"):
        units = [[s] for s in samples]
    else:
        groups = [samples[i:i + k] for i in range(0, n_samples, k)]
        groups = [g for g in groups if len(g) >= 2]
        if protocol == "rank":
            units = groups
        else:
            units = []
            for g in groups:
                for i in range(len(g)):
                    for j in range(i + 1, len(g)):
                        units.append([g[i], g[j]] if rng.random() < 0.5 else [g[j], g[i]])
    kind = {"rate": "sample", "critique": "sample", "rank": "group", "pairwise": "pair"}[protocol]
    return [Item(key + 1, "~".join(s["id"] for s in u) if kind == "pair" else
                 (u[0]["group_id"] if kind == "group" else u[0]["id"]), kind, "study",
                 {"samples": u, "group_id": u[0]["group_id"]}, None) for key, u in enumerate(units)]


def simulate_study(config: StudyConfig, behaviours: Mapping[str, str], n_samples: int, k: int = 3, *,
                   seed: int = 0, noise: float = GOOD_NOISE) -> tuple[dict[int, Item], list[dict[str, Any]]]:
    """:func:`simulated_items` for ``config.protocol`` and every rater's answers to all of
    them (:func:`simulate_responses`): ``(items by key, responses)``, what
    :func:`ieqa.studio.analysis.rater_flags` takes."""
    items = simulated_items(config.protocol, n_samples, k, seed=seed)
    return {it.key: it for it in items}, simulate_responses(config, items, behaviours, seed=seed, noise=noise)
