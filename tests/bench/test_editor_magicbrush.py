"""The MagicBrush test set through ``bench-editor magicbrush``: its sessions read into
single-turn and iterative items, the released layout of the outputs, each item's metrics
against its ground-truth target, and both settings' means."""

from __future__ import annotations

import pytest

from ieqa import create_scorer
from ieqa.bench.editor import bench_editor, editor_table
from ieqa.bench.errors import BenchError
from ieqa.data.loaders.magicbrush import output_path, read_magicbrush
from ieqa.scorers.edit_metrics import pixel_distance
from ieqa.testing.editor_bench import build_magicbrush_fixture, write_magicbrush_outputs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from ieqa.testing.tiny_embedders import build_tiny_clip, build_tiny_dino

    root = tmp_path_factory.mktemp("embedders")
    return str(build_tiny_clip(root / "clip")), str(build_tiny_dino(root / "dino"))


def test_sessions_layout_and_both_settings(tmp_path, tiny):
    from PIL import Image

    clip, dino = tiny
    data = build_magicbrush_fixture(tmp_path / "mb", turns=(1, 2, 3))
    items = read_magicbrush(tmp_path / "mb")  # the folder above test/ works too
    assert [i.id for i in items] == ["100/turn-1", "101/turn-1", "101/turn-2", "101/iter-2",
                                     "102/turn-1", "102/turn-2", "102/turn-3", "102/iter-3"]
    assert [i.final for i in items] == [True, False, False, True, False, False, False, True]
    names = [output_path("o", i).name for i in items]
    assert names[:4] == ["100_1.png", "101_1.png", "101_inde_2.png", "101_iter_2.png"]
    assert items[2].source.name == "101-output1.png"  # a turn starts from the ground truth
    assert items[2].output_caption == "a picture 2 of 101"
    outputs = write_magicbrush_outputs(tmp_path / "editor", items)
    wrong = create_scorer("edit-metrics", clip_model=clip, dino_model=dino)
    with pytest.raises(BenchError, match="reference='target'"):
        bench_editor("magicbrush", {"mine": outputs}, wrong, tmp_path / "out", data=data,
                     languages=["en"], progress=False)
    judge = create_scorer("edit-metrics", reference="target", clip_model=clip, dino_model=dino,
                          metrics="l1,l2,clip-i,dino,clip-t")
    result = bench_editor("magicbrush", {"mine": outputs}, judge, tmp_path / "out", data=data,
                          languages=["en"], progress=False, n_boot=20)
    res = result.results
    assert res["coverage"]["text"] == "8 of 8 items"
    rows = {r["key"]: r for r in result.items}
    # L1 of each item is against its ground-truth target, not its source
    edit = Image.open(outputs / "101" / "101_inde_2.png")
    assert rows["101/turn-2"]["l1"] == pytest.approx(
        pixel_distance(edit, Image.open(items[2].target)))
    single = [rows[i.id]["l1"] for i in items if i.setting == "single"]
    final = [rows[i] ["l1"] for i in ("100/turn-1", "101/iter-2", "102/iter-3")]
    assert res["single_turn"]["l1"] == pytest.approx(sum(single) / 6)
    assert res["final_turn"]["l1"] == pytest.approx(sum(final) / 3)
    assert res["single_turn"]["items"] == 6 and res["final_turn"]["items"] == 3
    row = editor_table(res)[0]
    assert row["final-turn CLIP-T"] == res["final_turn"]["clip_t"]


def test_iterative_outputs_missing_are_listed_and_skippable(tmp_path, tiny):
    clip, dino = tiny
    data = build_magicbrush_fixture(tmp_path / "mb", turns=(1, 2))
    items = read_magicbrush(data)
    outputs = write_magicbrush_outputs(tmp_path / "editor", items, iterative=False)
    judge = create_scorer("edit-metrics", reference="target", clip_model=clip, dino_model=dino,
                          metrics="l1,l2,clip-i,dino,clip-t")
    with pytest.raises(BenchError, match=r"1 of 4 outputs missing, e\.g\. .*101_iter_2\.png"):
        bench_editor("magicbrush", {"mine": outputs}, judge, tmp_path / "out", data=data,
                     languages=["en"], progress=False)
    res = bench_editor("magicbrush", {"mine": outputs}, judge, tmp_path / "out", data=data,
                       languages=["en"], progress=False, missing="skip", n_boot=20).results
    assert res["coverage"]["text"] == "3 of 4 items (1 without an output)"
    assert res["final_turn"]["items"] == 1  # the one-turn session only
    with pytest.raises(Exception, match="not on the Hugging Face hub"):
        read_magicbrush(None)


def test_magicbrush_settings_and_turns_by_hand():
    import math

    from ieqa.bench.editor import get_protocol

    protocol = get_protocol("magicbrush")
    cols = ("l1", "l2", "clip_i", "dino", "clip_t")
    rows = [  # turn, setting, final, error, L1, L2, CLIP-I, DINO, CLIP-T
        ("turn-1", "single", True, None, 0.10, 0.02, 0.90, 0.80, 0.30),  # a one-turn session
        ("turn-1", "single", False, None, 0.20, 0.04, 0.80, 0.70, 0.28),
        ("turn-2", "single", False, None, 0.30, 0.06, 0.70, 0.60, 0.26),
        ("iterative", "iterative", True, None, 0.40, 0.08, 0.60, 0.50, 0.24),
        ("turn-1", "single", False, "failed", 0.90, 0.50, 0.10, 0.10, 0.10),  # metrics, failed
        ("turn-2", "single", False, None, None, None, 0.50, None, None),  # a stand-in: CLIP-I
    ]
    entries = [{"task_type": t, "setting": s, "final": f, "error": err,
                **dict(zip(cols, v, strict=True))} for t, s, f, err, *v in rows]
    res = protocol.aggregate(entries, n_boot=20)
    single, final = res["single_turn"], res["final_turn"]
    assert single["items"] == 4 and final["items"] == 2
    assert single["l1"] == pytest.approx(0.6 / 3) and single["clip_i"] == pytest.approx(2.9 / 4)
    assert final["l1"] == pytest.approx(0.25) and final["clip_t"] == pytest.approx(0.27)
    per_turn = single["per_turn"]
    assert per_turn["turn-1"]["l1"] == pytest.approx(0.15)  # the failed turn left out
    assert per_turn["turn-1"]["clip_i"] == pytest.approx(0.85)
    assert per_turn["turn-2"]["clip_i"] == pytest.approx(0.6)
    assert per_turn["iterative"]["dino"] == pytest.approx(0.5)
    assert math.isnan(per_turn["turn-3"]["l1"])
    row = protocol.table_row(res)
    assert row["final-turn L1"] == pytest.approx(0.25)
