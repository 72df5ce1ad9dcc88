"""The FDMPO acceptance demonstration, scaled down (``benchmarks/fdmpo_demo.py``): a tiny
VLM trained with TDRL on ShapesEdit with one reference definition in its prompt; FDMPO
started from a poor definition, with a scripted optimiser proposing distractors and
paraphrases of the reference (never the reference itself), selects a definition whose
V_d on held-out edits is at least the reference's.

The full run (perception training first, more steps and samples) and its numbers: see
``docs/howto/optimize-prompt.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fdmpo_demo import POOR, PROPOSALS, REFERENCE, print_report, run_demo  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    t0 = time.perf_counter()
    res = run_demo(tmp_path_factory.mktemp("fdmpo-demo"), perception_steps=0, tdrl_steps=40,
                   n_train=160, vd_samples=12, val_samples=12, size=64, batch_size=8)
    print_report(res)
    print(f"fdmpo demo: {time.perf_counter() - t0:.1f} s")
    return res


def test_fdmpo_from_a_poor_definition_reaches_the_reference_v_d(demo):
    trials = demo["trials"]
    assert trials[0]["definition"] == POOR
    assert [t["definition"] for t in trials[1:]] == list(PROPOSALS)
    assert REFERENCE not in PROPOSALS
    assert demo["best"]["v_d"] == max(t["v_d"] for t in trials)  # argmax kept
    assert demo["best"]["v_d"] > trials[0]["v_d"]  # better than where it started
    assert demo["selected_vd_at_least_reference"]
    assert demo["best"]["v_d"] >= demo["reference"]["v_d"]
    # every trial has its held-out SRCC beside its V_d (the figure's two curves)
    assert all(t["validation"]["n"] == 12 for t in trials)
    out = Path(demo["out_dir"])
    assert (out / "trajectory.jsonl").exists() and (out / "best_template.yaml").exists()
