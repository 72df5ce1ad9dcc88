"""`ieqa mos`: the declared rating scale, duplicates, rater screening on small panels and
the scale of a MOS manifest. Every hint an error gives is run here as suggested."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from ieqa.data.manifest import read_manifest, write_manifest
from ieqa.data.schema import EditSample, Rating

from .test_mos_command import _flat, app, runner
from .test_screening import _panel


def _write(path, rows, header=("item", "rater", "value", "dimension")):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _matrix_rows(m, dim="PQ", raters=None):
    raters = raters or [f"r{j}" for j in range(m.shape[1])]
    return [(f"e{i}", raters[j], f"{m[i, j]:g}", dim) for i in range(m.shape[0]) for j in range(m.shape[1])]


def _mos(*args):
    return runner.invoke(app, ["mos", *map(str, args)])


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def small(tmp_path):
    """3 items x 3 raters on 1-5, rater r2 rated e0 a 99."""
    m = np.array([[1, 2, 99], [2, 3, 4], [5, 4, 5]], dtype=float)
    return _write(tmp_path / "small.csv", _matrix_rows(m))


def test_scale_must_be_declared_and_the_hint_runs(small, tmp_path):
    out = tmp_path / "o.csv"
    res = _mos(small, "-o", out, "--method", "mean")
    assert res.exit_code == 2
    assert "--scale 1,5 (the ratings in small.csv range from 1 to 99)" in _flat(res.output)
    res = _mos(small, "-o", out, "--method", "mean", "--scale", "1,5")  # the hint, as suggested
    assert res.exit_code == 2
    text = _flat(res.output)
    assert "1 rating(s) lie outside the rating scale [1, 5]: item 'e0' rater 'r2' (visual_quality) = 99" in text
    assert "--clip" in text
    for bad in ("1-5", "5,1", "1,inf"):
        res = _mos(small, "-o", out, "--scale", bad)
        assert res.exit_code == 2 and "--scale 1,5" in _flat(res.output)


def test_clip_clips_into_the_scale_and_says_so(small, tmp_path):
    out = tmp_path / "o.csv"
    res = _mos(small, "-o", out, "--method", "mean", "--scale", "1,5", "--clip")
    assert res.exit_code == 0, res.output
    assert "1 rating(s) outside [1, 5] clipped into it (--clip)" in _flat(res.output)
    assert [float(r["mos"]) for r in _rows(out)] == pytest.approx([(1 + 2 + 5) / 3, 3.0, 14 / 3])
    # a wider declared scale accepts the 99 as a rating
    res = _mos(small, "-o", out, "--method", "mean", "--scale", "1,100")
    assert res.exit_code == 0 and float(_rows(out)[0]["mos"]) == pytest.approx(34.0)


def test_duplicates_error_mean_first(tmp_path):
    rows = [("a", "r1", "1", "PQ"), ("a", "r1", "3", "PQ"), ("a", "r2", "4", "PQ"), ("b", "r1", "2", "PQ"),
            ("b", "r2", "2", "PQ")]
    path = _write(tmp_path / "d.csv", rows)
    out = tmp_path / "o.csv"
    res = _mos(path, "-o", out, "--scale", "1,5", "--method", "mean")
    assert res.exit_code == 2
    text = _flat(res.output)
    assert "1 (item, rater) pair(s) rated more than once on 'visual_quality', e.g. ('a', 'r1')" in text
    assert "--duplicates mean" in text and "--duplicates first" in text
    for how, a in (("mean", (2 + 4) / 2), ("first", (1 + 4) / 2)):  # r1's a: mean(1, 3) = 2, first 1
        res = _mos(path, "-o", out, "--scale", "1,5", "--method", "mean", "--duplicates", how)
        assert res.exit_code == 0, res.output
        assert float(_rows(out)[0]["mos"]) == pytest.approx(a)
    res = _mos(path, "-o", out, "--scale", "1,5", "--duplicates", "last")
    assert res.exit_code == 2 and "choose one of: error, mean, first" in _flat(res.output)


def test_equal_ratings_every_rejected_rater_named_and_screen_none_keeps_them(tmp_path):
    path = _write(tmp_path / "eq.csv", _matrix_rows(np.full((4, 3), 3.0)))
    out = tmp_path / "o.csv"
    res = _mos(path, "-o", out, "--scale", "1,5")
    assert res.exit_code == 2
    text = _flat(res.output)
    for rater in ("r0", "r1", "r2"):
        assert f"{rater}: zero variance: all 4 kept ratings = 3" in text
    assert "keep every rater with --screen none" in text
    res = _mos(path, "-o", out, "--scale", "1,5", "--screen", "none")  # the hint
    assert res.exit_code == 0, res.output
    assert "no rater rejected" in res.output
    assert [float(r["mos"]) for r in _rows(out)] == [50.0] * 4  # z = 0 for a constant rater


def test_spammer_among_five_raters_is_rejected_with_its_rule(tmp_path):
    m = _panel(seed=0, n_items=50)
    path = _write(tmp_path / "spam.csv", _matrix_rows(m, raters=["h1", "h2", "h3", "h4", "spammer"]))
    out = tmp_path / "o.csv"
    res = _mos(path, "-o", out, "--scale", "1,5")
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "screening bt500,corr" in text
    assert "BT.500 screening cannot flag any rating: items have at most 5 ratings" in text
    assert "with 6 or more ratings per item; the rater-agreement rule (corr) still applies" in text
    assert "visual_quality: rater spammer rejected by corr: SRCC 0.094 with the mean of the other raters over 50 shared items < 0.3" in text
    for honest in ("h1", "h2", "h3", "h4"):
        assert f"rater {honest}" not in text
    rows = _rows(out)
    assert {r["n_ratings"] for r in rows} == {"4"} and {r["n_dropped"] for r in rows} == {"1"}
    # --screen none never rejects anyone; bt500 alone warns that nothing can be flagged
    res = _mos(path, "-o", out, "--scale", "1,5", "--screen", "none")
    assert res.exit_code == 0 and "no rater rejected" in res.output
    assert {r["n_ratings"] for r in _rows(out)} == {"5"}
    res = _mos(path, "-o", out, "--scale", "1,5", "--screen", "bt500")
    assert res.exit_code == 0 and "no rater rejected" in res.output
    assert "add the rater-agreement rule with --screen bt500,corr" in _flat(res.output)
    res = _mos(path, "-o", out, "--scale", "1,5", "--screen", "bt500,corr")  # the hint
    assert res.exit_code == 0 and "rater spammer rejected by corr" in _flat(res.output)
    # the threshold is an option: at -0.5 the spammer (0.094) passes
    res = _mos(path, "-o", out, "--scale", "1,5", "--min-rater-corr", "-0.5")
    assert res.exit_code == 0 and "no rater rejected" in res.output


def test_few_items_warn_that_agreement_is_not_judged(tmp_path):
    path = _write(tmp_path / "few.csv", _matrix_rows(_panel(seed=0, n_items=8)))
    res = _mos(path, "-o", tmp_path / "o.csv", "--scale", "1,5", "--method", "mean")
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "screening corr" in text
    assert "rater agreement (corr) not judged for 5 of 5 rater(s) (r0, r1, r2, r3, r4): fewer than 10 items" in text
    res = _mos(path, "-o", tmp_path / "o.csv", "--scale", "1,5", "--method", "mean", "--screen", "bt500")
    assert res.exit_code == 2
    assert "bt500 screening is part of --method zscore; with --method mean use --screen corr or --screen none" \
        in _flat(res.output)
    for hint in ("corr", "none"):
        res = _mos(path, "-o", tmp_path / "o.csv", "--scale", "1,5", "--method", "mean", "--screen", hint)
        assert res.exit_code == 0, res.output


def _rated_samples():
    """ShapesEdit-like samples: ground truth on 1-5 for two dimensions, raw 1-5 ratings
    of visual quality by three raters."""
    m = np.array([[1, 2, 1], [3, 3, 4], [5, 4, 5]], dtype=float)
    return [EditSample(id=f"e{i}", edited=f"e{i}.png", group_id="g",
                       scores={"visual_quality": 2.0, "overall": 3.0}, meta={"score_scale": [1, 5]},
                       ratings=[Rating(rater=f"r{j}", dimension="PQ", value=m[i, j]) for j in range(3)])
            for i in range(3)], m


@pytest.mark.parametrize(("method", "scale"), [("zscore", [0.0, 100.0]), ("mean", [1.0, 5.0]),
                                                ("ecdf-probit", None)])
def test_manifest_score_scale_is_the_scale_of_the_mos(tmp_path, method, scale):
    samples, m = _rated_samples()
    src = write_manifest(samples, tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    res = _mos(src, "-o", out, "--scale", "1,5", "--method", method, "--screen", "none")
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    got = {s.id: s for s in read_manifest(out)}
    assert got["e0"].meta.get("score_scale") == scale
    assert got["e0"].meta["rating_scale"] == [1.0, 5.0]
    if method == "mean":
        # same scale: the overall ground truth stays; visual quality becomes the MOS
        assert got["e0"].scores == {"visual_quality": pytest.approx(4 / 3), "overall": 3.0}
        assert "removed" not in text
    else:
        # 1-5 ground truth cannot share a manifest with a MOS on another scale
        assert set(got["e0"].scores) == {"visual_quality"}
        assert "3 score(s) on other dimensions removed" in text
    if method == "zscore":  # rater 0: mean 3, SD 2 -> e0 z = -1; r1: mean 3, SD 1 -> z = -1; r2: z = -2/sqrt(4.33)
        z2 = (1 - 10 / 3) / np.std(m[:, 2], ddof=1)
        assert got["e0"].scores["visual_quality"] == pytest.approx(100 * (np.mean([-1, -1, z2]) + 3) / 6)
    # the output states its rating scale, so a second run needs no --scale
    again = _mos(out, "-o", tmp_path / "again.csv", "--method", method, "--screen", "none")
    assert again.exit_code == 0, again.output


def test_report_prints_names_literally(tmp_path):
    m = np.array([[1, 2], [3, 3], [5, 4]], dtype=float)
    path = _write(tmp_path / "mk.csv", _matrix_rows(m, dim="[red]PQ", raters=["[bold]a[/bold]", "b"]))
    res = _mos(path, "-o", tmp_path / "o.csv", "--scale", "1,5", "--method", "mean", "--screen", "none",
               "--dimension-col", "dimension")
    assert res.exit_code == 2  # '[red]PQ' is not a dimension: the error shows it as written
    assert "'[red]PQ'" in res.output
    path = _write(tmp_path / "mk2.csv", _matrix_rows(np.full((3, 2), 3.0), raters=["[bold]a[/bold]", "[i]b"]))
    res = _mos(path, "-o", tmp_path / "o.csv", "--scale", "1,5")
    assert res.exit_code == 2 and "[bold]a[/bold]: zero variance" in _flat(res.output)
    json.dumps(res.output)  # plain text
