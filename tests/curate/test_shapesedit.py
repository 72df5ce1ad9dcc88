"""Acceptance on ShapesEdit (n = 1000, six simulated editors, exact ground truth).

The ground-truth manifest is the oracle score file: curate must keep exactly the true
top-K and every DPO pair must agree with the true preference. With ``classic`` scores the
kept subset's true content preservation must beat the full set and a random subset of the
same size, and the pairs' agreement with the truth is reported (printed with ``-s``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ieqa.cli import app
from ieqa.curate import best_of_n, curate, dpo_pairs
from ieqa.data.manifest import iter_manifest, read_manifest
from ieqa.data.shapesedit import ShapesEditConfig, generate

N, K_TOP = 1000, 200
runner = CliRunner()


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """(manifest, classic score file) of a 1000-edit ShapesEdit set at 64 px."""
    root = tmp_path_factory.mktemp("shapes")
    manifest = generate(root / "set", ShapesEditConfig(n=N, k=4, seed=7, size=64))
    scores = root / "scores.parquet"
    res = runner.invoke(app, ["score", str(manifest), "-o", str(scores)])
    assert res.exit_code == 0, res.output
    return manifest, scores


def truth(manifest):
    return {s.id: s for s in iter_manifest(manifest)}


def test_oracle_curate_keeps_exactly_the_true_top_k(shapes, tmp_path):
    manifest, _ = shapes
    samples = list(truth(manifest).values())
    assert len(samples) == N and len({s.editor for s in samples}) >= 4
    expected = sorted(samples, key=lambda s: (-s.scores["overall"], s.id))[:K_TOP]
    res = curate(manifest, tmp_path / "top", f"top-k={K_TOP}", rule="overall")
    assert sorted(res.kept_ids) == sorted(s.id for s in expected)
    kept = read_manifest(res.manifest)
    assert kept[0].scores == truth(manifest)[kept[0].id].scores  # the manifest row itself
    # per task: the true top 10 of each task
    res = curate(manifest, tmp_path / "per", "top-k=10", rule="overall", per="task")
    for task in {s.task for s in samples}:
        best = sorted((s for s in samples if s.task == task), key=lambda s: (-s.scores["overall"], s.id))[:10]
        assert {s.id for s in best} <= set(res.kept_ids)
    assert len(res.kept_ids) == 10 * len({s.task for s in samples})


@pytest.mark.parametrize("mode", ["global", "self"])
def test_oracle_dpo_pairs_agree_with_the_truth(shapes, tmp_path, mode):
    manifest, _ = shapes
    # ShapesEdit has one candidate per editor in a group: self mode treats a request's
    # candidates as one model's seeds (--group-by source,instruction)
    res = dpo_pairs(manifest, tmp_path / mode, mode=mode, rule="overall", reference=manifest,
                    group_by="source,instruction")
    agreement = res.stats["reference_agreement"]["overall"]
    assert res.stats["pairs"] >= (200 if mode == "global" else 100)
    assert agreement["agree"] == res.stats["pairs"] and agreement["accuracy"] == 1.0
    t = truth(manifest)
    for p in res.pairs:  # chosen is the true best of its group, rejected the true worst
        group = [s for s in t.values() if s.group_id == t[p.chosen.id].group_id]
        values = [s.scores["overall"] for s in group]
        assert t[p.chosen.id].scores["overall"] == max(values)
        assert t[p.rejected.id].scores["overall"] == min(values)


def test_oracle_best_of_n_picks_the_true_best(shapes, tmp_path):
    manifest, _ = shapes
    res = best_of_n(manifest, tmp_path / "best.jsonl", group_by="group_id", rule="overall")
    t = truth(manifest)
    assert res.n_picked == N // 4 and not res.failed
    for ident in res.picks:
        group = [s.scores["overall"] for s in t.values() if s.group_id == t[ident].group_id]
        assert t[ident].scores["overall"] == max(group)


def test_classic_curation_raises_true_content_preservation(shapes, tmp_path):
    manifest, scores = shapes
    t = truth(manifest)
    full = np.array([s.scores["content_preservation"] for s in t.values()])
    rng = np.random.default_rng(0)
    lines = []
    for by, flagged in (("content_preservation", False), ("mean", False), ("mean", True)):
        res = curate(scores, tmp_path / f"{by}{flagged}", f"top-k={K_TOP}", rule=by, drop_flagged=flagged)
        kept = np.array([t[i].scores["content_preservation"] for i in res.kept_ids])
        random_subset = rng.choice(full, size=kept.size, replace=False)
        lines.append(f"classic --by {by}{' --drop-flagged' if flagged else ''}: kept {kept.size}, "
                     f"true CP kept {kept.mean():.3f} vs full {full.mean():.3f} vs random {random_subset.mean():.3f}")
        assert kept.mean() > full.mean() and kept.mean() > random_subset.mean()
    print("\n" + "\n".join(lines))


def test_classic_dpo_agreement_is_reported(shapes, tmp_path):
    manifest, scores = shapes
    res = dpo_pairs(scores, tmp_path / "dpo", mode="global", rule="mean", reference=manifest)
    cp = res.stats["reference_agreement"]["content_preservation"]
    print(f"\nclassic global DPO pairs: {res.stats['pairs']}; true content_preservation agree {cp['agree']}, "
          f"tie {cp['tie']}, disagree {cp['disagree']} (accuracy {cp['accuracy']:.3f}, "
          f"without ties {cp['accuracy_no_ties']:.3f})")
    assert cp["agree"] + cp["tie"] + cp["disagree"] == res.stats["pairs"]
    assert cp["accuracy_no_ties"] > 0.5
    stats = json.loads(res.stats_json.read_text())
    assert stats["reference_agreement"] == res.stats["reference_agreement"]
