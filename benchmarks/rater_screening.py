"""How often the leave-one-rater-out agreement rule (``ieqa.human.agreement_screen``)
rejects a random rater, and how often an honest one, on five-rater panels.

Each panel: true quality uniform on [1, 5] per item; four honest raters give the quality
plus Gaussian noise of SD ``noise``, rounded and clipped to 1..5; the fifth draws uniform
random integers 1..5. The rule rejects a rater whose SRCC with the mean of the other four
is below the threshold. The numbers in :mod:`ieqa.human.screening` come from the default
run (400 panels per cell, seed 0).

    .venv/bin/python benchmarks/rater_screening.py [--panels 400] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from ieqa.human import agreement_screen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
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
