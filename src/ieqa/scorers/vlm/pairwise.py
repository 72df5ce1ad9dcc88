"""``vlm-pairwise``: A-vs-B verdicts between two edits of one source, and the position-bias probe.

The judge sees the source, image A and image B and answers one of ``[[A>B]]``,
``[[B>A]]``, ``[[A=B=Good]]``, ``[[A=B=Bad]]`` (GenAI-Bench's format). Which edit is
shown first is controlled by ``order``:

* ``"random"`` — a seeded coin flip per pair (the usual evaluation setting);
* ``"both"`` — both orders; agreeing verdicts are kept, disagreeing ones become a tie
  ``"A=B"`` and are counted in :attr:`PairVerdict.consistent`;
* ``"fixed"`` — the first edit of each pair always as A (to *measure* position bias).

Verdicts are always reported from the caller's point of view (``a`` = the first edit of
the pair), whatever was shown where. :func:`position_bias_report` compares accuracy when
the better edit was shown on the left (A) with accuracy when it was on the right (B), as
EditReward's position-bias probe does.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ieqa.backends import Generation
from ieqa.data.schema import EditSample
from ieqa.prompts.answers import JudgeParseError, parse_verdict
from ieqa.scorers.base import ScorerError, ScoreResult
from ieqa.scorers.vlm.base import LoadedSample, VLMScorer, share_key

__all__ = ["PairwiseJudge", "PairVerdict", "PositionBiasReport", "position_bias_report",
           "swap_verdict"]

_SWAP = {"A>B": "B>A", "B>A": "A>B", "A=B=Good": "A=B=Good", "A=B=Bad": "A=B=Bad", "A=B": "A=B"}


def swap_verdict(verdict: str) -> str:
    """The same judgement with A and B exchanged."""
    return _SWAP[verdict]


@dataclass
class PairVerdict:
    """The judge's verdict on edits ``a`` and ``b``.

    Attributes:
        a, b: sample ids.
        verdict: ``"A>B"``, ``"B>A"``, ``"A=B=Good"``, ``"A=B=Bad"`` or ``"A=B"`` from the
            caller's point of view; ``None`` when no shown order gave a parsable answer.
        shown: per judged order, ``{"a_first": bool, "verdict": str | None, "text": str}``
            (verdict as shown, before un-swapping).
        consistent: with ``order="both"``, whether the two orders agreed.
        error: why ``verdict`` is None.
    """

    a: str
    b: str
    verdict: str | None
    shown: list[dict[str, Any]] = field(default_factory=list)
    consistent: bool | None = None
    error: str | None = None


class PairwiseJudge(VLMScorer):
    """A-vs-B judge (see the module docstring). Use :meth:`compare`; it does not score
    single edits.

    Args:
        order: ``"random"``, ``"both"`` or ``"fixed"``.
        seed: seed of the random order.
        max_new_tokens: answer length limit (tokens).
        (other arguments: :class:`~ieqa.scorers.vlm.base.VLMScorer`)
    """

    readout = "pairwise"
    default_template = "pairwise-verdict"
    needs_local_model = False

    def __init__(self, *, order: str = "random", seed: int = 0, max_new_tokens: int = 256,
                 **kwargs: Any) -> None:
        if order not in ("random", "both", "fixed"):
            raise ScorerError(f"order must be random, both or fixed, got {order!r}")
        kwargs.setdefault("dimensions", ("overall",))
        super().__init__(**kwargs)
        if set(self.template.images) != {"source", "a", "b"} and set(self.template.images) != {"a", "b"}:
            raise ScorerError(f"template {self.template.name!r} is not a pairwise template "
                              "(it needs image slots a and b)")
        self.order, self.seed, self.max_new_tokens = order, int(seed), int(max_new_tokens)

    def readout_config(self) -> dict[str, Any]:
        return {"order": self.order, "seed": self.seed, "max_new_tokens": self.max_new_tokens}

    def checkpoint_args(self) -> dict[str, Any]:
        return self.readout_config()

    def score_batch(self, samples: Sequence[EditSample]) -> list[ScoreResult]:
        raise ScorerError("vlm-pairwise compares two edits; call .compare([(a, b), ...]) "
                          "instead of scoring single edits")

    def score_items(self, items: Sequence[LoadedSample]) -> list[ScoreResult]:  # pragma: no cover
        raise ScorerError("vlm-pairwise compares two edits; use .compare")

    def compare(self, pairs: Sequence[tuple[EditSample, EditSample]]) -> list[PairVerdict]:
        """One :class:`PairVerdict` per ``(a, b)`` pair, in order. Both edits should share
        the source and instruction (the first edit's are shown)."""
        from ieqa.data.images import load_image

        rng = random.Random(self.seed)
        out: list[PairVerdict] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            prompts, owners = [], []
            verdicts = []
            for a, b in chunk:
                verdict = PairVerdict(a=a.id, b=b.id, verdict=None)
                verdicts.append(verdict)
                try:
                    self.check_instruction(a)
                    source = load_image(a.source) if a.source is not None else None
                    img_a, img_b = load_image(a.edited), load_image(b.edited)
                except Exception as exc:  # noqa: BLE001 - recorded per pair
                    verdict.error = f"{type(exc).__name__}: {exc}"
                    continue
                orders = {"both": [True, False], "fixed": [True]}.get(self.order)
                if orders is None:
                    orders = [rng.random() < 0.5]
                for a_first in orders:
                    first, second = (img_a, img_b) if a_first else (img_b, img_a)
                    images = {"a": first, "b": second}
                    if "source" in self.template.images:
                        if source is None:
                            verdict.error = f"sample {a.id!r} has no source image"
                            break
                        images["source"] = source
                    prompts.append(self.template.render(instruction=a.instruction, images=images,
                                                        share_key=share_key(a)))
                    owners.append((verdict, a_first))
            answers = self.isolated(
                prompts,
                lambda batch: self.backend.generate(batch, max_new_tokens=self.max_new_tokens),
                lambda prompt, message: [Generation(text="", error=message)])
            for (verdict, a_first), (gen,) in zip(owners, answers, strict=True):
                record: dict[str, Any] = {"a_first": a_first, "text": gen.text, "verdict": None}
                if gen.error:
                    record["error"] = gen.error
                    record["failed"] = True  # the request failed: no answer to judge
                else:
                    try:
                        record["verdict"] = parse_verdict(gen.text)
                    except JudgeParseError as exc:
                        record["error"] = str(exc)
                verdict.shown.append(record)
            for verdict in verdicts:
                _settle(verdict)
            out.extend(verdicts)
        return out


def _settle(verdict: PairVerdict) -> None:
    """Combine the shown orders' verdicts into the caller's view."""
    if verdict.error and not verdict.shown:
        return
    mine = [r["verdict"] if r["a_first"] else swap_verdict(r["verdict"])
            for r in verdict.shown if r["verdict"] is not None]
    if not mine:
        verdict.error = "; ".join(r.get("error", "unparsable") for r in verdict.shown)
        return
    if len(verdict.shown) > 1:
        verdict.consistent = len(mine) == len(verdict.shown) and len(set(mine)) == 1
        verdict.verdict = mine[0] if verdict.consistent else "A=B"
    else:
        verdict.verdict = mine[0]


@dataclass
class PositionBiasReport:
    """Accuracy by the position of the better edit (strict human preferences only).

    An answer the parser could not read counts as wrong in its position's denominator, as
    GenAI-Bench counts a null verdict (an unreadable answer is the judge's failure, and
    leaving it out would flatter a judge that fails more often on one side). A presentation
    whose request failed (no answer came back) is not the judge's verdict: it is left out of
    both denominators and counted in ``n_failed``.

    Attributes:
        accuracy_left: accuracy when the better edit was shown as A (left/first), in [0, 1];
            NaN when no such presentation was answered.
        accuracy_right: accuracy when it was shown as B, in [0, 1] (NaN likewise).
        n_left, n_right: answered presentations in each case (unparsed ones included).
        picked_first_rate: fraction of strict verdicts (``A>B``/``B>A``) that chose the
            first-shown image, in [0, 1]; NaN when there were none.
        n_unparsed_left, n_unparsed_right: answers in ``n_left``/``n_right`` that gave no
            readable verdict (counted wrong).
        n_failed: presentations (or whole pairs, when an image could not be loaded) with no
            answer at all; not in any denominator.
        n_skipped: pairs left out because the human label is not a strict preference.
    """

    accuracy_left: float
    accuracy_right: float
    n_left: int
    n_right: int
    picked_first_rate: float
    n_unparsed_left: int = 0
    n_unparsed_right: int = 0
    n_failed: int = 0
    n_skipped: int = 0

    @property
    def gap(self) -> float:
        """``accuracy_left - accuracy_right`` in [-1, 1] (0 for an unbiased judge)."""
        return self.accuracy_left - self.accuracy_right

    @property
    def n_unparsed(self) -> int:
        """Answers without a readable verdict, both positions (all counted wrong)."""
        return self.n_unparsed_left + self.n_unparsed_right

    def describe(self) -> str:
        """One paragraph stating the accuracies, the gap and what was counted how."""
        text = (f"better edit shown first: accuracy {self.accuracy_left:.3f} "
                f"(n={self.n_left}, {self.n_unparsed_left} unparsed counted wrong); "
                f"shown second: {self.accuracy_right:.3f} (n={self.n_right}, "
                f"{self.n_unparsed_right} unparsed counted wrong); gap {self.gap:+.3f}; "
                f"picked the first image in {self.picked_first_rate:.3f} of strict verdicts")
        if self.n_failed:
            text += f"; {self.n_failed} presentation(s) failed with no answer and are left out"
        if self.n_skipped:
            text += f"; {self.n_skipped} pair(s) with a tied human label skipped"
        return text


def position_bias_report(verdicts: Sequence[PairVerdict], labels: Sequence[str]) -> PositionBiasReport:
    """Position-bias probe from judged pairs and human labels (EditReward's probe, with
    unparsed answers counted wrong as GenAI-Bench counts them; see
    :class:`PositionBiasReport`).

    Args:
        verdicts: from :meth:`PairwiseJudge.compare` (any ``order``; ``"both"`` or
            ``"fixed"`` plus swapped pairs gives both positions).
        labels: the human verdict per pair, ``"A>B"`` or ``"B>A"`` (caller's view); other
            labels (ties) are skipped and counted in ``n_skipped``.
    """
    if len(verdicts) != len(labels):
        raise ValueError(f"need one label per verdict: got {len(verdicts)} verdicts and "
                         f"{len(labels)} labels")
    hits = {True: [0, 0], False: [0, 0]}  # better shown first? -> [correct, total]
    unparsed = {True: 0, False: 0}
    first = strict = failed = skipped = 0
    for verdict, label in zip(verdicts, labels, strict=True):
        if label not in ("A>B", "B>A"):
            skipped += 1
            continue
        if not verdict.shown:  # the pair could not be put to the judge at all
            failed += 1
            continue
        for record in verdict.shown:
            if record.get("failed"):
                failed += 1
                continue
            shown = record["verdict"]
            better_first = (label == "A>B") == record["a_first"]
            truth_shown = "A>B" if better_first else "B>A"
            hits[better_first][1] += 1
            if shown is None:
                unparsed[better_first] += 1
                continue
            hits[better_first][0] += int(shown == truth_shown)
            if shown in ("A>B", "B>A"):
                strict += 1
                first += int(shown == "A>B")

    def rate(c: list[int]) -> float:
        return c[0] / c[1] if c[1] else float("nan")

    return PositionBiasReport(accuracy_left=rate(hits[True]), accuracy_right=rate(hits[False]),
                              n_left=hits[True][1], n_right=hits[False][1],
                              picked_first_rate=first / strict if strict else float("nan"),
                              n_unparsed_left=unparsed[True], n_unparsed_right=unparsed[False],
                              n_failed=failed, n_skipped=skipped)
