"""How often the leave-one-rater-out agreement rule (``ieqa.human.agreement_screen``)
rejects a random rater, and how often an honest one, on five-rater panels; with
``--studio``, the precision and recall of the studio's rater flags
(``ieqa.studio.analysis.rater_flags``) on simulated study panels.

Each panel: true quality uniform on [1, 5] per item; four honest raters give the quality
plus Gaussian noise of SD ``noise``, rounded and clipped to 1..5; the fifth draws uniform
random integers 1..5. The rule rejects a rater whose SRCC with the mean of the other four
is below the threshold. The numbers in :mod:`ieqa.human.screening` come from the default
run (400 panels per cell, seed 0).

    .venv/bin/python benchmarks/rater_screening.py [--panels 400] [--seed 0]

``--studio``: per protocol, ``--panels`` simulated studies (``ieqa.studio.simulate``, in
memory), each with ``--good`` good raters (default 2; noise SD ``--noise`` times the
scale range, default 0.12) and one random, constant,
reversing, always-A and fast rater, every rater answering every item (rate and critique:
20 samples; rank: 6 groups of 4; pairwise: 10 groups of 3, 30 pairs; default dimensions
and thresholds). A flagged rater is a true positive when it is a bad rater whose behaviour
applies in the protocol (``ieqa.studio.simulate.expected_flags``), a false positive when
it is good or its behaviour does not apply (it answered like a good rater). Precision and
recall are given over all flags, and per flag kind (recall of a kind: among the bad
raters the kind is meant to catch, the share it flagged), with the recall per behaviour.
The numbers in :mod:`ieqa.studio.analysis` come from ``--studio --panels 500`` (seed 0),
and from the same with ``--good 4 --noise 0.25``.

    .venv/bin/python benchmarks/rater_screening.py --studio [--panels 200] [--seed 0] [--good 2] [--noise 0.12]
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from ieqa.human import agreement_screen

#: protocol -> (samples, group size) of a simulated study panel
STUDIO_SIZES = {"rate": (20, 4), "critique": (20, 4), "rank": (24, 4), "pairwise": (30, 3)}
BAD = ("random", "constant", "reversing", "always_a", "fast")


def _ratio(a: int, b: int) -> str:
    return f"{a / b:6.1%}" if b else "     -"


def studio(panels: int, seed: int, good: int, noise: float) -> None:
    """Precision and recall of the studio's rater flags per protocol (see the docstring)."""
    from ieqa.studio.analysis import FLAG_KINDS, rater_flags
    from ieqa.studio.design import StudyConfig
    from ieqa.studio.simulate import expected_flags, simulate_study

    noun = {"rate": "samples", "critique": "samples", "rank": "groups of 4", "pairwise": "pairs"}

    behaviours = {f"good-{i + 1}": "good" for i in range(good)} | {b: b for b in BAD}
    print(f"{panels} panels per protocol: {good} good (noise SD {noise:g} x scale range) + 1 each of "
          f"{', '.join(BAD)}; seed {seed}")
    for protocol, (n, k) in STUDIO_SIZES.items():
        config = StudyConfig(protocol=protocol, raters=len(behaviours), per_item=len(behaviours))
        want = {r: expected_flags(b, config) for r, b in behaviours.items()}
        tp = fp = fn = 0
        kind_tp, kind_fp, kind_hit, kind_meant = Counter(), Counter(), Counter(), Counter()
        caught, good_flagged = Counter(), 0
        for p in range(panels):
            items, rows = simulate_study(config, behaviours, n, k, seed=seed * 1_000_003 + p, noise=noise)
            flags = rater_flags(config, items, rows)
            for rater, b in behaviours.items():
                kinds = {f.kind for f in flags.get(rater, [])}
                bad = bool(want[rater])
                tp += bad and bool(kinds)
                fp += (not bad) and bool(kinds)
                fn += bad and not kinds
                caught[b] += bad and bool(kinds)
                good_flagged += b == "good" and bool(kinds)
                for kind in kinds:  # a flag of a kind the behaviour should raise; any other is a false one
                    kind_tp[kind] += kind in want[rater]
                    kind_fp[kind] += kind not in want[rater]
                for kind in want[rater]:
                    kind_meant[kind] += 1
                    kind_hit[kind] += kind in kinds
        applicable = [b for b in BAD if expected_flags(b, config)]
        print(f"\n{protocol} ({len(items)} {noun[protocol]}): precision {_ratio(tp, tp + fp)}  recall {_ratio(tp, tp + fn)}  "
              f"good raters flagged {_ratio(good_flagged, good * panels)}  "
              f"(not applicable here: {', '.join(b for b in BAD if b not in applicable) or 'none'})")
        print("  recall by behaviour: " + ", ".join(f"{b} {_ratio(caught[b], panels).strip()}" for b in applicable))
        for kind in FLAG_KINDS:
            flagged = kind_tp[kind] + kind_fp[kind]
            if flagged or kind_meant[kind]:
                print(f"  {kind:16} flags {flagged:5}  on a rater meant to raise it {_ratio(kind_tp[kind], flagged)}  "
                      f"recall {_ratio(kind_hit[kind], kind_meant[kind])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=None, help="panels per cell (400; --studio: 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--studio", action="store_true", help="the studio's rater flags on simulated panels")
    parser.add_argument("--good", type=int, default=2, help="--studio: good raters per panel")
    parser.add_argument("--noise", type=float, default=0.12,
                        help="--studio: a good rater's noise SD as a share of the scale range")
    args = parser.parse_args()
    if args.studio:
        studio(args.panels or 200, args.seed, args.good, args.noise)
        return
    args.panels = args.panels or 400
    rng = np.random.default_rng(args.seed)
    thresholds = (0.2, 0.3, 0.4, 0.5)
    print("noise items  " + "  ".join(f"t={t}: honest rejected / random kept" for t in thresholds))
    for noise in (0.5, 1.0, 1.5):
        for n in (10, 15, 20, 30, 50):
            honest, spam = [], []
            for _ in range(args.panels):
                quality = rng.uniform(1, 5, n)
                m = np.clip(np.round(quality[:, None] + rng.normal(0, noise, (n, 5))), 1, 5)
                m[:, 4] = rng.integers(1, 6, n)
                srcc = agreement_screen(m, min_items=3).srcc
                honest += list(srcc[:4])
                spam.append(srcc[4])
            h, s = np.asarray(honest), np.asarray(spam)
            cells = [f"{np.nanmean(h < t):6.1%} / {np.nanmean(s >= t):6.1%}" for t in thresholds]
            print(f"{noise:5} {n:5}  " + "  ".join(f"{c:>34}" for c in cells))


if __name__ == "__main__":
    main()
