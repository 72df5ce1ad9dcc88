"""EPAIQA's random-forest baseline: fit/predict/evaluate, the split by group, the safe
save/load, and the CLI end to end on ShapesEdit on CPU (classic's sub-scores -> the
truth's overall)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ieqa.baselines import (
    BaselineError,
    SubscoreRegressor,
    evaluate_predictions,
    load_subscore_table,
    run_subscore_baseline,
    split_by_group,
)
from ieqa.cli import app
from ieqa.metrics import plcc, srcc

pytest.importorskip("sklearn")
pytest.importorskip("skops")


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    from ieqa.data.shapesedit import ShapesEditConfig, generate

    root = tmp_path_factory.mktemp("rf")
    return generate(root / "se", ShapesEditConfig(n=160, k=4, seed=0, size=64, photo_fraction=0.0))


@pytest.mark.claim
def test_forest_learns_a_function_of_two_subscores():
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 5, (400, 2))
    y = np.sqrt(x[:, 0] * x[:, 1])  # a VIEScore-like overall
    model = SubscoreRegressor(["harmony", "naturalness"], n_estimators=50).fit(x[:300], y[:300])
    assert model.features == ("harmony", "local_naturalness")  # aliases canonicalised
    m = evaluate_predictions(model.predict(x[300:]), y[300:])
    assert m["srcc"] == pytest.approx(srcc(model.predict(x[300:]), y[300:]))
    assert m["plcc"] == pytest.approx(plcc(model.predict(x[300:]), y[300:]))
    assert m["srcc"] > 0.95 and m["rmse"] < 0.2 and m["n"] == 100
    with pytest.raises(BaselineError, match="rows of 2 features"):
        model.predict(x[:, :1])
    with pytest.raises(BaselineError, match="not fitted"):
        SubscoreRegressor(["harmony", "naturalness"]).predict(x)


def test_split_keeps_groups_whole_and_tables_report_missing(shapes):
    table = load_subscore_table(shapes, ["visual_quality", "content_preservation"], "overall")
    train, test = split_by_group(table, 0.25, seed=1)
    assert set(train.groups).isdisjoint(test.groups)
    assert len(train.ids) + len(test.ids) == len(table.ids) == 160
    assert len(set(test.groups)) == 10  # a quarter of the 40 groups
    with pytest.raises(BaselineError, match="no edit .* has every feature"):
        load_subscore_table(shapes, ["harmony", "local_naturalness"], "overall")
    with pytest.raises(BaselineError, match="also a feature"):
        load_subscore_table(shapes, ["overall", "visual_quality"], "overall")


def test_save_load_roundtrip_and_untrusted_files_are_refused(shapes, tmp_path):
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    result = run_subscore_baseline(shapes, ["visual_quality", "content_preservation"],
                                   n_estimators=20)
    path = result["model"].save(tmp_path / "rf.skops")
    again = SubscoreRegressor.load(path)
    assert again.features == result["model"].features and again.target == "overall"
    np.testing.assert_array_equal(again.predict(result["test"]), result["model"].predict(result["test"]))
    sio.dump({"format": "ieqa-subscore-rf", "model": LinearRegression()}, str(tmp_path / "bad.skops"))
    with pytest.raises(BaselineError, match="RandomForestRegressor expected"):
        SubscoreRegressor.load(tmp_path / "bad.skops")
    (tmp_path / "junk.skops").write_bytes(b"not a zip")
    with pytest.raises(BaselineError, match="not a subscore-rf model"):
        SubscoreRegressor.load(tmp_path / "junk.skops")


def test_cli_end_to_end_on_shapesedit_with_classic_scores(shapes, tmp_path):
    runner = CliRunner()
    scores = tmp_path / "classic.parquet"
    res = runner.invoke(app, ["score", str(shapes), "--scorer", "classic", "-o", str(scores)])
    assert res.exit_code == 0, res.output
    args = ["baseline", "subscore-rf", str(scores), "--truth", str(shapes), "--features",
            "visual_quality,content_preservation", "--n-estimators", "100", "--json"]
    res = runner.invoke(app, [*args, "-o", str(tmp_path / "rf.skops"), "--predictions",
                              str(tmp_path / "pred.jsonl")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    print("subscore-rf on ShapesEdit (classic -> truth overall):", json.dumps(out))
    assert out["n_train"] + out["n_test"] == 160 and out["n_test"] == 32
    rf = out["metrics"]
    # the forest combines the two sub-scores better than either alone
    assert rf["srcc"] > max(m["srcc"] for m in out["features_alone"].values())
    assert rf["rmse"] < min(m["rmse"] for m in out["features_alone"].values())
    preds = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert len(preds) == 32 and set(preds[0]) == {"id", "overall"}
    # the saved model, evaluated on all of the file, scores the held-out rows the same
    res = runner.invoke(app, ["baseline", "subscore-rf", str(scores), "--truth", str(shapes),
                              "--features", "visual_quality,content_preservation", "--model",
                              str(tmp_path / "rf.skops"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["n_test"] == 160
    res = runner.invoke(app, ["baseline", "subscore-rf", str(scores), "--features", "harmony"])
    assert res.exit_code != 0
    res = runner.invoke(app, ["baseline", "svm", str(scores), "--features", "harmony"])
    assert res.exit_code == 2 and "subscore-rf" in res.output
