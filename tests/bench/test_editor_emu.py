"""The Emu Edit test set through ``bench-editor emu-edit``: the six metrics of each item
equal the single-metric scorers' (``l1``, ``clip-i``, ...) on tiny random CLIP and DINO
models, the table is the mean over the scored items per task and overall, and missing
outputs are listed or skipped with the coverage stated."""

from __future__ import annotations

import math

import pytest

from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table, write_editor_outputs
from ieqa.bench.errors import BenchError
from ieqa.data.loaders.emu_edit import TASKS, read_emu_edit
from ieqa.testing.editor_bench import build_emu_fixture, emu_fixture_items, write_emu_outputs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from ieqa.testing.tiny_embedders import build_tiny_clip, build_tiny_dino

    root = tmp_path_factory.mktemp("embedders")
    return str(build_tiny_clip(root / "clip")), str(build_tiny_dino(root / "dino"))


def test_emu_edit_metrics_per_item_and_their_means(tmp_path, tiny):
    clip, dino = tiny
    items = emu_fixture_items(per_task=2)
    data = build_emu_fixture(tmp_path / "emu", items)
    outputs = write_emu_outputs(tmp_path / "editor", items)
    judge = create_scorer("edit-metrics", clip_model=clip, dino_model=dino)
    result = bench_editor("emu-edit", {"mine": outputs}, judge, tmp_path / "out", data=data,
                          languages=["en"], progress=False, n_boot=50)
    res = result.results
    assert res["coverage"]["text"] == "14 of 14 items"  # the validation item is not in test
    rows = {r["key"]: r for r in result.items}
    # each item's numbers are the single-metric scorers' on the same sample
    test_items = read_emu_edit(data, tmp_path / "src")
    first = test_items[0]
    sample = {"id": first.id, "source": str(first.source), "edited": str(outputs / "0.png"),
              "instruction": first.instruction, "meta": first.meta()}
    for field, name in (("clip_dir", "clip-dir"), ("clip_i", "clip-i"), ("clip_out", "clip-t"),
                        ("l1", "l1"), ("l2", "l2"), ("dino", "dino")):
        single = create_scorer(name, clip_model=clip) if name.startswith("clip") else \
            create_scorer(name, dino_model=dino) if name == "dino" else create_scorer(name)
        value = next(iter(single.score([sample])[0].scores.values()))
        assert rows["0"][field] == pytest.approx(value, abs=1e-6), name
    official = res["official"]
    for field in ("clip_dir", "clip_i", "clip_out", "l1", "dino", "l2"):
        assert official[field] == pytest.approx(sum(r[field] for r in rows.values()) / 14)
    task = TASKS[1]
    chosen = [r["l1"] for r in rows.values() if r["task_type"] == task]
    assert len(chosen) == 2 and official["per_task"][task]["l1"] == pytest.approx(
        sum(chosen) / 2)
    assert res["judge"]["official"]
    table = editor_table(res)[0]
    assert table["CLIP-dir"] == official["clip_dir"] and table["coverage"] == "14 of 14 items"
    paths = write_editor_outputs(result, tmp_path / "out", plots=False)
    assert "14 of 14 items" in paths["report"].read_text()


def test_missing_outputs_and_the_validation_split(tmp_path, tiny):
    clip, dino = tiny
    items = emu_fixture_items(per_task=1)
    data = build_emu_fixture(tmp_path / "emu", items)
    outputs = write_emu_outputs(tmp_path / "editor", items, skip=(2,))
    judge = create_scorer("edit-metrics", clip_model=clip, dino_model=dino)
    sources = {i.idx: i.source for i in read_emu_edit(data, tmp_path / "src")}
    # an "edit" that is its source: no change, so no direction (NaN), a counted failure
    (outputs / "0.png").write_bytes(sources["0"].read_bytes())
    with pytest.raises(BenchError, match=r"1 of 7 outputs missing, e\.g\. .*2\.png"):
        bench_editor("emu-edit", {"mine": outputs}, judge, tmp_path / "out", data=data,
                     languages=["en"], progress=False)
    res = bench_editor("emu-edit", {"mine": outputs}, judge, tmp_path / "out", data=data,
                       languages=["en"], progress=False, missing="skip", n_boot=20).results
    assert res["coverage"]["text"] == \
        "5 of 7 items (1 without an output) (1 failed to score)"
    assert math.isnan(res["official"]["per_task"][TASKS[2]]["clip_i"])  # its only item
    assert math.isnan(res["official"]["per_task"][TASKS[0]]["l1"])  # failed: not averaged
    validation = read_emu_edit(data / "data" / "validation-00000-of-00001.parquet",
                               tmp_path / "src", split="validation")
    assert [i.idx for i in validation] == ["7"]


def test_emu_means_per_task_overall_and_the_interval_by_hand():
    import numpy as np

    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("emu-edit")
    cols = ("clip_dir", "clip_i", "clip_out", "l1", "dino", "l2")
    rows = [  # task, error, CLIP-dir, CLIP-I, CLIP-out, L1, DINO, L2
        (TASKS[0], None, 0.10, 0.90, 0.30, 0.05, 0.80, 0.010),
        (TASKS[0], None, 0.30, 0.70, 0.20, 0.15, 0.60, None),  # L2 not computed
        (TASKS[0], None, 0.02, 0.95, 0.25, 0.10, 0.90, 0.020),
        (TASKS[1], "no direction", 0.90, 0.10, 0.90, 0.90, 0.10, 0.900),  # failed
        (TASKS[1], None, 0.20, 0.80, 0.28, 0.08, 0.70, 0.030),
    ]
    entries = [{"task_type": t, "error": err, **dict(zip(cols, v, strict=True))}
               for t, err, *v in rows]
    res = protocol.aggregate(entries, n_boot=300)
    official = res["official"]
    assert official["clip_dir"] == pytest.approx((0.10 + 0.30 + 0.02 + 0.20) / 4)
    assert official["l2"] == pytest.approx((0.010 + 0.020 + 0.030) / 3)  # None left out
    assert official["per_task"][TASKS[0]]["l2"] == pytest.approx(0.015)
    assert official["per_task"][TASKS[1]]["l1"] == pytest.approx(0.08)  # the failed one out
    assert official["per_task"][TASKS[0]]["clip_i"] == pytest.approx(2.55 / 3)
    assert math.isnan(official["per_task"][TASKS[2]]["clip_dir"])
    dirs = np.array([0.10, 0.30, 0.02, 0.20])
    rng = np.random.default_rng(0)
    means = dirs[rng.integers(0, 4, size=(300, 4))].mean(axis=1)
    want = (np.quantile(means, 0.025), np.quantile(means, 0.975))
    assert res["ci"]["clip_dir"] == pytest.approx(want)
    assert protocol.table_row(res)["95% CI (CLIP-dir)"] == f"[{want[0]:.4f}, {want[1]:.4f}]"
